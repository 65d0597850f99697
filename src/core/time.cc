#include "core/time.h"

#include <fmt/format.h>

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

}  // namespace shoal
