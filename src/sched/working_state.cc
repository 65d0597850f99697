#include "sched/working_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>

namespace shoal::sched {

WorkingState::WorkingState(const Inventory& inv, const std::vector<NodeStatus>& status)
    : inv_(&inv) {
  const size_t n = inv.size();
  cpu_free_.resize(n);
  mem_free_.resize(n);
  free_mask_.resize(n);
  healthy_.resize(n);
  jobs_.assign(n, 0);
  exclusive_.assign(n, 0);
  version_.assign(n, 0);
  offset_.resize(n + 1);
  leaf_free_.assign(inv.leaves().size(), 0);
  leaf_usable_.assign(inv.leaves().size(), 0);
  at_least_.assign(static_cast<size_t>(inv.max_gpus_per_node()) + 1, NodeBitset(n));
  leaf_hist_.assign(inv.leaves().size() * at_least_.size(), 0);
  uint32_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const InvNode& node = inv.node(static_cast<NodeIndex>(i));
    offset_[i] = offset;
    offset += static_cast<uint32_t>(node.gpu_count);
    cpu_free_[i] = node.cpu_milli;
    mem_free_[i] = node.mem_mib;
    const NodeStatus st = i < status.size() ? status[i] : NodeStatus{};
    healthy_[i] = node.all_gpus & ~st.unhealthy_gpus;
    free_mask_[i] = healthy_[i];
    if (st.state == NodeState::kUp) {
      const int free = std::popcount(free_mask_[i]);
      for (int k = 0; k <= free; ++k)
        at_least_[static_cast<size_t>(k)].Set(i);
      leaf_free_[node.leaf] += free;
      leaf_usable_[node.leaf] += free;
      ++leaf_hist_[node.leaf * at_least_.size() + static_cast<size_t>(free)];
    }
  }
  offset_[n] = offset;
  used_milli_.assign(offset, 0);
}

int WorkingState::FreeWhole(NodeIndex n) const {
  return std::popcount(free_mask_[n]);
}

uint64_t WorkingState::FitGpus(NodeIndex n, const NodeDemand& d) const {
  const InvNode& node = inv_->node(n);
  const uint64_t allowed = node.GpusOfModels(d.model_mask) & healthy_[n];
  if (d.gpu_milli >= kMilliPerGpu) return free_mask_[n] & allowed;
  uint64_t out = 0;
  const int16_t* used = &used_milli_[offset_[n]];
  for (uint64_t bits = allowed; bits != 0; bits &= bits - 1) {
    const int g = std::countr_zero(bits);
    if (kMilliPerGpu - used[g] >= d.gpu_milli) out |= uint64_t{1} << g;
  }
  return out;
}

bool WorkingState::Fits(NodeIndex n, const NodeDemand& d) const {
  if (!Usable(n) || exclusive_[n]) return false;
  if (d.exclusive && jobs_[n] != 0) return false;
  if (cpu_free_[n] < d.cpu_milli || mem_free_[n] < d.mem_mib) return false;
  if (d.gpus == 0) return true;
  return std::popcount(FitGpus(n, d)) >= d.gpus;
}

void WorkingState::Apply(NodeIndex n, const NodeAllocation& a, int sign) {
  const int old_free = std::popcount(free_mask_[n]);
  cpu_free_[n] -= sign * a.cpu_milli;
  mem_free_[n] -= sign * a.mem_mib;
  int16_t* used = &used_milli_[offset_[n]];
  for (uint64_t bits = a.gpu_mask; bits != 0; bits &= bits - 1) {
    const int g = std::countr_zero(bits);
    used[g] = static_cast<int16_t>(used[g] + sign * a.gpu_milli);
    const uint64_t bit = uint64_t{1} << g;
    if (used[g] == 0 && (healthy_[n] & bit)) {
      free_mask_[n] |= bit;
    } else {
      free_mask_[n] &= ~bit;
    }
  }
  jobs_[n] = static_cast<uint32_t>(static_cast<int>(jobs_[n]) + sign);
  if (a.exclusive) exclusive_[n] = sign > 0 ? 1 : 0;
  ++version_[n];
  Reindex(n, old_free);
}

void WorkingState::Reindex(NodeIndex n, int old_free) {
  if (!Usable(n)) return;
  const int new_free = std::popcount(free_mask_[n]);
  if (new_free == old_free) return;
  for (int k = std::min(old_free, new_free) + 1; k <= std::max(old_free, new_free); ++k) {
    if (new_free > old_free) {
      at_least_[static_cast<size_t>(k)].Set(n);
    } else {
      at_least_[static_cast<size_t>(k)].Clear(n);
    }
  }
  const uint32_t leaf = inv_->node(n).leaf;
  leaf_free_[leaf] += new_free - old_free;
  --leaf_hist_[leaf * at_least_.size() + static_cast<size_t>(old_free)];
  ++leaf_hist_[leaf * at_least_.size() + static_cast<size_t>(new_free)];
}

int WorkingState::LeafNodesWithAtLeast(uint32_t leaf, int k) const {
  const size_t width = at_least_.size();
  int count = 0;
  for (size_t f = static_cast<size_t>(std::max(0, k)); f < width; ++f)
    count += leaf_hist_[leaf * width + f];
  return count;
}

bool WorkingState::Allocate(const Allocation& a) {
  for (const NodeAllocation& na : a.nodes) {
    if (!inv_->IndexOf(na.node)) return false;
  }
  for (const NodeAllocation& na : a.nodes)
    Allocate(*inv_->IndexOf(na.node), na);
  return true;
}

bool WorkingState::Release(const Allocation& a) {
  for (const NodeAllocation& na : a.nodes) {
    if (!inv_->IndexOf(na.node)) return false;
  }
  for (const NodeAllocation& na : a.nodes)
    Release(*inv_->IndexOf(na.node), na);
  return true;
}

Status WorkingState::CanAllocate(const Allocation& a) const {
  for (const NodeAllocation& na : a.nodes) {
    auto idx = inv_->IndexOf(na.node);
    if (!idx)
      return FailedPrecondition(fmt::format("node {} is not in the cluster", ToString(na.node)));
    const NodeIndex n = *idx;
    const InvNode& node = inv_->node(n);
    if (!Usable(n))
      return FailedPrecondition(fmt::format("node {} is not accepting work", node.name));
    if (exclusive_[n] || (na.exclusive && jobs_[n] != 0)) {
      return FailedPrecondition(fmt::format("node {} is held exclusively", node.name));
    }
    if (cpu_free_[n] < na.cpu_milli || mem_free_[n] < na.mem_mib) {
      return FailedPrecondition(fmt::format("node {} lacks CPUs or memory", node.name));
    }
    if ((na.gpu_mask & ~node.all_gpus) != 0) {
      return FailedPrecondition(fmt::format("node {} has no GPUs {}", node.name,
                                            FormatGpuMask(na.gpu_mask & ~node.all_gpus)));
    }
    for (uint64_t bits = na.gpu_mask; bits != 0; bits &= bits - 1) {
      const int g = std::countr_zero(bits);
      if (!(healthy_[n] >> g & 1))
        return FailedPrecondition(fmt::format("GPU {} of {} is unhealthy", g, node.name));
      if (kMilliPerGpu - UsedMilli(n, g) < na.gpu_milli) {
        return FailedPrecondition(fmt::format("GPU {} of {} is taken", g, node.name));
      }
    }
  }
  return Status::Ok();
}

void WorkingState::SetToMin(NodeIndex n, const WorkingState& a, const WorkingState& b) {
  const int old_free = std::popcount(free_mask_[n]);
  cpu_free_[n] = std::min(a.cpu_free_[n], b.cpu_free_[n]);
  mem_free_[n] = std::min(a.mem_free_[n], b.mem_free_[n]);
  jobs_[n] = std::max(a.jobs_[n], b.jobs_[n]);
  exclusive_[n] = a.exclusive_[n] | b.exclusive_[n];
  const InvNode& node = inv_->node(n);
  const uint32_t off = offset_[n];
  const int count = node.gpu_count;
  for (int g = 0; g < count; ++g)
    used_milli_[off + g] = std::max(a.used_milli_[off + g], b.used_milli_[off + g]);
  if (std::popcount(node.models) == 1) {
    // GPUs of one model are interchangeable: what is free in both is the
    // i-th least used GPU of a against the i-th least used of b, kept on
    // a's GPUs (so that work placed on it is placed where a has room).
    std::array<std::pair<int16_t, int>, kMaxGpusPerNode> in_a;
    std::array<int16_t, kMaxGpusPerNode> in_b;
    int k = 0;
    for (uint64_t bits = healthy_[n]; bits != 0; bits &= bits - 1, ++k) {
      const int g = std::countr_zero(bits);
      in_a[static_cast<size_t>(k)] = {a.used_milli_[off + g], g};
      in_b[static_cast<size_t>(k)] = b.used_milli_[off + g];
    }
    std::sort(in_a.begin(), in_a.begin() + k);
    std::sort(in_b.begin(), in_b.begin() + k);
    for (int i = 0; i < k; ++i) {
      const auto [used, g] = in_a[static_cast<size_t>(i)];
      used_milli_[off + static_cast<uint32_t>(g)] = std::max(used, in_b[static_cast<size_t>(i)]);
    }
  }
  uint64_t free = healthy_[n];
  for (int g = 0; g < count; ++g) {
    if (used_milli_[off + g] != 0) free &= ~(uint64_t{1} << g);
  }
  free_mask_[n] = free;
  ++version_[n];
  Reindex(n, old_free);
}

bool WorkingState::AllocateAlike(const Allocation& a) {
  for (const NodeAllocation& na : a.nodes) {
    if (!inv_->IndexOf(na.node)) return false;
  }
  std::vector<std::pair<NodeIndex, NodeAllocation>> placed;
  for (const NodeAllocation& na : a.nodes) {
    const NodeIndex n = *inv_->IndexOf(na.node);
    const InvNode& node = inv_->node(n);
    NodeAllocation here = na;
    here.gpu_mask = 0;
    // Its own GPUs where they have room, else others of the same model.
    uint64_t wanted = na.gpu_mask;
    for (uint64_t bits = na.gpu_mask; bits != 0; bits &= bits - 1) {
      const int g = std::countr_zero(bits);
      if (kMilliPerGpu - UsedMilli(n, g) >= na.gpu_milli && (healthy_[n] >> g & 1)) {
        here.gpu_mask |= uint64_t{1} << g;
        wanted &= ~(uint64_t{1} << g);
      }
    }
    for (uint64_t bits = wanted; bits != 0; bits &= bits - 1) {
      const uint8_t model = node.gpu_model[static_cast<size_t>(std::countr_zero(bits))];
      uint64_t room = 0;
      for (uint64_t c = healthy_[n] & ~here.gpu_mask & ~na.gpu_mask; c != 0; c &= c - 1) {
        const int g = std::countr_zero(c);
        if (node.gpu_model[static_cast<size_t>(g)] == model &&
            kMilliPerGpu - UsedMilli(n, g) >= na.gpu_milli)
          room |= uint64_t{1} << g;
      }
      if (room == 0) return false;
      here.gpu_mask |= room & -room;
    }
    placed.emplace_back(n, here);
  }
  for (const auto& [n, here] : placed)
    Allocate(n, here);
  return true;
}

WorkingState WorkingState::Min(const WorkingState& a, const WorkingState& b) {
  WorkingState out = a;
  for (NodeIndex n = 0; n < out.size(); ++n)
    out.SetToMin(n, a, b);
  return out;
}

}  // namespace shoal::sched
