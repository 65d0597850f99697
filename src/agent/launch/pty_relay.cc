#include "agent/launch/pty_relay.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/files.h"

namespace shoal::agent {

namespace {

std::string Frame(FrameType type, std::string_view payload) {
  std::string f;
  f.reserve(kFrameHeaderBytes + payload.size());
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(payload.size() >> 8 & 0xff));
  f.push_back(static_cast<char>(payload.size() & 0xff));
  f.append(payload);
  return f;
}

int Uint16At(std::string_view s, size_t at) {
  return static_cast<unsigned char>(s[at]) << 8 | static_cast<unsigned char>(s[at + 1]);
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The relay's state: the terminal's master side, the input FIFO, the
// program's pid, signals as a descriptor.
class Relay {
 public:
  int Run(const char* input_path, int rows, int cols, char** program) {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0)
      return Fail("cannot open a pseudo-terminal");
    const char* name = ::ptsname(master_);
    if (name == nullptr) return Fail("cannot name the pseudo-terminal");
    // The relay holds the terminal's other end too, so that the master side
    // reads no end-of-file before the program has opened it.
    slave_ = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave_ < 0) return Fail(std::string("cannot open ") + name);
    if (rows > 0 && cols > 0) {
      winsize size{static_cast<unsigned short>(rows), static_cast<unsigned short>(cols), 0, 0};
      ::ioctl(master_, TIOCSWINSZ, &size);
    }
    // Open for reading without waiting for a writer; the relay's own write
    // end keeps the FIFO from reading end-of-file between the agent's writes.
    input_ = ::open(input_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    keep_open_ = input_ < 0 ? -1 : ::open(input_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (input_ < 0 || keep_open_ < 0) return Fail(std::string("cannot open ") + input_path);
    sigset_t signals;
    sigemptyset(&signals);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP})
      sigaddset(&signals, sig);
    ::sigprocmask(SIG_BLOCK, &signals, nullptr);
    signals_ = ::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signals_ < 0) return Fail("signalfd");
    child_ = ::fork();
    if (child_ < 0) return Fail("fork");
    if (child_ == 0) Exec(program);
    Pump();
    return Ended();
  }

 private:
  [[noreturn]] void Exec(char** program) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // A session of its own, with the terminal as its controlling one.
    if (::setsid() < 0 || ::ioctl(slave_, TIOCSCTTY, 0) != 0) {
      std::fprintf(stderr, "shoal: cannot take the terminal: %s\n", std::strerror(errno));
      ::_exit(127);
    }
    for (int fd = 0; fd <= 2; ++fd)
      ::dup2(slave_, fd);  // without close-on-exec, as dup2 makes them
    ::execvp(program[0], program);
    std::fprintf(stderr, "shoal: cannot run %s: %s\n", program[0], std::strerror(errno));
    ::_exit(127);
  }

  int Fail(const std::string& what) {
    std::fprintf(stderr, "shoal: the terminal of this step: %s: %s\n", what.c_str(),
                 std::strerror(errno));
    return 126;
  }

  // Until the program has ended: the terminal's output to stdout, the
  // input's frames to the terminal, signals to the program. Then what the
  // terminal still holds, until no process has it open, 100 ms pass without
  // output, or a second in all (something the program left behind may keep
  // it open, and writing; the supervisor ends it with the step).
  void Pump() {
    char buffer[16384];
    bool master_open = true;
    while (!ended_) {
      pollfd fds[3] = {{signals_, POLLIN, 0}, {master_, POLLIN, 0}, {input_, POLLIN, 0}};
      if (::poll(fds, master_open ? 3 : 1, -1) < 0 && errno != EINTR) break;
      if (master_open && fds[1].revents != 0) master_open = CopyOut(buffer, sizeof buffer);
      if (master_open && (fds[2].revents & POLLIN)) TakeInput();
      if (fds[0].revents & POLLIN) HandleSignals();
    }
    ::close(slave_);
    const auto drained_by = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (master_open && std::chrono::steady_clock::now() < drained_by) {
      pollfd fd{master_, POLLIN, 0};
      if (::poll(&fd, 1, 100) <= 0 || !CopyOut(buffer, sizeof buffer)) break;
    }
  }

  // False once the terminal has no other end.
  bool CopyOut(char* buffer, size_t size) {
    ssize_t n = ::read(master_, buffer, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) return false;  // EIO: no process has the terminal open
    WriteAll(STDOUT_FILENO, buffer, static_cast<size_t>(n));
    return true;
  }

  void TakeInput() {
    char buffer[kMaxFrameBytes];
    ssize_t n;
    while ((n = ::read(input_, buffer, sizeof buffer)) > 0)
      pending_.append(buffer, static_cast<size_t>(n));
    while (true) {
      Result<std::optional<InputFrame>> frame = TakeFrame(pending_);
      if (!frame.ok()) {
        std::fprintf(stderr, "shoal: terminal input: %s\n", frame.status().message().c_str());
        pending_.clear();
        return;
      }
      if (!frame->has_value()) return;
      const InputFrame& f = **frame;
      if (f.type == FrameType::kData) {
        WriteAll(master_, f.data.data(), f.data.size());
      } else if (f.type == FrameType::kResize) {
        winsize size{static_cast<unsigned short>(f.rows), static_cast<unsigned short>(f.cols), 0,
                     0};
        ::ioctl(master_, TIOCSWINSZ, &size);  // the kernel sends SIGWINCH
      } else {
        termios t{};
        const char eof = ::tcgetattr(master_, &t) == 0 ? static_cast<char>(t.c_cc[VEOF]) : '\x04';
        WriteAll(master_, &eof, 1);
      }
    }
  }

  void HandleSignals() {
    signalfd_siginfo info{};
    while (::read(signals_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGCHLD) {
        if (::waitpid(child_, &status_, WNOHANG) == child_) ended_ = true;
        continue;
      }
      ::kill(-child_, sig);
      // An interactive shell ignores SIGTERM; a hang-up ends it (and its jobs).
      if (sig == SIGTERM) ::kill(-child_, SIGHUP);
      if (pid_t foreground = ::tcgetpgrp(master_); foreground > 0 && foreground != child_)
        ::kill(-foreground, sig);
    }
  }

  // The program's way of ending, as the relay's own.
  int Ended() {
    if (!ended_) {
      ::kill(-child_, SIGKILL);
      ::waitpid(child_, &status_, 0);
    }
    if (WIFEXITED(status_)) return WEXITSTATUS(status_);
    const int sig = WIFSIGNALED(status_) ? WTERMSIG(status_) : SIGKILL;
    std::signal(sig, SIG_DFL);
    sigset_t just;
    sigemptyset(&just);
    sigaddset(&just, sig);
    ::sigprocmask(SIG_UNBLOCK, &just, nullptr);
    ::raise(sig);
    return 128 + sig;  // a signal whose default is to go on (not one that ends a program)
  }

  int master_ = -1;
  int slave_ = -1;
  int input_ = -1;
  int keep_open_ = -1;
  int signals_ = -1;
  pid_t child_ = -1;
  int status_ = 0;
  bool ended_ = false;
  std::string pending_;
};

}  // namespace

std::vector<std::string> DataFrames(std::string_view bytes) {
  std::vector<std::string> frames;
  constexpr size_t kMaxPayload = kMaxFrameBytes - kFrameHeaderBytes;
  for (size_t at = 0; at < bytes.size(); at += kMaxPayload)
    frames.push_back(Frame(FrameType::kData, bytes.substr(at, kMaxPayload)));
  return frames;
}

std::string ResizeFrame(int rows, int cols) {
  const char payload[4] = {static_cast<char>(rows >> 8 & 0xff), static_cast<char>(rows & 0xff),
                           static_cast<char>(cols >> 8 & 0xff), static_cast<char>(cols & 0xff)};
  return Frame(FrameType::kResize, std::string_view(payload, sizeof payload));
}

std::string EofFrame() {
  return Frame(FrameType::kEof, {});
}

Result<std::optional<InputFrame>> TakeFrame(std::string& buffer) {
  if (buffer.size() < kFrameHeaderBytes) return std::optional<InputFrame>();
  const size_t length = static_cast<size_t>(Uint16At(buffer, 1));
  if (buffer.size() < kFrameHeaderBytes + length) return std::optional<InputFrame>();
  InputFrame f;
  f.type = static_cast<FrameType>(buffer[0]);
  std::string_view payload = std::string_view(buffer).substr(kFrameHeaderBytes, length);
  switch (f.type) {
    case FrameType::kData:
      f.data = payload;
      break;
    case FrameType::kResize:
      if (length != 4) return InvalidArgument("a window size frame carries 4 bytes");
      f.rows = Uint16At(payload, 0);
      f.cols = Uint16At(payload, 2);
      break;
    case FrameType::kEof:
      break;
    default:
      return InvalidArgument(fmt::format("unknown frame type {}", static_cast<int>(buffer[0])));
  }
  buffer.erase(0, kFrameHeaderBytes + length);
  return std::optional<InputFrame>(std::move(f));
}

Status WriteTerminalInput(const std::string& path, const std::vector<std::string>& frames) {
  // Non-blocking: an open without a reader fails (ENXIO) instead of waiting.
  int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENXIO || errno == ENOENT)
      return Status(StatusCode::kUnavailable, "the step's terminal is not open");
    return Internal(ErrnoMessage("open " + path));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    ::close(fd);
    return Internal(path + " is not the step's terminal input");
  }
  Status result = Status::Ok();
  for (const std::string& frame : frames) {
    // Whole frames only: wait (at most 2 s) while the FIFO is too full for one.
    ssize_t n = -1;
    for (int tries = 0; tries < 200; ++tries) {
      n = ::write(fd, frame.data(), frame.size());
      if (n >= 0 || (errno != EAGAIN && errno != EINTR)) break;
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 10);
    }
    if (n != static_cast<ssize_t>(frame.size())) {
      result = Status(StatusCode::kUnavailable, "the step's terminal takes no more input now");
      break;
    }
  }
  ::close(fd);
  return result;
}

int RunPtyRelay(int argc, char** argv) {
  // shoal-step --pty-relay INPUT ROWS COLS -- PROGRAM ARGS...
  if (argc < 7 || std::strcmp(argv[5], "--") != 0) {
    std::fprintf(stderr, "usage: shoal-step --pty-relay INPUT ROWS COLS -- PROGRAM [ARGS...]\n");
    return 2;
  }
  const int rows = std::atoi(argv[3]);
  const int cols = std::atoi(argv[4]);
  return Relay().Run(argv[2], rows, cols, argv + 6);
}

}  // namespace shoal::agent
