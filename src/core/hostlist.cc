#include "core/hostlist.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace shoal {

namespace {

// A name split into its prefix and trailing number (digits kept as
// written, so that zero padding survives).
struct Split {
  std::string_view prefix;
  std::string_view digits;  // empty: no trailing number
};

Split SplitName(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
    --i;
  // Slurm keeps numbers to 9 digits here: longer ones are names.
  if (name.size() - i > 9) i = name.size();
  return {name.substr(0, i), name.substr(i)};
}

uint64_t ToNumber(std::string_view digits) {
  uint64_t v = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return v;
}

// A run lo..hi written with `width` digits (0: as many as it takes).
struct Range {
  uint64_t lo = 0;
  uint64_t hi = 0;
  size_t width = 0;
};

std::string Format(uint64_t v, size_t width) {
  return fmt::format("{:0{}}", v, width);
}

void AppendGroup(std::string& out, std::string_view prefix, const std::vector<Range>& ranges) {
  out += prefix;
  const bool bracket = ranges.size() > 1 || ranges[0].lo != ranges[0].hi;
  if (bracket) out += '[';
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (i > 0) out += ',';
    out += Format(ranges[i].lo, ranges[i].width);
    if (ranges[i].hi != ranges[i].lo) out += '-' + Format(ranges[i].hi, ranges[i].width);
  }
  if (bracket) out += ']';
}

}  // namespace

std::string CompressHostList(const std::vector<std::string>& hosts) {
  std::string out;
  size_t i = 0;
  while (i < hosts.size()) {
    if (!out.empty()) out += ',';
    const Split first = SplitName(hosts[i]);
    if (first.digits.empty()) {
      out += hosts[i++];
      continue;
    }
    // Neighbours with the same prefix and a number share one bracket.
    std::vector<Range> ranges;
    for (; i < hosts.size(); ++i) {
      const Split s = SplitName(hosts[i]);
      if (s.digits.empty() || s.prefix != first.prefix) break;
      const uint64_t v = ToNumber(s.digits);
      const size_t width = s.digits.size() > 1 && s.digits[0] == '0' ? s.digits.size() : 0;
      if (!ranges.empty() && v == ranges.back().hi + 1 &&
          Format(v, ranges.back().width) == s.digits) {
        ranges.back().hi = v;
      } else {
        ranges.push_back({v, v, width});
      }
    }
    AppendGroup(out, first.prefix, ranges);
  }
  return out;
}

namespace {

// The names one bracket "[1-3,07]" stands for.
Result<std::vector<std::string>> ExpandBracket(std::string_view body, std::string_view term,
                                               size_t max_hosts) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= body.size()) {
    const size_t comma = std::min(body.find(',', start), body.size());
    const std::string_view part = body.substr(start, comma - start);
    const size_t dash = part.find('-');
    const std::string_view lo = part.substr(0, dash);
    const std::string_view hi = dash == std::string_view::npos ? lo : part.substr(dash + 1);
    auto digits = [](std::string_view d) {
      return !d.empty() && d.size() <= 9 && d.find_first_not_of("0123456789") == d.npos;
    };
    if (!digits(lo) || !digits(hi) || ToNumber(hi) < ToNumber(lo)) {
      return InvalidArgument(
          fmt::format("'{}' in host list '{}' is not a number range", part, term));
    }
    const size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
    for (uint64_t v = ToNumber(lo); v <= ToNumber(hi); ++v) {
      out.push_back(Format(v, width));
      if (out.size() > max_hosts)
        return InvalidArgument(
            fmt::format("host list '{}' names more than {} hosts", term, max_hosts));
    }
    start = comma + 1;
  }
  return out;
}

// One term: text with any number of brackets, expanded left to right.
Status ExpandTerm(std::string_view term, size_t max_hosts, std::vector<std::string>& out) {
  std::vector<std::string> names = {""};
  size_t i = 0;
  while (i < term.size()) {
    const size_t open = term.find('[', i);
    const std::string_view text = term.substr(i, open == term.npos ? term.npos : open - i);
    if (text.find(']') != text.npos)
      return InvalidArgument(fmt::format("unbalanced ']' in '{}'", term));
    for (std::string& n : names)
      n += text;
    if (open == term.npos) break;
    const size_t close = term.find(']', open);
    if (close == term.npos) return InvalidArgument(fmt::format("unbalanced '[' in '{}'", term));
    SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> values,
                           ExpandBracket(term.substr(open + 1, close - open - 1), term, max_hosts));
    if (names.size() * values.size() > max_hosts)
      return InvalidArgument(
          fmt::format("host list '{}' names more than {} hosts", term, max_hosts));
    std::vector<std::string> next;
    next.reserve(names.size() * values.size());
    for (const std::string& n : names)
      for (const std::string& v : values)
        next.push_back(n + v);
    names = std::move(next);
    i = close + 1;
  }
  if (names.size() == 1 && names[0].empty()) return InvalidArgument("empty name in host list");
  if (out.size() + names.size() > max_hosts)
    return InvalidArgument(fmt::format("host list names more than {} hosts", max_hosts));
  out.insert(out.end(), names.begin(), names.end());
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostList(std::string_view list, size_t max_hosts) {
  std::vector<std::string> out;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c != ',' || depth > 0) continue;
    const std::string_view term = list.substr(start, i - start);
    if (!term.empty()) SHOAL_RETURN_IF_ERROR(ExpandTerm(term, max_hosts, out));
    start = i + 1;
  }
  if (depth != 0) return InvalidArgument(fmt::format("unbalanced brackets in '{}'", list));
  return out;
}

}  // namespace shoal
