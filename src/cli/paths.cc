#include "cli/paths.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace shoal::cli {

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

volatile std::sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

}  // namespace

std::string CompanionPath(const std::string& name) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? name : (self.parent_path() / name).string();
}

void WaitForStopSignal() {
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  while (g_stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

std::string DefaultStateDir() {
  if (std::string d = Env("SHOAL_STATE_DIR"); !d.empty()) return d;
  if (std::string d = Env("XDG_DATA_HOME"); !d.empty()) return d + "/shoal";
  if (std::string h = Env("HOME"); !h.empty()) return h + "/.local/share/shoal";
  return "/var/lib/shoal";
}

std::string DefaultServer() {
  if (std::string s = Env("SHOAL_SERVER"); !s.empty()) return s;
  return std::string(kDefaultServerAddress);
}

}  // namespace shoal::cli
