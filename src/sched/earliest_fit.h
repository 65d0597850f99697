// When a request first fits as running work ends: the shadow-time search of
// EASY backfill (the pass's reservation for the job at the head of the
// queue) and of `shoal submit --test-only` (EstimateStart).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/time.h"
#include "sched/request.h"
#include "sched/working_state.h"

namespace shoal::sched {

// An allocation that running work frees at `at` (none: only a moment to try
// a placement at).
struct TimedRelease {
  Time at;
  const Allocation* alloc;
};

// Releases allocations into a state while counting the free whole GPUs on
// the nodes a request may use, so that a placement is tried only once it
// could succeed.
class ReleaseCounter {
 public:
  ReleaseCounter(WorkingState& state, const NodeBitset& eligible, const Request& req);

  void Release(const Allocation* a);
  bool MayFit() const { return !counting_ || free_ >= need_; }

 private:
  WorkingState& state_;
  const NodeBitset& eligible_;
  const int64_t need_;
  const bool counting_;
  int64_t free_ = 0;
};

// Applies `releases` to `shadow` in time order and tries `place` after each
// moment that frees enough room: the first moment it succeeds and where.
template <typename PlaceFn>
std::optional<std::pair<Time, Allocation>> EarliestFit(WorkingState& shadow,
                                                       std::vector<TimedRelease> releases,
                                                       const NodeBitset& eligible,
                                                       const Request& req, PlaceFn place) {
  std::stable_sort(releases.begin(), releases.end(),
                   [](const TimedRelease& a, const TimedRelease& b) { return a.at < b.at; });
  ReleaseCounter counter(shadow, eligible, req);
  for (size_t i = 0; i < releases.size();) {
    const Time at = releases[i].at;
    for (; i < releases.size() && releases[i].at == at; ++i)
      counter.Release(releases[i].alloc);
    if (!counter.MayFit()) continue;
    if (std::optional<Allocation> found = place(shadow)) return std::pair(at, std::move(*found));
  }
  return std::nullopt;
}

}  // namespace shoal::sched
