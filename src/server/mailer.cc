#include "server/mailer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/log.h"

extern char** environ;

namespace shoal::server {

namespace {

std::string HeaderValue(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    out.push_back(u < 0x20 || u == 0x7f ? ' ' : ch);
  }
  return out;
}

// Writes all of `data` to `fd`; false when the reader went away.
bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string Mailer::Message(const MailOrder& m) {
  return fmt::format("To: {}\nSubject: {}\n\n{}\n", HeaderValue(m.to), HeaderValue(m.subject),
                     m.body);
}

Status RunMailProgram(const std::string& program, const std::string& message, Duration timeout) {
  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Internal(fmt::format("pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string arg0 = program, t = "-t", oi = "-oi";
  char* argv[] = {arg0.data(), t.data(), oi.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  if (rc != 0) {
    ::close(in[1]);
    return Unavailable(fmt::format("cannot run {}: {}", program, std::strerror(rc)));
  }
  const bool written = WriteAll(in[1], message);
  ::close(in[1]);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return Internal(fmt::format("waitpid: {}", std::strerror(errno)));
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return Unavailable(
          fmt::format("{} took more than {} s and was killed", program, ToSeconds(timeout)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && written) return Status::Ok();
  if (WIFSIGNALED(status))
    return Unavailable(fmt::format("{} was killed by signal {}", program, WTERMSIG(status)));
  return Unavailable(fmt::format("{} exited with {}{}", program,
                                 WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                                 written ? "" : " before reading the whole message"));
}

std::string DefaultMailProgram() {
  for (const char* path : {"/usr/sbin/sendmail", "/usr/lib/sendmail"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

Mailer::Mailer(std::string program, size_t max_queue, Duration timeout)
    : program_(std::move(program)), max_queue_(max_queue), timeout_(timeout) {
  worker_ = std::thread([this] { Work(); });
}

Mailer::~Mailer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    dropped_ += queue_.size();
    queue_.clear();
  }
  cv_.notify_all();
  worker_.join();
}

void Mailer::Send(std::vector<MailOrder> mails) {
  if (mails.empty()) return;
  {
    std::lock_guard lock(mu_);
    for (MailOrder& m : mails) {
      if (queue_.size() >= max_queue_) {
        ++dropped_;
        continue;
      }
      queue_.push_back(std::move(m));
    }
  }
  cv_.notify_one();
}

void Mailer::Flush() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

uint64_t Mailer::sent() const {
  std::lock_guard lock(mu_);
  return sent_;
}
uint64_t Mailer::failed() const {
  std::lock_guard lock(mu_);
  return failed_;
}
uint64_t Mailer::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

void Mailer::Work() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    MailOrder m = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    const Status s = RunMailProgram(program_, Message(m), timeout_);
    if (!s.ok()) {
      log::Warning("mail.failed", {{"to", m.to}, {"error", s.message()}});
    }
    lock.lock();
    busy_ = false;
    (s.ok() ? sent_ : failed_) += 1;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace shoal::server
