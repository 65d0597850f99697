#include "child.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

extern char* program_invocation_short_name;

namespace shoal::bench {

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void Die(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, message.c_str());
  std::exit(1);
}

std::string Child::Start(const std::vector<std::string>& argv, const std::string& log, std::string_view ready) {
  log_ = log;
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("cannot write " + log);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
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

double Child::RssMib() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
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

double Child::CpuSeconds() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) start at ") ".
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::string AddressIn(const std::string& line) {
  const size_t at = line.find("127.0.0.1:");
  if (at == std::string::npos) Die("no address in: " + line);
  size_t end = at + 10;
  while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
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

}  // namespace shoal::bench
