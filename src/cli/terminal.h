// The local end of `shoal run --pty`: what is typed here goes to the
// step's terminal (POST /v1/jobs/{id}/steps/{step}/input), from a thread of
// its own, while the caller prints what the terminal shows. When standard
// input is a terminal it is put in raw mode for the session (keys such as
// Ctrl-C and Ctrl-D go to the remote program, as ssh does) and its window
// size follows changes (SIGWINCH); otherwise standard input is sent as it
// comes and its end becomes the terminal's end-of-file character.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "cli/client.h"

namespace shoal::cli {

class TerminalSession {
 public:
  // Starts sending at once; the step's terminal may open a little later
  // (its input is retried for a while until then).
  TerminalSession(ApiClient client, uint64_t job, uint32_t step);
  // Stops sending and gives the local terminal its settings back.
  ~TerminalSession();
  TerminalSession(const TerminalSession&) = delete;
  TerminalSession& operator=(const TerminalSession&) = delete;

  // Whether something was sent within `window` (its echo is likely on its way).
  bool TypedWithin(std::chrono::milliseconds window) const;

  // The local terminal's rows and columns (0 when standard output is not a terminal).
  static std::pair<int, int> WindowSize();

 private:
  void Run();
  // Sends `bytes` (with the window's size and the end of input when asked);
  // false when the terminal did not take them in time.
  bool Send(const std::string& bytes, bool resize, bool eof);

  ApiClient client_;
  uint64_t job_;
  uint32_t step_;
  bool raw_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> last_sent_ms_{0};
  std::thread thread_;
};

}  // namespace shoal::cli
