// A scheduling policy: the plugins to use and their parameters.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "sched/plugin.h"
#include "sched/request.h"

namespace shoal::sched {

// One kind of request with how often it appears: the workload that
// fragmentation-aware scoring keeps room for.
struct TypicalDemand {
  NodeDemand demand;
  double weight = 0;
};

struct PolicyParams {
  std::string name = "backfill";
  std::string sort = "fifo";
  std::vector<std::string> filters = {"partition", "labels", "gpu-model"};
  std::string score = "topology";
  std::string queue = "backfill";
  std::string preempt = "none";

  // Multifactor priority, as Slurm's priority/multifactor plugin.
  double weight_age = 1000;
  double weight_fairshare = 2000;
  double weight_size = 500;
  double weight_qos = 1000;
  Duration max_age = std::chrono::hours(24 * 7);
  bool favor_small = false;

  // Discretised least-attained-service (Tiresias 2D-LAS): queue boundaries in
  // GPU-seconds of attained service; a job moves down a queue as it crosses each.
  std::vector<double> las_thresholds_gpu_s = {3600.0, 36000.0};
  // A job waiting longer than this many times its attained run time goes back
  // to the top queue (Tiresias' starvation knob); 0 disables it.
  double las_starvation_knob = 0;

  // Backfill (queue "backfill"): whether a job that would run past the
  // reservation may start on what the reservation leaves free (textbook
  // EASY), or only jobs that end before it may pass the job waiting first.
  bool long_backfill = true;
  // The order in which the jobs behind the reservation are tried: their time
  // limits', shortest first, ties in queue order (EASY with shortest-job
  // backfilling, as EASY++ in Tsafrir, Etsion and Feitelson, "Backfilling
  // Using System-Generated Predictions Rather than User Runtime Estimates",
  // IEEE TPDS 2007); or the queue's own (textbook EASY).
  bool shortest_backfill = true;

  // Preemption.
  Duration min_run_before_preempt{0};
  int max_preemptions_per_pass = 32;

  // Heterogeneity: a job whose speed on each GPU model is known starts on
  // the model expected to finish it soonest, or waits for it (sched/speed.h).
  bool speed_aware = false;
  // A model that ends the job within this fraction of the soonest one's run
  // time is as good; of those, it takes the one it runs slowest on.
  double speed_slack = 0;

  // Placement.
  int max_candidates = 32;  // nodes scored per placement by tightest-first scoring
  uint64_t seed = 1;
  std::vector<TypicalDemand> workload;  // for fgd; empty: the mix of jobs in the snapshot
  // How a workload is made from a set of jobs (WorkloadOf): each kind weighted
  // by the GPUs it asks for (true) or by its count (false, as the FGD paper),
  // keeping the commonest kinds up to `workload_coverage` of the weight.
  bool workload_by_gpus = true;
  double workload_coverage = 0.95;
};

class Registry;

struct PolicyOptions {
  bool simulation = false;  // allow plugins that read what only a simulator knows
};

class Policy {
 public:
  static Result<Policy> Create(PolicyParams params, const Registry& registry,
                               PolicyOptions options = {});

  // A named policy: fifo, backfill, multifactor, las, greedy, first-fit,
  // best-fit, random, topology, fgd, and (simulation) oracle. A name may carry
  // overrides: "backfill:score=fgd:seed=7".
  static Result<PolicyParams> Preset(std::string_view spec);
  static std::vector<std::string> PresetNames(bool simulation);

  const PolicyParams& params() const { return params_; }
  const SortPlugin& sort() const { return *sort_; }
  const std::vector<std::shared_ptr<const FilterPlugin>>& filters() const { return filters_; }
  const ScorePlugin& score() const { return *score_; }
  const PreemptPlugin* preempt() const { return preempt_.get(); }
  QueueMode queue_mode() const { return reserve_->Mode(); }
  // "las (sort=las score=topology queue=greedy preempt=class)"
  std::string Describe() const;

 private:
  PolicyParams params_;
  std::shared_ptr<const SortPlugin> sort_;
  std::vector<std::shared_ptr<const FilterPlugin>> filters_;
  std::shared_ptr<const ReservePlugin> reserve_;
  std::shared_ptr<const ScorePlugin> score_;
  std::shared_ptr<const PreemptPlugin> preempt_;
};

// Named plugin factories. BuiltinRegistry() holds every plugin shipped with
// Shoal; tests and embedders may add their own.
class Registry {
 public:
  using SortFactory = std::function<std::shared_ptr<const SortPlugin>()>;
  using FilterFactory = std::function<std::shared_ptr<const FilterPlugin>()>;
  using ScoreFactory = std::function<std::shared_ptr<const ScorePlugin>()>;
  using ReserveFactory = std::function<std::shared_ptr<const ReservePlugin>()>;
  using PreemptFactory = std::function<std::shared_ptr<const PreemptPlugin>()>;

  void AddSort(std::string name, SortFactory f) { sorts_[std::move(name)] = std::move(f); }
  void AddFilter(std::string name, FilterFactory f) { filters_[std::move(name)] = std::move(f); }
  void AddScore(std::string name, ScoreFactory f) { scores_[std::move(name)] = std::move(f); }
  void AddReserve(std::string name, ReserveFactory f) { reserves_[std::move(name)] = std::move(f); }
  void AddPreempt(std::string name, PreemptFactory f) { preempts_[std::move(name)] = std::move(f); }

  Result<std::shared_ptr<const SortPlugin>> MakeSort(std::string_view name) const;
  Result<std::shared_ptr<const FilterPlugin>> MakeFilter(std::string_view name) const;
  Result<std::shared_ptr<const ScorePlugin>> MakeScore(std::string_view name) const;
  Result<std::shared_ptr<const ReservePlugin>> MakeReserve(std::string_view name) const;
  // Null for "none".
  Result<std::shared_ptr<const PreemptPlugin>> MakePreempt(std::string_view name) const;

  std::vector<std::string> SortNames() const;
  std::vector<std::string> FilterNames() const;
  std::vector<std::string> ScoreNames() const;
  std::vector<std::string> ReserveNames() const;
  std::vector<std::string> PreemptNames() const;

 private:
  std::map<std::string, SortFactory, std::less<>> sorts_;
  std::map<std::string, FilterFactory, std::less<>> filters_;
  std::map<std::string, ScoreFactory, std::less<>> scores_;
  std::map<std::string, ReserveFactory, std::less<>> reserves_;
  std::map<std::string, PreemptFactory, std::less<>> preempts_;
};

Registry BuiltinRegistry();

}  // namespace shoal::sched
