#include "child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

extern char* program_invocation_short_name;

namespace shoal::acceptance {

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

void Die(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, message.c_str());
  std::exit(1);
}

std::string Child::Start(const std::vector<std::string>& argv, const std::string& log,
                         std::string_view ready) {
  log_ = log;
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("cannot write " + log);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) Die("fork");
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fd);
  for (int i = 0; i < 3000; ++i) {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      if (line.find(ready) != std::string::npos) return line;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      Die(argv[0] + " " + argv[1] + " exited: " + Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Die(argv[0] + " did not get ready (see " + log + ")");
}

void Child::Stop(int sig) {
  if (pid_ <= 0) return;
  ::kill(pid_, sig);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string Child::Log() const {
  std::stringstream all;
  all << std::ifstream(log_).rdbuf();
  return all.str();
}

namespace {
double RssMibOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      in >> kib;
      return kib / 1024;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}
}  // namespace

double Child::RssMib() const {
  return RssMibOf(pid_);
}

namespace {
// The numeric fields of /proc/<pid>/stat from the state on, indexed as
// stat(5) numbers them (so [4] is the parent's pid); empty when it is gone.
std::vector<double> StatFields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return {};
  // Fields after the command name (which may hold spaces) start at ") ".
  std::istringstream rest(text.substr(close + 2));
  std::vector<double> fields(3, 0.0);
  std::string field;
  while (rest >> field)
    fields.push_back(std::atof(field.c_str()));
  return fields;
}

// User + system time (fields 14, 15) and that of reaped children (16, 17).
double Seconds(const std::vector<double>& fields, int first) {
  if (fields.size() <= static_cast<size_t>(first + 1)) return 0;
  return (fields[first] + fields[first + 1]) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}
}  // namespace

double Child::CpuSeconds() const {
  return Seconds(StatFields(pid_), 14);
}

double Child::ChildrenCpuSeconds() const {
  return Seconds(StatFields(pid_), 16);
}

std::vector<pid_t> Child::LiveChildren() const {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::atoi(name.c_str());
    const std::vector<double> fields = StatFields(pid);
    if (fields.size() > 4 && static_cast<pid_t>(fields[4]) == pid_) out.push_back(pid);
  }
  return out;
}

double Child::LiveChildrenCpuSeconds() const {
  double sum = 0;
  for (pid_t pid : LiveChildren()) {
    const std::vector<double> fields = StatFields(pid);
    sum += Seconds(fields, 14) + Seconds(fields, 16);
  }
  return sum;
}

double Child::LiveChildrenRssMib() const {
  double sum = 0;
  for (pid_t pid : LiveChildren())
    sum += RssMibOf(pid);
  return sum;
}

std::string AddressIn(const std::string& line) {
  const size_t at = line.find("127.0.0.1:");
  if (at == std::string::npos) Die("no address in: " + line);
  size_t end = at + 10;
  while (end < line.size() && line[end] >= '0' && line[end] <= '9')
    ++end;
  return line.substr(at, end - at);
}

Latency Percentiles(std::vector<double>& ms) {
  Latency l;
  if (ms.empty()) return l;
  std::sort(ms.begin(), ms.end());
  l.p50_ms = ms[ms.size() / 2];
  l.p99_ms = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
  l.max_ms = ms.back();
  return l;
}

double RusageCpuSeconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// CPU seconds of each thread of `pid` so far, by thread id.
std::map<int, double> ThreadCpu(pid_t pid) {
  std::map<int, double> out;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(e.path() / "stat");
    in.ignore(1024, ')');  // past the thread's name
    std::string skip;
    for (int field = 3; field < 14; ++field)  // stat(5): utime and stime are 14 and 15
      in >> skip;
    double utime = 0, stime = 0;
    in >> utime >> stime;
    out[std::atoi(e.path().filename().c_str())] =
        (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  return out;
}

}  // namespace shoal::acceptance
