// The commands users and admins type: submit, queue, show, cancel, hold,
// release, requeue, priority, history, nodes, drain, resume, token.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "cli/client.h"
#include "cli/commands.h"
#include "core/strings.h"
#include "submit/submit.h"

namespace shoal::cli {

namespace {

using api::Json;

std::string Str(const Json& j, const char* key, const std::string& fallback = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

double Num(const Json& j, const char* key, double fallback = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string Elapsed(double seconds) {
  return FormatDuration(DurationFromSeconds(std::max(0.0, seconds)));
}

double NowSeconds() {
  return ToSeconds(SystemClock().Now());
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

// Parses "--flag value" / "--flag=value" / bare words for the small commands.
struct Args {
  std::vector<std::string> words;
  std::map<std::string, std::string> values;
  std::set<std::string> flags;
};

Result<Args> ParseArgs(const std::vector<std::string>& raw, const std::set<std::string>& valued,
                       const std::set<std::string>& flags) {
  Args a;
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::string& w = raw[i];
    if (!StartsWith(w, "-")) {
      a.words.push_back(w);
      continue;
    }
    const size_t eq = w.find('=');
    const std::string name = w.substr(0, eq);
    if (valued.count(name)) {
      if (eq != std::string::npos) {
        a.values[name] = w.substr(eq + 1);
      } else if (i + 1 < raw.size()) {
        a.values[name] = raw[++i];
      } else {
        return InvalidArgument(fmt::format("{} needs a value", name));
      }
    } else if (flags.count(name) && eq == std::string::npos) {
      a.flags.insert(name);
    } else {
      return InvalidArgument(fmt::format("unknown option {}", w));
    }
  }
  return a;
}

// Splits the client flags off, opens a client, and runs fn; returns an exit code.
template <typename F>
int WithClient(const std::string& command, std::vector<std::string> args, F&& fn) {
  ClientFlags flags;
  Status s = TakeClientFlags(args, args.size(), flags);
  if (!s.ok()) {
    std::fprintf(stderr, "shoal %s: %s\n", command.c_str(), s.message().c_str());
    return kExitUsage;
  }
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") return fn(nullptr, args, flags);
  }
  auto client = ApiClient::Open(flags);
  if (!client.ok()) return Fail(command, client.status());
  return fn(&*client, args, flags);
}

int Usage(const std::string& command, const std::string& text, bool help) {
  std::fprintf(help ? stdout : stderr, "usage: shoal %s %s\n", command.c_str(), text.c_str());
  return help ? kExitOk : kExitUsage;
}

Result<std::vector<uint64_t>> JobIds(const std::vector<std::string>& words) {
  std::vector<uint64_t> ids;
  for (const std::string& w : words) {
    auto v = ParseInt(w);
    if (!v.ok() || *v <= 0) return InvalidArgument(fmt::format("'{}' is not a job id", w));
    ids.push_back(static_cast<uint64_t>(*v));
  }
  if (ids.empty()) return InvalidArgument("name at least one job");
  return ids;
}

}  // namespace

int RunSubmit(const std::vector<std::string>& raw) {
  std::vector<std::string> args = raw;
  ClientFlags flags;
  auto start = submit::CommandStart(args);
  if (!start.ok()) {
    std::fprintf(stderr, "shoal submit: %s\n", start.status().message().c_str());
    return kExitUsage;
  }
  Status s = TakeClientFlags(args, *start, flags);
  if (!s.ok()) {
    std::fprintf(stderr, "shoal submit: %s\n", s.message().c_str());
    return kExitUsage;
  }
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: shoal submit [options] script.sh | --wrap=COMMAND | command [args...]\n\n%s",
          submit::OptionHelp().c_str());
      return kExitOk;
    }
    if (a == "--") break;
  }
  start = submit::CommandStart(args);
  std::string script_text, script_path;
  const bool wrapped = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--wrap" || StartsWith(a, "--wrap=");
  });
  if (!wrapped && *start < args.size() && args[*start] != "--") {
    std::error_code ec;
    const std::filesystem::path p = args[*start];
    // A batch script starts with "#!" (as sbatch requires); any other word is
    // the command itself (e.g. `shoal submit -G1 train.py --lr 3`).
    std::ifstream probe(p);
    char head[2] = {0, 0};
    if (std::filesystem::is_regular_file(p, ec) && probe.read(head, 2) && head[0] == '#' &&
        head[1] == '!') {
      if (std::filesystem::file_size(p, ec) > (4 << 20)) {
        std::fprintf(stderr, "shoal submit: %s is larger than 4 MiB\n", p.c_str());
        return kExitUsage;
      }
      std::ifstream in(p);
      std::stringstream text;
      text << in.rdbuf();
      script_text = text.str();
      script_path = p.string();
    }
  }
  auto parsed = submit::ParseSubmit(args, script_text, script_path);
  if (!parsed.ok()) {
    std::fprintf(stderr, "shoal submit: %s\n", parsed.status().message().c_str());
    return kExitUsage;
  }
  for (const std::string& note : parsed->notes)
    std::fprintf(stderr, "shoal submit: note: %s\n", note.c_str());
  JobSpec& spec = parsed->spec;
  if (spec.work_dir.empty()) {
    std::error_code ec;
    spec.work_dir = std::filesystem::current_path(ec).string();
  }
  auto client = ApiClient::Open(flags);
  if (!client.ok()) return Fail("submit", client.status());
  auto r = client->Post("/v1/jobs", api::ToJson(spec));
  if (!r.ok()) return Fail("submit", r.status());
  if (flags.json) {
    std::printf("%s\n", r->dump(2).c_str());
  } else if (r->contains("array_job_id")) {
    const Json& ids = (*r)["jobs"];
    std::printf("Submitted job array %s (jobs %s-%s)\n", Str(*r, "array_job_id").c_str(),
                ids.front().dump().c_str(), ids.back().dump().c_str());
  } else {
    std::printf("Submitted job %s\n", (*r)["jobs"][0].dump().c_str());
  }
  return kExitOk;
}

int RunQueue(const std::vector<std::string>& raw) {
  return WithClient(
      "queue", raw,
      [](ApiClient* c, const std::vector<std::string>& args, const ClientFlags& flags) {
        auto a =
            ParseArgs(args, {"--user", "-u", "--state", "-t"}, {"--all", "-a", "-h", "--help"});
        if (!a.ok() || !a->words.empty() || c == nullptr) {
          if (!a.ok()) std::fprintf(stderr, "shoal queue: %s\n", a.status().message().c_str());
          return Usage("queue", "[--user U | --all] [--state pending,running] [--json]",
                       c == nullptr);
        }
        std::string path = "/v1/jobs?";
        const std::string user = a->values.count("--user") ? a->values["--user"] : a->values["-u"];
        if (!user.empty()) path += "user=" + user + "&";
        if (a->flags.count("--all") || a->flags.count("-a")) path += "all=1&";
        const std::string state =
            a->values.count("--state") ? a->values["--state"] : a->values["-t"];
        if (!state.empty()) path += "state=" + state;
        auto r = c->Get(path);
        if (!r.ok()) return Fail("queue", r.status());
        if (flags.json) {
          std::printf("%s\n", r->dump(2).c_str());
          return kExitOk;
        }
        std::vector<std::vector<std::string>> rows;
        const double now = NowSeconds();
        for (const Json& j : (*r)["jobs"]) {
          const Json& spec = j["spec"];
          const std::string state_name = Str(j, "state");
          const bool running = state_name == "running";
          std::string id = Str(j, "id");
          if (j.contains("array_task_id"))
            id += fmt::format(" ({}_{})", Str(j, "array_job_id"), Str(j, "array_task_id"));
          // A job whose GPUs sit idle is marked, so that its owner notices.
          if (j.value("idle", false)) id += " !idle";
          rows.push_back({id, Str(spec, "name"), Str(spec, "user"), Str(spec, "partition", ""),
                          state_name, Gpus(spec),
                          Elapsed(now - (running ? Num(j, "start_time") : Num(j, "submit_time"))),
                          running ? NodeList(j) : "(" + Str(j, "reason") + ")"});
        }
        std::printf("%s", Table({"JOBID", "NAME", "USER", "PARTITION", "STATE", "GPUS", "TIME",
                                 "NODES (REASON)"},
                                rows)
                              .c_str());
        return kExitOk;
      });
}

int RunShow(const std::vector<std::string>& raw) {
  return WithClient(
      "show", raw,
      [](ApiClient* c, const std::vector<std::string>& args, const ClientFlags& flags) {
        auto a = ParseArgs(args, {}, {"-h", "--help"});
        if (!a.ok() || a->words.size() != 1 || c == nullptr)
          return Usage("show", "JOB [--json]", c == nullptr);
        auto ids = JobIds(a->words);
        if (!ids.ok()) return Fail("show", ids.status());
        auto r = c->Get(fmt::format("/v1/jobs/{}", ids->front()));
        if (!r.ok()) return Fail("show", r.status());
        if (flags.json) {
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
        line("user",
             Str(spec, "user") +
                 (Str(spec, "account").empty() ? "" : " / account " + Str(spec, "account")));
        line("partition", Str(spec, "partition", "(default)"));
        line("state",
             Str(j, "state") +
                 (j.contains("ending_as") ? " (stopping: " + Str(j, "ending_as") + ")" : ""));
        if (Str(j, "state") == "pending") {
          line("waits for",
               Str(j, "reason") +
                   (j.contains("reason_detail") ? ": " + Str(j, "reason_detail") : ""));
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
        line("nodes", NodeList(j));
        for (const Json& a2 : j.value("allocation", Json::array())) {
          std::vector<std::string> g;
          for (const Json& x : a2["gpus"])
            g.push_back(x.dump());
          line("  on", fmt::format("{}: GPUs {}, {} CPUs, {}", Str(a2, "node"), Join(g, ","),
                                   Num(a2, "cpus"),
                                   FormatMemoryMib(static_cast<int64_t>(Num(a2, "mem_mib")))));
        }
        line("time limit", Elapsed(Num(j, "time_limit_s")));
        line("submitted", fmt::format("{} ago", Elapsed(NowSeconds() - Num(j, "submit_time"))));
        if (j.contains("start_time"))
          line("started", fmt::format("{} ago", Elapsed(NowSeconds() - Num(j, "start_time"))));
        if (j.contains("end_time"))
          line("ended", fmt::format("{} ago", Elapsed(NowSeconds() - Num(j, "end_time"))));
        if (Str(j, "state") != "pending" && Str(j, "state") != "running") {
          line("exit",
               fmt::format("code {}, signal {}", Str(j, "exit_code"), Str(j, "exit_signal")));
        }
        line("gpu-hours", fmt::format("{:.2f}", Num(j, "gpu_seconds") / 3600));
        if (j.contains("efficiency")) {
          const Json& e = j["efficiency"];
          line("gpu use",
               fmt::format("util {:.0f}% mean, {:.0f}% peak; memory {} mean, {} peak; {:.2f} kWh",
                           Num(e, "util_mean_pct"), Num(e, "util_peak_pct"),
                           FormatMemoryMib(static_cast<int64_t>(Num(e, "mem_mean_mib"))),
                           FormatMemoryMib(static_cast<int64_t>(Num(e, "mem_peak_mib"))),
                           Num(e, "energy_wh") / 1000));
        }
        if (j.value("idle", false)) {
          line("idle", fmt::format("its GPUs have been idle for {} (since the partition's "
                                   "threshold was last reached)",
                                   Elapsed(NowSeconds() - Num(j, "idle_since"))));
        }
        line("restarts", Str(j, "restarts"));
        line("command", Str(spec, "script") == "true" ? "(batch script)" : Str(spec, "command"));
        line("work dir", Str(spec, "work_dir"));
        return kExitOk;
      });
}

namespace {

int JobAction(const std::string& command, const std::vector<std::string>& raw) {
  return WithClient(
      command, raw,
      [&](ApiClient* c, const std::vector<std::string>& args, const ClientFlags& flags) {
        auto a = ParseArgs(args, {}, {"-h", "--help"});
        if (!a.ok() || a->words.empty() || c == nullptr)
          return Usage(command, "JOB [JOB...]", c == nullptr);
        auto ids = JobIds(a->words);
        if (!ids.ok()) return Fail(command, ids.status());
        int code = kExitOk;
        for (uint64_t id : *ids) {
          auto r = c->Post(fmt::format("/v1/jobs/{}/{}", id, command), Json::object());
          if (!r.ok()) {
            code = std::max(code, Fail(command, r.status()));
          } else if (flags.json) {
            std::printf("%s\n", r->dump().c_str());
          }
        }
        return code;
      });
}

}  // namespace

int RunCancel(const std::vector<std::string>& args) {
  return JobAction("cancel", args);
}
int RunHold(const std::vector<std::string>& args) {
  return JobAction("hold", args);
}
int RunRelease(const std::vector<std::string>& args) {
  return JobAction("release", args);
}
int RunRequeue(const std::vector<std::string>& args) {
  return JobAction("requeue", args);
}

int RunLogs(const std::vector<std::string>& raw) {
  return WithClient(
      "logs", raw, [](ApiClient* c, const std::vector<std::string>& args, const ClientFlags&) {
        auto a = ParseArgs(args, {}, {"-f", "--follow", "--stderr", "-e", "-h", "--help"});
        if (c == nullptr || !a.ok() || a->words.size() != 1) {
          if (!a.ok()) std::fprintf(stderr, "shoal logs: %s\n", a.status().message().c_str());
          return Usage("logs", "JOB [-f|--follow] [--stderr]", c == nullptr);
        }
        auto ids = JobIds(a->words);
        if (!ids.ok()) return Usage("logs", ids.status().message(), false);
        const uint64_t id = (*ids)[0];
        const bool follow = a->flags.count("-f") || a->flags.count("--follow");
        const std::string stream =
            a->flags.count("--stderr") || a->flags.count("-e") ? "stderr" : "stdout";
        int64_t offset = 0;
        while (true) {
          auto r =
              c->GetRaw(fmt::format("/v1/jobs/{}/log?stream={}&offset={}", id, stream, offset));
          if (!r.ok()) {
            // A job that has not started has no output yet: following waits for it.
            if (!(follow && r.status().code() == StatusCode::kFailedPrecondition))
              return Fail("logs", r.status());
          } else if (!r->body.empty()) {
            std::fwrite(r->body.data(), 1, r->body.size(), stdout);
            std::fflush(stdout);
            offset += static_cast<int64_t>(r->body.size());
            continue;  // there may be more at once
          }
          if (!follow) return kExitOk;
          // Stop following once the job has ended and everything is read.
          auto job = c->Get(fmt::format("/v1/jobs/{}", id));
          if (!job.ok()) return Fail("logs", job.status());
          const std::string state = Str(*job, "state");
          if (state != "pending" && state != "running") {
            auto last =
                c->GetRaw(fmt::format("/v1/jobs/{}/log?stream={}&offset={}", id, stream, offset));
            if (last.ok()) std::fwrite(last->body.data(), 1, last->body.size(), stdout);
            return kExitOk;
          }
          usleep(300'000);
        }
      });
}

int RunPriority(const std::vector<std::string>& raw) {
  return WithClient("priority", raw,
                    [](ApiClient* c, const std::vector<std::string>& args, const ClientFlags&) {
                      auto a = ParseArgs(args, {}, {"-h", "--help"});
                      if (!a.ok() || a->words.size() != 2 || c == nullptr)
                        return Usage("priority", "JOB PRIORITY (admins)", c == nullptr);
                      auto id = ParseInt(a->words[0]);
                      auto p = ParseInt(a->words[1]);
                      if (!id.ok() || !p.ok())
                        return Usage("priority", "JOB PRIORITY (admins)", false);
                      auto r = c->Patch(fmt::format("/v1/jobs/{}", *id), Json{{"priority", *p}});
                      return r.ok() ? kExitOk : Fail("priority", r.status());
                    });
}

int RunHistory(const std::vector<std::string>& raw) {
  return WithClient(
      "history", raw,
      [](ApiClient* c, const std::vector<std::string>& args, const ClientFlags& flags) {
        auto a = ParseArgs(args, {"--user", "-u", "--days", "--limit", "--state", "--account"},
                           {"--all", "-a", "-h", "--help"});
        if (!a.ok() || !a->words.empty() || c == nullptr) {
          return Usage(
              "history",
              "[--user U | --all] [--days N] [--state S] [--account A] [--limit N] [--json]",
              c == nullptr);
        }
        std::string path = "/v1/history?";
        const std::string user = a->values.count("--user") ? a->values["--user"] : a->values["-u"];
        if (!user.empty()) path += "user=" + user + "&";
        if (a->flags.count("--all") || a->flags.count("-a")) path += "all=1&";
        if (a->values.count("--state")) path += "state=" + a->values["--state"] + "&";
        if (a->values.count("--account")) path += "account=" + a->values["--account"] + "&";
        if (a->values.count("--limit")) path += "limit=" + a->values["--limit"] + "&";
        if (a->values.count("--days")) {
          auto d = ParseDouble(a->values["--days"]);
          if (!d.ok() || *d <= 0) return Usage("history", "--days takes a positive number", false);
          path += fmt::format("since={:.0f}&", NowSeconds() - *d * 86400);
        }
        auto r = c->Get(path);
        if (!r.ok()) return Fail("history", r.status());
        if (flags.json) {
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
                          fmt::format("{}:{}", Str(j, "exit_code"), Str(j, "exit_signal")),
                          Gpus(spec), start > 0 ? Elapsed(end - start) : "-",
                          fmt::format("{:.2f}", Num(j, "gpu_seconds") / 3600),
                          eff.empty() ? "-" : fmt::format("{:.0f}%", Num(eff, "util_mean_pct")),
                          eff.empty() ? "-" : fmt::format("{:.2f}", Num(eff, "energy_wh") / 1000)});
        }
        std::printf("%s", Table({"JOBID", "NAME", "USER", "ACCOUNT", "STATE", "EXIT", "GPUS",
                                 "ELAPSED", "GPU-HOURS", "GPU-UTIL", "KWH"},
                                rows)
                              .c_str());
        std::printf("%zu jobs, %.2f GPU-hours\n", rows.size(), gpu_hours);
        return kExitOk;
      });
}

int RunNodes(const std::vector<std::string>& raw) {
  return WithClient(
      "nodes", raw,
      [](ApiClient* c, const std::vector<std::string>& args, const ClientFlags& flags) {
        auto a = ParseArgs(args, {}, {"-h", "--help"});
        if (!a.ok() || !a->words.empty() || c == nullptr)
          return Usage("nodes", "[--json]", c == nullptr);
        auto r = c->Get("/v1/nodes");
        if (!r.ok()) return Fail("nodes", r.status());
        if (flags.json) {
          std::printf("%s\n", r->dump(2).c_str());
          return kExitOk;
        }
        std::vector<std::vector<std::string>> rows;
        std::map<std::string, std::pair<int, int>> by_model;
        for (const Json& n : (*r)["nodes"]) {
          const int total = static_cast<int>(n["gpus"].size());
          const int used = static_cast<int>(Num(n, "gpus_used"));
          const std::string model = total > 0 ? Str(n["gpus"][0], "model") : "-";
          by_model[model].first += used;
          by_model[model].second += total;
          std::vector<std::string> parts;
          for (const Json& p : n["partitions"])
            parts.push_back(p.get<std::string>());
          rows.push_back(
              {Str(n, "name"), Str(n, "state"), fmt::format("{}/{}", used, total), model,
               fmt::format("{:g}", Num(n, "cpus")),
               FormatMemoryMib(static_cast<int64_t>(Num(n, "memory_mib"))), Join(parts, ","),
               Str(n, "state_reason") + (n.contains("unhealthy_gpus")
                                             ? " unhealthy GPUs " + Str(n, "unhealthy_gpus")
                                             : "")});
        }
        std::printf("%s", Table({"NODE", "STATE", "GPUS USED", "MODEL", "CPUS", "MEMORY",
                                 "PARTITIONS", "REASON"},
                                rows)
                              .c_str());
        for (const auto& [model, uf] : by_model)
          std::printf("%s: %d of %d GPUs in use\n", model.c_str(), uf.first, uf.second);
        return kExitOk;
      });
}

int RunDrain(const std::vector<std::string>& raw) {
  return WithClient(
      "drain", raw, [](ApiClient* c, const std::vector<std::string>& args, const ClientFlags&) {
        auto a = ParseArgs(args, {"--reason"}, {"-h", "--help"});
        if (!a.ok() || a->words.empty() || !a->values.count("--reason") || c == nullptr) {
          return Usage("drain", "NODE [NODE...] --reason TEXT (admins)", c == nullptr);
        }
        int code = kExitOk;
        for (const std::string& n : a->words) {
          auto r = c->Post(fmt::format("/v1/nodes/{}/drain", n),
                           Json{{"reason", a->values["--reason"]}});
          if (!r.ok()) code = std::max(code, Fail("drain", r.status()));
        }
        return code;
      });
}

int RunResume(const std::vector<std::string>& raw) {
  return WithClient("resume", raw,
                    [](ApiClient* c, const std::vector<std::string>& args, const ClientFlags&) {
                      auto a = ParseArgs(args, {}, {"-h", "--help"});
                      if (!a.ok() || a->words.empty() || c == nullptr)
                        return Usage("resume", "NODE [NODE...] (admins)", c == nullptr);
                      int code = kExitOk;
                      for (const std::string& n : a->words) {
                        auto r = c->Post(fmt::format("/v1/nodes/{}/resume", n), Json::object());
                        if (!r.ok()) code = std::max(code, Fail("resume", r.status()));
                      }
                      return code;
                    });
}

int RunToken(const std::vector<std::string>& raw) {
  return WithClient(
      "token", raw,
      [](ApiClient* c, const std::vector<std::string>& args, const ClientFlags& flags) {
        auto a = ParseArgs(args, {"--user", "--role"}, {"-h", "--help"});
        const std::string usage =
            "create --user NAME [--role user|admin|node] | list | revoke ID   (admins)";
        if (!a.ok() || a->words.empty() || c == nullptr) return Usage("token", usage, c == nullptr);
        const std::string verb = a->words[0];
        if (verb == "create" && a->words.size() == 1 && a->values.count("--user")) {
          const std::string role = a->values.count("--role") ? a->values["--role"] : "user";
          auto r = c->Post("/v1/tokens", Json{{"user", a->values["--user"]}, {"role", role}});
          if (!r.ok()) return Fail("token", r.status());
          if (flags.json) {
            std::printf("%s\n", r->dump(2).c_str());
          } else {
            std::printf("%s\n", Str(*r, "token").c_str());
            std::fprintf(stderr, "token %s for %s (%s); it is shown only now\n",
                         Str(*r, "id").c_str(), Str(*r, "user").c_str(), Str(*r, "role").c_str());
          }
          return kExitOk;
        }
        if (verb == "list" && a->words.size() == 1) {
          auto r = c->Get("/v1/tokens");
          if (!r.ok()) return Fail("token", r.status());
          if (flags.json) {
            std::printf("%s\n", r->dump(2).c_str());
            return kExitOk;
          }
          std::vector<std::vector<std::string>> rows;
          for (const Json& t : (*r)["tokens"]) {
            rows.push_back({Str(t, "id"), Str(t, "user"), Str(t, "role"),
                            Str(t, "revoked") == "true" ? "revoked" : "active"});
          }
          std::printf("%s", Table({"ID", "USER", "ROLE", "STATE"}, rows).c_str());
          return kExitOk;
        }
        if (verb == "revoke" && a->words.size() == 2) {
          auto r = c->Delete("/v1/tokens/" + a->words[1]);
          return r.ok() ? kExitOk : Fail("token", r.status());
        }
        return Usage("token", usage, false);
      });
}

}  // namespace shoal::cli
