// Free resources during one scheduling pass, with an index that finds the
// nodes with enough free GPUs without looking at the others.
//
// A WorkingState starts from the inventory's capacity and the snapshot's node
// states, takes the running jobs' allocations, and then follows the pass as
// it places jobs. It is a plain value: copying it gives an independent state
// (the backfill "shadow" is such a copy). Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "core/job.h"
#include "sched/bitset.h"
#include "sched/inventory.h"
#include "sched/request.h"
#include "sched/snapshot.h"

namespace shoal::sched {

class WorkingState {
 public:
  WorkingState(const Inventory& inv, const std::vector<NodeStatus>& status);

  const Inventory& inventory() const { return *inv_; }
  size_t size() const { return cpu_free_.size(); }

  // Up and accepting work.
  bool Usable(NodeIndex n) const { return at_least_[0].Test(n); }
  // Healthy GPUs with nothing on them.
  uint64_t FreeWholeMask(NodeIndex n) const { return free_mask_[n]; }
  int FreeWhole(NodeIndex n) const;
  uint64_t HealthyMask(NodeIndex n) const { return healthy_[n]; }
  int UsedMilli(NodeIndex n, int gpu) const { return used_milli_[offset_[n] + gpu]; }
  int64_t CpuFree(NodeIndex n) const { return cpu_free_[n]; }
  int64_t MemFree(NodeIndex n) const { return mem_free_[n]; }
  bool Idle(NodeIndex n) const { return jobs_[n] == 0; }
  bool Exclusive(NodeIndex n) const { return exclusive_[n] != 0; }
  // Changes whenever the node's free resources change (for caches keyed by node).
  uint32_t Version(NodeIndex n) const { return version_[n]; }
  // Free whole GPUs on usable nodes under a leaf switch.
  int LeafFreeGpus(uint32_t leaf) const { return leaf_free_[leaf]; }
  int LeafUsableGpus(uint32_t leaf) const { return leaf_usable_[leaf]; }
  // Usable nodes under a leaf with at least k free whole GPUs (an upper bound
  // for any one request, which may also need CPUs, memory or a GPU model).
  int LeafNodesWithAtLeast(uint32_t leaf, int k) const;

  // GPUs of node n (of the demand's models, healthy) that could take one
  // share of `demand`: fully free ones for whole GPUs, ones with enough left
  // for shares.
  uint64_t FitGpus(NodeIndex n, const NodeDemand& demand) const;
  // Whether node n can give `demand` now.
  bool Fits(NodeIndex n, const NodeDemand& demand) const;

  void Allocate(NodeIndex n, const NodeAllocation& a) { Apply(n, a, +1); }
  void Release(NodeIndex n, const NodeAllocation& a) { Apply(n, a, -1); }
  // Whole allocations; false (and nothing changed) if a node is unknown.
  bool Allocate(const Allocation& a);
  bool Release(const Allocation& a);
  // As Allocate, on the same GPUs where they have room and otherwise on
  // other GPUs of the same model and node; false (and nothing changed)
  // when there is no such room.
  bool AllocateAlike(const Allocation& a);
  // Whether the allocation fits what is free now, with a reason if not.
  Status CanAllocate(const Allocation& a) const;

  // Usable nodes with at least k free whole GPUs; k = 0 gives every usable node.
  const NodeBitset& AtLeast(int k) const { return at_least_[static_cast<size_t>(k)]; }
  int max_gpus() const { return static_cast<int>(at_least_.size()) - 1; }

  // Node n becomes what is free in both a and b (the tighter of the two). On
  // a node of one GPU model the GPUs are interchangeable, so it counts: it
  // has the room that a and b both have on some GPUs, placed on GPUs that
  // have it in a (AllocateAlike puts such work into b).
  void SetToMin(NodeIndex n, const WorkingState& a, const WorkingState& b);
  static WorkingState Min(const WorkingState& a, const WorkingState& b);

 private:
  void Apply(NodeIndex n, const NodeAllocation& a, int sign);
  void Reindex(NodeIndex n, int old_free);

  const Inventory* inv_;
  std::vector<int64_t> cpu_free_;
  std::vector<int64_t> mem_free_;
  std::vector<uint64_t> free_mask_;
  std::vector<uint64_t> healthy_;
  std::vector<uint32_t> jobs_;
  std::vector<uint8_t> exclusive_;
  std::vector<uint32_t> version_;
  std::vector<uint32_t> offset_;
  std::vector<int16_t> used_milli_;
  std::vector<int> leaf_free_;
  std::vector<int> leaf_usable_;
  std::vector<int> leaf_hist_;  // [leaf * (max_gpus + 1) + k]: usable nodes with exactly k free
  std::vector<NodeBitset> at_least_;
};

}  // namespace shoal::sched
