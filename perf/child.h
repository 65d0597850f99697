// What the benchmarks share: Shoal's programs as child processes on
// loopback, read through /proc, and latency percentiles.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::acceptance {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d);

// Prints "<program>: <message>" and exits 1.
[[noreturn]] void Die(const std::string& message);

// A child process (never outliving the benchmark: PR_SET_PDEATHSIG) whose
// stdout and stderr go to a log file.
class Child {
 public:
  Child() = default;
  ~Child() { Stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Starts argv and waits (up to 30 s) until a line of its output holds
  // `ready`; returns that line. Dies when the child exits first.
  std::string Start(const std::vector<std::string>& argv, const std::string& log,
                    std::string_view ready);
  // Sends `sig` and waits; nothing when not running.
  void Stop(int sig = 15 /* SIGTERM */);
  // Everything it has printed so far.
  std::string Log() const;

  pid_t pid() const { return pid_; }
  double RssMib() const;      // resident memory now
  double CpuSeconds() const;  // user + system CPU time so far
  // The same of its children that it has waited for (and theirs).
  double ChildrenCpuSeconds() const;
  // Its children that are still running.
  std::vector<pid_t> LiveChildren() const;
  // Their CPU time, with what they have waited for (a long-lived child's
  // reaped children count there), and their resident memory now.
  double LiveChildrenCpuSeconds() const;
  double LiveChildrenRssMib() const;

 private:
  pid_t pid_ = -1;
  std::string log_;
};

// "127.0.0.1:1234" from a line such as "... listening on http://127.0.0.1:1234 ...".
std::string AddressIn(const std::string& line);

// User + system CPU seconds of getrusage(2)'s `who`: RUSAGE_SELF (this
// process) or RUSAGE_CHILDREN (its children it has waited for).
double RusageCpuSeconds(int who);

// CPU seconds of each thread of `pid` so far, by thread id (/proc/PID/task).
std::map<int, double> ThreadCpu(pid_t pid);

struct Latency {
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
};
// Percentiles of samples in milliseconds (sorts them).
Latency Percentiles(std::vector<double>& ms);

}  // namespace shoal::acceptance
