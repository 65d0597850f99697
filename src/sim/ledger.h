// The simulator's own account of what is allocated where, kept apart from the
// scheduler's so that it can check every plan the scheduler makes: no GPU
// given twice, no node over its capacity, exclusive nodes shared with nobody.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/status.h"
#include "core/time.h"
#include "sched/inventory.h"
#include "sched/policy.h"

namespace shoal::sim {

class Ledger {
 public:
  explicit Ledger(const sched::Inventory& inv);

  // Takes an allocation, or explains which capacity it would exceed (and takes nothing).
  Status Take(const Allocation& a);
  void Give(const Allocation& a);

  // GPUs in use, counting shares (two half GPUs count as one).
  double AllocatedGpus() const { return allocated_milli_ / 1000.0; }
  int64_t AllocatedMilli() const { return allocated_milli_; }
  int FullyFreeGpus() const;

  // Compares with the allocations of every running job, recomputed from scratch.
  Status CheckAgainst(const std::vector<const Allocation*>& running) const;

  // GPU capacity left in pieces that the workload's typical demands cannot
  // use (FGD's fragmentation), in GPUs, from this account of what is taken.
  double FragmentedGpus(const std::vector<sched::TypicalDemand>& workload) const;

  int UsedMilli(sched::NodeIndex n, int gpu) const { return gpu_milli_[offset_[n] + gpu]; }
  int64_t CpuUsed(sched::NodeIndex n) const { return cpu_[n]; }
  int64_t MemUsed(sched::NodeIndex n) const { return mem_[n]; }

 private:
  const sched::Inventory* inv_;
  std::vector<uint32_t> offset_;
  std::vector<int16_t> gpu_milli_;
  std::vector<int64_t> cpu_;
  std::vector<int64_t> mem_;
  std::vector<uint32_t> jobs_;
  std::vector<uint8_t> exclusive_;
  int64_t allocated_milli_ = 0;
};

// What is wrong with an allocation for a request, "" when it is whole: shares
// of the size asked, a gang's nodes and GPUs on each, a job's GPUs in all.
// `name` names the job in the message.
std::string NotWhole(const sched::Request& r, const Allocation& a, std::string_view name);

// The error of a broken invariant at `now`, with what reproduces it.
Status InvariantViolated(Time now, std::string_view policy, uint64_t seed, std::string_view what);

}  // namespace shoal::sim
