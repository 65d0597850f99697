#include "cli/terminal.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <string>

namespace shoal::cli {

namespace {

using Clock = std::chrono::steady_clock;

// One session a process: the local terminal's settings before it, and
// whether the window changed size since the last look.
termios g_saved{};
std::atomic<bool> g_resized{false};

extern "C" void OnWindowChange(int) {
  g_resized.store(true);
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

}  // namespace

TerminalSession::TerminalSession(ApiClient client, uint64_t job, uint32_t step)
    : client_(std::move(client)), job_(job), step_(step) {
  if (::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &g_saved) == 0) {
    termios raw = g_saved;
    ::cfmakeraw(&raw);
    // TCSADRAIN, not TCSAFLUSH: what was typed ahead stays, to be sent.
    raw_ = ::tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
    std::signal(SIGWINCH, OnWindowChange);
  }
  thread_ = std::thread([this] { Run(); });
}

TerminalSession::~TerminalSession() {
  stop_.store(true);
  thread_.join();
  if (raw_) ::tcsetattr(STDIN_FILENO, TCSADRAIN, &g_saved);
}

bool TerminalSession::TypedWithin(std::chrono::milliseconds window) const {
  return NowMs() - last_sent_ms_.load() < window.count();
}

std::pair<int, int> TerminalSession::WindowSize() {
  winsize size{};
  for (int fd : {STDOUT_FILENO, STDIN_FILENO}) {
    if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_row > 0) return {size.ws_row, size.ws_col};
  }
  return {0, 0};
}

bool TerminalSession::Send(const std::string& bytes, bool resize, bool eof) {
  std::string path = fmt::format("/v1/jobs/{}/steps/{}/input", job_, step_);
  char sep = '?';
  if (resize) {
    auto [rows, cols] = WindowSize();
    path += fmt::format("{}rows={}&cols={}", sep, rows, cols);
    sep = '&';
  }
  if (eof) path += fmt::format("{}eof=1", sep);
  // Until the step's terminal is open (its task starting), for at most 30 s.
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!stop_.load()) {
    auto r = client_.PostRaw(path, bytes);
    if (r.ok()) {
      last_sent_ms_.store(NowMs());
      return true;
    }
    if (r.status().code() != StatusCode::kUnavailable || Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void TerminalSession::Run() {
  bool input_open = true;
  char buffer[4096];
  while (!stop_.load()) {
    if (g_resized.exchange(false)) Send("", /*resize=*/true, /*eof=*/false);
    pollfd in{STDIN_FILENO, POLLIN, 0};
    if (!input_open || ::poll(&in, 1, 100) <= 0) {
      if (!input_open) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0) continue;  // EINTR, EAGAIN
    if (n == 0) {
      input_open = false;  // the end of what was piped in
      Send("", /*resize=*/false, /*eof=*/true);
      continue;
    }
    Send(std::string(buffer, static_cast<size_t>(n)), /*resize=*/false, /*eof=*/false);
  }
}

}  // namespace shoal::cli
