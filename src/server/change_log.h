// The log lines of what the controller committed (core/log.h): each job's
// and node's state change once, as `job.state` and `node.state` events, and
// each scheduling pass that started or preempted something as `sched.pass`
// (others at debug). Written after the commit, so a line never tells of a
// change that a crash took back.
// Thread safety: the control loop's thread only.
#pragma once

#include <string>
#include <unordered_map>

#include "core/cluster.h"
#include "core/job.h"
#include "sched/plan.h"
#include "state/store.h"

namespace shoal::server {

class ChangeLog {
 public:
  // What the controller started from: the states later changes are told
  // against.
  void Seed(const state::Loaded& loaded);
  // Logs what changed state in a committed batch.
  void Committed(const state::Batch& batch);
  void Pass(const sched::PassStats& stats, double ms);

 private:
  std::unordered_map<uint64_t, JobState> jobs_;  // active jobs' last logged state
  std::unordered_map<std::string, NodeState> nodes_;
};

}  // namespace shoal::server
