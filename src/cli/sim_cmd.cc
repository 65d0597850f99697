// shoal sim: replay a trace through the real scheduler, one or more policies side by side.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "catalog/profiles.h"
#include "cli/app.h"
#include "cli/commands.h"
#include "cli/paths.h"
#include "core/strings.h"
#include "sched/inventory.h"
#include "sched/policy.h"
#include "sched/power.h"
#include "sim/engine.h"
#include "sim/faults.h"
#include "sim/inputs.h"
#include "sim/report.h"
#include "trace/clusters.h"

namespace shoal::cli {

namespace {

struct SimArgs {
  std::string cluster;
  std::string trace;
  std::string format = "auto";
  std::string policies = "fifo,backfill,multifactor,las";
  std::string mode = "replay";
  std::string limits = "x2";
  std::string restart_cost = "30s";
  std::string series;
  std::string profile = "dgx-a100";
  std::string power_budget;
  std::string faults;
  bool mig_shares = false;
  int nodes = 0;
  int nodes_per_leaf = 16;
  uint64_t seed = 1;
  double fill_target = 1.3;
  int max_jobs = 0;
  bool json = false;
  bool csv = false;
  bool no_invariants = false;
  bool list = false;
  bool progress = false;
  bool no_progress = false;
};

// Peak resident memory of this process (VmHWM), in MiB; 0 when unknown.
double PeakRssMib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      auto kb = ParseInt(Trim(std::string_view(line).substr(6, line.size() - 6 - 3)));
      return kb.ok() ? static_cast<double>(*kb) / 1024.0 : 0.0;
    }
  }
  return 0;
}

void PrintPolicies() {
  std::printf("policies (use several with commas; override parts with name:key=value):\n");
  for (const std::string& name : sched::Policy::PresetNames(true)) {
    auto p = sched::Policy::Preset(name);
    auto policy = sched::Policy::Create(*p, sched::BuiltinRegistry(), {true});
    std::printf("  %s\n", policy->Describe().c_str());
  }
}

void AddSimOptions(CLI::App& app, SimArgs& a) {
  app.add_option("--cluster,-c", a.cluster,
                 "cluster: a Shoal cluster file (.toml), an openb/PAI/spot node list (.csv) or a "
                 "Gavel cluster spec "
                 "(.json); optional when the trace comes with its own nodes. A relative path that "
                 "is not here is "
                 "looked up in Shoal's data (traces/), as --trace is");
  app.add_option("--nodes", a.nodes, "instead of --cluster: this many nodes of --profile");
  app.add_option("--profile", a.profile,
                 "node profile for --nodes (dgx-h100, hgx-h200, dgx-a100, ...)");
  app.add_option("--nodes-per-leaf", a.nodes_per_leaf,
                 "with --nodes: nodes under each leaf switch");
  app.add_option(
      "--trace,-t", a.trace,
      "trace file, or a directory of trace files (each file an account); a relative path that is "
      "not "
      "here is looked up in Shoal's data, e.g. microsoft-itp-2021/raw/cluster01.csv (shoal version "
      "shows the data folder)");
  app.add_option("--format", a.format, "trace format: auto, itp, gavel, pollux, openb");
  app.add_option("--policy,-p", a.policies,
                 "policies to compare, comma-separated (see --list-policies)");
  app.add_option("--mode", a.mode,
                 "replay (arrivals and run times from the trace) or fill (FGD-style placement)");
  app.add_option("--time-limits", a.limits,
                 "time limits the scheduler sees: exact, xK (K times the true run time), default");
  app.add_option("--restart-cost", a.restart_cost, "time lost by a preempted job when it restarts");
  app.add_option("--seed", a.seed, "seed for every random choice");
  app.add_option("--fill-target", a.fill_target,
                 "fill mode: arrived GPU demand to reach, as a multiple of the cluster's GPUs");
  app.add_option("--power-budget", a.power_budget,
                 "a power budget for the whole cluster: a share of its peak draw (80%) or "
                 "kilowatts (500kW); see docs/power.md");
  app.add_option("--faults", a.faults,
                 "replay through seeded faults, e.g. node-fail=1%/day,node-repair=4h,gpu-xid=0.1%/"
                 "day,gpu-slow=0.5%/day,heartbeat-loss=2/day,controller-restart=1/week,"
                 "checkpoint=1h (docs/sim.md#faults)");
  app.add_flag("--mig-shares", a.mig_shares,
               "jobs that ask for a share of one GPU (GPU sharing) ask for the smallest MIG slice "
               "of the cluster that covers it instead, or a whole GPU (docs/mig.md)");
  app.add_option("--max-jobs", a.max_jobs, "use only the first N jobs of the trace");
  app.add_option("--series", a.series,
                 "write the utilisation series (or fill curve) to this CSV file");
  app.add_flag("--json", a.json, "print JSON");
  app.add_flag("--csv", a.csv, "print CSV (one row per policy)");
  app.add_flag("--no-invariants", a.no_invariants, "skip the invariant checks after every event");
  app.add_flag("--progress", a.progress,
               "print a progress line every second (default when stderr is a terminal)");
  app.add_flag("--no-progress", a.no_progress, "no progress line");
  app.add_flag("--list-policies", a.list, "list the policies and exit");
}

// The steps below print what stops them and return the exit code then;
// -1 when the command goes on.
constexpr int kGoOn = -1;

// The simulation's options and the policies to compare, from the flags.
int MakeSimOptions(const SimArgs& a, sim::SimOptions& opts,
                   std::vector<sched::PolicyParams>& policies) {
  if (a.trace.empty()) {
    std::cerr << "shoal sim: --trace is required (shoal sim --help)\n";
    return 2;
  }
  if (a.json && a.csv) {
    std::cerr << "shoal sim: choose one of --json and --csv\n";
    return 2;
  }
  opts.seed = a.seed;
  opts.fill_target = a.fill_target;
  opts.check_invariants = !a.no_invariants;
  if (a.mode == "fill") {
    opts.mode = sim::Mode::kFill;
  } else if (a.mode != "replay") {
    std::cerr << "shoal sim: --mode is replay or fill\n";
    return 2;
  }
  auto limits = sim::ParseLimitModel(a.limits);
  if (!limits.ok()) {
    std::cerr << "shoal sim: " << limits.status().message() << "\n";
    return 2;
  }
  opts.limits = *limits;
  auto restart = ParseDuration(a.restart_cost);
  if (!restart.ok()) {
    std::cerr << "shoal sim: --restart-cost: " << restart.status().message() << "\n";
    return 2;
  }
  opts.restart_cost = *restart;
  auto faults = sim::ParseFaultModel(a.faults);
  if (!faults.ok()) {
    std::cerr << "shoal sim: " << faults.status().message() << "\n";
    return 2;
  }
  if (faults->Any() && opts.mode == sim::Mode::kFill) {
    std::cerr << "shoal sim: --faults applies to replays, not to --mode fill (it has no time)\n";
    return 2;
  }
  opts.faults = *faults;
  for (std::string_view p : Split(a.policies, ',')) {
    auto params = sched::Policy::Preset(Trim(p));
    if (!params.ok()) {
      std::cerr << "shoal sim: " << params.status().message() << "\n";
      return 2;
    }
    auto check = sched::Policy::Create(*params, sched::BuiltinRegistry(), {true});
    if (!check.ok()) {
      std::cerr << "shoal sim: policy '" << p << "': " << check.status().message() << "\n";
      return 2;
    }
    policies.push_back(*params);
  }
  return kGoOn;
}

// --nodes of --profile under leaf switches of --nodes-per-leaf.
int MakeProfileCluster(SimArgs& a, Cluster& cluster) {
  const catalog::NodeProfile* profile = catalog::FindProfile(a.profile);
  if (profile == nullptr) {
    std::cerr << "shoal sim: unknown profile '" << a.profile << "' ("
              << Join(catalog::ProfileNames(), ", ") << ")\n";
    return 2;
  }
  cluster.name = fmt::format("{}x{}", a.nodes, a.profile);
  const int per_leaf = std::max(1, a.nodes_per_leaf);
  for (int i = 0; i < a.nodes; ++i) {
    Node n = catalog::MakeNode(*profile, fmt::format("n{:04}", i + 1));
    n.id = NodeId(static_cast<uint32_t>(i + 1));
    n.place.spine = fmt::format("spine{}", i / (per_leaf * 16));
    n.place.leaf = fmt::format("leaf{}", i / per_leaf);
    cluster.nodes.push_back(std::move(n));
  }
  a.cluster = fmt::format("{} x {}", a.nodes, a.profile);
  return kGoOn;
}

// The cluster: --nodes of a profile, a --cluster file, or the trace's own.
int MakeCluster(SimArgs& a, const trace::Trace& tr, Cluster& cluster) {
  if (!a.cluster.empty() && a.nodes > 0) {
    std::cerr << "shoal sim: give --cluster or --nodes, not both\n";
    return 2;
  }
  if (a.nodes > 0) return MakeProfileCluster(a, cluster);
  if (!a.cluster.empty()) {
    auto c = trace::LoadCluster(FindInData(a.cluster));
    if (!c.ok()) {
      std::cerr << "shoal sim: " << c.status().message() << "\n";
      return 1;
    }
    cluster = std::move(c).value();
  } else if (tr.cluster) {
    cluster = *tr.cluster;
  } else {
    std::cerr << "shoal sim: this trace has no nodes of its own; give a --cluster "
                 "(examples/clusters has some)\n";
    return 2;
  }
  return kGoOn;
}

// One simulation per policy, with a progress line on stderr when asked for.
int SimulateAll(const SimArgs& a, const Cluster& cluster, const trace::Trace& tr,
                const std::vector<sched::PolicyParams>& policies, sim::SimOptions& opts,
                std::vector<sim::SimResult>& results) {
  SystemClock wall;
  opts.wall_clock = &wall;
  const bool progress = !a.no_progress && (a.progress || isatty(STDERR_FILENO));
  if (progress) {
    opts.progress = [](const sim::Progress& p) {
      std::fprintf(stderr, "\r[%s] t=%s  finished %zu/%zu  pending %zu  running %zu   ",
                   p.policy.c_str(), FormatDuration(p.now.time_since_epoch()).c_str(), p.finished,
                   p.total, p.pending, p.running);
      std::fflush(stderr);
    };
  }
  for (const sched::PolicyParams& p : policies) {
    auto r = sim::Simulate(cluster, tr, p, opts);
    if (progress) std::fprintf(stderr, "\r%80s\r", "");
    if (!r.ok()) {
      std::cerr << "shoal sim: " << r.status().message() << "\n";
      return 1;
    }
    results.push_back(std::move(r).value());
  }
  opts.wall_clock = nullptr;  // `wall` ends here
  return kGoOn;
}

// The series file (--series) and the report on stdout.
int Report(const SimArgs& a, const Cluster& cluster, const trace::Trace& tr,
           const sim::SimOptions& opts, const std::vector<sim::SimResult>& results) {
  sim::ReportContext ctx;
  ctx.cluster = a.cluster.empty() ? tr.cluster_source : a.cluster;
  ctx.trace = a.trace;
  ctx.gpus = cluster.TotalGpus();
  ctx.nodes = static_cast<int>(cluster.nodes.size());
  ctx.limits = sim::FormatLimitModel(opts.limits);
  ctx.seed = a.seed;
  ctx.peak_rss_mib = PeakRssMib();
  if (!a.series.empty()) {
    std::ofstream out(a.series);
    out << sim::RenderSeriesCsv(results);
    if (!out) {
      std::cerr << "shoal sim: cannot write " << a.series << "\n";
      return 1;
    }
  }
  if (a.json) {
    std::cout << sim::RenderJson(ctx, results);
  } else if (a.csv) {
    std::cout << sim::RenderCsv(ctx, results);
  } else {
    std::cout << sim::RenderTable(ctx, results);
  }
  return 0;
}

}  // namespace

// --power-budget: a budget named "site" over every node, as a share of the
// cluster's peak draw or in kilowatts.
int AddPowerBudget(const SimArgs& a, Cluster& cluster) {
  if (a.power_budget.empty()) return kGoOn;
  auto inv = sched::Inventory::Build(cluster);
  if (!inv.ok()) {
    std::cerr << "shoal sim: " << inv.status().message() << "\n";
    return 1;
  }
  const double peak_w = sched::PeakClusterPower(**inv);
  std::string_view text = Trim(a.power_budget);
  double watts = 0;
  if (text.ends_with('%')) {
    auto pct = ParseDouble(text.substr(0, text.size() - 1));
    if (pct.ok() && *pct > 0 && *pct <= 100) watts = *pct / 100 * peak_w;
  } else if (text.ends_with("kW") || text.ends_with("kw")) {
    auto kw = ParseDouble(text.substr(0, text.size() - 2));
    if (kw.ok() && *kw > 0) watts = *kw * 1000;
  }
  if (!(watts > 0)) {
    std::cerr << "shoal sim: --power-budget is a share of the peak draw (80%) or kilowatts "
                 "(500kW), not '"
              << a.power_budget << "'\n";
    return 2;
  }
  if (!(peak_w > 0)) {
    std::cerr << "shoal sim: --power-budget: this cluster's GPUs have no rated power\n";
    return 2;
  }
  cluster.power_budgets.push_back({"site", "", watts});
  return kGoOn;
}

int RunSim(const std::vector<std::string>& raw) {
  SimArgs a;
  CLI::App app{
      "Replay a job trace through Shoal's scheduler on a cluster (discrete-event, virtual time).",
      "shoal sim"};
  AddSimOptions(app, a);
  if (int code = ParseApp(app, raw, "shoal sim"); code >= 0) return code;
  if (a.list) {
    PrintPolicies();
    return 0;
  }
  sim::SimOptions opts;
  std::vector<sched::PolicyParams> policies;
  if (int code = MakeSimOptions(a, opts, policies); code != kGoOn) return code;
  trace::TraceOptions topts;
  topts.format = a.format;
  topts.max_jobs = a.max_jobs;
  auto tr = sim::LoadTraceInput(FindInData(a.trace), topts);
  if (!tr.ok()) {
    std::cerr << "shoal sim: " << tr.status().message() << "\n";
    return 1;
  }
  Cluster cluster;
  if (int code = MakeCluster(a, *tr, cluster); code != kGoOn) return code;
  if (int code = AddPowerBudget(a, cluster); code != kGoOn) return code;
  if (a.mig_shares) {
    if (Status s = sim::MapSharesToMigSlices(*tr, cluster); !s.ok()) {
      std::cerr << "shoal sim: " << s.message() << "\n";
      return 2;
    }
  }
  std::vector<sim::SimResult> results;
  if (int code = SimulateAll(a, cluster, *tr, policies, opts, results); code != kGoOn) return code;
  return Report(a, cluster, *tr, opts, results);
}

}  // namespace shoal::cli
