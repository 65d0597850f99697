#include "core/strings.h"

#include <fmt/format.h>
#include <string.h>  // sigabbrev_np

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace shoal {

std::string_view Trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return s.substr(b, e - b);
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

Result<int64_t> ParseInt(std::string_view s) {
  s = Trim(s);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    return InvalidArgument(fmt::format("'{}' is not an integer", s));
  }
  return v;
}

Result<double> ParseDouble(std::string_view s) {
  s = Trim(s);
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) {
    return InvalidArgument(fmt::format("'{}' is not a number", s));
  }
  return v;
}

std::optional<std::pair<std::string, double>> ParseNamedNumber(std::string_view item) {
  const size_t eq = item.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  const std::string_view name = Trim(item.substr(0, eq));
  Result<double> number = ParseDouble(item.substr(eq + 1));
  if (name.empty() || !number.ok()) return std::nullopt;
  return std::pair<std::string, double>(name, *number);
}

Result<int64_t> ParseMemoryMib(std::string_view s) {
  s = Trim(s);
  size_t digits = 0;
  while (digits < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[digits])) || s[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return InvalidArgument(fmt::format("'{}' is not a memory size", s));
  auto number = ParseDouble(s.substr(0, digits));
  if (!number.ok()) return InvalidArgument(fmt::format("'{}' is not a memory size", s));
  std::string unit = ToLower(Trim(s.substr(digits)));
  double mib_per_unit = 0;
  if (unit.empty() || unit == "m" || unit == "mb" || unit == "mib") {
    mib_per_unit = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    mib_per_unit = 1.0 / 1024;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    mib_per_unit = 1024;
  } else if (unit == "t" || unit == "tb" || unit == "tib") {
    mib_per_unit = 1024.0 * 1024;
  } else {
    return InvalidArgument(
        fmt::format("'{}' has an unknown memory unit '{}' (use M, G or T)", s, unit));
  }
  double mib = *number * mib_per_unit;
  if (mib < 0 || mib > 1e15) return InvalidArgument(fmt::format("'{}' is out of range", s));
  return static_cast<int64_t>(std::llround(mib));
}

Result<std::vector<int>> ParseIntRanges(std::string_view s) {
  std::vector<int> out;
  for (std::string_view part : Split(s, ',')) {
    part = Trim(part);
    size_t dash = part.find('-');
    if (dash == std::string_view::npos) {
      SHOAL_ASSIGN_OR_RETURN(int64_t v, ParseInt(part));
      if (v < INT32_MIN || v > INT32_MAX)
        return InvalidArgument(fmt::format("'{}' is out of range", part));
      out.push_back(static_cast<int>(v));
      continue;
    }
    SHOAL_ASSIGN_OR_RETURN(int64_t lo, ParseInt(part.substr(0, dash)));
    SHOAL_ASSIGN_OR_RETURN(int64_t hi, ParseInt(part.substr(dash + 1)));
    if (lo < INT32_MIN || hi > INT32_MAX || hi < lo || hi - lo > 1'000'000) {
      return InvalidArgument(fmt::format("'{}' is not a valid range", part));
    }
    for (int64_t v = lo; v <= hi; ++v)
      out.push_back(static_cast<int>(v));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string FormatMemoryMib(int64_t mib) {
  if (mib >= 1024 * 1024) return fmt::format("{:.3g}T", static_cast<double>(mib) / (1024.0 * 1024));
  if (mib >= 1024) return fmt::format("{:.3g}G", static_cast<double>(mib) / 1024.0);
  return fmt::format("{}M", mib);
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string_view NearMiss(std::string_view word, const std::vector<std::string_view>& names) {
  const std::string lower = ToLower(word);
  std::string_view nearest;
  size_t best = 3;
  for (std::string_view name : names) {
    if (size_t d = EditDistance(lower, ToLower(name)); d < best && 2 * d < lower.size()) {
      best = d;
      nearest = name;
    }
  }
  return nearest;
}

std::string UnknownNameHint(std::string_view word, const std::vector<std::string_view>& names,
                            const std::vector<std::string_view>* listed) {
  if (std::string_view nearest = NearMiss(word, names); !nearest.empty())
    return " (did you mean '" + std::string(nearest) + "'?)";
  const std::vector<std::string_view>& known = listed != nullptr ? *listed : names;
  std::string out = " (known: ";
  for (size_t i = 0; i < known.size(); ++i)
    out += (i == 0 ? "" : ", ") + std::string(known[i]);
  return out + ")";
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The sequence's length and the range its second byte must fall in
    // (which rules out overlong forms, surrogates and values past U+10FFFF).
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    if (i + length > s.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? low : 0x80) || b > (k == 1 ? high : 0xBF)) return false;
    }
    i += length;
  }
  return true;
}

Result<int> ParseSignal(std::string_view s) {
  std::string name(Trim(s));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
    Result<int64_t> n = ParseInt(name);
    if (n.ok() && *n >= 1 && *n <= 64) return static_cast<int>(*n);
    return InvalidArgument(fmt::format("signal {} is not 1 to 64", name));
  }
  if (StartsWith(name, "SIG")) name.erase(0, 3);
  for (int sig = 1; sig <= 64; ++sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    if (abbrev != nullptr && name == abbrev) return sig;
  }
  return InvalidArgument(fmt::format("'{}' is not a signal (USR1, TERM, 10, ...)", s));
}

std::string SignalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string(abbrev) : std::to_string(sig);
}

std::string JsonEscaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

}  // namespace shoal
