// The terminal of `shoal run --pty` (srun --pty): task 0 of such a step runs
// as `shoal-step --pty-relay INPUT ROWS COLS -- PROGRAM ARGS...`, started by
// the supervisor like any task (its session, its cgroup, the job's user, its
// stdout in the task's output file, stdin /dev/null). The relay opens a
// pseudo-terminal, runs PROGRAM on it (in a session of its own, the terminal
// its controlling one), copies what the terminal shows into its stdout (the
// output file `shoal run` follows), and what arrives on the FIFO INPUT into
// the terminal. SIGTERM, SIGINT and SIGHUP sent to the relay go on to
// PROGRAM's session and to the terminal's foreground process group. The relay
// ends when PROGRAM has ended and the terminal is drained, and exits as
// PROGRAM did (the same code, or the same signal).
//
// INPUT carries frames written by the agent (the user's keystrokes, window
// sizes, end of input), each written whole in one write of at most PIPE_BUF
// bytes, so that writers' frames never interleave: a type byte, a 16-bit
// big-endian payload length, the payload.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shoal::agent {

// The input FIFO's name in the step's folder.
inline constexpr char kTerminalInputFile[] = "input";
inline constexpr size_t kMaxFrameBytes = 4096;  // PIPE_BUF on Linux
inline constexpr size_t kFrameHeaderBytes = 3;

enum class FrameType : char {
  kData = 'd',    // bytes typed
  kResize = 'w',  // the window's rows and columns (16 bits each)
  kEof = 'e',     // the end of input: the terminal's end-of-file character
};

struct InputFrame {
  FrameType type = FrameType::kData;
  std::string data;
  int rows = 0;
  int cols = 0;
};

// `bytes` as data frames of at most kMaxFrameBytes each.
std::vector<std::string> DataFrames(std::string_view bytes);
std::string ResizeFrame(int rows, int cols);
std::string EofFrame();

// Takes the first whole frame off `buffer`; nullopt while it holds only part
// of one. An unknown type is an error (the rest of `buffer` is unusable).
Result<std::optional<InputFrame>> TakeFrame(std::string& buffer);

// For the agent: writes `frames` (each whole, in order) into the FIFO at
// `path`, a FIFO that the relay holds open; Unavailable while it does not
// (the step has not started yet or has ended). Never follows a symbolic link
// and writes into nothing but a FIFO.
Status WriteTerminalInput(const std::string& path, const std::vector<std::string>& frames);

// `shoal-step --pty-relay INPUT ROWS COLS -- PROGRAM ARGS...` (argv as main
// has it): returns the exit code, or ends by PROGRAM's signal.
int RunPtyRelay(int argc, char** argv);

}  // namespace shoal::agent
