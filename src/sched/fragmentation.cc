#include "sched/fragmentation.h"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>

namespace shoal::sched {

double NodeFragmentation(std::span<const GpuRoom> gpus, int64_t cpu_free, int64_t mem_free,
                         const std::vector<TypicalDemand>& workload) {
  int64_t total_free = 0;
  for (const GpuRoom& g : gpus)
    total_free += g.free_milli;
  if (total_free == 0) return 0;
  double frag = 0;
  for (const TypicalDemand& t : workload) {
    const NodeDemand& d = t.demand;
    if (d.gpus == 0 || cpu_free < d.cpu_milli || mem_free < d.mem_mib) {
      frag += t.weight * static_cast<double>(total_free);
      continue;
    }
    int fitting = 0;
    int64_t unusable = 0;
    for (const GpuRoom& g : gpus) {
      const bool model_ok = d.model_mask >> g.model & 1;
      if (model_ok && g.free_milli >= d.gpu_milli) {
        ++fitting;
      } else {
        unusable += g.free_milli;
      }
    }
    frag += t.weight * static_cast<double>(fitting >= d.gpus ? unusable : total_free);
  }
  return frag;
}

std::vector<GpuRoom> NodeRooms(const WorkingState& state, NodeIndex n) {
  const InvNode& node = state.inventory().node(n);
  std::vector<GpuRoom> rooms;
  for (uint64_t bits = state.HealthyMask(n); bits != 0; bits &= bits - 1) {
    const int g = std::countr_zero(bits);
    rooms.push_back(
        {node.gpu_model[g], static_cast<int16_t>(kMilliPerGpu - state.UsedMilli(n, g))});
  }
  return rooms;
}

double ClusterFragmentation(const WorkingState& state, const std::vector<TypicalDemand>& workload) {
  double total = 0;
  for (NodeIndex n = 0; n < state.size(); ++n) {
    if (!state.Usable(n)) continue;
    std::vector<GpuRoom> rooms = NodeRooms(state, n);
    total += NodeFragmentation(rooms, state.CpuFree(n), state.MemFree(n), workload);
  }
  return total;
}

std::vector<TypicalDemand> WorkloadOf(const std::vector<const Request*>& requests,
                                      int max_gpus_per_node, double coverage, bool by_gpus) {
  using Key = std::tuple<int, int, int64_t, int64_t, uint64_t>;
  std::map<Key, double> counts;
  for (const Request* r : requests) {
    int gpus = r->shape == Shape::kGang ? r->gpus_per_node
               : r->shape == Shape::kSpread
                   ? std::min(r->total_gpus, std::max(1, max_gpus_per_node))
                   : 0;
    NodeDemand d = r->Demand(gpus);
    const double weight = by_gpus ? r->GpuEquivalents() : 1.0;
    if (weight <= 0) continue;
    counts[{d.gpus, d.gpu_milli, d.cpu_milli, d.mem_mib,
            gpus == 0 ? ~uint64_t{0} : d.model_mask}] += weight;
  }
  std::vector<TypicalDemand> out;
  double total = 0;
  for (auto& [k, c] : counts) {
    TypicalDemand t;
    std::tie(t.demand.gpus, t.demand.gpu_milli, t.demand.cpu_milli, t.demand.mem_mib,
             t.demand.model_mask) = k;
    t.weight = c;
    total += c;
    out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(), [](const TypicalDemand& a, const TypicalDemand& b) {
    return a.weight > b.weight;
  });
  double kept = 0;
  size_t keep = 0;
  while (keep < out.size() && kept < coverage * total)
    kept += out[keep++].weight;
  out.resize(keep);
  for (TypicalDemand& t : out)
    t.weight /= kept;
  return out;
}

}  // namespace shoal::sched
