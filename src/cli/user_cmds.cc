// The commands users and admins type about jobs, nodes and tokens: queue, show, cancel, hold,
// release, requeue, priority, history, nodes, drain, resume, token.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>

#include "cli/app.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/json_fields.h"
#include "cli/queue_format.h"
#include "cli/server_command.h"
#include "core/hostlist.h"
#include "core/job.h"
#include "core/strings.h"
#include "submit/submit.h"

namespace shoal::cli {

namespace {

using api::Json;

std::string Elapsed(double seconds) {
  return FormatDuration(DurationFromSeconds(std::max(0.0, seconds)));
}

double NowSeconds() {
  return ToSeconds(SystemClock().Now());
}

// "in 3h12m" for a time ahead (Unix seconds), "expired" for one past.
std::string Until(double unix_seconds) {
  const double left = unix_seconds - NowSeconds();
  return left > 0 ? "in " + Elapsed(left) : "expired";
}

std::string Gpus(const Json& spec) {
  const int per_node = static_cast<int>(Num(spec, "gpus_per_node"));
  const int nodes = static_cast<int>(Num(spec, "nodes"));
  const int total =
      per_node > 0 ? per_node * std::max(1, nodes) : static_cast<int>(Num(spec, "gpus"));
  std::string out = std::to_string(total);
  const int share = static_cast<int>(Num(spec, "gpu_share", 1000));
  if (share < 1000) out += fmt::format("x{:.2g}", share / 1000.0);
  if (spec.contains("gpu_models") && !spec["gpu_models"].empty())
    out += ":" + spec["gpu_models"][0].get<std::string>();
  return out;
}

std::string NodeList(const Json& job) {
  std::vector<std::string> names;
  for (const Json& a : job.value("allocation", Json::array()))
    names.push_back(Str(a, "node"));
  return Join(names, ",");
}

// A job id: a positive whole number, or ARRAY_INDEX for a task of a job
// array (7_3), as squeue shows them and scancel takes them.
struct JobWord {
  uint64_t id = 0;
  std::optional<int64_t> index;  // ARRAY_INDEX: the array's task
};
std::optional<JobWord> ParseJobWord(const std::string& s) {
  const size_t underscore = s.find('_');
  auto id = ParseInt(s.substr(0, underscore));
  if (!id.ok() || *id <= 0) return std::nullopt;
  JobWord w{static_cast<uint64_t>(*id), std::nullopt};
  if (underscore == std::string::npos) return w;
  auto index = ParseInt(s.substr(underscore + 1));
  if (!index.ok() || *index < 0) return std::nullopt;
  w.index = *index;
  return w;
}

CLI::Validator JobId() {
  return CLI::Validator(
      [](std::string& s) {
        return ParseJobWord(s)
                   ? std::string()
                   : fmt::format("'{}' is not a job id (N, or ARRAY_INDEX for an array's task)", s);
      },
      "", "JobId");
}

// The job a word that passed JobId() names. An array's task is found from
// the array's record: its tasks have consecutive ids from the array's own,
// in the order of the array's indices.
Result<uint64_t> ResolveJob(ApiClient& c, const std::string& word) {
  const JobWord w = *ParseJobWord(word);
  const uint64_t id = w.id;
  if (!w.index) return id;
  const int64_t index = *w.index;
  SHOAL_ASSIGN_OR_RETURN(const Json first, c.Get(fmt::format("/v1/jobs/{}", id)));
  if (first.value("array_job_id", uint64_t{0}) != id || !first["spec"].contains("array"))
    return NotFound(fmt::format("job {} is not a job array", id));
  SHOAL_ASSIGN_OR_RETURN(const ArraySpec array, ParseArraySpec(Str(first["spec"], "array")));
  auto at = std::find(array.indices.begin(), array.indices.end(), index);
  if (at == array.indices.end())
    return NotFound(fmt::format("job array {} has no task {}", id, index));
  return id + static_cast<uint64_t>(at - array.indices.begin());
}

// The jobs words name (ResolveJob), or the first word's error.
Result<std::vector<uint64_t>> JobIds(ApiClient& c, const std::vector<std::string>& words) {
  std::vector<uint64_t> ids;
  for (const std::string& w : words) {
    SHOAL_ASSIGN_OR_RETURN(uint64_t id, ResolveJob(c, w));
    ids.push_back(id);
  }
  return ids;
}

// "?a=1&b=2&" for the parameters given, in order; empty values are left out.
std::string Query(std::initializer_list<std::pair<const char*, std::string>> params) {
  std::string out = "?";
  for (const auto& [key, value] : params) {
    if (!value.empty()) out += fmt::format("{}={}&", key, value);
  }
  return out;
}

}  // namespace

namespace {

// Every job a listing selects ("/v1/jobs?...&"), read a page at a time:
// `each` sees each page's jobs as they come, and may take them.
Status ForEachJobPage(ApiClient& c, const std::string& query,
                      const std::function<void(Json& jobs)>& each) {
  constexpr int kPage = 1000;
  uint64_t after = 0;
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(Json page,
                           c.Get(fmt::format("/v1/jobs{}limit={}&after={}", query, kPage, after)));
    each(page["jobs"]);
    if (!page.contains("next_after")) return Status::Ok();
    after = page["next_after"].get<uint64_t>();
  }
}

// {"jobs": [...]} as Json::dump(2) prints it, a page at a time.
Status PrintJobsJson(ApiClient& c, const std::string& query) {
  bool any = false;
  Status s = ForEachJobPage(c, query, [&any](const Json& jobs) {
    for (const Json& j : jobs) {
      std::string text = j.dump(2);
      std::string indented = "    ";
      for (char ch : text) {
        indented += ch;
        if (ch == '\n') indented += "    ";
      }
      std::printf("%s%s", any ? ",\n" : "{\n  \"jobs\": [\n", indented.c_str());
      any = true;
    }
  });
  if (!s.ok()) {
    std::fflush(stdout);
    return s;
  }
  std::printf("%s", any ? "\n  ]\n}\n" : "{\n  \"jobs\": []\n}\n");
  return Status::Ok();
}

// `shoal queue --start` (squeue --start): each pending job with when and
// where the scheduler expects to start it, soonest first; N/A where no
// start is foreseen (held, dependencies, a begin time not reached...).
std::string StartsTable(const Json& listed) {
  std::vector<const Json*> pending;
  for (const Json& j : listed)
    if (Str(j, "state") == "pending") pending.push_back(&j);
  auto start = [](const Json* j) {
    return j->contains("estimated_start") ? Num(*j, "estimated_start") : 1e300;
  };
  std::stable_sort(pending.begin(), pending.end(),
                   [&](const Json* a, const Json* b) { return start(a) < start(b); });
  std::vector<std::vector<std::string>> rows;
  for (const Json* j : pending) {
    std::vector<std::string> planned;
    for (const Json& n : j->value("planned_nodes", Json::array()))
      planned.push_back(n.get<std::string>());
    const Json& spec = (*j)["spec"];
    rows.push_back({Str(*j, "id"), Str(spec, "name"), Str(spec, "user"), Str(spec, "partition", ""),
                    j->contains("estimated_start") ? LocalTime(start(j)) : "N/A",
                    planned.empty() ? "(null)" : CompressHostList(planned),
                    "(" + Str(*j, "reason") + ")"});
  }
  return Table({"JOBID", "NAME", "USER", "PARTITION", "START_TIME", "SCHEDNODES", "(REASON)"},
               rows);
}

}  // namespace

namespace {

// The default table: an array task's own id beside its array's name, and a
// job whose GPUs sit idle marked, so that its owner notices.
std::string QueueTable(const std::vector<QueueRow>& rows, double now) {
  std::vector<std::vector<std::string>> table;
  for (const QueueRow& row : rows) {
    const Json& j = *row.job;
    const Json& spec = j["spec"];
    const std::string state_name = Str(j, "state");
    const bool running = state_name == "running";
    std::string id = row.id;
    if (j.contains("array_task_id") && state_name != "pending")
      id = fmt::format("{} ({})", Str(j, "id"), row.id);
    if (j.value("idle", false)) id += " !idle";
    table.push_back({id, Str(spec, "name"), Str(spec, "user"), Str(spec, "partition", ""),
                     state_name, Gpus(spec),
                     Elapsed(now - (running ? Num(j, "start_time") : Num(j, "submit_time"))),
                     running ? NodeList(j) : "(" + Str(j, "reason") + ")"});
  }
  return Table({"JOBID", "NAME", "USER", "PARTITION", "STATE", "GPUS", "TIME", "NODES (REASON)"},
               table);
}

// How long squeue goes on showing a finished job: slurmctld's MinJobAge
// (300 s by default). Older ones are `shoal history`'s.
constexpr double kRecentlyFinishedS = 300;

}  // namespace

int RunQueue(const std::vector<std::string>& raw) {
  ServerCommand cmd("queue", "Pending and running jobs: why they wait, where they run.");
  std::string user, state, partition, format;
  bool all = false, noheader = false;
  cmd.app().add_option("-u,--user", user, "this user's jobs (default: yours)")->type_name("USER");
  cmd.app().add_flag("-a,--all", all, "every user's jobs (admins)");
  // -h is squeue's --noheader; help is --help alone here.
  cmd.app().set_help_flag("--help", "print this help message and exit");
  cmd.app().add_flag("-h,--noheader", noheader,
                     "no header line (as squeue --noheader), for scripts");
  bool starts = false;
  cmd.app().add_flag("--start", starts,
                     "pending jobs with when and on which nodes they are expected to start "
                     "(squeue --start)");
  cmd.app()
      .add_option("-t,--state", state,
                  "only jobs in these states, e.g. pending,running or PD,R; 'all' adds the "
                  "jobs that ended in the last 5 minutes (older ones: shoal history)")
      ->type_name("STATES");
  cmd.app()
      .add_option("-p,--partition", partition, "only jobs in this partition")
      ->type_name("PARTITION");
  cmd.app()
      .add_option("-o,--format", format,
                  "the columns, as squeue's: e.g. \"%.10i %.9P %.20j %.8u %.2t %.10M %R\" "
                  "(fields: docs/cli.md)")
      ->type_name("FORMAT")
      ->check(CLI::Validator(
          [](std::string& f) {
            auto parsed = QueueFormat::Parse(f);
            return parsed.ok() ? std::string() : parsed.status().message();
          },
          "", "Format"));
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    if (starts && state.empty()) state = "pending";
    std::optional<QueueFormat> columns;
    if (!format.empty()) columns = *QueueFormat::Parse(format);  // checked as an option
    const double now = NowSeconds();
    const bool every_state = ToLower(state) == "all";
    const std::string query =
        Query({{"user", user},
               {"all", all ? "1" : ""},
               {"state", state},
               {"ended_since", every_state ? fmt::format("{:.3f}", now - kRecentlyFinishedS) : ""},
               {"partition", partition}});
    if (cmd.flags().json) {
      Status s = PrintJobsJson(c, query);
      return s.ok() ? kExitOk : Fail("queue", s);
    }
    // A table needs no job's command or environment: leave them out. It
    // shows an array's pending tasks on one line: the server sends each run
    // of them as one object (but for --start, a line for each).
    const bool brief = !(columns && columns->NeedsCommand());
    Json listed = Json::array();
    Status s =
        ForEachJobPage(c, query + (brief ? "brief=1&" : "") + (starts ? "" : "arrays=collapsed&"),
                       [&listed](Json& jobs) {
                         for (Json& j : jobs)
                           listed.push_back(std::move(j));
                       });
    if (!s.ok()) return Fail("queue", s);
    std::string table;
    if (starts) {
      table = StartsTable(listed);
    } else if (columns) {
      table = columns->Header() + "\n";
      for (const QueueRow& row : QueueRows(listed))
        table += columns->Line(row, now) + "\n";
    } else {
      table = QueueTable(QueueRows(listed), now);
    }
    if (noheader) table.erase(0, table.find('\n') + 1);
    std::printf("%s", table.c_str());
    return kExitOk;
  });
}

int RunShow(const std::vector<std::string>& raw) {
  ServerCommand cmd("show", "Everything about one job: why it waits, where it runs, how it ended.");
  std::string job;
  cmd.app().add_option("JOB", job, "the job's id")->required()->check(JobId());
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    auto id = ResolveJob(c, job);
    if (!id.ok()) return Fail("show", id.status());
    auto r = c.Get(fmt::format("/v1/jobs/{}", *id));
    if (!r.ok()) return Fail("show", r.status());
    if (cmd.flags().json) {
      std::printf("%s\n", r->dump(2).c_str());
      return kExitOk;
    }
    const Json& j = *r;
    const Json& spec = j["spec"];
    auto line = [](const char* k, const std::string& v) {
      if (!v.empty()) std::printf("%-16s %s\n", k, v.c_str());
    };
    line("job",
         Str(j, "id") + (spec.value("name", "").empty() ? "" : " (" + Str(spec, "name") + ")"));
    if (j.contains("array_task_id")) {
      line("array task", fmt::format("{}_{} (array {})", Str(j, "array_job_id"),
                                     Str(j, "array_task_id"), Str(spec, "array")));
    }
    line("user", Str(spec, "user") +
                     (Str(spec, "account").empty() ? "" : " / account " + Str(spec, "account")));
    line("partition", Str(spec, "partition", "(default)"));
    if (!Str(spec, "qos", "").empty()) line("qos", Str(spec, "qos"));
    if (!Str(spec, "reservation", "").empty()) line("reservation", Str(spec, "reservation"));
    line("state", Str(j, "state") +
                      (j.contains("ending_as") ? " (stopping: " + Str(j, "ending_as") + ")" : ""));
    if (Str(j, "state") == "pending") {
      line("waits for",
           Str(j, "reason") + (j.contains("reason_detail") ? ": " + Str(j, "reason_detail") : ""));
      if (j.contains("estimated_start")) {
        line("expected start",
             fmt::format("in {}", Elapsed(Num(j, "estimated_start") - NowSeconds())));
      }
      if (j.contains("planned_nodes")) {
        std::vector<std::string> nodes;
        for (const Json& n : j["planned_nodes"])
          nodes.push_back(n.get<std::string>());
        line("would run on", Join(nodes, ","));
      }
    } else if (j.contains("reason_detail")) {
      line("note", Str(j, "reason_detail"));
    }
    line("gpus", Gpus(spec));
    if (spec.contains("gpu_speeds")) {
      std::vector<std::string> speeds;
      for (const auto& [model, speed] : spec["gpu_speeds"].items())
        speeds.push_back(fmt::format("{}={:g}", model, speed.get<double>()));
      line("gpu speeds", Join(speeds, ", ") + " (--gpu-speed)");
    }
    if (spec.contains("gpu_power_cap_w"))
      line("gpu power cap", fmt::format("{} W per GPU", spec["gpu_power_cap_w"].get<int>()));
    if (j.contains("expected_gpu_power_w")) {
      const double w = j["expected_gpu_power_w"].get<double>();
      line("power counted", w > 0 ? fmt::format("{:.0f} W per GPU (earlier runs or its cap)", w)
                                  : std::string("each GPU's rated power (no earlier runs)"));
    }
    line("nodes", NodeList(j));
    for (const Json& a2 : j.value("allocation", Json::array())) {
      std::vector<std::string> g;
      for (const Json& x : a2["gpus"])
        g.push_back(x.dump());
      // Nothing reserved is no limit: such a job shares the node's CPUs and
      // memory (Slurm users would read "0 CPUs, 0M" as a fault).
      const double cpus = Num(a2, "cpus");
      const auto mem = static_cast<int64_t>(Num(a2, "mem_mib"));
      line("  on", fmt::format("{}: GPUs {}, {}, {}", Str(a2, "node"), Join(g, ","),
                               cpus > 0 ? fmt::format("{:g} CPUs", cpus)
                                        : std::string("the node's CPUs (none reserved)"),
                               mem > 0 ? FormatMemoryMib(mem) + " of memory"
                                       : std::string("memory not limited")));
    }
    line("time limit", Elapsed(Num(j, "time_limit_s")));
    line("submitted", fmt::format("{} ago", Elapsed(NowSeconds() - Num(j, "submit_time"))));
    if (j.contains("start_time"))
      line("started", fmt::format("{} ago", Elapsed(NowSeconds() - Num(j, "start_time"))));
    if (j.contains("end_time"))
      line("ended", fmt::format("{} ago", Elapsed(NowSeconds() - Num(j, "end_time"))));
    if (Str(j, "state") != "pending" && Str(j, "state") != "running") {
      line("exit", fmt::format("code {}, signal {}", Str(j, "exit_code"), Str(j, "exit_signal")));
    }
    line("gpu-hours", fmt::format("{:.2f}", Num(j, "gpu_seconds") / 3600));
    if (j.contains("efficiency")) {
      const Json& e = j["efficiency"];
      if (Num(e, "samples") > 0) {
        line("gpu use",
             fmt::format("util {:.0f}% mean, {:.0f}% peak; memory {} mean, {} peak; {:.2f} kWh",
                         Num(e, "util_mean_pct"), Num(e, "util_peak_pct"),
                         FormatMemoryMib(static_cast<int64_t>(Num(e, "mem_mean_mib"))),
                         FormatMemoryMib(static_cast<int64_t>(Num(e, "mem_peak_mib"))),
                         Num(e, "energy_wh") / 1000));
      }
      if (e.contains("progress_rate")) {
        line("progress", fmt::format("{:.4g} a second (mean of {} reports, this run)",
                                     Num(e, "progress_rate"), Str(e, "progress_samples")));
      }
    }
    if (j.contains("speeds")) {
      std::vector<std::string> by;
      for (const auto& [model, speed] : j["speeds"]["by_model"].items())
        by.push_back(fmt::format("{} {:.4g}", model, speed.get<double>()));
      line("speeds", fmt::format("{}: {}", Str(j["speeds"], "source"), Join(by, ", ")));
    }
    if (j.value("idle", false)) {
      line("idle", fmt::format("its GPUs have been idle for {} (since the partition's "
                               "threshold was last reached)",
                               Elapsed(NowSeconds() - Num(j, "idle_since"))));
    }
    line("restarts", Str(j, "restarts"));
    line("command", JobCommand(spec));
    line("work dir", Str(spec, "work_dir"));
    if (j.contains("steps") && !j["steps"].empty()) {
      std::printf("steps\n");
      std::vector<std::vector<std::string>> rows;
      for (const Json& st : j["steps"]) {
        std::vector<std::string> argv;
        for (const Json& a : st["spec"].value("argv", Json::array()))
          argv.push_back(a.get<std::string>());
        int tasks = 0;
        for (const Json& t : st.value("tasks", Json::array()))
          tasks += t.get<int>();
        const double end = Num(st, "end_time", NowSeconds());
        rows.push_back({"  " + Str(st, "id"), Str(st, "state"), Str(st, "exit_code"),
                        std::to_string(tasks),
                        Join(st.value("nodes", std::vector<std::string>()), ","),
                        Elapsed(end - Num(st, "start_time")), submit::ShellJoin(argv)});
      }
      std::printf(
          "%s",
          Table({"  STEP", "STATE", "EXIT", "TASKS", "NODES", "TIME", "COMMAND"}, rows).c_str());
    }
    return kExitOk;
  });
}

namespace {

int JobAction(const std::string& command, std::string description,
              const std::vector<std::string>& raw) {
  ServerCommand cmd(command, std::move(description));
  std::vector<std::string> jobs;
  cmd.app().add_option("JOB", jobs, "the jobs' ids")->required()->check(JobId());
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    auto ids = JobIds(c, jobs);
    if (!ids.ok()) return Fail(command, ids.status());
    int code = kExitOk;
    for (uint64_t id : *ids) {
      auto r = c.Post(fmt::format("/v1/jobs/{}/{}", id, command), Json::object());
      if (!r.ok()) {
        code = std::max(code, Fail(command, r.status()));
      } else if (cmd.flags().json) {
        std::printf("%s\n", r->dump().c_str());
      }
    }
    return code;
  });
}

}  // namespace

int RunCancel(const std::vector<std::string>& raw) {
  ServerCommand cmd("cancel", "Cancel jobs: pending ones never start, running ones are stopped.");
  std::vector<std::string> jobs;
  std::string signal;
  bool batch = false;
  cmd.app().add_option("JOB", jobs, "the jobs' ids")->required()->check(JobId());
  cmd.app().add_option("-s,--signal", signal,
                       "send SIG (a name, SIGNAME or number) to the jobs' steps instead of "
                       "stopping them (scancel --signal)");
  cmd.app().add_flag("-b,--batch", batch, "with --signal: to the batch shell alone");
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    std::optional<int> sig;
    if (!signal.empty()) {
      auto parsed = ParseSignal(signal);
      if (!parsed.ok()) return Fail("cancel", parsed.status());
      sig = *parsed;
    } else if (batch) {
      return Fail("cancel", InvalidArgument("--batch goes with --signal"));
    }
    auto ids = JobIds(c, jobs);
    if (!ids.ok()) return Fail("cancel", ids.status());
    int code = kExitOk;
    for (uint64_t id : *ids) {
      auto r = sig ? c.Post(fmt::format("/v1/jobs/{}/signal", id),
                            Json{{"signal", *sig}, {"batch", batch}})
                   : c.Post(fmt::format("/v1/jobs/{}/cancel", id), Json::object());
      if (!r.ok()) {
        code = std::max(code, Fail("cancel", r.status()));
      } else if (cmd.flags().json) {
        std::printf("%s\n", r->dump().c_str());
      }
    }
    return code;
  });
}
int RunHold(const std::vector<std::string>& args) {
  return JobAction("hold", "Keep pending jobs from starting until they are released.", args);
}
int RunRelease(const std::vector<std::string>& args) {
  return JobAction("release", "Let held jobs start.", args);
}
int RunRequeue(const std::vector<std::string>& args) {
  return JobAction("requeue", "Stop running jobs and queue them again.", args);
}

int RunLogs(const std::vector<std::string>& raw) {
  ServerCommand cmd(
      "logs", "A job's output, from the node it runs on (with --json, one object per piece read).");
  std::string job;
  bool follow = false, errors = false;
  cmd.app().add_option("JOB", job, "the job's id")->required()->check(JobId());
  cmd.app().add_flag("-f,--follow", follow, "keep printing while the job runs");
  cmd.app().add_flag("-e,--stderr", errors, "its standard error instead of its output");
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    auto resolved = ResolveJob(c, job);
    if (!resolved.ok()) return Fail("logs", resolved.status());
    const uint64_t id = *resolved;
    const std::string stream = errors ? "stderr" : "stdout";
    int64_t offset = 0;
    while (true) {
      auto r = c.GetRaw(fmt::format("/v1/jobs/{}/log?stream={}&offset={}", id, stream, offset));
      if (!r.ok()) {
        // A job that has not started has no output yet: following waits for it.
        if (!(follow && r.status().code() == StatusCode::kFailedPrecondition))
          return Fail("logs", r.status());
      } else if (!r->body.empty()) {
        if (cmd.flags().json) {
          // One object per piece read (JSON Lines); bytes that are not
          // UTF-8 become U+FFFD, as JSON has no other way to carry them.
          const Json piece = {
              {"job", id}, {"stream", stream}, {"offset", offset}, {"data", r->body}};
          std::printf("%s\n", piece.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
        } else {
          std::fwrite(r->body.data(), 1, r->body.size(), stdout);
        }
        std::fflush(stdout);
        offset += static_cast<int64_t>(r->body.size());
        continue;  // there may be more at once
      }
      if (!follow) return kExitOk;
      // Stop following once the job has ended and everything is read.
      auto now = c.Get(fmt::format("/v1/jobs/{}", id));
      if (!now.ok()) return Fail("logs", now.status());
      const std::string state = Str(*now, "state");
      if (state != "pending" && state != "running") {
        auto last =
            c.GetRaw(fmt::format("/v1/jobs/{}/log?stream={}&offset={}", id, stream, offset));
        if (last.ok()) std::fwrite(last->body.data(), 1, last->body.size(), stdout);
        return kExitOk;
      }
      usleep(300'000);
    }
  });
}

int RunPriority(const std::vector<std::string>& raw) {
  ServerCommand cmd("priority", "Set a pending job's priority (admins).");
  std::string job, priority;
  cmd.app().add_option("JOB", job, "the job's id")->required()->check(JobId());
  cmd.app()
      .add_option("PRIORITY", priority, "a whole number; higher starts sooner")
      ->required()
      ->check(CLI::Validator(
          [](std::string& s) {
            return ParseInt(s).ok() ? std::string() : fmt::format("'{}' is not a whole number", s);
          },
          "", "WholeNumber"));
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    auto id = ResolveJob(c, job);
    if (!id.ok()) return Fail("priority", id.status());
    auto r = c.Patch(fmt::format("/v1/jobs/{}", *id), Json{{"priority", *ParseInt(priority)}});
    return r.ok() ? kExitOk : Fail("priority", r.status());
  });
}

int RunHistory(const std::vector<std::string>& raw) {
  ServerCommand cmd("history", "Finished jobs: how they ended, their GPU-hours and GPU use.");
  std::string user, state, account, limit;
  bool all = false;
  double days = 0;
  CLI::App& app = cmd.app();
  app.add_option("-u,--user", user, "this user's jobs (default: yours)")->type_name("USER");
  app.add_flag("-a,--all", all, "every user's jobs (admins)");
  app.add_option("--days", days, "only jobs that ended in the last N days")
      ->type_name("N")
      ->check(CLI::Validator(
          [](std::string& s) {
            auto d = ParseDouble(s);
            return d.ok() && *d > 0 ? std::string()
                                    : fmt::format("'{}' is not a positive number of days", s);
          },
          "", "Days"));
  app.add_option("--state", state, "only jobs that ended so, e.g. failed,cancelled")
      ->type_name("STATES");
  app.add_option("--account", account, "only this account's jobs")->type_name("ACCOUNT");
  app.add_option("--limit", limit, "at most N jobs, the latest")->type_name("N");
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    const std::string since = days > 0 ? fmt::format("{:.0f}", NowSeconds() - days * 86400) : "";
    auto r = c.Get("/v1/history" + Query({{"user", user},
                                          {"all", all ? "1" : ""},
                                          {"state", state},
                                          {"account", account},
                                          {"limit", limit},
                                          {"since", since}}));
    if (!r.ok()) return Fail("history", r.status());
    if (cmd.flags().json) {
      std::printf("%s\n", r->dump(2).c_str());
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    double gpu_hours = 0;
    for (const Json& j : (*r)["jobs"]) {
      const Json& spec = j["spec"];
      const double start = Num(j, "start_time"), end = Num(j, "end_time");
      gpu_hours += Num(j, "gpu_seconds") / 3600;
      const Json eff = j.value("efficiency", Json::object());
      rows.push_back({Str(j, "id"), Str(spec, "name"), Str(spec, "user"), Str(spec, "account"),
                      Str(j, "state"),
                      fmt::format("{}:{}", Str(j, "exit_code"), Str(j, "exit_signal")), Gpus(spec),
                      start > 0 ? Elapsed(end - start) : "-",
                      fmt::format("{:.2f}", Num(j, "gpu_seconds") / 3600),
                      eff.empty() ? "-" : fmt::format("{:.0f}%", Num(eff, "util_mean_pct")),
                      eff.empty() ? "-" : fmt::format("{:.2f}", Num(eff, "energy_wh") / 1000)});
    }
    std::printf("%s", Table({"JOBID", "NAME", "USER", "ACCOUNT", "STATE", "EXIT", "GPUS", "ELAPSED",
                             "GPU-HOURS", "GPU-UTIL", "KWH"},
                            rows)
                          .c_str());
    std::printf("%zu jobs, %.2f GPU-hours\n", rows.size(), gpu_hours);
    return kExitOk;
  });
}

int RunSpeeds(const std::vector<std::string>& raw) {
  ServerCommand cmd("speeds",
                    "Learned speeds: what jobs that wrote their progress to $SHOAL_PROGRESS_FILE "
                    "ran at on each GPU model, by user and job name (speed-aware policies place "
                    "a later job of that name by them); --forget drops a job name's.");
  std::string user, forget;
  CLI::App& app = cmd.app();
  app.add_option("-u,--user", user, "this user's (default: yours; admins: everyone's)")
      ->type_name("USER");
  app.add_option("--forget", forget, "forget what was learned of this job name")->type_name("NAME");
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    if (!forget.empty()) {
      auto r = c.Delete("/v1/speeds" + Query({{"user", user}, {"name", forget}}));
      if (!r.ok()) return Fail("speeds", r.status());
      const std::string what = Num(*r, "forgotten") == 1
                                   ? std::string("1 model's speed")
                                   : fmt::format("{} models' speeds", Str(*r, "forgotten"));
      std::printf("forgot %s of %s's job '%s'\n", what.c_str(), Str(*r, "user").c_str(),
                  forget.c_str());
      return kExitOk;
    }
    auto r = c.Get("/v1/speeds" + Query({{"user", user}}));
    if (!r.ok()) return Fail("speeds", r.status());
    if (cmd.flags().json) {
      std::printf("%s\n", r->dump(2).c_str());
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    for (const Json& s : (*r)["speeds"]) {
      rows.push_back({Str(s, "user"), Str(s, "name"), Str(s, "model"),
                      fmt::format("{:.4g}", Num(s, "rate")), Str(s, "runs"),
                      fmt::format("{} ago", Elapsed(NowSeconds() - Num(s, "updated")))});
    }
    std::printf("%s", Table({"USER", "NAME", "MODEL", "RATE/S", "RUNS", "LEARNED"}, rows).c_str());
    return kExitOk;
  });
}

int RunDrain(const std::vector<std::string>& raw) {
  ServerCommand cmd("drain",
                    "Take nodes out of service (admins): their jobs finish, no new ones start.");
  std::vector<std::string> nodes;
  std::string reason;
  cmd.app().add_option("NODE", nodes, "the nodes' names")->required();
  cmd.app().add_option("--reason", reason, "why, for `shoal nodes`")->required()->type_name("TEXT");
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    int code = kExitOk;
    for (const std::string& n : nodes) {
      auto r = c.Post(fmt::format("/v1/nodes/{}/drain", n), Json{{"reason", reason}});
      if (!r.ok()) code = std::max(code, Fail("drain", r.status()));
    }
    return code;
  });
}

int RunResume(const std::vector<std::string>& raw) {
  ServerCommand cmd("resume", "Put drained nodes back in service (admins).");
  std::vector<std::string> nodes;
  cmd.app().add_option("NODE", nodes, "the nodes' names")->required();
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    int code = kExitOk;
    for (const std::string& n : nodes) {
      auto r = c.Post(fmt::format("/v1/nodes/{}/resume", n), Json::object());
      if (!r.ok()) code = std::max(code, Fail("resume", r.status()));
    }
    return code;
  });
}

int RunToken(const std::vector<std::string>& raw) {
  ServerCommand cmd("token", "Create, list and revoke API tokens (admins).");
  CLI::App& app = cmd.app();
  std::string user, role = "user", id, ttl, node;
  CLI::App* create = app.add_subcommand("create", "make a token; it is shown only once");
  create->add_option("--user", user, "whose token it is (join tokens: yours)")->type_name("NAME");
  create
      ->add_option("--role", role,
                   "user, admin, node, or join (a one-time token a new node joins a TLS "
                   "cluster with; default user)")
      ->type_name("ROLE");
  create
      ->add_option("--ttl", ttl,
                   "how long it works, e.g. 30d or 8h (default: until revoked; join tokens 1h)")
      ->type_name("DURATION");
  create->add_option("--node", node, "join and node tokens: the only node it acts for")
      ->type_name("NAME");
  CLI::App* list = app.add_subcommand("list", "every token: its id, user, role and state");
  CLI::App* revoke = app.add_subcommand("revoke", "stop a token from working");
  revoke->add_option("ID", id, "the token's id (from `shoal token list`)")->required();
  // The client flags may come after the verb too: `shoal token list --json`.
  for (CLI::App* verb : {create, list, revoke})
    verb->fallthrough();
  app.require_subcommand(1);
  return RunServerCommand(cmd, raw, [&](ApiClient& c) {
    if (create->parsed()) {
      if (user.empty() && role != "join")
        return UsageError("shoal token create", "--user is required (except for --role join)");
      Json body{{"role", role}};
      if (!user.empty()) body["user"] = user;
      if (!node.empty()) body["node"] = node;
      if (!ttl.empty()) {
        auto d = ParseDuration(ttl);
        if (!d.ok() || *d <= Duration(0))
          return UsageError("shoal token create", "--ttl is a duration such as 30d or 8h");
        body["ttl_s"] = ToSeconds(*d);
      }
      auto r = c.Post("/v1/tokens", body);
      if (!r.ok()) return Fail("token", r.status());
      if (cmd.flags().json) {
        std::printf("%s\n", r->dump(2).c_str());
      } else {
        std::printf("%s\n", Str(*r, "token").c_str());
        std::fprintf(
            stderr, "token %s for %s (%s%s%s); it is shown only now\n", Str(*r, "id").c_str(),
            Str(*r, "user").c_str(), Str(*r, "role").c_str(),
            r->contains("node") ? (", node " + Str(*r, "node")).c_str() : "",
            r->contains("expires") ? (", expires " + Until(Num(*r, "expires"))).c_str() : "");
      }
      return kExitOk;
    }
    if (revoke->parsed()) {
      auto r = c.Delete("/v1/tokens/" + id);
      return r.ok() ? kExitOk : Fail("token", r.status());
    }
    auto r = c.Get("/v1/tokens");
    if (!r.ok()) return Fail("token", r.status());
    if (cmd.flags().json) {
      std::printf("%s\n", r->dump(2).c_str());
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    for (const Json& t : (*r)["tokens"]) {
      const bool expired = t.contains("expires") && Num(t, "expires") <= NowSeconds();
      const std::string state = Str(t, "revoked") == "true"
                                    ? (Str(t, "role") == "join" ? "used or revoked" : "revoked")
                                : expired ? "expired"
                                          : "active";
      rows.push_back({Str(t, "id"), Str(t, "user"), Str(t, "role"), Str(t, "node", "-"), state,
                      t.contains("expires") ? Until(Num(t, "expires")) : "never"});
    }
    std::printf("%s", Table({"ID", "USER", "ROLE", "NODE", "STATE", "EXPIRES"}, rows).c_str());
    return kExitOk;
  });
}

}  // namespace shoal::cli
