// Node choice: first-fit, best-fit, random and the default topology-aware scoring.
#include <algorithm>
#include <bit>

#include "sched/placement.h"
#include "sched/plugins/plugins.h"
#include "sched/working_state.h"

namespace shoal::sched::plugins {

namespace {

// GPU milli free on the node after `gpus` take `milli` each.
int64_t GpuMilliLeft(const WorkingState& state, NodeIndex n, uint64_t gpus, int milli) {
  int64_t left = 0;
  for (uint64_t bits = state.HealthyMask(n); bits != 0; bits &= bits - 1) {
    const int g = std::countr_zero(bits);
    left += kMilliPerGpu - state.UsedMilli(n, g) - ((gpus >> g & 1) ? milli : 0);
  }
  return left;
}

// The first node that fits, in node order.
class FirstFitScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "first-fit"; }
  CandidateScan Scan() const override { return CandidateScan::kFirstFit; }
  NodeChoice Evaluate(const WorkingState& state, NodeIndex n, const NodeDemand& d, ScorePass*,
                      Rng&) const override {
    return {PickGpus(state, n, d), 0};
  }
};

// The node left with the least free resources (GPUs and CPUs, each as a
// fraction of the node), as the best-fit baseline of the FGD paper.
class BestFitScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "best-fit"; }
  // Every node: the least-left node may be in a looser GPU bucket if its CPUs are tighter.
  CandidateScan Scan() const override { return CandidateScan::kAll; }
  NodeChoice Evaluate(const WorkingState& state, NodeIndex n, const NodeDemand& d, ScorePass*,
                      Rng&) const override {
    const InvNode& node = state.inventory().node(n);
    const uint64_t gpus = PickGpus(state, n, d);
    double left = 0;
    if (node.gpu_count > 0) {
      left += static_cast<double>(GpuMilliLeft(state, n, gpus, d.gpu_milli)) /
              (static_cast<double>(node.gpu_count) * kMilliPerGpu);
    }
    if (node.cpu_milli > 0) {
      left +=
          static_cast<double>(state.CpuFree(n) - d.cpu_milli) / static_cast<double>(node.cpu_milli);
    }
    return {gpus, -left};
  }
};

// A node chosen uniformly at random among those that fit, and random GPUs on it.
class RandomScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "random"; }
  CandidateScan Scan() const override { return CandidateScan::kAll; }
  NodeChoice Evaluate(const WorkingState& state, NodeIndex n, const NodeDemand& d, ScorePass*,
                      Rng& rng) const override {
    uint64_t cand = state.FitGpus(n, d);
    uint64_t out = 0;
    for (int i = 0; i < d.gpus; ++i) {
      const int count = std::popcount(cand);
      int pick = static_cast<int>(rng.Uniform(static_cast<uint64_t>(count)));
      uint64_t bits = cand;
      while (pick-- > 0)
        bits &= bits - 1;
      const uint64_t bit = bits & (~bits + 1);
      out |= bit;
      cand &= ~bit;
    }
    return {out, rng.UniformDouble()};
  }
};

// Shoal's default: pack GPUs (the node with the fewest free GPUs that fits,
// so whole nodes stay whole for large jobs), keep a job within one NVLink
// island, and fill busy leaf switches first so that whole leaves stay free for
// multi-node jobs. CPU-only jobs go where they take no GPU's CPUs.
class TopologyScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "topology"; }
  CandidateScan Scan() const override { return CandidateScan::kTightestFirst; }
  NodeChoice Evaluate(const WorkingState& state, NodeIndex n, const NodeDemand& d, ScorePass*,
                      Rng&) const override {
    const InvNode& node = state.inventory().node(n);
    const uint64_t gpus = PickGpus(state, n, d);
    double score = 0;
    if (d.gpus == 0) {
      score -= 100.0 * state.FreeWhole(n);
      if (node.cpu_milli > 0)
        score -= static_cast<double>(state.CpuFree(n) - d.cpu_milli) / node.cpu_milli;
      return {gpus, score};
    }
    if (d.gpu_milli >= kMilliPerGpu) {
      score -= 100.0 * (state.FreeWhole(n) - d.gpus);
    } else {
      score -=
          100.0 * static_cast<double>(GpuMilliLeft(state, n, gpus, d.gpu_milli)) / kMilliPerGpu;
    }
    if (d.gpus > 1 && WithinOneIsland(node, gpus)) score += 50;
    const int usable = state.LeafUsableGpus(node.leaf);
    if (usable > 0)
      score += 10.0 * (1.0 - static_cast<double>(state.LeafFreeGpus(node.leaf)) / usable);
    return {gpus, score};
  }
};

}  // namespace

std::shared_ptr<const ScorePlugin> MakeFirstFitScore() {
  return std::make_shared<FirstFitScore>();
}
std::shared_ptr<const ScorePlugin> MakeBestFitScore() {
  return std::make_shared<BestFitScore>();
}
std::shared_ptr<const ScorePlugin> MakeRandomScore() {
  return std::make_shared<RandomScore>();
}
std::shared_ptr<const ScorePlugin> MakeTopologyScore() {
  return std::make_shared<TopologyScore>();
}

}  // namespace shoal::sched::plugins
