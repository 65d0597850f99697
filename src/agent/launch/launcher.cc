#include "agent/launch/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "agent/launch/step_files.h"
#include "agent/launch/supervisor.h"

namespace shoal::agent {
namespace {

constexpr int kRequestTimeoutMs = 2000;  // for the agent to send its one line
constexpr size_t kMaxRequest = 256;

bool ExecutableReplaced() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return false;
  return std::string_view(path, static_cast<size_t>(n)).ends_with(" (deleted)");
}

// The request line, read with a deadline; empty on a timeout or a close.
std::string ReadRequest(int fd) {
  std::string line;
  char buffer[kMaxRequest];
  while (line.size() < kMaxRequest) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kRequestTimeoutMs) <= 0) return {};
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    line.append(buffer, static_cast<size_t>(n));
    if (size_t end = line.find('\n'); end != std::string::npos) return line.substr(0, end);
  }
  return {};
}

class Launcher {
 public:
  Launcher(std::string steps_dir, std::span<char> title)
      : steps_dir_(std::move(steps_dir)), title_(title) {}

  ~Launcher() {
    if (listen_fd_ >= 0) {
      // Ours (we hold the lock): a later agent must not find a dead socket.
      ::unlink((steps_dir_ + "/" + kLauncherSocket).c_str());
      ::close(listen_fd_);
    }
    if (signal_fd_ >= 0) ::close(signal_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }

  // 0: listening; 1: cannot; 2: another launcher serves this folder.
  int Listen() {
    const std::string lock = steps_dir_ + "/" + kLauncherLock;
    lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd_ < 0) return 1;
    // A launcher on its way out (idle, upgraded) has stopped listening but
    // may hold the lock a moment longer.
    for (int tries = 0; ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0; ++tries) {
      if (errno != EWOULDBLOCK) return 1;
      if (tries == 400) return 2;
      ::usleep(5000);
    }
    const std::optional<sockaddr_un> address = LauncherAddress(steps_dir_);
    if (!address) return 1;
    ::unlink(address->sun_path);  // a dead launcher's; the lock says none serves
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) return 1;
    // Made 0600 from the start: nobody else may connect in between.
    const mode_t old_umask = ::umask(0177);
    const int bound =
        ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&*address), sizeof *address);
    ::umask(old_umask);
    if (bound != 0 || ::listen(listen_fd_, 128) != 0) return 1;
    sigset_t signals;
    sigemptyset(&signals);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP})
      sigaddset(&signals, sig);
    signal_fd_ = ::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
    return signal_fd_ < 0 ? 1 : 0;
  }

  void Serve() {
    const int idle_ms = static_cast<int>(std::chrono::milliseconds(kLauncherIdle).count());
    while (true) {
      pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
      int ready = ::poll(fds, 2, idle_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return;
      // Idle: the next launch starts another. Not while supervisors we
      // forked run: their parent reaps them best.
      if (ready == 0) {
        if (children_ == 0) return;
        continue;
      }
      if (fds[1].revents & POLLIN) {
        if (!TakeSignals()) return;
      }
      if (fds[0].revents & POLLIN) {
        if (!Accept()) return;
      }
    }
  }

 private:
  // Reaps the supervisors that ended; false on a request to stop.
  bool TakeSignals() {
    signalfd_siginfo info;
    bool stop = false;
    while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      if (info.ssi_signo != SIGCHLD) stop = true;
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0)
      --children_;
    return !stop;
  }

  // Serves one connection; false when the launcher should exit.
  bool Accept() {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return true;
    ucred peer{};
    socklen_t length = sizeof peer;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 || peer.uid != ::geteuid()) {
      ::close(fd);
      return true;
    }
    const std::string request = ReadRequest(fd);
    bool go_on = true;
    if (request == "quit") {
      go_on = false;
    } else if (request.starts_with("launch ") && ParseStepDirName(request.substr(7))) {
      Fork(request.substr(7), fd);
      go_on = !ExecutableReplaced();
    }
    ::close(fd);
    return go_on;
  }

  void Fork(const std::string& name, int reply_fd) {
    // Before the fork: an agent that reads no such byte knows that nothing
    // was forked for it, and may ask again.
    if (::send(reply_fd, &kLauncherTook, 1, MSG_NOSIGNAL) != 1) return;
    pid_t pid = ::fork();
    if (pid > 0) ++children_;
    if (pid != 0) return;  // the parent (or a failed fork: the agent reads end-of-file)
    ::close(listen_fd_);
    ::close(signal_fd_);
    ::close(lock_fd_);
    // What ps shows: this supervisor's step, not the launcher's command line.
    if (!title_.empty()) {
      std::memset(title_.data(), 0, title_.size());
      std::snprintf(title_.data(), title_.size(), "shoal-step: step %s", name.c_str());
    }
    // Not from main: leave without the launcher's destructors and buffers.
    ::_exit(RunSupervisor(steps_dir_, name, reply_fd));
  }

  const std::string steps_dir_;
  const std::span<char> title_;  // the command line's memory
  int lock_fd_ = -1;
  int listen_fd_ = -1;
  int signal_fd_ = -1;
  int children_ = 0;  // supervisors forked and not yet reaped
};

}  // namespace

std::optional<sockaddr_un> LauncherAddress(const std::string& steps_dir) {
  const std::string path = steps_dir + "/" + kLauncherSocket;
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) return std::nullopt;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

int RunLauncher(const std::string& steps_dir, std::span<char> title) {
  if (!SettleProcess()) return 1;
  Launcher launcher(steps_dir, title);
  const int listening = launcher.Listen();
  // The agent connects once it reads the byte; with another launcher
  // serving (2), that one answers it.
  if (listening != 1 && ::fcntl(kReadyFd, F_GETFD) >= 0) {
    [[maybe_unused]] ssize_t n = ::write(kReadyFd, "1", 1);
  }
  ::close(kReadyFd);
  if (listening != 0) return listening == 2 ? 0 : 1;
  launcher.Serve();
  return 0;
}

}  // namespace shoal::agent
