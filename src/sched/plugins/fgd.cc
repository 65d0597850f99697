// Fragmentation gradient descent (Weng et al., USENIX ATC 2023): put each task
// where it adds the least fragmentation for the workload to come.
#include <algorithm>
#include <bit>
#include <unordered_map>

#include "sched/fragmentation.h"
#include "sched/placement.h"
#include "sched/plugins/plugins.h"

namespace shoal::sched::plugins {

namespace {

// A node state with its GPUs sorted: nodes with equal signatures have equal
// fragmentation and equal best choices, so results are remembered by signature.
struct Signature {
  std::vector<uint32_t> gpus;  // model << 16 | free milli, sorted
  int64_t cpu = 0;
  int64_t mem = 0;
  bool operator==(const Signature&) const = default;
};

struct DemandKey {
  int gpus;
  int milli;
  int64_t cpu;
  int64_t mem;
  uint64_t models;
  bool exclusive;
  bool operator==(const DemandKey&) const = default;
};

uint64_t Mix(uint64_t h, uint64_t v) {
  return (h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

struct SignatureHash {
  size_t operator()(const Signature& s) const {
    uint64_t h = Mix(static_cast<uint64_t>(s.cpu), static_cast<uint64_t>(s.mem));
    for (uint32_t g : s.gpus)
      h = Mix(h, g);
    return h;
  }
};

struct DeltaKey {
  DemandKey demand;
  Signature sig;
  bool operator==(const DeltaKey&) const = default;
};

struct DeltaKeyHash {
  size_t operator()(const DeltaKey& k) const {
    uint64_t h = SignatureHash()(k.sig);
    h = Mix(h, static_cast<uint64_t>(k.demand.gpus) << 32 | static_cast<uint32_t>(k.demand.milli));
    h = Mix(h, static_cast<uint64_t>(k.demand.cpu));
    h = Mix(h, static_cast<uint64_t>(k.demand.mem));
    h = Mix(h, k.demand.models);
    return h;
  }
};

struct Outcome {
  double delta = 0;
  uint32_t chosen = 0;  // for shares: the (model << 16 | free) of the GPU to use
};

class FgdPass final : public ScorePass {
 public:
  std::vector<TypicalDemand> workload;
  std::unordered_map<Signature, double, SignatureHash> frag;
  std::unordered_map<DeltaKey, Outcome, DeltaKeyHash> delta;
};

Signature SignatureOf(const std::vector<GpuRoom>& rooms, int64_t cpu, int64_t mem) {
  Signature s;
  s.gpus.reserve(rooms.size());
  for (const GpuRoom& r : rooms)
    s.gpus.push_back(static_cast<uint32_t>(r.model) << 16 | static_cast<uint16_t>(r.free_milli));
  std::sort(s.gpus.begin(), s.gpus.end());
  s.cpu = cpu;
  s.mem = mem;
  return s;
}

// Shoal's variant, measured against the paper's in docs/scheduling.md:
//  - the workload weighs each kind of task by the GPUs it needs
//    (PolicyParams::workload_by_gpus), so that rare 8-GPU tasks, a sixth of
//    the GPU demand in the openb trace, still count;
//  - equal changes in fragmentation are broken by packing: the node, and on
//    it the GPU, left with the least free capacity.
class FgdScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "fgd"; }
  CandidateScan Scan() const override { return CandidateScan::kAll; }

  std::unique_ptr<ScorePass> BeginPass(const Snapshot& snap,
                                       const PolicyParams& params) const override {
    auto pass = std::make_unique<FgdPass>();
    if (!params.workload.empty()) {
      pass->workload = params.workload;
    } else {
      std::vector<const Request*> reqs;
      for (const JobInfo& j : snap.pending)
        reqs.push_back(&j.request);
      for (const JobInfo& j : snap.running)
        reqs.push_back(&j.request);
      pass->workload = WorkloadOf(reqs, snap.inventory->max_gpus_per_node(),
                                  params.workload_coverage, params.workload_by_gpus);
    }
    return pass;
  }

  NodeChoice Evaluate(const WorkingState& state, NodeIndex n, const NodeDemand& d, ScorePass* raw,
                      Rng&) const override {
    auto* pass = static_cast<FgdPass*>(raw);
    std::vector<GpuRoom> rooms = NodeRooms(state, n);
    const int64_t cpu = state.CpuFree(n);
    const int64_t mem = state.MemFree(n);
    DeltaKey key{{d.gpus, d.gpu_milli, d.cpu_milli, d.mem_mib, d.model_mask, d.exclusive},
                 SignatureOf(rooms, cpu, mem)};
    auto it = pass->delta.find(key);
    if (it == pass->delta.end()) {
      it = pass->delta.emplace(key, Compute(state, n, d, rooms, key.sig, *pass)).first;
    }
    const Outcome& o = it->second;
    uint64_t gpus = 0;
    if (d.gpus > 0 && d.gpu_milli < kMilliPerGpu && d.gpus == 1) {
      // The GPU with the remembered (model, room); equal ones are interchangeable.
      const InvNode& node = state.inventory().node(n);
      const uint64_t fit = state.FitGpus(n, d);
      for (uint64_t bits = fit; bits != 0; bits &= bits - 1) {
        const int g = std::countr_zero(bits);
        const uint32_t tag = static_cast<uint32_t>(node.gpu_model[g]) << 16 |
                             static_cast<uint16_t>(kMilliPerGpu - state.UsedMilli(n, g));
        if (tag == o.chosen) {
          gpus = uint64_t{1} << g;
          break;
        }
      }
    } else {
      gpus = PickGpus(state, n, d);
    }
    // Equal fragmentation: pack, the node left with the least free GPU capacity first.
    int64_t left = 0;
    for (const GpuRoom& r : rooms)
      left += r.free_milli;
    left -= static_cast<int64_t>(std::popcount(gpus)) * d.gpu_milli;
    return {gpus, -o.delta, -static_cast<double>(left)};
  }

 private:
  double Frag(const std::vector<GpuRoom>& rooms, const Signature& sig, FgdPass& pass) const {
    auto it = pass.frag.find(sig);
    if (it != pass.frag.end()) return it->second;
    const double f = NodeFragmentation(rooms, sig.cpu, sig.mem, pass.workload);
    pass.frag.emplace(sig, f);
    return f;
  }

  Outcome Compute(const WorkingState& state, NodeIndex n, const NodeDemand& d,
                  const std::vector<GpuRoom>& rooms, const Signature& sig, FgdPass& pass) const {
    const double before = Frag(rooms, sig, pass);
    const int64_t cpu_after = sig.cpu - (d.exclusive ? sig.cpu : d.cpu_milli);
    const int64_t mem_after = sig.mem - (d.exclusive ? sig.mem : d.mem_mib);
    auto after_of = [&](const std::vector<GpuRoom>& after_rooms) {
      return Frag(after_rooms, SignatureOf(after_rooms, cpu_after, mem_after), pass);
    };
    Outcome best;
    if (d.gpus > 0 && d.gpu_milli < kMilliPerGpu && d.gpus == 1) {
      // Try each distinct GPU that could take the share.
      const InvNode& node = state.inventory().node(n);
      bool found = false;
      std::vector<uint32_t> tried;
      for (size_t i = 0; i < rooms.size(); ++i) {
        const GpuRoom& r = rooms[i];
        if (!(d.model_mask >> r.model & 1) || r.free_milli < d.gpu_milli) continue;
        const uint32_t tag =
            static_cast<uint32_t>(r.model) << 16 | static_cast<uint16_t>(r.free_milli);
        if (std::find(tried.begin(), tried.end(), tag) != tried.end()) continue;
        tried.push_back(tag);
        std::vector<GpuRoom> after = rooms;
        after[i].free_milli = static_cast<int16_t>(after[i].free_milli - d.gpu_milli);
        const double delta = after_of(after) - before;
        // Equal change: the GPU with the least room, so that roomy GPUs stay roomy.
        const bool tighter = found && delta == best.delta &&
                             static_cast<uint32_t>(r.free_milli) < (best.chosen & 0xffff);
        if (!found || delta < best.delta || tighter) {
          best = {delta, tag};
          found = true;
        }
      }
      (void)node;
      return best;
    }
    const uint64_t gpus = PickGpus(state, n, d);
    std::vector<GpuRoom> after;
    after.reserve(rooms.size());
    size_t i = 0;
    for (uint64_t bits = state.HealthyMask(n); bits != 0; bits &= bits - 1, ++i) {
      const int g = std::countr_zero(bits);
      GpuRoom r = rooms[i];
      if (gpus >> g & 1) r.free_milli = static_cast<int16_t>(r.free_milli - d.gpu_milli);
      after.push_back(r);
    }
    best.delta = after_of(after) - before;
    return best;
  }
};

}  // namespace

std::shared_ptr<const ScorePlugin> MakeFgdScore() {
  return std::make_shared<FgdScore>();
}

}  // namespace shoal::sched::plugins
