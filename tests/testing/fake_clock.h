// Clocks for tests of code that takes a Clock (STYLE habit 5): a test moves
// time across an interval by saying so, instead of sleeping until it passes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "core/time.h"

namespace shoal::testing {

// The wall clock, plus the jumps a test makes. For code that runs live (the
// control loop waits on real time between ticks, so a clock that stood still
// would stop it): time goes on as usual, and Jump(d) makes every later Now()
// d later, so that a node timeout, a time limit or a sampling interval is
// crossed at once. Never goes back. Thread-safe.
class JumpingClock final : public Clock {
 public:
  Time Now() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()) +
           Duration(offset_ms_.load(std::memory_order_acquire));
  }

  void Jump(Duration d) {
    if (d.count() > 0) offset_ms_.fetch_add(d.count(), std::memory_order_acq_rel);
  }

 private:
  std::atomic<int64_t> offset_ms_{0};
};

}  // namespace shoal::testing
