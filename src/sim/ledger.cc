#include "sim/ledger.h"

#include <fmt/format.h>

#include <bit>

#include "sched/fragmentation.h"

namespace shoal::sim {

Ledger::Ledger(const sched::Inventory& inv) : inv_(&inv) {
  offset_.resize(inv.size() + 1);
  uint32_t off = 0;
  for (size_t i = 0; i < inv.size(); ++i) {
    offset_[i] = off;
    off += static_cast<uint32_t>(inv.node(static_cast<sched::NodeIndex>(i)).gpu_count);
  }
  offset_[inv.size()] = off;
  gpu_milli_.assign(off, 0);
  cpu_.assign(inv.size(), 0);
  mem_.assign(inv.size(), 0);
  jobs_.assign(inv.size(), 0);
  exclusive_.assign(inv.size(), 0);
}

Status Ledger::Take(const Allocation& a) {
  for (size_t k = 0; k < a.nodes.size(); ++k) {
    const NodeAllocation& na = a.nodes[k];
    for (size_t j = 0; j < k; ++j) {
      if (a.nodes[j].node == na.node)
        return Internal(fmt::format("node {} appears twice in one allocation", ToString(na.node)));
    }
    auto idx = inv_->IndexOf(na.node);
    if (!idx) return Internal(fmt::format("node {} is not in the cluster", ToString(na.node)));
    const sched::InvNode& node = inv_->node(*idx);
    if ((na.gpu_mask & ~node.all_gpus) != 0) {
      return Internal(
          fmt::format("{} has no GPU {}", node.name, FormatGpuMask(na.gpu_mask & ~node.all_gpus)));
    }
    if (na.gpu_milli <= 0 || na.gpu_milli > kMilliPerGpu) {
      return Internal(fmt::format("share {} on {} is out of range", na.gpu_milli, node.name));
    }
    if (exclusive_[*idx] || (na.exclusive && jobs_[*idx] != 0)) {
      return Internal(fmt::format("{} is held exclusively", node.name));
    }
    for (uint64_t bits = na.gpu_mask; bits != 0; bits &= bits - 1) {
      const int g = std::countr_zero(bits);
      if (gpu_milli_[offset_[*idx] + g] + na.gpu_milli > kMilliPerGpu) {
        return Internal(fmt::format("GPU {} of {} given twice ({} + {} thousandths)", g, node.name,
                                    gpu_milli_[offset_[*idx] + g], na.gpu_milli));
      }
    }
    if (cpu_[*idx] + na.cpu_milli > node.cpu_milli) {
      return Internal(fmt::format("{} over its CPUs ({} + {} > {})", node.name, cpu_[*idx],
                                  na.cpu_milli, node.cpu_milli));
    }
    if (mem_[*idx] + na.mem_mib > node.mem_mib) {
      return Internal(fmt::format("{} over its memory", node.name));
    }
  }
  for (const NodeAllocation& na : a.nodes) {
    const sched::NodeIndex n = *inv_->IndexOf(na.node);
    for (uint64_t bits = na.gpu_mask; bits != 0; bits &= bits - 1) {
      gpu_milli_[offset_[n] + std::countr_zero(bits)] += static_cast<int16_t>(na.gpu_milli);
    }
    cpu_[n] += na.cpu_milli;
    mem_[n] += na.mem_mib;
    ++jobs_[n];
    if (na.exclusive) exclusive_[n] = 1;
    allocated_milli_ += static_cast<int64_t>(na.GpuCount()) * na.gpu_milli;
  }
  return Status::Ok();
}

void Ledger::Give(const Allocation& a) {
  for (const NodeAllocation& na : a.nodes) {
    const sched::NodeIndex n = *inv_->IndexOf(na.node);
    for (uint64_t bits = na.gpu_mask; bits != 0; bits &= bits - 1) {
      gpu_milli_[offset_[n] + std::countr_zero(bits)] -= static_cast<int16_t>(na.gpu_milli);
    }
    cpu_[n] -= na.cpu_milli;
    mem_[n] -= na.mem_mib;
    --jobs_[n];
    if (na.exclusive) exclusive_[n] = 0;
    allocated_milli_ -= static_cast<int64_t>(na.GpuCount()) * na.gpu_milli;
  }
}

int Ledger::FullyFreeGpus() const {
  int free = 0;
  for (int16_t m : gpu_milli_)
    free += m == 0 ? 1 : 0;
  return free;
}

Status Ledger::CheckAgainst(const std::vector<const Allocation*>& running) const {
  Ledger fresh(*inv_);
  for (const Allocation* a : running) {
    Status s = fresh.Take(*a);
    if (!s.ok()) return s.WithContext("recomputing the running allocations");
  }
  if (fresh.gpu_milli_ != gpu_milli_ || fresh.cpu_ != cpu_ || fresh.mem_ != mem_) {
    return Internal("the ledger does not match the running jobs' allocations");
  }
  return Status::Ok();
}

double Ledger::FragmentedGpus(const std::vector<sched::TypicalDemand>& workload) const {
  double total = 0;
  std::vector<sched::GpuRoom> rooms;
  for (sched::NodeIndex n = 0; n < inv_->size(); ++n) {
    const sched::InvNode& node = inv_->node(n);
    if (node.gpu_count == 0) continue;
    rooms.clear();
    for (int g = 0; g < node.gpu_count; ++g) {
      rooms.push_back({node.gpu_model[static_cast<size_t>(g)],
                       static_cast<int16_t>(kMilliPerGpu - UsedMilli(n, g))});
    }
    total += sched::NodeFragmentation(rooms, node.cpu_milli - CpuUsed(n), node.mem_mib - MemUsed(n),
                                      workload);
  }
  return total / kMilliPerGpu;
}

std::string NotWhole(const sched::Request& r, const Allocation& a, std::string_view name) {
  for (const NodeAllocation& na : a.nodes) {
    if (na.gpu_milli != r.gpu_milli && na.gpu_mask != 0)
      return fmt::format("job {} got shares of {} instead of {}", name, na.gpu_milli, r.gpu_milli);
  }
  switch (r.shape) {
    case sched::Shape::kGang:
      if (static_cast<int>(a.nodes.size()) != r.nodes)
        return fmt::format("gang {} got {} of its {} nodes", name, a.nodes.size(), r.nodes);
      for (const NodeAllocation& na : a.nodes) {
        if (na.GpuCount() != r.gpus_per_node) {
          return fmt::format("gang {} got {} GPUs on a node instead of {}", name, na.GpuCount(),
                             r.gpus_per_node);
        }
      }
      break;
    case sched::Shape::kSpread:
      if (a.TotalGpus() != r.total_gpus)
        return fmt::format("job {} got {} of its {} GPUs", name, a.TotalGpus(), r.total_gpus);
      break;
    case sched::Shape::kCpuOnly:
      if (static_cast<int>(a.nodes.size()) != r.nodes || a.TotalGpus() != 0)
        return fmt::format("CPU job {} got a wrong allocation", name);
      break;
  }
  return "";
}

Status InvariantViolated(Time now, std::string_view policy, uint64_t seed, std::string_view what) {
  return Internal(
      fmt::format("invariant violated at t={}s under {}: {} (rerun with --seed {} to reproduce)",
                  ToSeconds(now), policy, what, seed));
}

}  // namespace shoal::sim
