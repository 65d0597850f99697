// The commands that shape where jobs run and who pays: `shoal partition` and
// `shoal account`, each with list, show and set, over /v1/partitions and
// /v1/accounts (`shoal qos` and `shoal reservation`: qos_cmds.cc). Anyone
// may list and show; set is for admins, which the server checks. set reads
// the current record first, so that the options not given keep their
// values (the API replaces a whole record).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/admin_values.h"
#include "cli/commands.h"
#include "cli/server_command.h"
#include "core/cluster.h"
#include "core/hostlist.h"
#include "core/strings.h"
#include "core/time.h"

namespace shoal::cli {

namespace {

using api::Json;

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

}  // namespace shoal::cli
