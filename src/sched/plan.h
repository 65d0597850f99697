// The scheduler's output: which jobs start where, which are preempted, and why
// every other pending job waits.
#pragma once

#include <string>
#include <vector>

#include "core/job.h"
#include "core/time.h"

namespace shoal::sched {

struct StartDecision {
  JobId job;
  Allocation allocation;
  bool backfilled = false;  // started ahead of a higher-priority job's reservation
  // Uses resources that preempted jobs hold now (the preemptor, or a later job
  // placed on what they free): a driver starts it once they have stopped.
  bool after_preemption = false;
  std::string detail;  // why there, when the policy chose among models (speed-aware)
};

struct PreemptDecision {
  JobId victim;
  JobId preemptor;
};

struct PendingDecision {
  JobId job;
  PendingReason reason = PendingReason::kNone;
  std::string detail;                 // set for reasons that need words (unsatisfiable, limits)
  Time estimated_start = kTimeNever;  // set for the job holding the reservation
  std::vector<NodeId> planned_nodes;  // where the reservation would run it
};

struct PassStats {
  int pending = 0;
  int considered = 0;  // pending jobs that reached placement
  int placements_tried = 0;
  int shape_cache_hits = 0;
  int started = 0;
  int backfilled = 0;
  int preempted = 0;
};

struct Plan {
  std::vector<StartDecision> starts;
  std::vector<PreemptDecision> preemptions;
  // One entry for every pending job not started (when the snapshot asks for explanations).
  std::vector<PendingDecision> pending;
  // The pending jobs the pass ranked (indices into Snapshot::pending), in
  // rank order, when the snapshot had a rank_hint: a driver may give it back
  // as the next one. Empty when the pass ended before ranking
  // (Snapshot::pending_not_whole_gpus): the hint's order stands.
  std::vector<uint32_t> ranked;
  // When the policy's order of the jobs running after this plan next
  // changes with no event, while jobs still wait that could preempt them
  // (SortPlugin::NextChangeAt: a running job reaching LAS's next queue);
  // kTimeNever when nothing but events changes it. The simulator and the
  // server pass again then, or at the next event, whichever is first.
  Time wake_at = kTimeNever;
  PassStats stats;

  const StartDecision* FindStart(JobId id) const;
  const PendingDecision* FindPending(JobId id) const;
};

}  // namespace shoal::sched
