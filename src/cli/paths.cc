#include "cli/paths.h"

#include <semaphore.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/strings.h"

namespace shoal::cli {

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

volatile std::sig_atomic_t g_stop = 0;
sem_t g_stop_posted;  // posted by the handler (async-signal-safe), on whatever thread takes it

void OnSignal(int) {
  g_stop = 1;
  ::sem_post(&g_stop_posted);
}

}  // namespace

std::string CompanionPath(const std::string& name) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? name : (self.parent_path() / name).string();
}

DataDirChoice ChooseDataDir(const std::string& flag) {
  if (!flag.empty()) return {flag, "--data"};
  if (std::string d = Env("SHOAL_DATA_DIR"); !d.empty()) return {d, "$SHOAL_DATA_DIR"};
  std::error_code ec;
  std::string installed;
  if (const auto self = std::filesystem::read_symlink("/proc/self/exe", ec); !ec) {
    installed = (self.parent_path() / SHOAL_INSTALLED_DATA_DIR).lexically_normal().string();
    if (std::filesystem::is_directory(installed, ec)) return {installed, "install prefix"};
  }
  if (std::filesystem::is_directory(SHOAL_BUILD_DATA_DIR, ec))
    return {SHOAL_BUILD_DATA_DIR, "source tree"};
  return {installed.empty() ? std::string(SHOAL_BUILD_DATA_DIR) : installed, "missing"};
}

std::string DataDir(const std::string& flag) {
  return ChooseDataDir(flag).path;
}

std::string FindInData(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path given(path);
  if (path.empty() || given.is_absolute() || fs::exists(given, ec)) return path;
  const fs::path data(DataDir());
  std::vector<fs::path> candidates = {data / "traces" / given, data / given};
  if (auto it = given.begin(); it != given.end() && *it == "data") {
    candidates.push_back(data / given.lexically_relative("data"));
  }
  for (const fs::path& c : candidates) {
    if (fs::exists(c, ec)) return c.string();
  }
  return path;
}

void WaitForStopSignal() {
  // Asleep until a signal comes (a daemon's main thread polling a flag
  // woke ten times a second, for nothing).
  ::sem_init(&g_stop_posted, 0, 0);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  while (g_stop == 0)
    ::sem_wait(&g_stop_posted);  // again after EINTR
}

std::string DefaultStateDir() {
  if (std::string d = Env("SHOAL_STATE_DIR"); !d.empty()) return d;
  if (std::string d = Env("XDG_DATA_HOME"); !d.empty()) return d + "/shoal";
  if (std::string h = Env("HOME"); !h.empty()) return h + "/.local/share/shoal";
  return "/var/lib/shoal";
}

std::string DefaultServer() {
  if (std::string s = Env("SHOAL_SERVER"); !s.empty()) return s;
  std::ifstream in(DefaultStateDir() + "/endpoint");
  std::string line;
  if (in && std::getline(in, line) && !Trim(line).empty()) return std::string(Trim(line));
  return std::string(kDefaultServerAddress);
}

}  // namespace shoal::cli
