// The scheduler's extension points (STYLE habit 2). A policy is one plugin of
// each kind, picked by name from a Registry; a new policy never edits the cycle.
//
//   sort     orders the pending queue (fifo, multifactor, las, oracle)
//   filter   decides which nodes may ever serve a request (partition, labels,
//            gpu-model); free resources and node state are checked for every
//            policy, as they are what "fits" means
//   score    chooses nodes and GPUs for a job that fits (first-fit, best-fit,
//            random, topology, fgd)
//   reserve  decides what a job that cannot start does to the jobs behind it
//            (strict, greedy, backfill)
//   preempt  decides which running jobs a blocked job may displace (none,
//            class, srtf, tier)
//
// Plugins are immutable and may be shared between threads; per-pass state
// lives in the ScorePass object a plugin creates for each pass.
#pragma once

#include <limits>
#include <memory>
#include <string_view>
#include <vector>

#include "core/rng.h"
#include "core/time.h"
#include "sched/request.h"
#include "sched/snapshot.h"

namespace shoal::sched {

class WorkingState;
struct PolicyParams;

struct SortContext {
  const Snapshot& snapshot;
  Time now;
  const PolicyParams& params;
  double total_usage_gpu_s = 0;  // over all accounts
  double total_shares = 0;
  int cluster_gpus = 0;
};

// The context of a pass over `snapshot` at `now`: its accounts' usage and shares summed.
SortContext SortContextOf(const Snapshot& snapshot, Time now, const PolicyParams& params);

class SortPlugin {
 public:
  virtual ~SortPlugin() = default;
  virtual std::string_view Name() const = 0;
  // True for plugins that read what only a simulator knows (oracle_remaining_s).
  virtual bool SimulationOnly() const { return false; }
  // True for plugins that read Snapshot::service_index, which callers then keep up to date.
  virtual bool UsesServiceHistory() const { return false; }
  // True when a pending job's value depends only on what does not change
  // while it waits (its own request, submit time, attained service), not on
  // the time or the rest of the snapshot: a pass may then take the part of
  // Snapshot::rank_hint that a previous pass ranked as still in order.
  virtual bool FixedWhilePending(const PolicyParams&) const { return false; }
  // Lower values are scheduled first; ties go to the earlier submission, then
  // the lower job id. Called for pending and, when the policy preempts, running jobs.
  virtual double Value(const SortContext& ctx, const JobInfo& job) const = 0;
  // The attained service (GPU-seconds) at which a running job that has
  // `attained_gpu_s` now next changes class as it runs, with no event (the
  // integer part of its value, which preemption by class compares: LAS's next
  // queue), to a class above `above` (-infinity: any change); infinity when
  // only events change it. Schedule turns it into Plan::wake_at, the time its
  // drivers look again; only asked of a plugin whose ChangesAsItRuns().
  virtual bool ChangesAsItRuns() const { return false; }
  virtual double NextChangeAt(const Snapshot&, const PolicyParams&, double /*attained_gpu_s*/,
                              double /*above*/) const {
    return std::numeric_limits<double>::infinity();
  }
};

class FilterPlugin {
 public:
  virtual ~FilterPlugin() = default;
  virtual std::string_view Name() const = 0;
  // Whether node `n` may ever serve `req`. Decides from the node's static
  // properties and the request's partition, models, labels and shape only
  // (the cycle caches the answer per such combination).
  virtual bool Admits(const InvNode& n, const Request& req) const = 0;
};

// What a job that cannot start now means for the jobs behind it.
enum class QueueMode {
  kStrict,    // it blocks every later job of its partition
  kGreedy,    // later jobs may pass it
  kBackfill,  // EASY backfill: the first such job gets a reservation, later jobs
              // may pass it only if they do not delay that reservation
};

class ReservePlugin {
 public:
  virtual ~ReservePlugin() = default;
  virtual std::string_view Name() const = 0;
  virtual QueueMode Mode() const = 0;
};

// GPUs chosen on one node and how good the choice is: the higher score wins,
// then the higher tie-breaker, then the lower node index.
struct NodeChoice {
  uint64_t gpus = 0;
  double score = 0;
  double tie = 0;
};

// How the placement engine walks the nodes that fit.
enum class CandidateScan {
  kFirstFit,       // the first node that fits, in node order; Evaluate only picks GPUs
  kTightestFirst,  // nodes with the fewest free GPUs first, scoring at most max_candidates of them
  kAll,            // score every node that fits
};

// A score plugin's state for one pass; plugins derive their own.
class ScorePass {
 public:
  virtual ~ScorePass() = default;
};

class ScorePlugin {
 public:
  virtual ~ScorePlugin() = default;
  virtual std::string_view Name() const = 0;
  virtual CandidateScan Scan() const = 0;
  // Per-pass state (caches, the target workload), or null.
  virtual std::unique_ptr<ScorePass> BeginPass(const Snapshot&, const PolicyParams&) const {
    return nullptr;
  }
  // Chooses GPUs for `demand` on node `n`, which fits it, and scores the choice.
  virtual NodeChoice Evaluate(const WorkingState& state, NodeIndex n, const NodeDemand& demand,
                              ScorePass* pass, Rng& rng) const = 0;
};

// A job's place in the order: partition tier first (higher first), then the
// sort plugin's value (lower first).
struct JobRank {
  int tier = 0;
  double value = 0;
};

class PreemptPlugin {
 public:
  virtual ~PreemptPlugin() = default;
  virtual std::string_view Name() const = 0;
  // Whether running `victim` may be preempted so that pending `preemptor` can
  // start. The cycle has already checked that the victim may be requeued and
  // has run its minimum time. Unless Monotone() says otherwise, if it
  // allows a victim, it allows every victim ranked below it (lower tier, or
  // same tier and a higher value), so the cycle can stop at the first refusal;
  // and if it refuses a victim to a preemptor, it refuses it to every
  // preemptor ranked after that one, so a pass that need not explain can end
  // once the worst-ranked running job is refused.
  virtual bool MayPreempt(const Snapshot& snap, const JobInfo& preemptor, JobRank preemptor_rank,
                          const JobInfo& victim, JobRank victim_rank) const = 0;
  // False for plugins that decide by something other than rank (the QoS
  // plugin): the cycle then asks about every victim instead of stopping at
  // the first refusal.
  virtual bool Monotone() const { return true; }
  // True for plugins under which, within a partition tier, a job may displace
  // only jobs of a higher class (the integer part of the sort's value), so
  // that a running job's change of class matters only above the class of
  // some waiting job (Plan::wake_at).
  virtual bool ByClass() const { return false; }
};

}  // namespace shoal::sched
