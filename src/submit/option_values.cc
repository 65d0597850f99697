// The parsers of sbatch option values (option_values.h).
#include "submit/option_values.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "core/cluster.h"
#include "core/constraints.h"
#include "core/hostlist.h"
#include "submit/submit.h"

namespace shoal::submit {

std::string Printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= kShownValueChars) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += s[i];
    }
  }
  return out;
}

Status Invalid(const Call& c, std::string_view why) {
  return InvalidArgument(fmt::format("{}: {}", c.Shown(), why));
}

bool IsControl(char ch) {
  const auto c = static_cast<unsigned char>(ch);
  return c < 0x20 || c == 0x7f;
}

bool IsSpace(char ch) {
  return std::isspace(static_cast<unsigned char>(ch)) != 0;
}

bool AllDigits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

bool HasLongNumber(std::string_view s, size_t max_digits) {
  size_t run = 0;
  for (char ch : s) {
    if (ch >= '0' && ch <= '9') {
      if (run > 0 || ch != '0') ++run;
      if (run > max_digits) return true;
    } else {
      run = 0;
    }
  }
  return false;
}

Status CheckText(const Call& c, size_t max_bytes, bool allow_spaces) {
  if (c.value.size() > max_bytes) {
    return Invalid(c, fmt::format("longer than {} characters", max_bytes));
  }
  for (char ch : c.value) {
    if (IsControl(ch)) return Invalid(c, "control characters are not allowed");
    if (!allow_spaces && IsSpace(ch)) return Invalid(c, "spaces are not allowed");
  }
  return Status::Ok();
}

Result<int64_t> Count(const Call& c, std::string_view text, int64_t lo, int64_t hi,
                      std::string_view what) {
  auto v = ParseInt(text);
  if (!v.ok()) return Invalid(c, fmt::format("'{}' is not a whole number", Printable(Trim(text))));
  if (*v < lo || *v > hi) {
    return Invalid(c, fmt::format("{} must be between {} and {}", what, lo, hi));
  }
  return *v;
}

bool IsModelName(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.' ||
           ch == '/';
  });
}

Result<GpuRequest> ParseGpuCount(const Call& c, bool per_node) {
  std::vector<std::string_view> parts = Split(Trim(c.value), ':');
  if (parts.size() > 2) return Invalid(c, "give [TYPE:]COUNT, e.g. 8 or a100:8");
  GpuRequest g;
  g.per_node = per_node;
  if (parts.size() == 2) {
    if (!IsModelName(parts[0])) {
      return Invalid(
          c, fmt::format("'{}' is not a GPU type (letters, digits, - _ . /)", Printable(parts[0])));
    }
    g.model = std::string(parts[0]);
  }
  const int64_t max = per_node ? kMaxGpusPerNode : kMaxTotalGpus;
  SHOAL_ASSIGN_OR_RETURN(int64_t n,
                         Count(c, parts.back(), 0, max, per_node ? "GPUs per node" : "GPUs"));
  g.count = static_cast<int>(n);
  return g;
}

Result<GpuRequest> ParseGres(const Call& c) {
  std::string_view text = Trim(c.value);
  GpuRequest g;
  g.per_node = true;
  if (ToLower(text) == "none") return g;
  if (text.find(',') != std::string_view::npos) {
    return Invalid(c, "give one GPU request (gpu[:TYPE][:COUNT]); Shoal knows no other resources");
  }
  std::vector<std::string_view> parts = Split(text, ':');
  if (parts[0] != "gpu") {
    return Invalid(c,
                   fmt::format("Shoal knows only the gpu resource, not '{}'", Printable(parts[0])));
  }
  if (parts.size() > 3) return Invalid(c, "give gpu[:TYPE][:COUNT], e.g. gpu:8 or gpu:a100:8");
  std::string_view count = "1";
  bool has_model = false;
  if (parts.size() == 3) {
    has_model = true;
    count = parts[2];
  } else if (parts.size() == 2) {
    // "gpu:8" is a count, "gpu:a100" a type; a leading '-' is a bad count.
    const std::string_view second = Trim(parts[1]);
    has_model = !AllDigits(second) && !StartsWith(second, "-");
    if (!has_model) count = parts[1];
  }
  if (has_model) {
    if (!IsModelName(parts[1])) {
      return Invalid(
          c, fmt::format("'{}' is not a GPU type (letters, digits, - _ . /)", Printable(parts[1])));
    }
    g.model = std::string(parts[1]);
  }
  SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, count, 0, kMaxGpusPerNode, "GPUs per node"));
  g.count = static_cast<int>(n);
  return g;
}

Result<int64_t> ParseMemory(const Call& c) {
  auto mib = ParseMemoryMib(c.value);
  if (!mib.ok()) return Invalid(c, "give a size such as 512 (MiB), 16384M, 80G or 1T");
  if (*mib <= 0 && c.canonical != "--mem") return Invalid(c, "must be at least 1 MiB");
  if (*mib > kMaxMemMib) {
    return Invalid(c, fmt::format("more than {}", FormatMemoryMib(kMaxMemMib)));
  }
  return *mib;
}

Result<std::optional<Time>> ParseBegin(const Call& c, std::vector<std::string>& notes) {
  constexpr std::string_view kForms = "give Unix seconds or YYYY-MM-DD[THH:MM[:SS]] (UTC)";
  std::string_view text = Trim(c.value);
  const std::string lower = ToLower(text);
  if (lower == "now") return std::optional<Time>();
  if (StartsWith(lower, "now") || text.find('+') != std::string_view::npos) {
    return Invalid(c, fmt::format("relative times are not supported: {}", kForms));
  }
  if (AllDigits(text)) {
    if (HasLongNumber(text, 12)) return Invalid(c, "too far in the future");
    SHOAL_ASSIGN_OR_RETURN(int64_t seconds, Count(c, text, 0, kMaxUnixSeconds, "Unix seconds"));
    return std::optional<Time>(Time(Duration(seconds * 1000)));
  }
  Result<Time> when = ParseUtcTime(text);
  if (!when.ok()) return Invalid(c, when.status().message());
  notes.push_back(fmt::format("{} is read as UTC (Slurm reads local time)", c.Shown()));
  return std::optional<Time>(*when);
}

bool IsEnvName(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
  });
}

Result<ExportRequest> ParseExport(const Call& c) {
  ExportRequest e;
  e.all = false;
  bool all = false;
  bool none = false;
  for (std::string_view item : Split(c.value, ',')) {
    const std::string word = ToLower(Trim(item));
    if (word == "all") {
      all = true;
      continue;
    }
    if (word == "none") {
      none = true;
      continue;
    }
    const size_t eq = item.find('=');
    const std::string_view name = Trim(eq == std::string_view::npos ? item : item.substr(0, eq));
    if (!IsEnvName(name)) {
      if (eq == std::string_view::npos)
        return Invalid(c,
                       fmt::format("'{}' is not ALL, NONE, NAME or NAME=value", Printable(item)));
      return Invalid(
          c, fmt::format("'{}' is not a variable name (letters, digits and _)", Printable(name)));
    }
    if (eq == std::string_view::npos) {
      e.names.emplace_back(name);
    } else {
      e.values[std::string(name)] = std::string(item.substr(eq + 1));
    }
    if (e.values.size() + e.names.size() > kMaxEnvVariables) {
      return Invalid(c, fmt::format("more than {} variables", kMaxEnvVariables));
    }
  }
  if (all && none) return Invalid(c, "ALL and NONE together make no sense");
  e.all = all;
  return e;
}

Result<Request::SignalRequest> ParseSignalOption(const Call& c) {
  std::string_view v = Trim(c.value);
  Request::SignalRequest out;
  while (v.size() >= 2 && v[1] == ':' && (v[0] == 'B' || v[0] == 'R')) {
    if (v[0] == 'B') out.batch_only = true;
    v.remove_prefix(2);
  }
  const size_t at = v.find('@');
  auto sig = ParseSignal(v.substr(0, at));
  if (!sig.ok()) return Invalid(c, sig.status().message());
  out.signal = *sig;
  if (at != std::string_view::npos) {
    auto t = ParseInt(v.substr(at + 1));
    if (!t.ok() || *t < 0 || *t > 65535)
      return Invalid(c, "the time after @ is 0 to 65535 seconds");
    out.before_s = static_cast<int>(*t);
  }
  return out;
}

Result<std::vector<std::string>> ParseNodeNames(const Call& c) {
  if (c.value.find('/') != std::string_view::npos)
    return Invalid(c, "a file of node names is not supported; give the names");
  SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/false));
  auto names = ExpandHostList(c.value, kMaxNodeListEntries);
  if (!names.ok()) return Invalid(c, names.status().message());
  return *std::move(names);
}

namespace {

// "a|b|a" -> "a|b": the labels of one term, each checked, in order, once.
Result<std::string> ParseChoices(const Call& c, std::string_view text) {
  std::vector<std::string> choices;
  for (std::string_view part : Split(text, '|')) {
    const std::string_view label = Trim(part);
    if (label.empty()) return Invalid(c, "an empty label");
    if (std::any_of(label.begin(), label.end(),
                    [](char ch) { return IsSpace(ch) || IsControl(ch); })) {
      return Invalid(c, fmt::format("'{}' is not a label (no spaces)", Printable(label)));
    }
    if (std::find(choices.begin(), choices.end(), label) == choices.end())
      choices.emplace_back(label);
  }
  return Join(choices, "|");
}

// Slurm's matching choice "[a|b]" out of `text`: its term ("[a|b]", or "a"
// for a choice of one), and `text` without it; none: an empty term.
Result<std::string> TakeMatchingChoice(const Call& c, std::string& text) {
  const size_t open = text.find('[');
  const size_t close = text.find(']');
  if (open == std::string::npos && close == std::string::npos) return std::string();
  if (open == std::string::npos || close == std::string::npos || close < open ||
      text.find_first_of("[]", open + 1) != close ||
      text.find_first_of("[]", close + 1) != std::string::npos) {
    return Invalid(c, "one matching choice [a|b] at most, in closed brackets");
  }
  const std::string inner = text.substr(open + 1, close - open - 1);
  if (inner.find_first_of("&,") != std::string::npos)
    return Invalid(c, "inside [ ] give choices joined with | ([a|b]: every node the same one)");
  SHOAL_ASSIGN_OR_RETURN(std::string term, ParseChoices(c, inner));
  // The terms around it, joined with & or , as the brackets were.
  std::string_view before = Trim(std::string_view(text).substr(0, open));
  std::string_view after = Trim(std::string_view(text).substr(close + 1));
  const bool joined_before = before.empty() || before.back() == '&' || before.back() == ',';
  const bool joined_after = after.empty() || after.front() == '&' || after.front() == ',';
  if (!joined_before || !joined_after)
    return Invalid(c, "join [a|b] to the other labels with & or ,");
  if (!before.empty()) before.remove_suffix(1);
  if (!after.empty()) after.remove_prefix(1);
  text = std::string(before) + (before.empty() || after.empty() ? "" : "&") + std::string(after);
  if (term.find('|') == std::string::npos) return term;
  return "[" + term + "]";
}

// Slurm's node counts, standing alone: "a*2" (at least 2 of the job's
// nodes have a), or "[a*2&b*4]" (2 nodes with a and 4 with b: all of them).
// One entry, the spaces around its terms dropped, joined with &.
Result<std::vector<std::string>> ParseCounts(const Call& c) {
  const std::string_view all = Trim(c.value);
  const bool bracketed = all.size() >= 2 && all.starts_with('[') && all.ends_with(']');
  const std::string_view text = bracketed ? all.substr(1, all.size() - 2) : all;
  if (text.find_first_of("[]") != std::string_view::npos) {
    return Invalid(c, "label counts go alone, in one pair of brackets around them all ([a*2&b*4])");
  }
  if (text.find('|') != std::string_view::npos)
    return Invalid(c, "a choice (a|b) cannot be counted; give each label its count: [a*2&b*4]");
  if (!bracketed && text.find_first_of("&,") != std::string_view::npos)
    return Invalid(c,
                   "label counts go alone; counts of more than one label go in brackets, as in "
                   "Slurm: [a*2&b*4]");
  std::vector<std::string> terms;
  for (std::string_view and_part : Split(text, '&')) {
    for (std::string_view part : Split(and_part, ',')) {
      // "a * 2" -> "a*2"; a space inside the label stays, and is refused.
      const std::string_view term = Trim(part);
      if (term.empty()) return Invalid(c, "an empty label");
      const size_t star = term.find('*');
      terms.push_back(
          star == std::string_view::npos
              ? std::string(term)
              : fmt::format("{}*{}", Trim(term.substr(0, star)), Trim(term.substr(star + 1))));
    }
  }
  std::vector<std::string> out{bracketed ? "[" + Join(terms, "&") + "]" : terms.front()};
  Result<std::optional<ConstraintCounts>> counts = ParseConstraintCounts(out);
  if (!counts.ok()) return Invalid(c, counts.status().message());
  return out;
}

}  // namespace

Result<std::vector<std::string>> ParseConstraint(const Call& c) {
  if (c.value.find_first_of("()") != std::string_view::npos)
    return Invalid(c, "parentheses are not supported");
  if (c.value.find('!') != std::string_view::npos) return Invalid(c, "NOT (!) is not supported");
  if (c.value.find('*') != std::string_view::npos) return ParseCounts(c);
  std::string rest(c.value);
  SHOAL_ASSIGN_OR_RETURN(const std::string matching, TakeMatchingChoice(c, rest));
  std::vector<std::string> terms;
  if (!matching.empty()) terms.push_back(matching);
  if (!matching.empty() && rest.empty()) return terms;
  std::string_view left = rest;
  while (true) {
    const size_t cut = left.find_first_of("&,");
    SHOAL_ASSIGN_OR_RETURN(const std::string term, ParseChoices(c, left.substr(0, cut)));
    if (std::find(terms.begin(), terms.end(), term) == terms.end()) terms.push_back(term);
    if (cut == std::string_view::npos) break;
    left = left.substr(cut + 1);
  }
  return terms;
}

}  // namespace shoal::submit
