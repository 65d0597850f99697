#include "cli/paths.h"

#include <cstdlib>

namespace shoal::cli {

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

}  // namespace

std::string DefaultStateDir() {
  if (std::string d = Env("SHOAL_STATE_DIR"); !d.empty()) return d;
  if (std::string d = Env("XDG_DATA_HOME"); !d.empty()) return d + "/shoal";
  if (std::string h = Env("HOME"); !h.empty()) return h + "/.local/share/shoal";
  return "/var/lib/shoal";
}

std::string DefaultServer() {
  if (std::string s = Env("SHOAL_SERVER"); !s.empty()) return s;
  return "127.0.0.1:6820";
}

}  // namespace shoal::cli
