// Fill mode (`shoal sim --mode fill`), the FGD artifact's method: the trace's
// tasks arrive in seeded random order, with random copies of them until the
// arrived GPU demand reaches a target, and each is placed as it arrives or
// dropped; what is recorded is how much of the cluster gets allocated
// (SimResult::fill) and what was dropped once it was full. No time passes.
// Internal to the simulator (sim/engine.cc prepares the trace).
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "sched/policy.h"
#include "sched/request.h"
#include "sched/snapshot.h"
#include "sim/engine.h"
#include "sim/ledger.h"

namespace shoal::sim {

// One task of the trace, in the trace's order.
struct FillTask {
  const sched::Request* request;
  std::string_view name;
};

// What fill mode shares with the simulator that prepared the trace.
struct FillContext {
  const SimOptions& options;  // seed, fill_target, registry, wall_clock
  const sched::PolicyParams& policy;
  const std::vector<sched::TypicalDemand>& workload;  // for fragmentation
  sched::Snapshot& snapshot;  // the inventory and accounts; its queue becomes the tasks
  Ledger& ledger;             // checks and keeps what is placed
};

Status RunFill(const std::vector<FillTask>& tasks, FillContext& c, SimResult& result);

}  // namespace shoal::sim
