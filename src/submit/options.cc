#include "submit/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "core/cluster.h"
#include "core/hostlist.h"
#include "core/strings.h"
#include "submit/submit.h"

namespace shoal::submit {

namespace {

// Values quoted back in messages are cut to this many characters.
constexpr size_t kShownValueChars = 80;
constexpr size_t kMaxNameBytes = 256;
constexpr size_t kMaxPathBytes = 4096;
// Enough for any count or time field; longer runs of digits would overflow
// the arithmetic in ParseDuration and ParseArraySpec before their checks.
constexpr size_t kMaxNumberDigits = 9;
// 9999-12-31T23:59:59 UTC.
constexpr int64_t kMaxUnixSeconds = 253'402'300'799;

// The value as it goes into a message: control characters escaped, long
// values cut short, so that a message stays one readable line.
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

// One option as the user gave it.
struct Call {
  std::string_view name;   // as spelled: "--nodes" or "-N"
  std::string canonical;   // "--nodes" for both
  std::string_view value;  // empty for a flag
  Source source;

  std::string Shown() const {
    if (value.empty()) return std::string(name);
    return fmt::format("{}{}{}", name, StartsWith(name, "--") ? "=" : " ", Printable(value));
  }
};

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

// Whether a run of digits in `s` has more than `max_digits` significant digits.
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

// A name-like value: no control characters, no spaces unless allowed, and
// not too long.
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

// Sets a group of exclusive options; the same option again replaces its
// earlier value, a different one of the group is a conflict.
template <typename G>
Status SetGroup(const Call& c, std::optional<G>& slot, G value, std::string_view what) {
  if (slot && slot->option != c.canonical) {
    return InvalidArgument(fmt::format("{} conflicts with {} given before it: ask for {} one way",
                                       c.Shown(), slot->option, what));
  }
  value.option = c.canonical;
  slot = std::move(value);
  return Status::Ok();
}

bool IsModelName(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
  });
}

// "[type:]N" as --gpus and --gpus-per-node take it.
Result<GpuRequest> ParseGpuCount(const Call& c, bool per_node) {
  std::vector<std::string_view> parts = Split(Trim(c.value), ':');
  if (parts.size() > 2) return Invalid(c, "give [TYPE:]COUNT, e.g. 8 or a100:8");
  GpuRequest g;
  g.per_node = per_node;
  if (parts.size() == 2) {
    if (!IsModelName(parts[0])) {
      return Invalid(
          c, fmt::format("'{}' is not a GPU type (letters, digits, - _ .)", Printable(parts[0])));
    }
    g.model = std::string(parts[0]);
  }
  const int64_t max = per_node ? kMaxGpusPerNode : kMaxTotalGpus;
  SHOAL_ASSIGN_OR_RETURN(int64_t n,
                         Count(c, parts.back(), 0, max, per_node ? "GPUs per node" : "GPUs"));
  g.count = static_cast<int>(n);
  return g;
}

// Slurm's --gres=gpu[:type][:count]; Shoal knows no other generic resource.
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
          c, fmt::format("'{}' is not a GPU type (letters, digits, - _ .)", Printable(parts[1])));
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
  // Fixed positions: YYYY-MM-DD, then THH:MM and :SS, then an optional Z.
  std::string_view s = text;
  if (!s.empty() && (s.back() == 'Z' || s.back() == 'z')) s.remove_suffix(1);
  auto digits_at = [&s](size_t pos, size_t n) -> std::optional<int> {
    if (pos + n > s.size() || !AllDigits(s.substr(pos, n))) return std::nullopt;
    int v = 0;
    for (char ch : s.substr(pos, n))
      v = v * 10 + (ch - '0');
    return v;
  };
  const bool shape_ok = (s.size() == 10 || s.size() == 16 || s.size() == 19) && s[4] == '-' &&
                        s[7] == '-' && (s.size() == 10 || (s[10] == 'T' && s[13] == ':')) &&
                        (s.size() != 19 || s[16] == ':');
  if (!shape_ok) return Invalid(c, fmt::format("unsupported form: {}", kForms));
  const auto year = digits_at(0, 4);
  const auto month = digits_at(5, 2);
  const auto day = digits_at(8, 2);
  const auto hour = s.size() > 10 ? digits_at(11, 2) : std::optional<int>(0);
  const auto minute = s.size() > 10 ? digits_at(14, 2) : std::optional<int>(0);
  const auto second = s.size() > 16 ? digits_at(17, 2) : std::optional<int>(0);
  if (!year || !month || !day || !hour || !minute || !second) {
    return Invalid(c, fmt::format("unsupported form: {}", kForms));
  }
  const std::chrono::year_month_day date{std::chrono::year(*year),
                                         std::chrono::month(static_cast<unsigned>(*month)),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok() || *year < 1970 || *hour > 23 || *minute > 59 || *second > 59) {
    return Invalid(c, "not a valid date and time");
  }
  const auto when = std::chrono::sys_days(date) + std::chrono::hours(*hour) +
                    std::chrono::minutes(*minute) + std::chrono::seconds(*second);
  notes.push_back(fmt::format("{} is read as UTC (Slurm reads local time)", c.Shown()));
  return std::optional<Time>(std::chrono::time_point_cast<Duration>(when));
}

bool IsEnvName(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
  });
}

// --export: ALL (the default: the submitting shell's variables), NONE, or
// names of its variables; NAME=value sets one whatever the rest says. As
// Slurm, a list without ALL or NONE copies only what it names.
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

// --signal=[{R|B}:]SIG[@TIME], as sbatch reads it (R:, a reservation's
// overlap, means nothing in Shoal and is accepted).
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

// A Slurm host list (n[01-04],m1) for --nodelist and --exclude, expanded.
Result<std::vector<std::string>> ParseNodeNames(const Call& c) {
  if (c.value.find('/') != std::string_view::npos)
    return Invalid(c, "a file of node names is not supported; give the names");
  SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/false));
  auto names = ExpandHostList(c.value, kMaxNodeListEntries);
  if (!names.ok()) return Invalid(c, names.status().message());
  return *std::move(names);
}

// --constraint: labels joined with & or , (every node has each), where a
// term may be a choice a|b (every node has one of them): "a|b&c" is
// (a or b) and c. Each term is one entry of JobSpec::constraints.
Result<std::vector<std::string>> ParseConstraint(const Call& c) {
  if (c.value.find_first_of("[]()") != std::string_view::npos) {
    return Invalid(c,
                   "a matching choice ([a|b]: every node the same one) is not supported; a|b "
                   "lets each node have either");
  }
  if (c.value.find_first_of("*!") != std::string_view::npos) {
    return Invalid(c, "label counts (a*2) and NOT (!) are not supported");
  }
  std::vector<std::string> terms;
  std::string_view rest = c.value;
  while (true) {
    const size_t cut = rest.find_first_of("&,");
    std::vector<std::string> choices;
    for (std::string_view part : Split(rest.substr(0, cut), '|')) {
      const std::string_view label = Trim(part);
      if (label.empty()) return Invalid(c, "an empty label");
      if (std::any_of(label.begin(), label.end(),
                      [](char ch) { return IsSpace(ch) || IsControl(ch); })) {
        return Invalid(c, fmt::format("'{}' is not a label (no spaces)", Printable(label)));
      }
      if (std::find(choices.begin(), choices.end(), label) == choices.end())
        choices.emplace_back(label);
    }
    const std::string term = Join(choices, "|");
    if (std::find(terms.begin(), terms.end(), term) == terms.end()) terms.push_back(term);
    if (cut == std::string_view::npos) break;
    rest = rest.substr(cut + 1);
  }
  return terms;
}

using Handler = Status (*)(const Call& c, Request& r, std::vector<std::string>& notes);

struct OptionDef {
  std::string_view long_name;   // without the leading "--"
  char short_name;              // 0: none
  std::string_view value_name;  // empty: a flag
  std::string_view help;
  Handler apply;
};

// The options, in the order the help lists them.
constexpr OptionDef kOptions[] = {
    {"job-name", 'J', "NAME", "the job's name",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/true));
       r.name = std::string(c.value);
       return Status::Ok();
     }},
    {"partition", 'p', "NAME", "the partition (default: the cluster's default partition)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/false));
       if (c.value.find(',') != std::string_view::npos) {
         return Invalid(c, "Shoal takes one partition, not a list");
       }
       r.partition = std::string(c.value);
       return Status::Ok();
     }},
    {"account", 'A', "NAME", "the account to charge",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/false));
       r.account = std::string(c.value);
       return Status::Ok();
     }},
    {"qos", 'q', "NAME", "the quality of service",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/false));
       r.qos = std::string(c.value);
       return Status::Ok();
     }},
    {"time", 't', "LIMIT", "MIN, MIN:SEC, H:M:S, D-H, D-H:M, D-H:M:S, or 90s, 45m, 2h, 3d",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       const std::string lower = ToLower(Trim(c.value));
       if (lower == "unlimited" || lower == "infinite") {
         return Invalid(
             c, "Shoal needs a finite limit (leave --time out for the partition's default)");
       }
       if (HasLongNumber(c.value, kMaxNumberDigits)) return Invalid(c, "too long");
       auto d = ParseDuration(c.value);
       if (!d.ok()) return Invalid(c, d.status().message());
       if (d->count() <= 0) {
         return Invalid(c, "must be more than 0 (leave --time out for the partition's default)");
       }
       if (*d > kMaxTimeLimit) return Invalid(c, "more than 365 days");
       r.time_limit = *d;
       return Status::Ok();
     }},
    {"nodes", 'N', "N", "nodes: one number (default 1, or as many as --gpus needs)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       std::string_view text = Trim(c.value);
       const size_t dash = text.find('-', 1);
       if (dash != std::string_view::npos) {
         // "2-2" is one number written as a range; a real range asks the
         // scheduler to choose a size, which Shoal does not do.
         auto lo = ParseInt(text.substr(0, dash));
         auto hi = ParseInt(text.substr(dash + 1));
         if (!lo.ok() || !hi.ok() || *lo != *hi) {
           return Invalid(c, "node ranges (MIN-MAX) are not supported; give one number of nodes");
         }
         text = text.substr(0, dash);
       }
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, text, 1, kMaxNodes, "the number of nodes"));
       r.nodes = static_cast<int>(n);
       return Status::Ok();
     }},
    {"ntasks", 'n', "N", "tasks over all nodes (default: one per node)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxTasks, "the number of tasks"));
       r.tasks = static_cast<int>(n);
       return Status::Ok();
     }},
    {"ntasks-per-node", 0, "N", "tasks on each node (needs a known node count)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxCpus, "tasks per node"));
       r.tasks_per_node = static_cast<int>(n);
       return Status::Ok();
     }},
    {"cpus-per-task", 'c', "N", "CPUs for each task (1 when tasks are given without it)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxCpus, "CPUs per task"));
       return SetGroup(c, r.cpu, CpuRequest{false, static_cast<int>(n), ""}, "CPUs");
     }},
    {"gpus", 'G', "[TYPE:]N", "GPUs in total, over as few nodes as hold them unless -N is given",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(GpuRequest g, ParseGpuCount(c, /*per_node=*/false));
       return SetGroup(c, r.gpu, std::move(g), "GPUs");
     }},
    {"gpus-per-node", 0, "[TYPE:]N", "GPUs on each node",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(GpuRequest g, ParseGpuCount(c, /*per_node=*/true));
       return SetGroup(c, r.gpu, std::move(g), "GPUs");
     }},
    {"gres", 0, "gpu[:TYPE][:N]", "GPUs on each node (N is 1 when left out)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(GpuRequest g, ParseGres(c));
       return SetGroup(c, r.gpu, std::move(g), "GPUs");
     }},
    {"gpu-share", 0, "MILLI",
     "Shoal's own: thousandths of each GPU, 1..1000 (below 1000 it is shared)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMilliPerGpu, "the GPU share"));
       r.gpu_milli = static_cast<int>(n);
       return Status::Ok();
     }},
    {"cpus-per-gpu", 0, "N", "CPUs for each GPU (instead of -c)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxCpus, "CPUs per GPU"));
       return SetGroup(c, r.cpu, CpuRequest{true, static_cast<int>(n), ""}, "CPUs");
     }},
    {"mem", 0, "SIZE",
     "memory on each node: 512 (MiB), 16384M, 80G, 1T; 0: all of it (whole nodes)",
     [](const Call& c, Request& r, std::vector<std::string>& notes) {
       SHOAL_ASSIGN_OR_RETURN(int64_t mib, ParseMemory(c));
       if (mib == 0) {
         notes.push_back(fmt::format(
             "{}: all of each node's memory; Shoal gives the job whole nodes (--exclusive)",
             c.Shown()));
       }
       return SetGroup(c, r.mem, MemRequest{false, false, mib == 0, mib, ""}, "memory");
     }},
    {"mem-per-gpu", 0, "SIZE", "memory for each GPU (instead of --mem)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t mib, ParseMemory(c));
       return SetGroup(c, r.mem, MemRequest{true, false, false, mib, ""}, "memory");
     }},
    {"constraint", 'C', "L1&L2|L3", "node labels the job needs, joined with & or ,; a|b: either",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(r.constraints, ParseConstraint(c));
       return Status::Ok();
     }},
    {"nodelist", 'w', "HOSTS", "run on these nodes, all of them: n[01-04],m1",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(r.node_list, ParseNodeNames(c));
       return Status::Ok();
     }},
    {"exclude", 'x', "HOSTS", "never on these nodes: n[05-06]",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(r.exclude, ParseNodeNames(c));
       return Status::Ok();
     }},
    {"signal", 0, "[B:]SIG[@T]",
     "send SIG T seconds (default 60) before the time limit: to the job's steps, or with B: "
     "to the batch shell only",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(r.signal, ParseSignalOption(c));
       return Status::Ok();
     }},
    {"exclusive", 0, "", "whole nodes, shared with nobody",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.exclusive = true;
       return Status::Ok();
     }},
    {"array", 'a', "SPEC", "a job array: 0-99%10, 1,3,5 or 0-15:4",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (HasLongNumber(c.value, kMaxNumberDigits)) return Invalid(c, "index too large");
       auto a = ParseArraySpec(c.value);
       if (!a.ok()) return Invalid(c, a.status().message());
       r.array = *std::move(a);
       return Status::Ok();
     }},
    {"dependency", 'd', "LIST",
     "after:ID[:ID...], afterok:..., afterany:..., afternotok:..., singleton; joined with ,",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (c.value.find('?') != std::string_view::npos) {
         return Invalid(
             c, "dependencies joined with ? (any of) are not supported; join them with , (all of)");
       }
       auto deps = ParseDependencies(c.value);
       if (!deps.ok()) return Invalid(c, deps.status().message());
       if (deps->size() > kMaxDependencies) {
         return Invalid(c, fmt::format("more than {} dependencies", kMaxDependencies));
       }
       r.dependencies = *std::move(deps);
       return Status::Ok();
     }},
    {"hold", 'H', "", "submit the job held: it waits until released",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.hold = true;
       return Status::Ok();
     }},
    {"begin", 0, "TIME", "not before TIME: Unix seconds, or YYYY-MM-DD[THH:MM[:SS]] in UTC",
     [](const Call& c, Request& r, std::vector<std::string>& notes) {
       SHOAL_ASSIGN_OR_RETURN(r.begin_time, ParseBegin(c, notes));
       return Status::Ok();
     }},
    {"requeue", 0, "", "may be requeued after preemption or a node failure",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.requeue = true;
       return Status::Ok();
     }},
    {"no-requeue", 0, "", "may not be requeued (the default)",
     [](const Call&, Request& r, std::vector<std::string>&) {
       r.requeue = false;
       return Status::Ok();
     }},
    {"chdir", 'D', "DIR", "the working directory",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/true));
       r.work_dir = std::string(c.value);
       return Status::Ok();
     }},
    {"output", 'o', "PATH", "the standard output file",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/true));
       r.stdout_path = std::string(c.value);
       return Status::Ok();
     }},
    {"error", 'e', "PATH", "the standard error file",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/true));
       r.stderr_path = std::string(c.value);
       return Status::Ok();
     }},
    {"export", 0, "LIST",
     "which of your shell's variables the job gets: ALL (the default), NONE, or "
     "NAME[,NAME...]; NAME=value sets one",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(r.exported, ParseExport(c));
       return Status::Ok();
     }},
    {"export-file", 0, "FILE", "more variables for the job: NAME=value lines (or NUL-separated)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/true));
       r.export_file = std::string(c.value);
       return Status::Ok();
     }},
    {"get-user-env", 0, "",
     "accepted: jobs run with their user's login variables (PATH, HOME, "
     "SHELL, ...) under what --export carries",
     [](const Call& c, Request& r, std::vector<std::string>& notes) {
       r.get_user_env = true;
       notes.push_back(
           fmt::format("{}: the job gets its user's login variables, not the output "
                       "of a login shell",
                       c.Shown()));
       return Status::Ok();
     }},
    {"gpus-per-task", 0, "N", "GPUs for each task (-n tasks x N in all); each task sees its own",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxGpusPerNode, "GPUs per task"));
       r.gpus_per_task = static_cast<int>(n);
       return Status::Ok();
     }},
    {"ntasks-per-gpu", 0, "N", "tasks for each GPU (instead of -n)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t n, Count(c, c.value, 1, kMaxTasksPerNode, "tasks per GPU"));
       r.tasks_per_gpu = static_cast<int>(n);
       return Status::Ok();
     }},
    {"mem-per-cpu", 0, "SIZE", "memory for each CPU (instead of --mem)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_ASSIGN_OR_RETURN(int64_t mib, ParseMemory(c));
       return SetGroup(c, r.mem, MemRequest{false, true, false, mib, ""}, "memory");
     }},
    {"comment", 0, "TEXT", "a comment kept with the job",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxPathBytes, /*allow_spaces=*/true));
       r.comment = std::string(c.value);
       return Status::Ok();
     }},
    {"open-mode", 0, "MODE", "truncate (the default) or append the output files",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       const std::string mode = ToLower(Trim(c.value));
       if (mode != "append" && mode != "truncate") return Invalid(c, "append or truncate");
       r.append_output = mode == "append";
       return Status::Ok();
     }},
    {"strict", 0, "", "Shoal's own: refuse Slurm options that have no meaning in Shoal",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (c.source == Source::kDirective)
         return Invalid(c, "--strict belongs on the command line");
       r.strict = true;
       return Status::Ok();
     }},
    {"parsable", 0, "", "print only the job's id (as sbatch --parsable)",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (c.source == Source::kDirective) return Status::Ok();
       r.parsable = true;
       return Status::Ok();
     }},
    {"wait", 'W', "", "wait for the job to end; exit with its exit code",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (c.source == Source::kDirective) return Status::Ok();
       r.wait = true;
       return Status::Ok();
     }},
    {"wrap", 0, "CMD", "run the shell command CMD instead of a script or a command",
     [](const Call& c, Request& r, std::vector<std::string>&) {
       if (c.source == Source::kDirective) {
         return Invalid(c, "--wrap belongs on the command line, not in a script");
       }
       if (Trim(c.value).empty()) return Invalid(c, "an empty command");
       r.wrap = std::string(c.value);
       return Status::Ok();
     }},
    {"mail-user", 0, "ADDRESS", "accepted with a note: Shoal sends no mail",
     [](const Call& c, Request&, std::vector<std::string>& notes) {
       SHOAL_RETURN_IF_ERROR(CheckText(c, kMaxNameBytes, /*allow_spaces=*/false));
       notes.push_back(
           fmt::format("{}: Shoal sends no mail; follow the job with `shoal show`", c.Shown()));
       return Status::Ok();
     }},
    {"mail-type", 0, "TYPES", "accepted with a note: Shoal sends no mail",
     [](const Call& c, Request&, std::vector<std::string>& notes) {
       // Mail only tells the user what `shoal show` tells them too; the job
       // runs the same without it, so this is a note rather than an error.
       if (ToLower(Trim(c.value)) != "none") {
         notes.push_back(
             fmt::format("{}: Shoal sends no mail; follow the job with `shoal show`", c.Shown()));
       }
       return Status::Ok();
     }},
};

// Slurm options with a Shoal way to say the same thing.
struct Hint {
  std::string_view name;
  std::string_view hint;
};
constexpr Hint kHints[] = {
    {"--nodefile", "give the node names with --nodelist"},
    {"-F", "give the node names with --nodelist"},
    {"--input", "a Shoal batch script reads no standard input; redirect inside it (< FILE)"},
    {"-i", "a Shoal batch script reads no standard input; redirect inside it (< FILE)"},
};

// sbatch's options that have no meaning in Shoal (Slurm 22.05's `sbatch
// --help`, and --hint, --ntasks-per-core, ...): accepted with a note, so
// that existing scripts run; `--strict` refuses them.
struct SlurmOnly {
  std::string_view long_name;
  char short_name;
  bool takes_value;
};
constexpr SlurmOnly kSlurmOnly[] = {
    {"acctg-freq", 0, true},
    {"batch", 0, true},
    {"bb", 0, true},
    {"bbf", 0, true},
    {"cluster-constraint", 0, true},
    {"clusters", 'M', true},
    {"container", 0, true},
    {"contiguous", 0, false},
    {"core-spec", 'S', true},
    {"cores-per-socket", 0, true},
    {"cpu-bind", 0, true},
    {"cpu-freq", 0, true},
    {"deadline", 0, true},
    {"delay-boot", 0, true},
    {"distribution", 'm', true},
    {"extra-node-info", 'B', true},
    {"gid", 0, true},
    {"gpu-bind", 0, true},
    {"gpu-freq", 0, true},
    {"gpus-per-socket", 0, true},
    {"gres-flags", 0, true},
    {"hint", 0, true},
    {"ignore-pbs", 0, false},
    {"kill-on-invalid-dep", 0, true},
    {"licenses", 'L', true},
    {"mcs-label", 0, true},
    {"mem-bind", 0, true},
    {"mincpus", 0, true},
    {"network", 0, true},
    {"nice", 0, true},
    {"no-kill", 'k', false},
    {"ntasks-per-core", 0, true},
    {"ntasks-per-socket", 0, true},
    {"overcommit", 'O', false},
    {"oversubscribe", 's', false},
    {"power", 0, true},
    {"priority", 0, true},
    {"profile", 0, true},
    {"propagate", 0, true},
    {"quiet", 'Q', false},
    {"reboot", 0, false},
    {"reservation", 0, true},
    {"sockets-per-node", 0, true},
    {"spread-job", 0, false},
    {"switches", 0, true},
    {"thread-spec", 0, true},
    {"threads-per-core", 0, true},
    {"time-min", 0, true},
    {"tmp", 0, true},
    {"uid", 0, true},
    {"use-min-nodes", 0, false},
    {"verbose", 'v', false},
    {"wait-all-nodes", 0, true},
    {"wckey", 0, true},
};

// Other names sbatch takes for options (slurm_opt.c).
struct Alias {
  std::string_view name;
  std::string_view long_name;
};
constexpr Alias kAliases[] = {
    {"tasks-per-node", "ntasks-per-node"},
};

// Every long name `given` (without "--") could stand for, as getopt_long
// reads sbatch's options: the one it names exactly (or through an alias),
// else every option it is a prefix of. One answer is the option; more are
// an ambiguous abbreviation.
std::vector<std::string_view> LongNames(std::string_view given) {
  std::vector<std::string_view> all;
  for (const OptionDef& d : kOptions)
    all.push_back(d.long_name);
  for (const SlurmOnly& o : kSlurmOnly)
    all.push_back(o.long_name);
  for (const Alias& a : kAliases) {
    if (a.name == given) return {a.long_name};
  }
  if (std::find(all.begin(), all.end(), given) != all.end()) return {given};
  std::vector<std::string_view> matches;
  if (given.empty()) return matches;
  for (std::string_view name : all) {
    if (StartsWith(name, given)) matches.push_back(name);
  }
  for (const Alias& a : kAliases) {
    if (StartsWith(a.name, given) &&
        std::find(matches.begin(), matches.end(), a.long_name) == matches.end())
      matches.push_back(a.long_name);
  }
  return matches;
}

// The long name a word's "--name" stands for; empty when none or ambiguous.
std::string_view LongNameOf(std::string_view word) {
  const std::vector<std::string_view> names = LongNames(word.substr(2));
  return names.size() == 1 ? names.front() : std::string_view();
}

const OptionDef* FindOption(std::string_view name) {
  if (StartsWith(name, "--")) {
    const std::string_view long_name = LongNameOf(name);
    for (const OptionDef& d : kOptions) {
      if (!long_name.empty() && d.long_name == long_name) return &d;
    }
    return nullptr;
  }
  if (name.size() == 2 && name[0] == '-') {
    for (const OptionDef& d : kOptions) {
      if (d.short_name != 0 && d.short_name == name[1]) return &d;
    }
  }
  return nullptr;
}

const SlurmOnly* FindSlurmOnly(std::string_view name) {
  const bool long_form = StartsWith(name, "--");
  const std::string_view long_name = long_form ? LongNameOf(name) : std::string_view();
  for (const SlurmOnly& o : kSlurmOnly) {
    if (long_form ? (!long_name.empty() && long_name == o.long_name)
                  : (name.size() == 2 && o.short_name != 0 && name[1] == o.short_name))
      return &o;
  }
  return nullptr;
}

Status UnknownOption(std::string_view name) {
  const std::string shown = Printable(name);
  for (const Hint& h : kHints) {
    if (h.name == name) {
      return InvalidArgument(fmt::format("option {} has no meaning in Shoal: {}", shown, h.hint));
    }
  }
  if (StartsWith(name, "--") && name.size() > 2 && name.size() <= 40) {
    const std::vector<std::string_view> could_be = LongNames(name.substr(2));
    if (could_be.size() > 1) {
      std::vector<std::string> shown_names;
      for (std::string_view n : could_be)
        shown_names.push_back(fmt::format("--{}", n));
      return InvalidArgument(
          fmt::format("option {} is ambiguous: it could be {}", shown, Join(shown_names, ", ")));
    }
  }
  if (StartsWith(name, "--") && name.size() >= 5 && name.size() <= 40) {
    const std::string_view given = name.substr(2);
    const OptionDef* closest = nullptr;
    size_t closest_distance = 0;
    for (const OptionDef& d : kOptions) {
      const size_t distance = EditDistance(given, d.long_name);
      if (closest == nullptr || distance < closest_distance) {
        closest = &d;
        closest_distance = distance;
      }
    }
    // A quarter of the letters may be wrong: --partiton, but not --foo for --qos.
    if (closest_distance * 4 <= given.size()) {
      return InvalidArgument(fmt::format("option {} has no meaning in Shoal (did you mean --{}?)",
                                         shown, closest->long_name));
    }
  }
  return InvalidArgument(fmt::format("option {} has no meaning in Shoal", shown));
}

}  // namespace

Status ReadOption(std::string_view name, std::optional<std::string_view> value, Source source,
                  Request& request, std::vector<std::string>& notes) {
  const OptionDef* def = FindOption(name);
  if (def == nullptr) {
    if (!StartsWith(name, "-") || name == "-" || name == "--") {
      return InvalidArgument(fmt::format("'{}' is not an option", Printable(name)));
    }
    if (const SlurmOnly* slurm = FindSlurmOnly(name); slurm != nullptr) {
      if (!slurm->takes_value && value)
        return InvalidArgument(fmt::format("{} takes no value", name));
      if (slurm->takes_value && (!value || value->empty()))
        return InvalidArgument(fmt::format("{} needs a value", name));
      request.ignored.push_back(value ? fmt::format("--{}={}", slurm->long_name, Printable(*value))
                                      : fmt::format("--{}", slurm->long_name));
      return Status::Ok();
    }
    return UnknownOption(name);
  }
  const bool flag = def->value_name.empty();
  if (flag && value) return InvalidArgument(fmt::format("{} takes no value", name));
  if (!flag && (!value || value->empty())) {
    return InvalidArgument(fmt::format("{} needs a value", name));
  }
  if (!flag && def->long_name != "wrap" && value->size() > kMaxValueBytes) {
    return InvalidArgument(
        fmt::format("{}: the value is longer than {} bytes", name, kMaxValueBytes));
  }
  if (value && value->size() > kMaxScriptBytes) {
    return InvalidArgument(
        fmt::format("{}: the value is longer than {} bytes", name, kMaxScriptBytes));
  }
  Call call{name, fmt::format("--{}", def->long_name), value.value_or(""), source};
  return def->apply(call, request, notes);
}

Status ReadOptions(const std::vector<std::string>& words, Source source, Request& request,
                   std::vector<std::string>& rest, std::vector<std::string>& notes) {
  for (size_t i = 0; i < words.size(); ++i) {
    std::string_view word = words[i];
    const bool option = word.size() >= 2 && word[0] == '-' && word != "--";
    if (!option) {
      if (source == Source::kDirective) {
        return InvalidArgument(
            fmt::format("'{}' is not an option (quote values that hold spaces)", Printable(word)));
      }
      rest.assign(words.begin() + static_cast<std::ptrdiff_t>(word == "--" ? i + 1 : i),
                  words.end());
      return Status::Ok();
    }
    std::string_view name = word;
    std::optional<std::string_view> value;
    if (StartsWith(word, "--")) {
      const size_t eq = word.find('=');
      if (eq != std::string_view::npos) {
        name = word.substr(0, eq);
        value = word.substr(eq + 1);
      }
    } else if (word.size() > 2) {
      // "-N2": a short option with its value attached.
      name = word.substr(0, 2);
      value = word.substr(2);
    }
    if (!value && TakesValue(name)) {
      if (i + 1 >= words.size()) return InvalidArgument(fmt::format("{} needs a value", name));
      value = words[++i];
    }
    SHOAL_RETURN_IF_ERROR(ReadOption(name, value, source, request, notes));
  }
  return Status::Ok();
}

bool TakesValue(std::string_view name) {
  if (const OptionDef* def = FindOption(name); def != nullptr) return !def->value_name.empty();
  const SlurmOnly* slurm = FindSlurmOnly(name);
  return slurm != nullptr && slurm->takes_value;
}

Status CheckOptionName(std::string_view name) {
  if (FindOption(name) != nullptr || FindSlurmOnly(name) != nullptr) return Status::Ok();
  return UnknownOption(name);
}

std::vector<OptionInfo> OptionList() {
  std::vector<OptionInfo> out;
  out.reserve(std::size(kOptions));
  for (const OptionDef& d : kOptions)
    out.push_back({d.long_name, d.short_name, d.value_name, d.help});
  return out;
}

}  // namespace shoal::submit
