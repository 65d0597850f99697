// GPU fragmentation as the FGD paper measures it (Weng et al., "Beware of
// Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
// Descent", USENIX ATC 2023): the free GPU capacity of a node that a typical
// task could not use, averaged over the workload's mix of tasks.
//
// For one kind of task: if the node cannot host it at all (too few CPUs or
// memory, too few GPUs with enough room, no GPU of its model), all the node's
// free GPU capacity is fragmented for it; if it can, the free capacity of the
// GPUs with less room than the task's share is. A task without GPUs can use
// no GPU, so for it all free GPU capacity counts.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/policy.h"
#include "sched/working_state.h"

namespace shoal::sched {

struct GpuRoom {
  uint8_t model = 0;
  int16_t free_milli = 0;
};

// Fragmented GPU milli of one node state under `workload` (weights sum to 1).
double NodeFragmentation(std::span<const GpuRoom> gpus, int64_t cpu_free, int64_t mem_free,
                         const std::vector<TypicalDemand>& workload);

// The node's healthy GPUs and their room, in index order.
std::vector<GpuRoom> NodeRooms(const WorkingState& state, NodeIndex n);

// Fragmented GPU milli over every usable node.
double ClusterFragmentation(const WorkingState& state, const std::vector<TypicalDemand>& workload);

// The workload mix of a set of requests: their per-node demands with weights
// by count, the most common first, cut at `coverage` of all requests (as FGD
// keeps the "typical" tasks that make up 95% of the trace) and renormalised.
// With `by_gpus`, each request weighs as many GPUs as it asks for (CPU-only
// requests weigh nothing: they use no GPU, so they cannot change which node
// fragments least), else each request counts once.
std::vector<TypicalDemand> WorkloadOf(const std::vector<const Request*>& requests,
                                      int max_gpus_per_node, double coverage = 0.95,
                                      bool by_gpus = false);

}  // namespace shoal::sched
