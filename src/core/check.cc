#include "core/check.h"

#include <cstdio>
#include <cstdlib>

namespace shoal::check_internal {

void CheckFailed(const char* file, int line, const char* condition, const char* message) noexcept {
  std::fprintf(stderr, "%s:%d: check failed: %s: %s\n", file, line, condition,
               message != nullptr ? message : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace shoal::check_internal
