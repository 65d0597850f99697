#include "core/time.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/strings.h"

namespace shoal {

namespace {

// A field of a time limit: a number of at most 9 digits (a century is under
// 10^10 seconds), so no arithmetic below can overflow.
Result<int64_t> Field(std::string_view text, std::string_view whole) {
  auto v = ParseInt(text);
  if (!v.ok() || *v < 0 || *v > 999'999'999) {
    return InvalidArgument(
        fmt::format("'{}' is not a time limit (use e.g. 90, 1:30:00, 2-00:00:00 or 4h)", whole));
  }
  return *v;
}

}  // namespace

Result<Duration> ParseDuration(std::string_view text) {
  std::string_view s = Trim(text);
  if (s.empty()) return InvalidArgument("empty time limit");
  if (s.ends_with("ms")) {
    SHOAL_ASSIGN_OR_RETURN(int64_t n, Field(s.substr(0, s.size() - 2), text));
    return Duration(n);
  }
  char last = s.back();
  if (last == 's' || last == 'm' || last == 'h' || last == 'd') {
    SHOAL_ASSIGN_OR_RETURN(int64_t n, Field(s.substr(0, s.size() - 1), text));
    int64_t seconds = last == 's' ? n : last == 'm' ? n * 60 : last == 'h' ? n * 3600 : n * 86400;
    return Duration(seconds * 1000);
  }
  int64_t days = 0;
  std::string_view rest = s;
  size_t dash = s.find('-');
  if (dash != std::string_view::npos) {
    SHOAL_ASSIGN_OR_RETURN(days, Field(s.substr(0, dash), text));
    rest = s.substr(dash + 1);
  }
  std::vector<std::string_view> parts = Split(rest, ':');
  if (parts.size() > 3) return InvalidArgument(fmt::format("'{}' has too many ':' fields", text));
  std::vector<int64_t> v;
  for (std::string_view p : parts) {
    SHOAL_ASSIGN_OR_RETURN(int64_t n, Field(p, text));
    v.push_back(n);
  }
  int64_t seconds = 0;
  if (dash != std::string_view::npos) {
    // days-hours[:minutes[:seconds]]
    seconds = days * 86400 + v[0] * 3600;
    if (v.size() > 1) seconds += v[1] * 60;
    if (v.size() > 2) seconds += v[2];
  } else if (v.size() == 1) {
    seconds = v[0] * 60;  // minutes
  } else if (v.size() == 2) {
    seconds = v[0] * 60 + v[1];  // minutes:seconds
  } else {
    seconds = v[0] * 3600 + v[1] * 60 + v[2];
  }
  return Duration(seconds * 1000);
}

std::string FormatDuration(Duration d) {
  int64_t total = d.count() / 1000;
  bool negative = total < 0;
  if (negative) total = -total;
  int64_t days = total / 86400;
  int64_t h = (total % 86400) / 3600;
  int64_t m = (total % 3600) / 60;
  int64_t s = total % 60;
  std::string out = negative ? "-" : "";
  if (days > 0) out += fmt::format("{}-", days);
  out += fmt::format("{:02}:{:02}:{:02}", h, m, s);
  return out;
}

Result<Time> ParseUtcTime(std::string_view text) {
  constexpr std::string_view kForms = "give Unix seconds or YYYY-MM-DD[THH:MM[:SS]] (UTC)";
  constexpr int64_t kMaxUnixSeconds = 253'402'300'799;  // 9999-12-31T23:59:59
  std::string_view s = text;
  auto all_digits = [](std::string_view d) {
    return !d.empty() &&
           std::all_of(d.begin(), d.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  };
  if (all_digits(s)) {
    if (s.size() > 12) return InvalidArgument(fmt::format("'{}' is too far in the future", text));
    int64_t seconds = 0;
    for (char ch : s)
      seconds = seconds * 10 + (ch - '0');
    if (seconds > kMaxUnixSeconds)
      return InvalidArgument(fmt::format("'{}' is too far in the future", text));
    return Time(Duration(seconds * 1000));
  }
  // Fixed positions: YYYY-MM-DD, then THH:MM and :SS, then an optional Z.
  if (!s.empty() && (s.back() == 'Z' || s.back() == 'z')) s.remove_suffix(1);
  auto digits_at = [&](size_t pos, size_t n) -> std::optional<int> {
    if (pos + n > s.size() || !all_digits(s.substr(pos, n))) return std::nullopt;
    int v = 0;
    for (char ch : s.substr(pos, n))
      v = v * 10 + (ch - '0');
    return v;
  };
  const bool shape_ok = (s.size() == 10 || s.size() == 16 || s.size() == 19) && s[4] == '-' &&
                        s[7] == '-' && (s.size() == 10 || (s[10] == 'T' && s[13] == ':')) &&
                        (s.size() != 19 || s[16] == ':');
  if (!shape_ok) return InvalidArgument(fmt::format("'{}': unsupported form: {}", text, kForms));
  const auto year = digits_at(0, 4);
  const auto month = digits_at(5, 2);
  const auto day = digits_at(8, 2);
  const auto hour = s.size() > 10 ? digits_at(11, 2) : std::optional<int>(0);
  const auto minute = s.size() > 10 ? digits_at(14, 2) : std::optional<int>(0);
  const auto second = s.size() > 16 ? digits_at(17, 2) : std::optional<int>(0);
  if (!year || !month || !day || !hour || !minute || !second)
    return InvalidArgument(fmt::format("'{}': unsupported form: {}", text, kForms));
  const std::chrono::year_month_day date{std::chrono::year(*year),
                                         std::chrono::month(static_cast<unsigned>(*month)),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok() || *year < 1970 || *hour > 23 || *minute > 59 || *second > 59)
    return InvalidArgument(fmt::format("'{}' is not a valid date and time", text));
  const auto when = std::chrono::sys_days(date) + std::chrono::hours(*hour) +
                    std::chrono::minutes(*minute) + std::chrono::seconds(*second);
  return std::chrono::time_point_cast<Duration>(when);
}

std::string FormatTime(Time t) {
  if (t == kTimeNever) return "never";
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  const auto days = std::chrono::floor<std::chrono::days>(secs);
  const std::chrono::year_month_day date(days);
  const std::chrono::hh_mm_ss<std::chrono::seconds> hms(secs - days);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                     hms.hours().count(), hms.minutes().count(), hms.seconds().count());
}

}  // namespace shoal
