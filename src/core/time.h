// Time on a Shoal timeline, in milliseconds.
//
// On a live cluster a Time is Unix time; in simulation it is time since the
// trace began. Nothing in core/ or sched/ reads a clock: time is always handed
// in (STYLE habit 5), through the Clock interface where something must ask.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace shoal {

using Duration = std::chrono::milliseconds;
using Time = std::chrono::time_point<std::chrono::system_clock, Duration>;

inline constexpr Time kTimeZero{};
inline constexpr Time kTimeNever = Time(Duration(INT64_MAX / 4));

// Rounded to the nearest millisecond, so that seconds written out and read
// back give the same time.
inline Time TimeFromSeconds(double seconds) {
  return Time(Duration(std::llround(seconds * 1000.0)));
}
inline Duration DurationFromSeconds(double seconds) {
  return Duration(std::llround(seconds * 1000.0));
}
constexpr double ToSeconds(Duration d) {
  return static_cast<double>(d.count()) / 1000.0;
}
constexpr double ToSeconds(Time t) {
  return ToSeconds(t.time_since_epoch());
}

// Parses a time limit in Slurm's forms ("minutes", "minutes:seconds",
// "hours:minutes:seconds", "days-hours", "days-hours:minutes",
// "days-hours:minutes:seconds") or with a unit suffix ("200ms", "90s", "45m", "2h", "3d").
Result<Duration> ParseDuration(std::string_view text);

// "1-02:03:04" for durations of a day or more, else "02:03:04".
std::string FormatDuration(Duration d);

// A moment in UTC: "YYYY-MM-DD", "YYYY-MM-DDTHH:MM" or "YYYY-MM-DDTHH:MM:SS",
// with an optional trailing Z, or Unix seconds (all digits, up to the year 9999).
Result<Time> ParseUtcTime(std::string_view text);

// "2026-12-02T10:00:00" (UTC, to the second).
std::string FormatTime(Time t);

// Where the current time comes from, for the parts of Shoal that run live.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time Now() const = 0;
};

// The wall clock.
class SystemClock final : public Clock {
 public:
  Time Now() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
};

}  // namespace shoal
