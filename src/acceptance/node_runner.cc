#include "acceptance/node_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace shoal::acceptance {

namespace {

constexpr size_t kMaxOutputBytes = size_t{256} << 20;

bool IsExecutable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Closes both ends of a pipe on scope exit unless released.
struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
  void Close(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

}  // namespace

Result<std::string> FindNodeBinary() {
  if (const char* env = std::getenv("SHOAL_BENCH_NODE"); env != nullptr && *env != '\0') {
    if (IsExecutable(env)) return std::string(env);
    return NotFound(fmt::format("SHOAL_BENCH_NODE={} is not an executable file", env));
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return NotFound(
        fmt::format("cannot tell where this program is (/proc/self/exe: {})", ec.message()));
  const std::string candidate = (self.parent_path() / kNodeBinaryName).string();
  if (IsExecutable(candidate)) return candidate;
  return NotFound(
      fmt::format("{} is not installed beside {} (looked for {}); it is built only where the CUDA "
                  "toolkit is found: "
                  "build on a GPU host (scripts/bench-gpu-host.sh) or set SHOAL_BENCH_NODE",
                  kNodeBinaryName, self.string(), candidate));
}

Result<NodeRun> RunNode(const NodeRunOptions& options) {
  std::string binary = options.binary;
  if (binary.empty()) {
    SHOAL_ASSIGN_OR_RETURN(binary, FindNodeBinary());
  } else if (!IsExecutable(binary)) {
    return NotFound(fmt::format("{} is not an executable file", binary));
  }
  const std::string name = std::filesystem::path(binary).filename().string();

  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls are allowed.
  std::vector<std::string> args = {binary};
  for (std::string& a : NodeArgs(options.node))
    args.push_back(std::move(a));
  std::vector<std::string> env;
  bool has_order = false;
  for (char** e = environ; *e != nullptr; ++e) {
    env.emplace_back(*e);
    if (std::strncmp(*e, "CUDA_DEVICE_ORDER=", 18) == 0) has_order = true;
  }
  // GPU indices then follow PCI order, as nvidia-smi and NVML number them.
  if (!has_order) env.emplace_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
  env.insert(env.end(), options.extra_env.begin(), options.extra_env.end());
  std::vector<char*> argv, envp;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  Pipe out, exec_error;
  if (::pipe2(out.fd, O_CLOEXEC) != 0 || ::pipe2(exec_error.fd, O_CLOEXEC) != 0) {
    return Internal(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid < 0) return Internal(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::dup2(out.fd[1], STDOUT_FILENO);
    ::execve(binary.c_str(), argv.data(), envp.data());
    const int err = errno;
    (void)!::write(exec_error.fd[1], &err, sizeof(err));
    ::_exit(127);
  }
  out.Close(1);
  exec_error.Close(1);

  TelemetrySampler sampler(options.telemetry, options.telemetry_interval_ms);
  sampler.Start();

  std::string text;
  bool timed_out = false, too_long = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_s);
  char buf[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out.fd[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(out.fd[0], buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buf, static_cast<size_t>(got));
    if (text.size() > kMaxOutputBytes) {
      too_long = true;
      break;
    }
  }
  if (timed_out || too_long) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sampler.Stop();

  int exec_errno = 0;
  if (::read(exec_error.fd[0], &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno)) {
    return Internal(fmt::format("cannot run {}: {}", binary, std::strerror(exec_errno)));
  }
  if (timed_out)
    return Status(StatusCode::kUnavailable,
                  fmt::format("{} ran past {} s and was stopped", name, options.timeout_s));
  if (too_long)
    return Internal(
        fmt::format("{} printed more than {} MiB; stopped", name, kMaxOutputBytes >> 20));
  if (WIFSIGNALED(status)) {
    return Internal(fmt::format("{} was killed by signal {} ({})", name, WTERMSIG(status),
                                strsignal(WTERMSIG(status))));
  }
  if (WEXITSTATUS(status) != 0) {
    return Internal(fmt::format("{} exited with status {} (its messages are above)", name,
                                WEXITSTATUS(status)));
  }
  auto results = ParseNodeResults(text);
  if (!results.ok()) {
    return InvalidArgument(
        fmt::format("{} printed malformed results: {}", name, results.status().message()));
  }
  return NodeRun{std::move(results).value(), sampler.Samples()};
}

}  // namespace shoal::acceptance
