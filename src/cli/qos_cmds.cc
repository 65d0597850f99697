// `shoal qos` (list, show, set, delete) over /v1/qos: priorities, limits
// and preemption of classes of service; and `shoal reservation` (create,
// list, show, delete) over /v1/reservations: nodes or GPUs held for some
// users or accounts, or for maintenance. Anyone may list and show; changes
// are for admins, which the server checks. qos set reads the current record
// first, so that the options not given keep their values.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
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
