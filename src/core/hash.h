// FNV-1a, 64 bits: a hash that is the same on every platform and in every
// release (unlike std::hash), for names derived from text that must not
// change between runs: simulated GPUs' UUIDs, a steps folder's cgroup
// name, `shoal up`'s runtime folder.
#pragma once

#include <cstdint>
#include <string_view>

namespace shoal {

inline constexpr uint64_t kFnv1aBasis = 0xcbf29ce484222325ULL;

constexpr uint64_t Fnv1a(std::string_view text, uint64_t seed = kFnv1aBasis) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace shoal
