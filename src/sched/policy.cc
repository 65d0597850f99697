#include "sched/policy.h"

#include <fmt/format.h>

#include "core/strings.h"
#include "sched/inventory.h"
#include "sched/plugins/plugins.h"

namespace shoal::sched {

namespace {

template <typename Map>
std::vector<std::string> Names(const Map& m) {
  std::vector<std::string> out;
  for (const auto& [name, f] : m)
    out.push_back(name);
  return out;
}

struct PresetDef {
  const char* name;
  const char* sort;
  const char* score;
  const char* queue;
  const char* preempt;
  bool simulation_only;
  const char* summary;
  bool speed_aware = false;
  bool backfill_in_queue_order = false;  // else shortest first (PolicyParams::shortest_backfill)
};

constexpr PresetDef kPresets[] = {
    {"fifo", "fifo", "topology", "strict", "none", false,
     "first come first served; the head blocks its partition"},
    {"backfill", "fifo", "topology", "backfill", "none", false,
     "FIFO with EASY backfill, the shortest jobs tried first behind the reservation"},
    // Slurm backfills in priority order; the priorities an admin sets govern here too.
    {"multifactor", "multifactor", "topology", "backfill", "none", false,
     "Slurm-style multifactor priority with EASY backfill in priority order", false, true},
    {"las", "las", "topology", "greedy", "class", false,
     "Tiresias 2D-LAS: least attained GPU-time first, preemptive, for jobs that checkpoint"},
    {"gittins", "gittins", "topology", "greedy", "class", false,
     "Tiresias 2DAS with Gittins indices from past jobs' service, preemptive"},
    {"greedy", "fifo", "topology", "greedy", "none", false, "FIFO order, any job that fits starts"},
    {"first-fit", "fifo", "first-fit", "greedy", "none", false, "baseline: first node that fits"},
    {"best-fit", "fifo", "best-fit", "greedy", "none", false,
     "baseline: node left with the least free"},
    {"random", "fifo", "random", "greedy", "none", false, "baseline: a random node that fits"},
    {"topology", "fifo", "topology", "greedy", "none", false,
     "GPU packing, NVLink islands, leaf switches"},
    {"fgd", "fifo", "fgd", "greedy", "none", false, "fragmentation gradient descent (FGD, ATC'23)"},
    {"oracle", "oracle", "topology", "greedy", "srtf", true,
     "simulation only: shortest remaining service first from true run times, preemptive"},
    {"speed", "fifo", "topology", "backfill", "none", false,
     "backfill, each job on the GPU model expected to finish it soonest", true},
    {"speed-gittins", "gittins", "topology", "greedy", "class", false,
     "gittins, each job on the GPU model expected to finish it soonest", true},
};

Status ApplyOverride(PolicyParams& p, std::string_view key, std::string_view value) {
  const std::string v(Trim(value));
  if (key == "sort") {
    p.sort = v;
  } else if (key == "score") {
    p.score = v;
  } else if (key == "queue") {
    p.queue = v;
  } else if (key == "preempt") {
    p.preempt = v;
  } else if (key == "seed") {
    SHOAL_ASSIGN_OR_RETURN(int64_t s, ParseInt(v));
    p.seed = static_cast<uint64_t>(s);
  } else if (key == "candidates") {
    SHOAL_ASSIGN_OR_RETURN(int64_t c, ParseInt(v));
    if (c < 1) return InvalidArgument("candidates must be at least 1");
    p.max_candidates = static_cast<int>(c);
  } else if (key == "las-thresholds") {
    p.las_thresholds_gpu_s.clear();
    for (std::string_view t : Split(v, '/')) {
      SHOAL_ASSIGN_OR_RETURN(double d, ParseDouble(t));
      p.las_thresholds_gpu_s.push_back(d);
    }
  } else if (key == "starvation-knob") {
    SHOAL_ASSIGN_OR_RETURN(p.las_starvation_knob, ParseDouble(v));
  } else if (key == "filters") {
    p.filters.clear();
    for (std::string_view f : Split(v, '/')) {
      if (!Trim(f).empty()) p.filters.emplace_back(Trim(f));
    }
  } else if (key == "workload") {
    if (v != "gpus" && v != "count") return InvalidArgument("workload is gpus or count");
    p.workload_by_gpus = v == "gpus";
  } else if (key == "workload-coverage") {
    SHOAL_ASSIGN_OR_RETURN(p.workload_coverage, ParseDouble(v));
    if (p.workload_coverage <= 0 || p.workload_coverage > 1)
      return InvalidArgument("workload-coverage is in (0, 1]");
  } else if (key == "favor-small") {
    p.favor_small = v == "1" || v == "true" || v == "yes";
  } else if (key == "speed-slack") {
    SHOAL_ASSIGN_OR_RETURN(p.speed_slack, ParseDouble(v));
    if (p.speed_slack < 0 || p.speed_slack > 10) return InvalidArgument("speed-slack is 0 to 10");
  } else if (key == "backfill-order") {
    if (v != "shortest" && v != "queue") {
      return InvalidArgument(
          "backfill-order is shortest (the jobs behind the reservation by their time limits) or "
          "queue (in the queue's order)");
    }
    p.shortest_backfill = v == "shortest";
  } else if (key == "long-backfill") {
    if (v != "0" && v != "1") {
      return InvalidArgument(
          "long-backfill is 1 (jobs that end after the reservation may use what it leaves) or 0 "
          "(only jobs that end before it may pass)");
    }
    p.long_backfill = v == "1";
  } else if (key == "speed") {
    if (v != "0" && v != "1") return InvalidArgument("speed is 1 (speed-aware) or 0");
    p.speed_aware = v == "1";
  } else {
    return InvalidArgument(
        fmt::format("unknown policy option '{}' (sort, filters, score, queue, preempt, seed, "
                    "candidates, las-thresholds, "
                    "starvation-knob, workload, workload-coverage, favor-small, long-backfill, "
                    "backfill-order, speed, speed-slack)",
                    key));
  }
  return Status::Ok();
}

}  // namespace

Result<PolicyParams> Policy::Preset(std::string_view spec) {
  std::vector<std::string_view> parts = Split(Trim(spec), ':');
  const std::string name = ToLower(Trim(parts[0]));
  const PresetDef* def = nullptr;
  for (const PresetDef& d : kPresets) {
    if (name == d.name) def = &d;
  }
  if (def == nullptr) {
    std::vector<std::string> names = PresetNames(true);
    return InvalidArgument(
        fmt::format("unknown policy '{}' (one of: {})", name, Join(names, ", ")));
  }
  PolicyParams p;
  p.name = def->name;
  p.sort = def->sort;
  p.score = def->score;
  p.queue = def->queue;
  p.preempt = def->preempt;
  p.speed_aware = def->speed_aware;
  p.shortest_backfill = !def->backfill_in_queue_order;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument(fmt::format("policy option '{}' needs key=value", parts[i]));
    }
    SHOAL_RETURN_IF_ERROR(ApplyOverride(p, Trim(parts[i].substr(0, eq)), parts[i].substr(eq + 1)));
    p.name = std::string(Trim(spec));
  }
  return p;
}

std::vector<std::string> Policy::PresetNames(bool simulation) {
  std::vector<std::string> out;
  for (const PresetDef& d : kPresets) {
    if (!d.simulation_only || simulation) out.push_back(d.name);
  }
  return out;
}

Result<Policy> Policy::Create(PolicyParams params, const Registry& registry,
                              PolicyOptions options) {
  Policy policy;
  SHOAL_ASSIGN_OR_RETURN(policy.sort_, registry.MakeSort(params.sort));
  SHOAL_ASSIGN_OR_RETURN(policy.score_, registry.MakeScore(params.score));
  SHOAL_ASSIGN_OR_RETURN(policy.preempt_, registry.MakePreempt(params.preempt));
  if (policy.sort_->SimulationOnly() && !options.simulation) {
    return InvalidArgument(
        fmt::format("sort '{}' reads true run times that only a simulator knows; it is for `shoal "
                    "sim`, not a live cluster",
                    params.sort));
  }
  SHOAL_ASSIGN_OR_RETURN(policy.reserve_, registry.MakeReserve(params.queue));
  for (const std::string& f : params.filters) {
    SHOAL_ASSIGN_OR_RETURN(auto filter, registry.MakeFilter(f));
    policy.filters_.push_back(std::move(filter));
  }
  for (size_t i = 1; i < params.las_thresholds_gpu_s.size(); ++i) {
    if (params.las_thresholds_gpu_s[i] <= params.las_thresholds_gpu_s[i - 1]) {
      return InvalidArgument("LAS thresholds must increase");
    }
  }
  if (params.max_candidates < 1) return InvalidArgument("max_candidates must be at least 1");
  policy.params_ = std::move(params);
  return policy;
}

std::string Policy::Describe() const {
  const bool backfill = queue_mode() == QueueMode::kBackfill;
  const bool short_only = !params_.long_backfill && backfill;
  const bool queue_order = !params_.shortest_backfill && backfill;
  return fmt::format("{} (sort={} score={} queue={}{}{} preempt={}{})", params_.name, params_.sort,
                     params_.score, reserve_->Name(), short_only ? " long-backfill=0" : "",
                     queue_order ? " backfill-order=queue" : "", params_.preempt,
                     params_.speed_aware ? " speed-aware" : "");
}

Result<std::shared_ptr<const SortPlugin>> Registry::MakeSort(std::string_view name) const {
  auto it = sorts_.find(name);
  if (it == sorts_.end()) {
    return InvalidArgument(
        fmt::format("unknown sort plugin '{}' (one of: {})", name, Join(SortNames(), ", ")));
  }
  return it->second();
}

Result<std::shared_ptr<const FilterPlugin>> Registry::MakeFilter(std::string_view name) const {
  auto it = filters_.find(name);
  if (it == filters_.end()) {
    return InvalidArgument(
        fmt::format("unknown filter plugin '{}' (one of: {})", name, Join(FilterNames(), ", ")));
  }
  return it->second();
}

Result<std::shared_ptr<const ReservePlugin>> Registry::MakeReserve(std::string_view name) const {
  auto it = reserves_.find(name);
  if (it == reserves_.end()) {
    return InvalidArgument(
        fmt::format("unknown queue mode '{}' (one of: {})", name, Join(ReserveNames(), ", ")));
  }
  return it->second();
}

Result<std::shared_ptr<const ScorePlugin>> Registry::MakeScore(std::string_view name) const {
  auto it = scores_.find(name);
  if (it == scores_.end()) {
    return InvalidArgument(
        fmt::format("unknown score plugin '{}' (one of: {})", name, Join(ScoreNames(), ", ")));
  }
  return it->second();
}

Result<std::shared_ptr<const PreemptPlugin>> Registry::MakePreempt(std::string_view name) const {
  if (name == "none") return std::shared_ptr<const PreemptPlugin>();
  auto it = preempts_.find(name);
  if (it == preempts_.end()) {
    return InvalidArgument(
        fmt::format("unknown preempt plugin '{}' (none, {})", name, Join(PreemptNames(), ", ")));
  }
  return it->second();
}

std::vector<std::string> Registry::SortNames() const {
  return Names(sorts_);
}
std::vector<std::string> Registry::FilterNames() const {
  return Names(filters_);
}
std::vector<std::string> Registry::ScoreNames() const {
  return Names(scores_);
}
std::vector<std::string> Registry::ReserveNames() const {
  return Names(reserves_);
}
std::vector<std::string> Registry::PreemptNames() const {
  return Names(preempts_);
}

Registry BuiltinRegistry() {
  Registry r;
  r.AddSort("fifo", plugins::MakeFifoSort);
  r.AddSort("multifactor", plugins::MakeMultifactorSort);
  r.AddSort("las", plugins::MakeLasSort);
  r.AddSort("oracle", plugins::MakeOracleSort);
  r.AddSort("gittins", plugins::MakeGittinsSort);
  r.AddFilter("partition", plugins::MakePartitionFilter);
  r.AddFilter("labels", plugins::MakeLabelsFilter);
  r.AddFilter("gpu-model", plugins::MakeGpuModelFilter);
  r.AddReserve("strict", [] { return plugins::MakeQueueMode(QueueMode::kStrict); });
  r.AddReserve("greedy", [] { return plugins::MakeQueueMode(QueueMode::kGreedy); });
  r.AddReserve("backfill", [] { return plugins::MakeQueueMode(QueueMode::kBackfill); });
  r.AddScore("first-fit", plugins::MakeFirstFitScore);
  r.AddScore("best-fit", plugins::MakeBestFitScore);
  r.AddScore("random", plugins::MakeRandomScore);
  r.AddScore("topology", plugins::MakeTopologyScore);
  r.AddScore("fgd", plugins::MakeFgdScore);
  r.AddPreempt("class", plugins::MakeClassPreempt);
  r.AddPreempt("srtf", plugins::MakeSrtfPreempt);
  r.AddPreempt("tier", plugins::MakeTierPreempt);
  r.AddPreempt("qos", plugins::MakeQosPreempt);
  return r;
}

SortContext SortContextOf(const Snapshot& snapshot, Time now, const PolicyParams& params) {
  SortContext ctx{snapshot, now, params, 0, 0, snapshot.inventory->total_gpus()};
  for (const AccountInfo& a : snapshot.accounts) {
    ctx.total_usage_gpu_s += a.usage_gpu_s;
    ctx.total_shares += a.shares;
  }
  return ctx;
}

}  // namespace shoal::sched
