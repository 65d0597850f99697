// The commands that shape the cluster's policy: `shoal partition`,
// `shoal account` and `shoal qos`, each with list, show and set, over
// /v1/partitions, /v1/accounts and /v1/qos, and `shoal reservation` (create,
// list, show, delete) over /v1/reservations. Anyone may list and show; set is for admins, which the
// server checks. set reads the current record first, so that the options not
// given keep their values (the API replaces a whole record).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/server_command.h"
#include "core/cluster.h"
#include "core/hostlist.h"
#include "core/strings.h"
#include "core/time.h"

namespace shoal::cli {

namespace {

using api::Json;

// Limits past which a value is a mistake rather than a policy.
constexpr Duration kMaxPartitionTime = std::chrono::hours(24 * 365);  // as submit's --time
constexpr int64_t kMaxNodesPerJob = 100'000;                          // as JobSpec::Validate
constexpr int64_t kMaxGpus = 1'000'000;                               // as JobSpec::Validate
constexpr int64_t kMaxPriorityTier = 65'533;                          // as Slurm's PriorityTier
constexpr int64_t kMaxIdleMinutes = 525'600;                          // a year
constexpr double kMaxShares = 1e6;
constexpr size_t kMaxNameBytes = 64;

// ------------------------------------------------------------ values

// Partition and account names: what -p and -A carry and a table shows.
Status CheckName(std::string_view what, std::string_view s) {
  const bool ok =
      !s.empty() && s.size() <= kMaxNameBytes && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
      });
  if (ok) return Status::Ok();
  return InvalidArgument(
      fmt::format("'{}' is not {} name (letters, digits, '.', '_' and '-', at most {})", s, what,
                  kMaxNameBytes));
}

// A partition's time in Slurm's forms (core ParseDuration, as sbatch --time);
// 0 is none, and a maximum may also be "unlimited" or "infinite", as Slurm's
// MaxTime takes it.
Result<Duration> ParsePartitionTime(std::string_view s, bool is_maximum) {
  const std::string lower = ToLower(Trim(s));
  if (is_maximum && (lower == "unlimited" || lower == "infinite")) return Duration(0);
  auto d = ParseDuration(s);
  if (!d.ok()) {
    return InvalidArgument(fmt::format(
        "'{}' is not a time: MIN, MIN:SEC, H:M:S, D-H, D-H:M, D-H:M:S, or 90s, 45m, 2h, 3d ({})", s,
        is_maximum ? "0 or unlimited: no limit" : "0: the maximum, or a day without one"));
  }
  if (*d > kMaxPartitionTime) return InvalidArgument(fmt::format("'{}' is more than 365 days", s));
  return *d;
}

Result<int> ParseWhole(std::string_view s, int64_t lo, int64_t hi) {
  auto v = ParseInt(s);
  if (!v.ok() || *v < lo || *v > hi)
    return InvalidArgument(fmt::format("'{}' is not a whole number from {} to {}", s, lo, hi));
  return static_cast<int>(*v);
}

Result<double> ParsePercent(std::string_view s) {
  auto v = ParseDouble(s);
  if (!v.ok() || !(*v >= 0 && *v <= 100))
    return InvalidArgument(fmt::format("'{}' is not a percentage from 0 to 100", s));
  return *v;
}

Result<double> ParseShares(std::string_view s) {
  auto v = ParseDouble(s);
  if (!v.ok() || !(*v > 0 && *v <= kMaxShares))
    return InvalidArgument(
        fmt::format("'{}' is not a number more than 0, at most {:.0f}", s, kMaxShares));
  return *v;
}

// "a,b" into account names; "ALL" (as Slurm's AllowAccounts) or "" is every
// account, an empty list.
Result<std::vector<std::string>> ParseAccountList(std::string_view s) {
  std::vector<std::string> out;
  const std::string lower = ToLower(Trim(s));
  if (lower.empty() || lower == "all") return out;
  for (std::string_view part : Split(s, ',')) {
    const std::string name(Trim(part));
    SHOAL_RETURN_IF_ERROR(CheckName("an account", name));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

const Status& StatusOf(const Status& s) {
  return s;
}
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

// A CLI11 check of a value with one of the parsers above, so that a bad
// value is a usage error that says what is wrong with it.
template <typename Parse>
CLI::Validator Checked(Parse parse, std::string name) {
  return CLI::Validator(
      [parse](std::string& s) {
        const auto r = parse(s);
        const Status& status = StatusOf(r);
        return status.ok() ? std::string() : status.message();
      },
      "", std::move(name));
}

CLI::Validator NameCheck(const std::string& what) {
  return Checked([what](const std::string& s) { return CheckName(what, s); }, "Name");
}

// ------------------------------------------------------------ reading

// j["name"] when it is a string, else "".
std::string NameOf(const Json& j) {
  auto it = j.find("name");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The item of the server's list `key` (checked by GetList) named `name`, or nullptr.
const Json* FindNamed(const Json& answer, const char* key, const std::string& name) {
  for (const Json& item : answer.at(key)) {
    if (item.is_object() && NameOf(item) == name) return &item;
  }
  return nullptr;
}

// The server's answer to GET `path`, checked to hold a list `key`.
Result<Json> GetList(ApiClient& c, const char* path, const char* key) {
  SHOAL_ASSIGN_OR_RETURN(Json r, c.Get(path));
  if (!r.is_object() || !r.contains(key) || !r[key].is_array())
    return Internal(fmt::format("the server's answer to {} has no list '{}'", path, key));
  return r;
}

Result<std::vector<Partition>> Partitions(const Json& answer) {
  std::vector<Partition> out;
  for (const Json& j : answer.at("partitions")) {
    SHOAL_ASSIGN_OR_RETURN(Partition p, api::PartitionFromJson(j));
    out.push_back(std::move(p));
  }
  return out;
}

// An account as the server lists it: the record, and its use so far.
struct AccountUse {
  Account account;
  double usage_gpu_hours = 0;
};

Result<AccountUse> AccountFrom(Json j) {
  AccountUse out;
  if (j.is_object() && j.contains("usage_gpu_hours")) {
    if (j["usage_gpu_hours"].is_number()) out.usage_gpu_hours = j["usage_gpu_hours"].get<double>();
    j.erase("usage_gpu_hours");  // not part of the record the API takes
  }
  SHOAL_ASSIGN_OR_RETURN(out.account, api::AccountFromJson(j));
  return out;
}

Result<std::vector<AccountUse>> Accounts(const Json& answer) {
  std::vector<AccountUse> out;
  for (const Json& j : answer.at("accounts")) {
    SHOAL_ASSIGN_OR_RETURN(AccountUse a, AccountFrom(j));
    out.push_back(std::move(a));
  }
  return out;
}

// The nodes that serve each partition and their GPUs, counted as the
// server's inventory counts them (sched/inventory.cc): a node serves the
// partitions it names that exist, or the default partition when it names
// none that do.
struct Members {
  std::vector<std::string> nodes;
  int gpus = 0;
};

Result<std::map<std::string, Members>> PartitionMembers(ApiClient& c,
                                                        const std::vector<Partition>& parts) {
  SHOAL_ASSIGN_OR_RETURN(const Json r, GetList(c, "/v1/nodes", "nodes"));
  auto known = [&](const std::string& name) {
    return std::any_of(parts.begin(), parts.end(),
                       [&](const Partition& p) { return p.name == name; });
  };
  std::string default_name;
  for (const Partition& p : parts) {
    if (p.is_default) default_name = p.name;
  }
  std::map<std::string, Members> out;
  for (const Json& n : r.at("nodes")) {
    if (!n.is_object()) continue;
    std::vector<std::string> serves;
    auto named = n.find("partitions");
    if (named != n.end() && !named->is_array()) named = n.end();
    for (const Json& p : named != n.end() ? *named : Json::array()) {
      if (p.is_string() && known(p.get<std::string>())) serves.push_back(p.get<std::string>());
    }
    if (serves.empty() && !default_name.empty()) serves.push_back(default_name);
    const int gpus =
        n.contains("gpus") && n["gpus"].is_array() ? static_cast<int>(n["gpus"].size()) : 0;
    for (const std::string& p : serves) {
      out[p].nodes.push_back(NameOf(n));
      out[p].gpus += gpus;
    }
  }
  return out;
}

// ------------------------------------------------------------ partitions

constexpr const char* kPartition = "partition";

std::string Limit(int n) {
  return n > 0 ? std::to_string(n) : "-";
}

std::string MaxTime(const Partition& p) {
  return p.max_time.count() > 0 ? FormatDuration(p.max_time) : "unlimited";
}

std::string AllowedAccounts(const Partition& p) {
  return p.allowed_accounts.empty() ? "all" : Join(p.allowed_accounts, ",");
}

std::string IdleRule(const Partition& p) {
  return p.idle_minutes > 0
             ? fmt::format("<{:g}% {}m {}", p.idle_util_pct, p.idle_minutes, p.idle_action)
             : "off";
}

int ListPartitions(ApiClient& c, const ClientFlags& flags) {
  auto r = GetList(c, "/v1/partitions", "partitions");
  if (!r.ok()) return Fail(kPartition, r.status());
  if (flags.json) {
    std::printf("%s\n", r->dump(2).c_str());
    return kExitOk;
  }
  auto parts = Partitions(*r);
  if (!parts.ok()) return Fail(kPartition, parts.status());
  auto members = PartitionMembers(c, *parts);
  if (!members.ok()) return Fail(kPartition, members.status());
  std::vector<std::vector<std::string>> rows;
  for (const Partition& p : *parts) {
    const Members& m = (*members)[p.name];
    rows.push_back({p.name, p.is_default ? "yes" : "no", p.up ? "up" : "down",
                    std::to_string(m.nodes.size()), std::to_string(m.gpus), MaxTime(p),
                    FormatDuration(p.DefaultTimeLimit()), Limit(p.max_nodes_per_job),
                    Limit(p.max_gpus_per_job), AllowedAccounts(p), std::to_string(p.priority_tier),
                    IdleRule(p), p.require_acceptance ? "required" : "no"});
  }
  std::printf("%s", Table({"PARTITION", "DEFAULT", "STATE", "NODES", "GPUS", "MAXTIME", "DEFTIME",
                           "MAXNODES", "MAXGPUS", "ACCOUNTS", "TIER", "IDLE", "ACCEPTANCE"},
                          rows)
                        .c_str());
  return kExitOk;
}

void PrintPartition(const Partition& p, const Members& m) {
  auto line = [](const char* k, const std::string& v) { std::printf("%-16s %s\n", k, v.c_str()); };
  line("partition", p.name);
  line("default", p.is_default ? "yes (jobs without -p run here)" : "no");
  line("state", p.up ? "up" : "down (its jobs wait)");
  line("nodes", m.nodes.empty()
                    ? "none"
                    : fmt::format("{} ({}), {} GPUs", m.nodes.size(), Join(m.nodes, ","), m.gpus));
  line("max time", MaxTime(p));
  line("default time",
       FormatDuration(p.DefaultTimeLimit()) + (p.default_time.count() > 0 ? ""
                                               : p.max_time.count() > 0 ? " (not set: the max time)"
                                                                        : " (not set: a day)"));
  line("max nodes/job", p.max_nodes_per_job > 0 ? std::to_string(p.max_nodes_per_job) : "no limit");
  line("max GPUs/job", p.max_gpus_per_job > 0 ? std::to_string(p.max_gpus_per_job) : "no limit");
  line("accounts", AllowedAccounts(p));
  line("priority tier", std::to_string(p.priority_tier));
  line("idle GPUs", p.idle_minutes > 0
                        ? fmt::format("a job whose GPUs all stay under {:g}% for {} minutes is {}",
                                      p.idle_util_pct, p.idle_minutes,
                                      p.idle_action == "cancel" ? "cancelled" : "flagged")
                        : "off");
  line("acceptance",
       p.require_acceptance ? "required: new nodes join drained until they pass" : "not required");
}

int ShowPartition(ApiClient& c, const ClientFlags& flags, const std::string& name) {
  auto r = GetList(c, "/v1/partitions", "partitions");
  if (!r.ok()) return Fail(kPartition, r.status());
  const Json* item = FindNamed(*r, "partitions", name);
  if (item == nullptr) return Fail(kPartition, NotFound(fmt::format("no partition '{}'", name)));
  if (flags.json) {
    std::printf("%s\n", item->dump(2).c_str());
    return kExitOk;
  }
  auto parts = Partitions(*r);
  if (!parts.ok()) return Fail(kPartition, parts.status());
  auto members = PartitionMembers(c, *parts);
  if (!members.ok()) return Fail(kPartition, members.status());
  for (const Partition& p : *parts) {
    if (p.name == name) PrintPartition(p, (*members)[name]);
  }
  return kExitOk;
}

// The options of `shoal partition set`, as given; each passed its check.
struct PartitionEdits {
  bool make_default = false, up = false, down = false;
  bool require_acceptance = false, no_require_acceptance = false;
  std::string max_time, default_time, max_nodes, max_gpus, accounts, priority_tier;
  std::string idle_util_pct, idle_minutes, idle_action;
};

void AddPartitionOptions(CLI::App& set, PartitionEdits& e) {
  set.add_flag("--default", e.make_default,
               "make it the default partition, for jobs without -p (the old one stops being it)");
  CLI::Option* up = set.add_flag("--up", e.up, "let its jobs start");
  CLI::Option* down =
      set.add_flag("--down", e.down, "keep its jobs from starting: they wait (running ones go on)");
  up->excludes(down);
  set.add_option("--max-time", e.max_time,
                 "the longest time limit a job may ask for: MIN, H:M:S, D-H:M:S, 4h, 3d ... "
                 "(0 or unlimited: no limit)")
      ->type_name("TIME")
      ->check(Checked([](const std::string& s) { return ParsePartitionTime(s, true); }, "Time"));
  set.add_option("--default-time", e.default_time,
                 "the time limit of a job that names none (0: the max time, or a day without one)")
      ->type_name("TIME")
      ->check(Checked([](const std::string& s) { return ParsePartitionTime(s, false); }, "Time"));
  set.add_option("--max-nodes", e.max_nodes, "the most nodes one job may have (0: no limit)")
      ->type_name("N")
      ->check(Checked([](const std::string& s) { return ParseWhole(s, 0, kMaxNodesPerJob); }, "N"));
  set.add_option("--max-gpus", e.max_gpus, "the most GPUs one job may have (0: no limit)")
      ->type_name("N")
      ->check(Checked([](const std::string& s) { return ParseWhole(s, 0, kMaxGpus); }, "N"));
  set.add_option("--accounts", e.accounts,
                 "the only accounts whose jobs may run here, comma-separated (ALL: every account)")
      ->type_name("A,B")
      ->check(Checked(ParseAccountList, "Accounts"));
  set.add_option("--priority-tier", e.priority_tier,
                 "higher tiers are scheduled first and may preempt lower ones (0 to 65533)")
      ->type_name("N")
      ->check(
          Checked([](const std::string& s) { return ParseWhole(s, 0, kMaxPriorityTier); }, "N"));
  set.add_option("--idle-util-pct", e.idle_util_pct,
                 "a GPU under this utilisation counts as idle (0 to 100)")
      ->type_name("PCT")
      ->check(Checked(ParsePercent, "Percent"));
  set.add_option("--idle-minutes", e.idle_minutes,
                 "a job whose GPUs all stay idle this long is flagged (0: never)")
      ->type_name("N")
      ->check(Checked([](const std::string& s) { return ParseWhole(s, 0, kMaxIdleMinutes); }, "N"));
  set.add_option("--idle-action", e.idle_action, "what befalls an idle job: notify or cancel")
      ->type_name("ACTION")
      ->check(CLI::IsMember({"notify", "cancel"}));
  CLI::Option* accept = set.add_flag(
      "--require-acceptance", e.require_acceptance,
      "nodes that join it for the first time stay drained until their acceptance test passes");
  CLI::Option* no_accept = set.add_flag("--no-require-acceptance", e.no_require_acceptance,
                                        "new nodes join it in service");
  accept->excludes(no_accept);
}

// `p` with the options given; their values passed their checks, so parsing
// them again cannot fail.
Partition ApplyEdits(const CLI::App& set, const PartitionEdits& e, Partition p) {
  auto given = [&](const char* option) { return set.count(option) > 0; };
  if (e.make_default) p.is_default = true;
  if (e.up) p.up = true;
  if (e.down) p.up = false;
  if (given("--max-time")) p.max_time = *ParsePartitionTime(e.max_time, true);
  if (given("--default-time")) p.default_time = *ParsePartitionTime(e.default_time, false);
  if (given("--max-nodes")) p.max_nodes_per_job = *ParseWhole(e.max_nodes, 0, kMaxNodesPerJob);
  if (given("--max-gpus")) p.max_gpus_per_job = *ParseWhole(e.max_gpus, 0, kMaxGpus);
  if (given("--accounts")) p.allowed_accounts = *ParseAccountList(e.accounts);
  if (given("--priority-tier")) p.priority_tier = *ParseWhole(e.priority_tier, 0, kMaxPriorityTier);
  if (given("--idle-util-pct")) p.idle_util_pct = *ParsePercent(e.idle_util_pct);
  if (given("--idle-minutes")) p.idle_minutes = *ParseWhole(e.idle_minutes, 0, kMaxIdleMinutes);
  if (given("--idle-action")) p.idle_action = e.idle_action;
  if (e.require_acceptance) p.require_acceptance = true;
  if (e.no_require_acceptance) p.require_acceptance = false;
  return p;
}

int SetPartition(ApiClient& c, const ClientFlags& flags, const CLI::App& set,
                 const PartitionEdits& e, const std::string& name) {
  auto r = GetList(c, "/v1/partitions", "partitions");
  if (!r.ok()) return Fail(kPartition, r.status());
  auto parts = Partitions(*r);
  if (!parts.ok()) return Fail(kPartition, parts.status());
  auto it = std::find_if(parts->begin(), parts->end(),
                         [&](const Partition& p) { return p.name == name; });
  const bool exists = it != parts->end();
  Partition fresh;
  fresh.name = name;
  const Partition p = ApplyEdits(set, e, exists ? *it : fresh);
  if (p.max_time.count() > 0 && p.default_time > p.max_time) {
    return UsageError("shoal partition set",
                      fmt::format("the default time {} would be more than the max time {}",
                                  FormatDuration(p.default_time), FormatDuration(p.max_time)));
  }
  auto put = c.Post("/v1/partitions", api::ToJson(p));
  if (!put.ok()) return Fail(kPartition, put.status());
  if (flags.json) {
    std::printf("%s\n", put->dump(2).c_str());
  } else {
    std::printf("%s partition %s\n", exists ? "Updated" : "Created", name.c_str());
  }
  return kExitOk;
}

// ------------------------------------------------------------ accounts

constexpr const char* kAccount = "account";

int ListAccounts(ApiClient& c, const ClientFlags& flags) {
  auto r = GetList(c, "/v1/accounts", "accounts");
  if (!r.ok()) return Fail(kAccount, r.status());
  if (flags.json) {
    std::printf("%s\n", r->dump(2).c_str());
    return kExitOk;
  }
  auto accounts = Accounts(*r);
  if (!accounts.ok()) return Fail(kAccount, accounts.status());
  double total_shares = 0;
  for (const AccountUse& a : *accounts)
    total_shares += a.account.shares;
  std::vector<std::vector<std::string>> rows;
  for (const AccountUse& a : *accounts) {
    rows.push_back({a.account.name, fmt::format("{:g}", a.account.shares),
                    fmt::format("{:.0f}%", 100 * a.account.shares / total_shares),
                    Limit(a.account.max_gpus), fmt::format("{:.2f}", a.usage_gpu_hours)});
  }
  std::printf("%s", Table({"ACCOUNT", "SHARES", "SHARE", "MAXGPUS", "GPU-HOURS"}, rows).c_str());
  if (rows.empty()) std::printf("no accounts: a job may name any account, or none\n");
  return kExitOk;
}

int ShowAccount(ApiClient& c, const ClientFlags& flags, const std::string& name) {
  auto r = GetList(c, "/v1/accounts", "accounts");
  if (!r.ok()) return Fail(kAccount, r.status());
  const Json* item = FindNamed(*r, "accounts", name);
  if (item == nullptr) return Fail(kAccount, NotFound(fmt::format("no account '{}'", name)));
  if (flags.json) {
    std::printf("%s\n", item->dump(2).c_str());
    return kExitOk;
  }
  auto a = AccountFrom(*item);
  auto accounts = Accounts(*r);
  auto parts_answer = GetList(c, "/v1/partitions", "partitions");
  if (!parts_answer.ok()) return Fail(kAccount, parts_answer.status());
  auto parts = Partitions(*parts_answer);
  for (const Status& s : {a.status(), accounts.status(), parts.status()}) {
    if (!s.ok()) return Fail(kAccount, s);
  }
  double total_shares = 0;
  for (const AccountUse& other : *accounts)
    total_shares += other.account.shares;
  std::vector<std::string> usable;
  for (const Partition& p : *parts) {
    if (p.AllowsAccount(name)) usable.push_back(p.name);
  }
  auto line = [](const char* k, const std::string& v) { std::printf("%-16s %s\n", k, v.c_str()); };
  line("account", name);
  line("shares", fmt::format("{:g} ({:.0f}% of all shares)", a->account.shares,
                             100 * a->account.shares / total_shares));
  line("max GPUs",
       a->account.max_gpus > 0 ? fmt::format("{} at once", a->account.max_gpus) : "no limit");
  line("used", fmt::format("{:.2f} GPU-hours", a->usage_gpu_hours));
  line("partitions", usable.empty() ? "none allow it" : Join(usable, ","));
  return kExitOk;
}

int SetAccount(ApiClient& c, const ClientFlags& flags, const CLI::App& set, const std::string& name,
               const std::string& shares, const std::string& max_gpus) {
  auto r = GetList(c, "/v1/accounts", "accounts");
  if (!r.ok()) return Fail(kAccount, r.status());
  auto accounts = Accounts(*r);
  if (!accounts.ok()) return Fail(kAccount, accounts.status());
  auto it = std::find_if(accounts->begin(), accounts->end(),
                         [&](const AccountUse& a) { return a.account.name == name; });
  const bool exists = it != accounts->end();
  Account a;
  if (exists) a = it->account;
  a.name = name;
  if (set.count("--shares") > 0) a.shares = *ParseShares(shares);
  if (set.count("--max-gpus") > 0) a.max_gpus = *ParseWhole(max_gpus, 0, kMaxGpus);
  auto put = c.Post("/v1/accounts", api::ToJson(a));
  if (!put.ok()) return Fail(kAccount, put.status());
  if (flags.json) {
    std::printf("%s\n", put->dump(2).c_str());
  } else {
    std::printf("%s account %s\n", exists ? "Updated" : "Created", name.c_str());
  }
  // With no accounts the server takes any; from the first one on, only known ones.
  if (accounts->empty()) {
    std::fprintf(stderr,
                 "note: the cluster has accounts now: a job that names an account must name one "
                 "of them (`shoal account list`)\n");
  }
  return kExitOk;
}

// ------------------------------------------------------------ QoS

constexpr const char* kQos = "qos";

// What `shoal qos set` may change; an option not given keeps its value.
struct QosEdits {
  std::string priority, max_gpus_per_job, max_gpus_per_user, max_jobs_per_user, max_time, preempt;
  bool make_default = false;
};

Result<std::vector<Qos>> QosList(const Json& answer) {
  std::vector<Qos> out;
  for (const Json& j : answer.at("qos")) {
    SHOAL_ASSIGN_OR_RETURN(Qos q, api::QosFromJson(j));
    out.push_back(std::move(q));
  }
  return out;
}

std::string QosMaxTime(const Qos& q) {
  return q.max_time.count() > 0 ? FormatDuration(q.max_time) : "-";
}

int ListQos(ApiClient& c, const ClientFlags& flags) {
  auto r = GetList(c, "/v1/qos", "qos");
  if (!r.ok()) return Fail(kQos, r.status());
  if (flags.json) {
    std::printf("%s\n", r->dump(2).c_str());
    return kExitOk;
  }
  auto all = QosList(*r);
  if (!all.ok()) return Fail(kQos, all.status());
  std::vector<std::vector<std::string>> rows;
  for (const Qos& q : *all) {
    rows.push_back({q.name + (q.is_default ? "*" : ""), std::to_string(q.priority),
                    Limit(q.max_gpus_per_job), Limit(q.max_gpus_per_user),
                    Limit(q.max_jobs_per_user), QosMaxTime(q),
                    q.preempt.empty() ? "-" : Join(q.preempt, ",")});
  }
  std::printf("%s", Table({"QOS", "PRIORITY", "MAXGPUS/JOB", "MAXGPUS/USER", "MAXJOBS/USER",
                           "MAXTIME", "PREEMPTS"},
                          rows)
                        .c_str());
  if (rows.empty()) {
    std::printf("no QoS: --qos is kept with a job and has no effect\n");
  } else {
    std::printf("* the default QoS, for jobs that name none\n");
  }
  return kExitOk;
}

int ShowQos(ApiClient& c, const ClientFlags& flags, const std::string& name) {
  auto r = GetList(c, "/v1/qos", "qos");
  if (!r.ok()) return Fail(kQos, r.status());
  const Json* item = FindNamed(*r, "qos", name);
  if (item == nullptr) return Fail(kQos, NotFound(fmt::format("no QoS '{}'", name)));
  if (flags.json) {
    std::printf("%s\n", item->dump(2).c_str());
    return kExitOk;
  }
  auto q = api::QosFromJson(*item);
  if (!q.ok()) return Fail(kQos, q.status());
  auto line = [](const char* k, const std::string& v) { std::printf("%-16s %s\n", k, v.c_str()); };
  auto limit = [](int n, const char* what) {
    return n > 0 ? fmt::format("{} {}", n, what) : std::string("no limit");
  };
  line("qos", q->name + (q->is_default ? " (the default)" : ""));
  line("priority", std::to_string(q->priority));
  line("GPUs per job", limit(q->max_gpus_per_job, "at most"));
  line("GPUs per user", limit(q->max_gpus_per_user, "at once"));
  line("jobs per user", limit(q->max_jobs_per_user, "running at once"));
  line("max time", q->max_time.count() > 0 ? FormatDuration(q->max_time) : "no limit");
  line("preempts", q->preempt.empty() ? "none" : Join(q->preempt, ","));
  return kExitOk;
}

int SetQos(ApiClient& c, const ClientFlags& flags, const CLI::App& set, const std::string& name,
           const QosEdits& e) {
  auto r = GetList(c, "/v1/qos", "qos");
  if (!r.ok()) return Fail(kQos, r.status());
  auto all = QosList(*r);
  if (!all.ok()) return Fail(kQos, all.status());
  auto it = std::find_if(all->begin(), all->end(), [&](const Qos& q) { return q.name == name; });
  const bool exists = it != all->end();
  Qos q;
  if (exists) q = *it;
  q.name = name;
  auto given = [&set](const char* opt) { return set.count(opt) > 0; };
  if (given("--priority")) q.priority = *ParseWhole(e.priority, 0, 1'000'000);
  if (given("--max-gpus-per-job"))
    q.max_gpus_per_job = *ParseWhole(e.max_gpus_per_job, 0, kMaxGpus);
  if (given("--max-gpus-per-user"))
    q.max_gpus_per_user = *ParseWhole(e.max_gpus_per_user, 0, kMaxGpus);
  if (given("--max-jobs-per-user"))
    q.max_jobs_per_user = *ParseWhole(e.max_jobs_per_user, 0, 1'000'000);
  if (given("--max-time")) q.max_time = *ParsePartitionTime(e.max_time, /*is_maximum=*/true);
  if (given("--preempt")) q.preempt = *ParseAccountList(e.preempt);
  if (e.make_default) q.is_default = true;
  auto put = c.Post("/v1/qos", api::ToJson(q));
  if (!put.ok()) return Fail(kQos, put.status());
  if (flags.json) {
    std::printf("%s\n", put->dump(2).c_str());
  } else {
    std::printf("%s QoS %s\n", exists ? "Updated" : "Created", name.c_str());
  }
  if (all->empty()) {
    std::fprintf(stderr,
                 "note: the cluster has QoS now: a job that names a QoS must name one of them "
                 "(`shoal qos list`)\n");
  }
  if (!q.preempt.empty()) {
    std::fprintf(stderr,
                 "note: jobs preempt by QoS when the server's policy has preempt=qos (e.g. "
                 "policy = \"backfill:preempt=qos\"), and only jobs that may be requeued\n");
  }
  return kExitOk;
}

int DeleteNamed(ApiClient& c, const ClientFlags& flags, const char* command, const char* path,
                const std::string& name) {
  auto r = c.Delete(fmt::format("{}/{}", path, name));
  if (!r.ok()) return Fail(command, r.status());
  if (flags.json) {
    std::printf("%s\n", r->dump(2).c_str());
  } else {
    std::printf("Deleted %s %s\n", command, name.c_str());
  }
  return kExitOk;
}

// ------------------------------------------------------------ reservations

constexpr const char* kReservation = "reservation";

// "now", "now+DURATION" (as scontrol's StartTime=now+1hour, with Shoal's
// durations), a UTC time, or Unix seconds.
Result<Time> ParseWhen(std::string_view text, Time now) {
  const std::string lower = ToLower(Trim(text));
  if (lower == "now") return now;
  if (StartsWith(lower, "now+")) {
    SHOAL_ASSIGN_OR_RETURN(Duration d, ParseDuration(lower.substr(4)));
    return now + d;
  }
  return ParseUtcTime(Trim(text));
}

// What `shoal reservation create` takes.
struct ReservationEdits {
  std::string start = "now", end, duration, nodes, users, accounts, partition;
  int node_count = 0;
  int gpu_count = 0;
  bool maintenance = false;
};

Result<Json> ReservationBody(const std::string& name, const ReservationEdits& e, Time now) {
  SHOAL_ASSIGN_OR_RETURN(Time start, ParseWhen(e.start, now));
  Time end;
  Duration duration{0};
  if (!e.end.empty() == !e.duration.empty())
    return InvalidArgument("give the reservation's --end or its --duration");
  if (!e.end.empty()) {
    SHOAL_ASSIGN_OR_RETURN(end, ParseWhen(e.end, now));
  } else {
    SHOAL_ASSIGN_OR_RETURN(duration, ParseDuration(e.duration));
    end = start + duration;
  }
  Reservation r;
  r.name = name;
  r.start = start;
  r.end = end;
  r.maintenance = e.maintenance;
  if (!e.nodes.empty()) {
    SHOAL_ASSIGN_OR_RETURN(r.nodes, ExpandHostList(e.nodes));
  }
  for (std::string_view u : Split(e.users, ',')) {
    if (!Trim(u).empty()) r.users.emplace_back(Trim(u));
  }
  SHOAL_ASSIGN_OR_RETURN(r.accounts, ParseAccountList(e.accounts));
  Json body = api::ToJson(r);
  if (e.node_count > 0) body["node_count"] = e.node_count;
  if (e.gpu_count > 0) body["gpu_count"] = e.gpu_count;
  if (!e.partition.empty()) body["partition"] = e.partition;
  // The server's start may be a little later than ours ("now"): the
  // duration holds from there.
  if (duration.count() > 0) body["duration_s"] = ToSeconds(duration);
  return body;
}

std::string Whom(const Reservation& r) {
  std::vector<std::string> parts;
  if (!r.users.empty()) parts.push_back("users " + Join(r.users, ","));
  if (!r.accounts.empty()) parts.push_back("accounts " + Join(r.accounts, ","));
  return parts.empty() ? "nobody (maintenance)" : Join(parts, "; ");
}

int CreateReservation(ApiClient& c, const ClientFlags& flags, const std::string& name,
                      const ReservationEdits& e) {
  auto body = ReservationBody(name, e, SystemClock().Now());
  if (!body.ok()) return Fail(kReservation, body.status());
  auto r = c.Post("/v1/reservations", *body);
  if (!r.ok()) return Fail(kReservation, r.status());
  if (flags.json) {
    std::printf("%s\n", r->dump(2).c_str());
    return kExitOk;
  }
  auto made = api::ReservationFromJson([&] {
    Json j = *r;
    j.erase("running_jobs");
    return j;
  }());
  if (!made.ok()) return Fail(kReservation, made.status());
  std::printf("Reservation created: %s on %s from %s to %s\n", name.c_str(),
              CompressHostList(made->nodes).c_str(), FormatTime(made->start).c_str(),
              FormatTime(made->end).c_str());
  if (r->contains("running_jobs") && (*r)["running_jobs"].is_array() &&
      !(*r)["running_jobs"].empty()) {
    std::vector<std::string> ids;
    for (const Json& id : (*r)["running_jobs"])
      ids.push_back(id.dump());
    std::fprintf(stderr, "note: jobs %s run on its nodes now and keep running\n",
                 Join(ids, ",").c_str());
  }
  return kExitOk;
}

Result<std::vector<std::pair<Reservation, Json>>> ReservationList(const Json& answer) {
  std::vector<std::pair<Reservation, Json>> out;
  for (const Json& item : answer.at("reservations")) {
    Json record = item;
    for (const char* extra : {"state", "gpus"})
      record.erase(extra);
    SHOAL_ASSIGN_OR_RETURN(Reservation r, api::ReservationFromJson(record));
    out.emplace_back(std::move(r), item);
  }
  return out;
}

int ListReservations(ApiClient& c, const ClientFlags& flags) {
  auto r = GetList(c, "/v1/reservations", "reservations");
  if (!r.ok()) return Fail(kReservation, r.status());
  if (flags.json) {
    std::printf("%s\n", r->dump(2).c_str());
    return kExitOk;
  }
  auto all = ReservationList(*r);
  if (!all.ok()) return Fail(kReservation, all.status());
  std::vector<std::vector<std::string>> rows;
  for (const auto& [res, item] : *all) {
    rows.push_back({res.name, item.value("state", std::string("?")), FormatTime(res.start),
                    FormatTime(res.end), CompressHostList(res.nodes),
                    std::to_string(item.value("gpus", 0)), Whom(res)});
  }
  std::printf(
      "%s", Table({"RESERVATION", "STATE", "START", "END", "NODES", "GPUS", "FOR"}, rows).c_str());
  if (rows.empty()) std::printf("no reservations\n");
  return kExitOk;
}

int ShowReservation(ApiClient& c, const ClientFlags& flags, const std::string& name) {
  auto r = GetList(c, "/v1/reservations", "reservations");
  if (!r.ok()) return Fail(kReservation, r.status());
  const Json* item = FindNamed(*r, "reservations", name);
  if (item == nullptr)
    return Fail(kReservation, NotFound(fmt::format("no reservation '{}'", name)));
  if (flags.json) {
    std::printf("%s\n", item->dump(2).c_str());
    return kExitOk;
  }
  Json one = Json::object();
  one["reservations"] = Json::array({*item});
  auto all = ReservationList(one);
  if (!all.ok()) return Fail(kReservation, all.status());
  const Reservation& res = all->front().first;
  auto line = [](const char* k, const std::string& v) { std::printf("%-16s %s\n", k, v.c_str()); };
  line("reservation", res.name + (res.maintenance ? " (maintenance)" : ""));
  line("state", item->value("state", std::string("?")));
  line("start", FormatTime(res.start));
  line("end", FormatTime(res.end));
  line("duration", FormatDuration(res.end - res.start));
  line("nodes", CompressHostList(res.nodes));
  line("GPUs", std::to_string(item->value("gpus", 0)));
  line("for", Whom(res));
  return kExitOk;
}

}  // namespace

int RunPartition(const std::vector<std::string>& raw) {
  ServerCommand cmd(kPartition,
                    "List, show and change partitions: where jobs run, for how long, and whose "
                    "(changes: admins).");
  CLI::App& app = cmd.app();
  std::string name;
  CLI::App* list = app.add_subcommand(
      "list", "every partition: its state, nodes, time limits, job limits and who may use it");
  CLI::App* show = app.add_subcommand("show", "everything about one partition");
  show->add_option("NAME", name, "the partition's name")->required();
  CLI::App* set = app.add_subcommand(
      "set", "create a partition or change it (admins); what is not given keeps its value");
  set->add_option("NAME", name, "the partition's name")
      ->required()
      ->check(NameCheck("a partition"));
  PartitionEdits edits;
  AddPartitionOptions(*set, edits);
  // The client flags may come after the verb too: `shoal partition list --json`.
  for (CLI::App* verb : {list, show, set})
    verb->fallthrough();
  app.require_subcommand(1);
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    if (show->parsed()) return ShowPartition(c, cmd.flags(), name);
    if (set->parsed()) return SetPartition(c, cmd.flags(), *set, edits, name);
    return ListPartitions(c, cmd.flags());
  });
}

int RunAccount(const std::vector<std::string>& raw) {
  ServerCommand cmd(kAccount,
                    "List, show and change accounts: their fair-share weights and GPU limits "
                    "(changes: admins).");
  CLI::App& app = cmd.app();
  std::string name, shares, max_gpus;
  CLI::App* list =
      app.add_subcommand("list", "every account: its shares, GPU limit and GPU-hours used");
  CLI::App* show = app.add_subcommand("show", "one account, and the partitions that allow it");
  show->add_option("NAME", name, "the account's name")->required();
  CLI::App* set = app.add_subcommand(
      "set", "create an account or change it (admins); what is not given keeps its value");
  set->add_option("NAME", name, "the account's name")->required()->check(NameCheck("an account"));
  set->add_option("--shares", shares,
                  "its fair-share weight against the other accounts (more than 0; new: 1)")
      ->type_name("X")
      ->check(Checked(ParseShares, "Shares"));
  set->add_option("--max-gpus", max_gpus, "the most GPUs its jobs may hold at once (0: no limit)")
      ->type_name("N")
      ->check(Checked([](const std::string& s) { return ParseWhole(s, 0, kMaxGpus); }, "N"));
  for (CLI::App* verb : {list, show, set})
    verb->fallthrough();
  app.require_subcommand(1);
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    if (show->parsed()) return ShowAccount(c, cmd.flags(), name);
    if (set->parsed()) return SetAccount(c, cmd.flags(), *set, name, shares, max_gpus);
    return ListAccounts(c, cmd.flags());
  });
}

int RunQos(const std::vector<std::string>& raw) {
  ServerCommand cmd(kQos,
                    "List, show and change QoS (Slurm's QOS): priority, limits per job and per "
                    "user, whom they preempt (changes: admins).");
  CLI::App& app = cmd.app();
  std::string name;
  QosEdits edits;
  CLI::App* list = app.add_subcommand("list", "every QoS with its priority and limits");
  CLI::App* show = app.add_subcommand("show", "one QoS");
  show->add_option("NAME", name, "the QoS's name")->required();
  CLI::App* set = app.add_subcommand(
      "set", "create a QoS or change it (admins); what is not given keeps its value");
  set->add_option("NAME", name, "the QoS's name")->required()->check(NameCheck("a QoS"));
  auto whole = [](int64_t hi) {
    return Checked([hi](const std::string& s) { return ParseWhole(s, 0, hi); }, "N");
  };
  set->add_option("--priority", edits.priority,
                  "its jobs' QoS priority: the multifactor QoS factor is this over the highest")
      ->type_name("N")
      ->check(whole(1'000'000));
  set->add_option("--max-gpus-per-job", edits.max_gpus_per_job, "GPUs one job may ask for (0: any)")
      ->type_name("N")
      ->check(whole(kMaxGpus));
  set->add_option("--max-gpus-per-user", edits.max_gpus_per_user,
                  "GPUs one user's running jobs of this QoS may hold at once (0: no limit)")
      ->type_name("N")
      ->check(whole(kMaxGpus));
  set->add_option("--max-jobs-per-user", edits.max_jobs_per_user,
                  "jobs of this QoS one user may run at once (0: no limit)")
      ->type_name("N")
      ->check(whole(1'000'000));
  set->add_option("--max-time", edits.max_time, "the longest time limit (0 or unlimited: none)")
      ->type_name("TIME")
      ->check(Checked([](const std::string& s) { return ParsePartitionTime(s, true); }, "TIME"));
  set->add_option("--preempt", edits.preempt,
                  "the QoS whose running jobs its jobs may preempt, comma-separated (\"\": none)")
      ->type_name("QOS,...")
      ->check(Checked(ParseAccountList, "QOS,..."));
  set->add_flag("--default", edits.make_default, "the QoS of jobs that name none");
  CLI::App* del = app.add_subcommand("delete", "delete a QoS no active job uses (admins)");
  del->add_option("NAME", name, "the QoS's name")->required();
  for (CLI::App* verb : {list, show, set, del})
    verb->fallthrough();
  app.require_subcommand(1);
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    if (show->parsed()) return ShowQos(c, cmd.flags(), name);
    if (set->parsed()) return SetQos(c, cmd.flags(), *set, name, edits);
    if (del->parsed()) return DeleteNamed(c, cmd.flags(), kQos, "/v1/qos", name);
    return ListQos(c, cmd.flags());
  });
}

int RunReservation(const std::vector<std::string>& raw) {
  ServerCommand cmd(kReservation,
                    "Make, list and delete reservations (scontrol create reservation): nodes "
                    "kept for some users or accounts, or for maintenance, for a time (changes: "
                    "admins).");
  CLI::App& app = cmd.app();
  std::string name;
  ReservationEdits e;
  CLI::App* list = app.add_subcommand("list", "every reservation, active or planned");
  CLI::App* show = app.add_subcommand("show", "one reservation");
  show->add_option("NAME", name, "the reservation's name")->required();
  CLI::App* create = app.add_subcommand(
      "create", "reserve nodes (named, or a node or GPU count the server picks) for a time");
  create->add_option("NAME", name, "the reservation's name")
      ->required()
      ->check(NameCheck("a reservation"));
  create
      ->add_option("--start", e.start,
                   "now, now+DURATION, YYYY-MM-DDTHH:MM[:SS] (UTC) or Unix "
                   "seconds (default: now)")
      ->type_name("WHEN");
  create->add_option("--end", e.end, "when it ends (the forms of --start)")->type_name("WHEN");
  create->add_option("--duration", e.duration, "how long it lasts: MIN, H:M:S, D-H, 90m, 2h, ...")
      ->type_name("TIME");
  create->add_option("--nodes", e.nodes, "the nodes, as a host list (gpu[01-04],gpu07)")
      ->type_name("HOSTLIST");
  create->add_option("--node-count", e.node_count, "or this many nodes, picked by the server")
      ->type_name("N")
      ->check(CLI::Range(1, 100'000));
  create->add_option("--gpu-count", e.gpu_count, "or nodes with at least this many GPUs")
      ->type_name("N")
      ->check(CLI::Range(1, 1'000'000));
  create->add_option("--partition", e.partition, "pick counted nodes from this partition")
      ->type_name("NAME");
  create->add_option("--users", e.users, "who may use it, comma-separated")->type_name("USER,...");
  create->add_option("--accounts", e.accounts, "whose accounts may use it, comma-separated")
      ->type_name("ACCOUNT,...");
  create->add_flag("--maintenance", e.maintenance,
                   "for maintenance: no job runs there unless it names the reservation");
  CLI::App* del = app.add_subcommand("delete", "delete a reservation (admins)");
  del->add_option("NAME", name, "the reservation's name")->required();
  for (CLI::App* verb : {list, show, create, del})
    verb->fallthrough();
  app.require_subcommand(1);
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    if (show->parsed()) return ShowReservation(c, cmd.flags(), name);
    if (create->parsed()) return CreateReservation(c, cmd.flags(), name, e);
    if (del->parsed()) return DeleteNamed(c, cmd.flags(), kReservation, "/v1/reservations", name);
    return ListReservations(c, cmd.flags());
  });
}

}  // namespace shoal::cli
