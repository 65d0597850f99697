#include "agent/launch/pty_relay.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/files.h"

extern char** environ;

namespace shoal::agent {
namespace {

TEST(PtyFrames, RoundTripWholeAndSplit) {
  std::string stream;
  for (const std::string& f : DataFrames("ls -l\n"))
    stream += f;
  stream += ResizeFrame(300, 1000);
  stream += EofFrame();
  // Fed a byte at a time, as reads of a FIFO may cut them.
  std::string buffer;
  std::vector<InputFrame> frames;
  for (char c : stream) {
    buffer.push_back(c);
    auto f = TakeFrame(buffer);
    ASSERT_TRUE(f.ok()) << f.status().message();
    if (f->has_value()) frames.push_back(**f);
  }
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].type, FrameType::kData);
  EXPECT_EQ(frames[0].data, "ls -l\n");
  EXPECT_EQ(frames[1].type, FrameType::kResize);
  EXPECT_EQ(frames[1].rows, 300);
  EXPECT_EQ(frames[1].cols, 1000);
  EXPECT_EQ(frames[2].type, FrameType::kEof);
  EXPECT_TRUE(buffer.empty());
}

TEST(PtyFrames, LargeInputIsCutIntoAtomicWrites) {
  const std::string typed(10000, 'x');
  std::vector<std::string> frames = DataFrames(typed);
  ASSERT_EQ(frames.size(), 3u);
  std::string joined;
  for (std::string& f : frames) {
    EXPECT_LE(f.size(), kMaxFrameBytes);
    auto taken = TakeFrame(f);
    ASSERT_TRUE(taken.ok() && taken->has_value());
    joined += (*taken)->data;
  }
  EXPECT_EQ(joined, typed);
}

TEST(PtyFrames, GarbageIsAnError) {
  std::string buffer = std::string("z\0\1", 3) + "q";
  EXPECT_FALSE(TakeFrame(buffer).ok());
  std::string bad_resize = std::string("w\0\2", 3) + "ab";
  EXPECT_FALSE(TakeFrame(bad_resize).ok());
}

TEST(PtyInput, NoReaderIsUnavailableAndNotAFifoIsRefused) {
  std::string tmpl = std::filesystem::temp_directory_path() / "shoal-pty-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string fifo = tmpl + "/input";
  EXPECT_EQ(WriteTerminalInput(fifo, DataFrames("x")).code(), StatusCode::kUnavailable);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(WriteTerminalInput(fifo, DataFrames("x")).code(), StatusCode::kUnavailable)
      << "nobody reads it";
  const std::string file = tmpl + "/file";
  ASSERT_TRUE(WriteFile(file, "", 0600).ok());
  const std::string link = tmpl + "/link";
  ASSERT_EQ(::symlink(file.c_str(), link.c_str()), 0);
  EXPECT_FALSE(WriteTerminalInput(file, DataFrames("x")).ok()) << "a plain file";
  EXPECT_FALSE(WriteTerminalInput(link, DataFrames("x")).ok()) << "a symbolic link";
  std::filesystem::remove_all(tmpl);
}

// Starts `shoal-step --pty-relay FIFO 24 90 -- /bin/sh -c SCRIPT` with its
// stdout in `out`, as the supervisor starts task 0 of a --pty step.
pid_t StartRelay(const std::string& fifo, const std::string& out, const std::string& script) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> args = {SHOAL_STEP_BINARY, "--pty-relay", fifo,  "24", "90", "--",
                                   "/bin/sh",         "-c",          script};
  std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// The relay as the supervisor starts it (shoal-step --pty-relay): the program
// sees a terminal on stdin and stdout, reads what is typed through the FIFO,
// and the relay exits as it did.
TEST(PtyRelay, RunsAProgramOnATerminalFedFromTheFifo) {
  std::string tmpl = std::filesystem::temp_directory_path() / "shoal-pty-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string fifo = tmpl + "/input";
  const std::string out = tmpl + "/out";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t pid = StartRelay(fifo, out,
                               "stty size; [ -t 0 ] && [ -t 1 ] && echo on-a-terminal; read line; "
                               "echo \"got [$line]\"; read rest; echo \"then [$rest]\"; exit 5");
  ASSERT_GT(pid, 0);

  // Until the relay opens the FIFO, input is refused as not open.
  Status typed = Status(StatusCode::kUnavailable, "");
  for (int i = 0; i < 500 && typed.code() == StatusCode::kUnavailable; ++i) {
    typed = WriteTerminalInput(fifo, DataFrames("hello relay\n"));
    if (!typed.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(typed.ok()) << typed.message();
  // The end of input: `read rest` gets end-of-file with nothing typed.
  ASSERT_TRUE(WriteTerminalInput(fifo, {EofFrame()}).ok());
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 5);
  auto shown = ReadFile(out);
  ASSERT_TRUE(shown.ok());
  EXPECT_NE(shown->find("24 90"), std::string::npos) << *shown;
  EXPECT_NE(shown->find("on-a-terminal"), std::string::npos) << *shown;
  EXPECT_NE(shown->find("got [hello relay]"), std::string::npos) << *shown;
  EXPECT_NE(shown->find("then []"), std::string::npos) << *shown;
  // Gone with the relay: nobody holds the FIFO open any more.
  EXPECT_EQ(WriteTerminalInput(fifo, DataFrames("late\n")).code(), StatusCode::kUnavailable);
  std::filesystem::remove_all(tmpl);
}

// A program that leaves something behind that keeps writing to the terminal:
// the relay still ends soon after the program (the supervisor then ends the
// rest with the step), with the program's exit code.
TEST(PtyRelay, EndsSoonAfterItsProgramDespiteWhatItLeftBehind) {
  std::string tmpl = std::filesystem::temp_directory_path() / "shoal-pty-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string fifo = tmpl + "/input";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The writer ignores the hang-up its session's end sends, and stops by
  // itself after about 10 s if this test does not stop it first.
  const std::string writer = tmpl + "/writer.sh";
  ASSERT_TRUE(WriteFile(writer,
                        "trap '' HUP\necho $$ > " + tmpl +
                            "/writer.pid\ni=0\nwhile [ $i -lt 1000 ]; do echo more; sleep 0.01; "
                            "i=$((i+1)); done\n",
                        0600)
                  .ok());
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = StartRelay(fifo, tmpl + "/out", "sh " + writer + " & sleep 0.2; exit 3");
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const auto took = std::chrono::steady_clock::now() - start;
  if (auto w = ReadFile(tmpl + "/writer.pid"); w.ok()) ::kill(std::atoi(w->c_str()), SIGKILL);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_LT(took, std::chrono::seconds(6)) << "the relay waited for the writer it left behind";
  auto shown = ReadFile(tmpl + "/out");
  ASSERT_TRUE(shown.ok());
  EXPECT_NE(shown->find("more"), std::string::npos) << "what the writer wrote meanwhile is kept";
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace shoal::agent
