// shoal plan mix: which mix of GPU models serves a workload best, asked of
// the simulator. Each candidate mix (plan/mix.h: a fixed number of GPUs, or
// what a budget buys) becomes a cluster, the workload's trace is replayed on
// it under a (speed-aware) policy, and the mixes are ranked by mean job
// completion time.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/paths.h"
#include "core/strings.h"
#include "plan/mix.h"
#include "sched/policy.h"
#include "sim/engine.h"
#include "sim/inputs.h"
#include "sim/report.h"
#include "trace/clusters.h"

namespace shoal::cli {

namespace {

struct MixArgs {
  std::string trace;
  std::string format = "auto";
  std::string models;
  std::string prices;
  std::string policy = "speed";
  int64_t gpus = 0;
  double budget = 0;
  int64_t step = 8;
  int gpus_per_node = 8;
  int max_jobs = 0;
  uint64_t seed = 1;
  bool json = false;
};

struct MixRun {
  plan::Mix mix;
  std::optional<sim::Summary> summary;  // none: the mix cannot run every job
  std::string error;
};

// "V100=3.06,K80=0.9" into the models' prices.
Status TakePrices(const std::string& text, std::vector<plan::MixModel>& models) {
  for (std::string_view item : Split(text, ',')) {
    const auto price = ParseNamedNumber(item);
    auto it = std::find_if(models.begin(), models.end(), [&](const plan::MixModel& m) {
      return price && m.model == price->first;
    });
    if (!price || !(price->second > 0) || it == models.end()) {
      return InvalidArgument(fmt::format(
          "--price: '{}' is not MODEL=PRICE for one of the --models, with a price above 0", item));
    }
    it->price = price->second;
  }
  return Status::Ok();
}

// The models the trace has run times on (empty: it has none per model).
std::set<std::string> TracedModels(const trace::Trace& tr) {
  std::set<std::string> out;
  for (const trace::TraceJob& j : tr.jobs) {
    for (const auto& [model, d] : j.duration_by_model)
      out.insert(model);
  }
  return out;
}

MixRun Run(const MixArgs& a, const std::vector<plan::MixModel>& models, const plan::Mix& mix,
           const trace::Trace& tr, const sched::PolicyParams& policy, const sim::SimOptions& opts) {
  MixRun run{mix, std::nullopt, ""};
  std::vector<std::pair<std::string, int64_t>> gpus;
  for (size_t m = 0; m < models.size(); ++m)
    gpus.emplace_back(models[m].model, mix.gpus[m]);
  trace::ClusterLoadOptions copts;
  copts.gavel_gpus_per_node = a.gpus_per_node;
  Result<Cluster> cluster = trace::ModelMixCluster("mix", gpus, copts);
  Result<sim::SimResult> r =
      cluster.ok() ? sim::Simulate(*cluster, tr, policy, opts) : cluster.status();
  if (r.ok()) {
    run.summary = sim::Summarize(*r);
  } else {
    run.error = std::string(r.status().message());
  }
  return run;
}

void PrintText(const MixArgs& a, const std::vector<plan::MixModel>& models,
               const std::vector<MixRun>& runs, size_t jobs) {
  const bool priced = a.budget > 0;
  std::cout << fmt::format(
      "{} jobs of {} under policy {}, on {} mixes ({}; steps of {} GPUs)\n", jobs, a.trace,
      a.policy, runs.size(),
      priced ? fmt::format("a budget of {:g}", a.budget) : fmt::format("{} GPUs each", a.gpus),
      a.step);
  std::cout << fmt::format("{:<36}{:>6}{:>10}{:>11}{:>11}{:>11}{:>12}\n", "MIX", "GPUS", "COST",
                           "JCT MEAN", "JCT P99", "QUEUE", "MAKESPAN");
  auto hours = [](double s) { return fmt::format("{:.2f} h", s / 3600); };
  for (const MixRun& r : runs) {
    const std::string cost = priced ? fmt::format("{:.4g}", r.mix.cost) : "-";
    if (!r.summary) {
      std::cout << fmt::format("{:<36}{:>6}{:>10}  cannot run every job: {}\n",
                               r.mix.Describe(models), r.mix.TotalGpus(), cost, r.error);
      continue;
    }
    const sim::Summary& s = *r.summary;
    std::cout << fmt::format("{:<36}{:>6}{:>10}{:>11}{:>11}{:>11}{:>12}\n", r.mix.Describe(models),
                             r.mix.TotalGpus(), cost, hours(s.jct_s.mean), hours(s.jct_s.p99),
                             hours(s.queue_s.mean), hours(s.makespan_s));
  }
  if (!runs.empty() && runs[0].summary) {
    std::cout << fmt::format("best: {} (mean JCT {})\n", runs[0].mix.Describe(models),
                             hours(runs[0].summary->jct_s.mean));
  } else {
    std::cout << "best: none of these mixes runs every job\n";
  }
}

void PrintJson(const MixArgs& a, const std::vector<plan::MixModel>& models,
               const std::vector<MixRun>& runs, size_t jobs) {
  nlohmann::json out = {{"trace", a.trace}, {"jobs", jobs}, {"policy", a.policy}, {"step", a.step}};
  if (a.budget > 0) out["budget"] = a.budget;
  if (a.gpus > 0) out["gpus"] = a.gpus;
  nlohmann::json list = nlohmann::json::array();
  for (const MixRun& r : runs) {
    nlohmann::json gpus = nlohmann::json::object();
    for (size_t m = 0; m < models.size(); ++m)
      gpus[models[m].model] = r.mix.gpus[m];
    nlohmann::json one = {{"gpus", std::move(gpus)}};
    if (a.budget > 0) one["cost"] = r.mix.cost;
    if (r.summary) {
      one["jct_mean_s"] = r.summary->jct_s.mean;
      one["jct_p99_s"] = r.summary->jct_s.p99;
      one["queue_mean_s"] = r.summary->queue_s.mean;
      one["makespan_s"] = r.summary->makespan_s;
    } else {
      one["error"] = r.error;
    }
    list.push_back(std::move(one));
  }
  out["mixes"] = std::move(list);  // best first
  std::cout << out.dump(2) << "\n";
}

}  // namespace

int RunPlanMix(const std::vector<std::string>& raw) {
  MixArgs a;
  CLI::App app{
      "Which mix of GPU models serves a workload best: each candidate mix (a fixed number of "
      "GPUs, or what a budget buys) is a cluster the workload's trace is replayed on, under a "
      "speed-aware policy by default; the mixes are ranked by mean job completion time.",
      "shoal plan mix"};
  app.add_option("-t,--trace", a.trace,
                 "the workload: a trace with run times per GPU model (e.g. "
                 "gavel-philly-msr/seed=0/), as shoal sim reads it")
      ->required();
  app.add_option("--format", a.format, "trace format: auto, itp, gavel, pollux, openb");
  app.add_option("--models", a.models,
                 "the GPU models to mix, as the trace names them, e.g. "
                 "V100,P100,K80")
      ->required();
  app.add_option("--gpus", a.gpus, "every mix has this many GPUs");
  app.add_option("--budget", a.budget,
                 "instead of --gpus: every mix costs at most this (in --price's unit) and buys no "
                 "further step");
  app.add_option("--price", a.prices,
                 "each model's price per GPU, e.g. V100=3.06,P100=1.46,K80=0.9 (any unit: "
                 "dollars, or dollars an hour)");
  app.add_option("--step", a.step,
                 "each model's count is a multiple of this many GPUs (default 8)");
  app.add_option("--gpus-per-node", a.gpus_per_node, "GPUs in a node (default 8)");
  app.add_option("-p,--policy", a.policy, "the policy to replay under (default speed)");
  app.add_option("--max-jobs", a.max_jobs, "use only the first N jobs of the trace");
  app.add_option("--seed", a.seed, "the simulator's seed");
  app.add_flag("--json", a.json, "print JSON");
  if (int code = ParseApp(app, raw, "shoal plan mix"); code >= 0) return code;
  auto fail = [](int code, std::string_view why) {
    std::cerr << "shoal plan mix: " << why << "\n";
    return code;
  };

  std::vector<plan::MixModel> models;
  for (std::string_view m : Split(a.models, ',')) {
    if (!Trim(m).empty()) models.push_back({std::string(Trim(m)), 0});
  }
  if (!a.prices.empty()) {
    if (Status s = TakePrices(a.prices, models); !s.ok()) return fail(2, s.message());
  }
  Result<std::vector<plan::Mix>> mixes =
      plan::EnumerateMixes(models, {.total_gpus = a.gpus, .budget = a.budget, .step = a.step});
  if (!mixes.ok()) return fail(2, mixes.status().message());
  Result<sched::PolicyParams> policy = sched::Policy::Preset(a.policy);
  if (!policy.ok()) return fail(2, policy.status().message());

  trace::TraceOptions topts;
  topts.format = a.format;
  topts.max_jobs = a.max_jobs;
  Result<trace::Trace> tr = sim::LoadTraceInput(FindInData(a.trace), topts);
  if (!tr.ok()) return fail(1, tr.status().message());
  if (const std::set<std::string> traced = TracedModels(*tr); !traced.empty()) {
    for (const plan::MixModel& m : models) {
      if (!traced.contains(m.model)) {
        return fail(2, fmt::format("the trace has no run times on {} (it has {})", m.model,
                                   Join({traced.begin(), traced.end()}, ", ")));
      }
    }
  }
  sim::SimOptions opts;
  opts.seed = a.seed;
  opts.limits = *sim::ParseLimitModel("x2");  // as shoal sim's default
  std::vector<MixRun> runs;
  for (const plan::Mix& mix : *mixes)
    runs.push_back(Run(a, models, mix, *tr, *policy, opts));
  std::stable_sort(runs.begin(), runs.end(), [](const MixRun& x, const MixRun& y) {
    if (x.summary.has_value() != y.summary.has_value()) return x.summary.has_value();
    return x.summary && x.summary->jct_s.mean < y.summary->jct_s.mean;
  });
  if (a.json) {
    PrintJson(a, models, runs, tr->jobs.size());
  } else {
    PrintText(a, models, runs, tr->jobs.size());
  }
  return 0;
}

}  // namespace shoal::cli
