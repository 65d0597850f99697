#include "plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "catalog/gpus.h"
#include "core/strings.h"

namespace shoal::plan {

namespace {

// Token ids are read as 4-byte integers; twice that leaves room for
// shuffling and restarts (Shoal's assumption).
constexpr double kStorageReadBytesPerToken = 8;
// Storage capacity (Shoal's assumptions): a data set is its token ids
// (4 bytes each) and its text (about as much again); each training run keeps
// its last 3 checkpoints; a served model its weights; a quarter on top.
constexpr double kStoredBytesPerToken = 8;
constexpr int kKeptCheckpoints = 3;
constexpr double kCapacityHeadroom = 1.25;
// What an hour of one GPU is worth when lost to a failure: its price and its
// share of the server's, written off over 4 years (Shoal's assumption).
constexpr double kWriteOffHours = 4 * 365 * 24;
// The largest training job the search considers: 3-tier radix-64 fat tree.
constexpr int kMaxTrainingGpus = 65536;

// GPU counts a training job may use: 2^k and 3 x 2^k, so that the data-
// parallel size divides power-of-two batches and pipelines absorb a 3.
std::vector<int> NiceGpuCounts() {
  std::vector<int> counts;
  for (int p = 1; p <= kMaxTrainingGpus; p *= 2) {
    counts.push_back(p);
    if (3 * p <= kMaxTrainingGpus && p >= 1) counts.push_back(3 * p);
  }
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

// The batch in sequences, rounded to the nearest 2^k or 3 x 2^k so that it
// splits over data-parallel ranks and micro-batches ("4M" tokens of 8,192 is
// 488.3 sequences; 512 it is).
int64_t NiceBatch(double sequences) {
  int64_t best = 1;
  for (int64_t p = 1; p <= (int64_t{1} << 40); p *= 2) {
    for (int64_t c : {p, 3 * p}) {
      if (std::abs(static_cast<double>(c) - sequences) <
          std::abs(static_cast<double>(best) - sequences))
        best = c;
    }
    if (static_cast<double>(p) > 2 * sequences) break;
  }
  return best;
}

struct TrainingEval {
  bool ok = false;
  std::string why;
  TrainingPlan plan;
};

TrainingEval EvaluateTraining(const TrainingWorkload& w, const TrainingSystem& sys, int gpus) {
  TrainingEval out;
  TrainingJob job;
  job.model = w.model;
  job.format = w.format;
  job.stack = Stack::kModern;
  const double batch_tokens =
      w.global_batch_tokens > 0 ? w.global_batch_tokens : DefaultBatchTokens(w.model);
  job.global_batch = NiceBatch(batch_tokens / w.model.seq);
  auto choice = BestLayout(job, gpus, sys);
  if (!choice.ok()) {
    out.why = choice.status().message();
    return out;
  }
  TrainingPlan& p = out.plan;
  p.name = w.name;
  p.model = w.model.name;
  p.layers = w.model.layers;
  p.gpus = gpus;
  p.layout = choice->layout;
  p.step = choice->step;
  p.global_batch = job.global_batch;
  p.tokens_per_s = static_cast<double>(job.global_batch) * w.model.seq / p.step.step_s;
  p.days = w.tokens / p.tokens_per_s / 86400;
  // Storage for checkpoints as fast as pays for itself in GPU time not lost.
  const double params = w.model.Params();
  const NodeDesign& node = NodeDesignFor(*sys.gpu);
  const double gpu_hour_usd =
      (GpuPriceUsd(*sys.gpu) + node.price_without_gpus_usd / node.gpus) / kWriteOffHours;
  const CheckpointStorage storage = ChooseCheckpointStorage(
      kCheckpointBytesPerParam * params, gpus, sys.gpu->pcie_bw_gbps, p.days, gpu_hour_usd);
  p.checkpoints = PlanCheckpoints(params, gpus, storage.write_gbytes_s, sys.gpu->pcie_bw_gbps,
                                  storage.read_gbytes_s);
  p.days_with_failures = p.days / (1 - p.checkpoints.overhead);
  out.ok = true;
  return out;
}

std::string Count(double n) {
  if (n >= 1e12) return fmt::format("{:.3g}T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.3g}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.3g}M", n / 1e6);
  return fmt::format("{:.0f}", n);
}

// The GPUs one workload's share takes, in whole nodes.
int WholeNodes(int gpus, const NodeDesign& node) {
  return (gpus + node.gpus - 1) / node.gpus * node.gpus;
}

// Sizes one training workload on one GPU model. `other_gpus` are what the
// other workloads take, so that budget and power checks see the whole cluster.
Result<TrainingPlan> SizeTraining(const TrainingWorkload& w, const catalog::GpuSpec& gpu,
                                  const SiteConstraints& site, int other_gpus) {
  const TrainingSystem sys = MakeTrainingSystem(gpu, NodeDesignFor(gpu), site.oversubscription);
  const NodeDesign& node = NodeDesignFor(gpu);
  if (w.gpus) {
    TrainingEval e = EvaluateTraining(w, sys, *w.gpus);
    if (!e.ok) return Unsatisfiable(e.why);
    e.plan.sizing = "cluster size given";
    return e.plan;
  }
  if (!w.days)
    return InvalidArgument(fmt::format("training '{}': give days (a deadline) or gpus", w.name));
  // The smallest GPU count that meets the deadline. Days fall as GPUs grow
  // until the batch stops data parallelism from splitting further, so the
  // counts are tried in order (each try is a few milliseconds).
  const std::vector<int> counts = NiceGpuCounts();
  std::vector<TrainingEval> evals(counts.size());
  size_t hi = counts.size();
  size_t best_seen = counts.size();
  for (size_t i = 0; i < counts.size(); ++i) {
    evals[i] = EvaluateTraining(w, sys, counts[i]);
    if (!evals[i].ok) continue;
    if (best_seen == counts.size() ||
        evals[i].plan.days_with_failures < evals[best_seen].plan.days_with_failures) {
      best_seen = i;
    }
    if (evals[i].plan.days_with_failures <= *w.days) {
      hi = i;
      break;
    }
  }
  auto eval = [&](size_t i) -> const TrainingEval& { return evals[i]; };
  if (hi == counts.size()) {
    if (best_seen == counts.size()) {
      return Unsatisfiable(
          fmt::format("{} does not train on {}: {}", w.model.name, gpu.model, evals[0].why));
    }
    const TrainingPlan& b = evals[best_seen].plan;
    return Unsatisfiable(fmt::format(
        "the deadline of {} days is out of reach on {}: the fastest found is {:.1f} days on {} "
        "GPUs "
        "({}; a global batch of {} sequences limits data parallelism: raise global_batch_tokens to "
        "use "
        "more GPUs)",
        *w.days, gpu.model, b.days_with_failures, b.gpus, b.layout.ToString(), b.global_batch));
  }
  TrainingPlan plan = eval(hi).plan;
  plan.sizing =
      fmt::format("fewest GPUs that finish {} tokens in {} days", Count(w.tokens), *w.days);
  // Budget and power: the deadline may need more than the site allows.
  const int total = WholeNodes(plan.gpus, node) + other_gpus;
  auto cluster = DesignCluster(gpu, total, site);
  if (!cluster.ok()) {
    // The largest count the limits allow, and what it achieves.
    for (size_t i = hi; i-- > 0;) {
      auto smaller = DesignCluster(gpu, WholeNodes(counts[i], node) + other_gpus, site);
      if (smaller.ok() && eval(i).ok) {
        return Unsatisfiable(
            fmt::format("the deadline of {} days needs {} GPUs for this run: {}; within the "
                        "limits, {} GPUs take {:.1f} "
                        "days",
                        *w.days, plan.gpus, cluster.status().message(), counts[i],
                        eval(i).plan.days_with_failures));
      }
    }
    return Unsatisfiable(fmt::format("the deadline of {} days needs {} GPUs for this run: {}",
                                     *w.days, plan.gpus, cluster.status().message()));
  }
  return plan;
}

// What the design's workloads ask of storage: their data read at the
// training rate, the fastest checkpoint write any run chose, and room for
// data sets, checkpoints and served weights.
StorageNeed StorageFor(const Workload& w, const Design& d) {
  StorageNeed need;
  double bytes = 0;
  for (size_t i = 0; i < d.training.size(); ++i) {
    const TrainingPlan& t = d.training[i];
    need.read_gbytes_s += t.tokens_per_s * kStorageReadBytesPerToken / 1e9;
    need.write_gbytes_s = std::max(need.write_gbytes_s, t.checkpoints.write_gbytes_s);
    bytes += w.training[i].tokens * kStoredBytesPerToken +
             kKeptCheckpoints * t.checkpoints.checkpoint_bytes;
  }
  for (const InferenceWorkload& inf : w.inference)
    bytes += inf.model.Params() * inf.target.weight_bytes;
  need.capacity_tb = bytes * kCapacityHeadroom / 1e12;
  return need;
}

Design PlanDesign(const Workload& w, const catalog::GpuSpec& gpu) {
  Design d;
  d.gpu_model = std::string(gpu.model);
  const NodeDesign& node = NodeDesignFor(gpu);
  const TrainingSystem sys = MakeTrainingSystem(gpu, node, w.site.oversubscription);
  // The site must take this kind of node at all (cooling, rack power)
  // before sizing anything on it.
  if (auto one = DesignCluster(gpu, node.gpus, w.site, false); !one.ok()) {
    d.problem = one.status().message();
    return d;
  }
  int fixed_gpus = 0;  // inference and general shares, in whole nodes
  for (const InferenceWorkload& inf : w.inference) {
    auto e = SizeInference(inf.model, inf.target, sys);
    if (!e.ok()) {
      d.problem = fmt::format("inference '{}': {}", inf.name, e.status().message());
      return d;
    }
    std::optional<MigServing> mig = SizeInferenceOnMig(inf.model, inf.target, sys);
    // Worth it when the slices leave part of a GPU to other services.
    if (mig && (mig->gpus > e->gpus || mig->gpu_share >= e->gpus)) mig.reset();
    d.inference.push_back(InferencePlan{inf.name, inf.model.name, *e, mig});
    fixed_gpus += WholeNodes(d.inference.back().Gpus(), node);
  }
  for (const GeneralWorkload& g : w.general) {
    d.general.push_back(g);
    fixed_gpus += WholeNodes(g.gpus, node);
  }
  int training_gpus = 0;
  for (size_t i = 0; i < w.training.size(); ++i) {
    // Later runs see the nodes of earlier ones in the budget and power checks.
    auto t = SizeTraining(w.training[i], gpu, w.site, fixed_gpus + training_gpus);
    if (!t.ok()) {
      d.problem = fmt::format("training '{}': {}", w.training[i].name, t.status().message());
      return d;
    }
    training_gpus += WholeNodes(t->gpus, node);
    d.training.push_back(*t);
  }
  d.gpus = training_gpus + fixed_gpus;
  // Training, general shares and replicas wider than a node's NVLink
  // domain need the compute fabric; a node of replicas that fit in it (or
  // in its NVL72 rack) does not.
  int fabric_gpus = d.gpus;
  const int replica_reach = std::max(node.gpus, node.nvlink_domain_gpus);
  for (const InferencePlan& p : d.inference) {
    if (p.mig || p.estimate.tp <= replica_reach) fabric_gpus -= WholeNodes(p.Gpus(), node);
  }
  auto cluster = DesignCluster(gpu, d.gpus, w.site, true, fabric_gpus, StorageFor(w, d));
  if (!cluster.ok()) {
    d.problem = cluster.status().message();
    return d;
  }
  d.cluster = *cluster;
  for (const TrainingPlan& t : d.training)
    d.longest_training_days = std::max(d.longest_training_days, t.days_with_failures);
  const double years = d.training.empty() ? 1.0 : d.longest_training_days / 365.0;
  d.energy_usd = d.cluster.energy_usd_per_year * years;
  d.total_usd = d.cluster.capex_usd + d.energy_usd;
  d.feasible = true;
  return d;
}

}  // namespace

double DefaultBatchTokens(const ModelShape& model) {
  return (model.Params() >= 200e9 ? 16.0 : 4.0) * 1024 * 1024;
}

std::vector<std::string> DefaultGpuModels() {
  return {"H100-SXM-80GB", "H200-SXM-141GB", "B200-SXM-180GB", "GB200-186GB", "MI300X-192GB"};
}

int GpusForDemand(const std::vector<JobDemand>& jobs, double quantile) {
  // Sweep the starts and ends; weight each level of demand by how long it holds.
  std::vector<std::pair<double, int>> events;
  for (const JobDemand& j : jobs) {
    if (j.gpus <= 0 || j.duration_s <= 0) continue;
    events.emplace_back(j.submit_s, j.gpus);
    events.emplace_back(j.submit_s + j.duration_s, -j.gpus);
  }
  if (events.empty()) return 0;
  std::sort(events.begin(), events.end());
  std::vector<std::pair<int, double>> levels;  // (GPUs in use, seconds)
  int in_use = 0;
  double total = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    in_use += events[i].second;
    const double span = events[i + 1].first - events[i].first;
    if (span > 0) {
      levels.emplace_back(in_use, span);
      total += span;
    }
  }
  std::sort(levels.begin(), levels.end());
  double seen = 0;
  for (const auto& [gpus, span] : levels) {
    seen += span;
    if (seen >= quantile * total) return gpus;
  }
  return levels.back().first;
}

Result<PlanResult> PlanWorkload(const Workload& w) {
  if (w.training.empty() && w.inference.empty() && w.general.empty()) {
    return InvalidArgument("the workload is empty: add [[training]], [[inference]] or [[general]]");
  }
  PlanResult result;
  result.workload = w.name;
  const std::vector<std::string> models = w.gpu_models.empty() ? DefaultGpuModels() : w.gpu_models;
  for (const std::string& name : models) {
    const catalog::GpuSpec* gpu = catalog::FindGpu(name);
    if (gpu == nullptr) {
      return InvalidArgument(catalog::UnknownGpuMessage(name));
    }
    result.designs.push_back(PlanDesign(w, *gpu));
  }
  int cheapest = -1;
  int fastest = -1;
  for (size_t i = 0; i < result.designs.size(); ++i) {
    const Design& d = result.designs[i];
    if (!d.feasible) continue;
    const int idx = static_cast<int>(i);
    if (cheapest < 0 || d.total_usd < result.designs[static_cast<size_t>(cheapest)].total_usd)
      cheapest = idx;
    if (!d.training.empty() &&
        (fastest < 0 || d.longest_training_days <
                            result.designs[static_cast<size_t>(fastest)].longest_training_days)) {
      fastest = idx;
    }
  }
  if (cheapest < 0) {
    std::string why;
    for (const Design& d : result.designs)
      why += fmt::format("\n  {}: {}", d.gpu_model, d.problem);
    return Unsatisfiable(fmt::format("no GPU model meets the workload:{}", why));
  }
  result.designs[static_cast<size_t>(cheapest)].cheapest = true;
  if (fastest >= 0) result.designs[static_cast<size_t>(fastest)].fastest = true;
  result.recommended = cheapest;
  return result;
}

}  // namespace shoal::plan
