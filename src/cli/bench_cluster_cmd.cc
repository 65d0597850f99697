// shoal bench --cluster: the node acceptance tests of a cluster, run as Shoal
// jobs. For each node (those awaiting acceptance, the named ones, or all),
// it submits an acceptance job (JobSpec::acceptance_node: the controller
// places it on that node alone, whole, even while the node is drained for
// acceptance) that runs `shoal bench node --json`, waits for it, reads the
// report from the job's output through the API (so it works with agents on
// other hosts), and records the verdict with POST /v1/nodes/NAME/acceptance,
// which resumes a passing node and keeps a failing one drained.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include "acceptance/simulated.h"
#include "api/json.h"
#include "cli/app.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/paths.h"
#include "core/strings.h"

namespace shoal::cli {

namespace {

using api::Json;

struct ClusterArgs {
  std::string nodes;
  bool all = false;
  bool quick = false;
  int timeout_s = 1800;
  std::string tests;
  bool simulated = false;
  std::vector<std::string> simulated_fail;  // NODE:gpuN:TEST
  std::string shoal;                        // the shoal binary on the nodes
  std::string work_dir = "/tmp";
  std::string extra;               // more `shoal bench node` arguments
  double nccl_min_busbw_gbps = 0;  // > 0: the multi-node NCCL test, with this floor
};

// One node's acceptance run, from submission to verdict.
struct NodeRun {
  std::string node;
  std::string model;
  uint64_t job = 0;
  std::string job_state;
  bool recorded = false;  // a verdict was stored on the server
  bool passed = false;
  std::string summary;
  std::vector<std::string> failures;
  std::string node_state;
  std::string error;  // why there is no verdict
  bool simulated = false;
};

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The last `shoal bench` report in a job's output: the JSON object that
// `--json` prints, whatever else the job wrote around it.
std::optional<Json> FindReport(const std::string& text) {
  std::optional<Json> found;
  for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) {
    if (text[at] == '{') {
      std::istringstream in(text.substr(at));
      try {
        Json j;
        in >> j;
        if (j.is_object() && j.contains("passed") &&
            j.value("schema", std::string()).starts_with("shoal-bench-report")) {
          found = std::move(j);
        }
      } catch (const Json::exception&) {
        // Not a report; keep looking.
      }
    }
    if (text.find('\n', at) == std::string::npos) break;
  }
  return found;
}

Result<std::string> ReadOutput(ApiClient& c, uint64_t job) {
  std::string out;
  // The server hands logs out in pieces; a limit keeps a runaway job's output bounded.
  constexpr size_t kMaxBytes = 64 << 20;
  while (out.size() < kMaxBytes) {
    SHOAL_ASSIGN_OR_RETURN(
        net::HttpResponse r,
        c.GetRaw(fmt::format("/v1/jobs/{}/log?stream=stdout&offset={}", job, out.size())));
    if (r.body.empty()) break;
    out += r.body;
  }
  return out;
}

std::string NodeCommand(const ClusterArgs& a, const NodeRun& run, bool multi_node = false) {
  std::string cmd = Quote(a.shoal) + " bench node --json";
  if (a.quick) cmd += " --quick";
  if (multi_node) {
    cmd += fmt::format(" --tests nccl --nccl-min-busbw {}", a.nccl_min_busbw_gbps);
  } else if (!a.tests.empty()) {
    cmd += " --tests " + Quote(a.tests);
  }
  if (a.simulated) {
    cmd += " --simulated --model " + Quote(run.model);
    std::string fails;
    for (const std::string& f : a.simulated_fail) {
      if (f.starts_with(run.node + ":"))
        fails += (fails.empty() ? "" : ",") + f.substr(run.node.size() + 1);
    }
    if (!fails.empty() && !multi_node) cmd += " --simulated-fail " + Quote(fails);
  }
  cmd += " --timeout " + std::to_string(a.timeout_s);
  if (!a.extra.empty()) cmd += " " + a.extra;
  return cmd;
}

// What became of one acceptance job.
struct Outcome {
  std::string job_state;
  bool verdict = false;  // the job gave a verdict on its node(s)
  bool passed = false;
  std::string summary;
  std::vector<std::string> failures;
  std::string error;  // why there is no verdict
};

struct MultiNode {
  std::vector<std::string> nodes;
  uint64_t job = 0;
  Outcome outcome;
};

Result<uint64_t> SubmitAcceptance(ApiClient& c, const ClusterArgs& a, const std::string& nodes,
                                  const std::string& name, const std::string& command) {
  JobSpec spec;
  spec.name = name;
  spec.command = command;
  spec.acceptance_node = nodes;
  spec.work_dir = a.work_dir;
  spec.stdout_path = "shoal-acceptance-%j-%t.out";
  spec.stderr_path = "shoal-acceptance-%j-%t.err";
  // The node test stops itself at --timeout; the job's limit is a backstop.
  spec.time_limit = std::chrono::seconds(a.timeout_s + 60);
  SHOAL_ASSIGN_OR_RETURN(Json r, c.Post("/v1/jobs", api::ToJson(spec)));
  return r["jobs"][0].get<uint64_t>();
}

// Waits for a job until `deadline`, then reads the report from its output
// (the first node's: rank 0's for a multi-node job). Says on stderr when
// the job starts and, while it runs, every 30 s how long it has run (a
// real burn-in takes minutes), unless `quiet` (--json).
Outcome Await(ApiClient& c, uint64_t id, std::chrono::steady_clock::time_point deadline,
              const ClusterArgs& a, bool quiet) {
  Outcome o;
  const auto t0 = std::chrono::steady_clock::now();
  auto next_word = t0;
  std::string said;
  while (true) {
    auto job = c.Get(fmt::format("/v1/jobs/{}", id));
    if (!job.ok()) {
      o.error = fmt::format("job {}: {}", id, job.status().message());
      return o;
    }
    o.job_state = job->value("state", std::string());
    const bool ended = o.job_state != "pending" && o.job_state != "running";
    const auto now = std::chrono::steady_clock::now();
    if (!quiet && (o.job_state != said || now >= next_word)) {
      const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - t0).count();
      std::fprintf(stderr, "shoal bench: acceptance job %llu %s (%lld s%s)\n",
                   static_cast<unsigned long long>(id), o.job_state.c_str(),
                   static_cast<long long>(waited),
                   ended ? "" : fmt::format(" so far, at most {} s", a.timeout_s).c_str());
      said = o.job_state;
      next_word = now + std::chrono::seconds(30);
    }
    if (ended) break;
    if (std::chrono::steady_clock::now() > deadline) {
      (void)c.Post(fmt::format("/v1/jobs/{}/cancel", id), Json::object());
      if (o.job_state == "pending") {
        o.error =
            "never started: " + job->value("reason_detail", job->value("reason", std::string()));
        return o;
      }
      // Started and hung: a failure.
      o.verdict = true;
      o.summary = fmt::format("did not finish within {} s (cancelled)", a.timeout_s);
      return o;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  auto output = ReadOutput(c, id);
  std::optional<Json> report = output.ok() ? FindReport(*output) : std::nullopt;
  o.verdict = true;
  if (!report) {
    // The tests could not run (no GPU driver, no shoal-bench-node, a crash):
    // `shoal bench node` says so on stderr, in the .err file.
    o.summary = fmt::format(
        "the node test produced no report (job {} {}; its stderr is {}/shoal-acceptance-{}-0.err "
        "on the node)",
        id, o.job_state, a.work_dir, id);
    if (!output.ok()) o.summary += ": " + output.status().message();
    return o;
  }
  o.passed = (*report)["passed"].is_boolean() && (*report)["passed"].get<bool>();
  o.summary = report->value("summary", std::string());
  if (report->contains("failures") && (*report)["failures"].is_array()) {
    for (const Json& f : (*report)["failures"]) {
      if (f.is_string()) o.failures.push_back(f.get<std::string>());
    }
  }
  return o;
}

void PrintTable(const std::vector<NodeRun>& runs) {
  std::vector<std::vector<std::string>> rows;
  for (const NodeRun& r : runs) {
    const std::string result = !r.recorded ? "not run" : r.passed ? "passed" : "failed";
    std::string summary = r.recorded ? r.summary : r.error;
    if (r.simulated) summary += " [simulated: no measurement]";
    rows.push_back(
        {r.node, r.job != 0 ? std::to_string(r.job) : "-", result, r.node_state, summary});
  }
  std::fputs(Table({"NODE", "JOB", "RESULT", "STATE", "SUMMARY"}, rows).c_str(), stdout);
  for (const NodeRun& r : runs) {
    for (const std::string& f : r.failures)
      std::printf("%s: %s\n", r.node.c_str(), f.c_str());
  }
}

// Parses the command line into `flags` and `a`; an exit code when the
// command should stop there (help, a usage error), else -1.
int ParseClusterArgs(const std::vector<std::string>& raw, ClientFlags& flags, ClusterArgs& a) {
  a.shoal = CompanionPath("shoal");
  bool cluster = false;
  CLI::App app{"Acceptance tests of the cluster's nodes, run as Shoal jobs (admins).",
               "shoal bench --cluster"};
  AddClientFlags(app, flags);
  app.add_flag("--cluster", cluster,
               "test nodes of the cluster (default: those awaiting acceptance)")
      ->required();
  app.add_option("--nodes", a.nodes, "these nodes (comma-separated) instead");
  app.add_flag("--all", a.all, "every node that is not down");
  app.add_flag("--quick", a.quick, "quick node tests (about a minute each)");
  app.add_option("--tests", a.tests, "tests to run on each node (default all)");
  app.add_option("--timeout", a.timeout_s,
                 "give up on a node's test after this many seconds (default 1800)")
      ->check(CLI::Range(1, 7 * 24 * 3600));
  app.add_flag(
      "--simulated", a.simulated,
      "nodes report the catalogue's expectations instead of measuring (hosts without GPUs, tests)");
  app.add_option("--simulated-fail", a.simulated_fail,
                 "with --simulated: NODE:gpuN:TEST figures below the pass mark (repeatable)");
  app.add_option("--shoal", a.shoal, "the shoal binary's path on the nodes (default: this one's)");
  app.add_option("--work-dir", a.work_dir,
                 "the jobs' working directory on the nodes (default /tmp)");
  app.add_option("--bench-args", a.extra,
                 "more arguments for `shoal bench node` (such as --nccl-max 1G)");
  app.add_option("--nccl-min-busbw", a.nccl_min_busbw_gbps,
                 "also run NCCL across the nodes that pass, as one multi-node job, with this bus "
                 "bandwidth floor in GB/s")
      ->check(CLI::NonNegativeNumber);
  if (int code = ParseApp(app, raw, "shoal bench"); code >= 0) return code;
  if (!a.nodes.empty() && a.all)
    return UsageError("shoal bench", "--nodes and --all exclude each other");
  for (const std::string& f : a.simulated_fail) {
    const size_t colon = f.find(':');
    if (!a.simulated || colon == std::string::npos ||
        !acceptance::ParseSimulatedFaults(f.substr(colon + 1)).ok()) {
      return UsageError("shoal bench",
                        "--simulated-fail '" + f + "': NODE:gpuN:TEST, with --simulated");
    }
  }
  return -1;
}

// The nodes to test, from GET /v1/nodes: those named, every one not down,
// or those awaiting acceptance. NotFound when a named node is not there.
Result<std::vector<NodeRun>> PickNodes(const Json& listed, const ClusterArgs& a) {
  std::vector<NodeRun> runs;
  std::vector<std::string> wanted;
  for (std::string_view n : Split(a.nodes, ',')) {
    if (!n.empty()) wanted.emplace_back(n);
  }
  for (const Json& n : listed["nodes"]) {
    const std::string name = n.value("name", std::string());
    const std::string state = n.value("state", std::string());
    const std::string reason = n.value("state_reason", std::string());
    bool take = false;
    if (!wanted.empty()) {
      take = std::find(wanted.begin(), wanted.end(), name) != wanted.end();
    } else if (a.all) {
      take = state != "down";
    } else {
      take = reason == "awaiting acceptance";
    }
    if (!take) continue;
    NodeRun run;
    run.node = name;
    run.node_state = state;
    if (n.contains("gpus") && !n["gpus"].empty())
      run.model = n["gpus"][0].value("model", std::string());
    runs.push_back(std::move(run));
  }
  for (const std::string& w : wanted) {
    if (std::none_of(runs.begin(), runs.end(), [&](const NodeRun& r) { return r.node == w; })) {
      return NotFound("no node " + w);
    }
  }
  return runs;
}

// One acceptance job per node; they run side by side. Only a refusal (the
// caller is no admin) stops it: other errors stay with their node.
Status SubmitNodeJobs(ApiClient& client, const ClusterArgs& a, bool quiet,
                      std::vector<NodeRun>& runs) {
  for (NodeRun& run : runs) {
    if (a.simulated && run.model.empty()) {
      run.error = "the node reports no GPU model to simulate";
      continue;
    }
    run.simulated = a.simulated;
    auto job = SubmitAcceptance(client, a, run.node, "acceptance-" + run.node, NodeCommand(a, run));
    if (!job.ok()) {
      if (job.status().code() == StatusCode::kPermissionDenied) return job.status();
      run.error = "not submitted: " + job.status().message();
      continue;
    }
    run.job = *job;
    if (!quiet) {
      std::fprintf(stderr, "shoal bench: %s: acceptance job %llu\n", run.node.c_str(),
                   static_cast<unsigned long long>(run.job));
    }
  }
  return Status::Ok();
}

// Waits for the node jobs, bounded: a job still pending at the deadline
// never ran (the node was busy or drained for another reason) and is not a
// verdict.
void AwaitNodeJobs(ApiClient& client, const ClusterArgs& a, bool quiet,
                   std::vector<NodeRun>& runs) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(a.timeout_s + 120);
  for (NodeRun& run : runs) {
    if (run.job == 0) continue;
    const Outcome o = Await(client, run.job, deadline, a, quiet);
    run.job_state = o.job_state;
    run.recorded = o.verdict;
    run.passed = o.passed;
    run.summary = o.summary;
    run.failures = o.failures;
    run.error = o.error;
  }
}

// The multi-node NCCL test across the nodes that passed, as one job over
// all of them, before any is resumed (so that they are idle and nothing
// else lands there). It is judged against the operator's floor only.
MultiNode RunMultiNodeNccl(ApiClient& client, const ClusterArgs& a, bool quiet,
                           std::vector<NodeRun>& runs) {
  MultiNode multi;
  std::string models;
  for (const NodeRun& r : runs) {
    if (r.recorded && r.passed) {
      multi.nodes.push_back(r.node);
      if (models.empty()) models = r.model;
    }
  }
  if (multi.nodes.size() < 2) {
    multi.outcome.error = "fewer than two nodes passed their node tests";
  } else {
    NodeRun first;
    first.model = models;
    std::string cmd = NodeCommand(a, first, /*multi_node=*/true);
    auto job = SubmitAcceptance(client, a, Join(multi.nodes, ","), "acceptance-nccl", cmd);
    if (!job.ok()) {
      multi.outcome.error = "not submitted: " + job.status().message();
    } else {
      multi.job = *job;
      if (!quiet) {
        std::fprintf(stderr, "shoal bench: multi-node NCCL over %s: acceptance job %llu\n",
                     Join(multi.nodes, ",").c_str(), static_cast<unsigned long long>(multi.job));
      }
      const auto multi_deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(a.timeout_s + 120);
      multi.outcome = Await(client, multi.job, multi_deadline, a, quiet);
    }
  }
  // A failed multi-node test fails every node in it: which one is slow is
  // for a rerun with --nodes to find.
  if (multi.outcome.verdict && !multi.outcome.passed) {
    for (NodeRun& r : runs) {
      if (std::find(multi.nodes.begin(), multi.nodes.end(), r.node) == multi.nodes.end()) continue;
      r.passed = false;
      r.summary = fmt::format("multi-node NCCL over {} (job {}): {}", Join(multi.nodes, ","),
                              multi.job, multi.outcome.summary);
      for (const std::string& f : multi.outcome.failures)
        r.failures.push_back("multi-node " + f);
    }
  }
  return multi;
}

// Records the verdicts: passing nodes are resumed, failing ones drained.
void RecordVerdicts(ApiClient& client, std::vector<NodeRun>& runs) {
  for (NodeRun& run : runs) {
    if (!run.recorded) continue;
    Json body = {
        {"passed", run.passed}, {"summary", run.summary}, {"time", NowSeconds()}, {"job", run.job}};
    body["failures"] = run.failures.size() > kMaxAcceptanceFailures
                           ? std::vector<std::string>(run.failures.begin(),
                                                      run.failures.begin() + kMaxAcceptanceFailures)
                           : run.failures;
    auto stored = client.Post(fmt::format("/v1/nodes/{}/acceptance", run.node), body);
    if (!stored.ok()) {
      run.recorded = false;
      run.error = "the verdict was not stored: " + stored.status().message();
      continue;
    }
    run.node_state = stored->value("state", run.node_state);
  }
}

// Prints the results (a table, or JSON with --json); true when every node
// passed and the multi-node test, if asked for, gave a verdict.
bool PrintResults(const std::vector<NodeRun>& runs, const std::optional<MultiNode>& multi,
                  bool json) {
  bool all_passed = true;
  for (const NodeRun& r : runs)
    all_passed &= r.recorded && r.passed;
  // A multi-node test that could not run leaves the nodes' verdicts as they
  // are, but the run as a whole did not show what it was asked to.
  if (multi && !multi->outcome.verdict) all_passed = false;
  std::string multi_result, multi_summary;
  if (multi) {
    multi_result = !multi->outcome.verdict ? "not run"
                   : multi->outcome.passed ? "passed"
                                           : "failed";
    multi_summary = multi->outcome.verdict ? multi->outcome.summary : multi->outcome.error;
  }
  if (json) {
    Json out = {{"passed", all_passed}, {"nodes", Json::array()}};
    for (const NodeRun& r : runs) {
      Json j = {{"node", r.node},
                {"job", r.job},
                {"job_state", r.job_state},
                {"state", r.node_state},
                {"result", !r.recorded ? "not run"
                           : r.passed  ? "passed"
                                       : "failed"}};
      j["summary"] = r.recorded ? r.summary : r.error;
      j["failures"] = r.failures;
      if (r.simulated) j["note"] = std::string(acceptance::kSimulatedNote);
      out["nodes"].push_back(std::move(j));
    }
    if (multi) {
      out["multi_node_nccl"] = {{"nodes", multi->nodes},
                                {"job", multi->job},
                                {"result", multi_result},
                                {"summary", multi_summary},
                                {"failures", multi->outcome.failures}};
    }
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    PrintTable(runs);
    if (multi) {
      std::printf("multi-node NCCL over %s: %s%s%s\n",
                  multi->nodes.empty() ? "-" : Join(multi->nodes, ",").c_str(),
                  multi_result.c_str(), multi_summary.empty() ? "" : ": ", multi_summary.c_str());
    }
  }
  return all_passed;
}

}  // namespace

int RunBenchCluster(const std::vector<std::string>& raw) {
  ClientFlags flags;
  ClusterArgs a;
  if (int code = ParseClusterArgs(raw, flags, a); code >= 0) return code;
  auto client = ApiClient::Open(flags);
  if (!client.ok()) return Fail("bench", client.status());
  auto listed = client->Get("/v1/nodes");
  if (!listed.ok()) return Fail("bench", listed.status());
  auto runs = PickNodes(*listed, a);
  if (!runs.ok()) {
    std::cerr << "shoal bench: " << runs.status().message() << "\n";
    return kExitRefused;
  }
  if (runs->empty()) {
    if (flags.json) {
      std::printf("{\"nodes\": [], \"passed\": true}\n");
    } else {
      std::printf("No node awaits acceptance (name them with --nodes, or --all).\n");
    }
    return kExitOk;
  }
  if (Status s = SubmitNodeJobs(*client, a, flags.json, *runs); !s.ok()) return Fail("bench", s);
  AwaitNodeJobs(*client, a, flags.json, *runs);
  std::optional<MultiNode> multi;
  if (a.nccl_min_busbw_gbps > 0) multi = RunMultiNodeNccl(*client, a, flags.json, *runs);
  RecordVerdicts(*client, *runs);
  return PrintResults(*runs, multi, flags.json) ? kExitOk : kExitRefused;
}

}  // namespace shoal::cli
