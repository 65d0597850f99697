// Where a job can run now: the filtering every policy shares, and the walk
// over candidate nodes that asks the policy's score plugin to choose.
//
//  - one node: the best-scored node that fits (how many are scored depends
//    on the plugin's CandidateScan);
//  - a gang of N nodes: all or nothing, under the fewest leaf switches (a
//    leaf that can hold it all, else the fewest leaves of one spine, else the
//    fewest leaves overall), the best-scored nodes within them;
//  - spread GPUs: on one node when any node can hold them all, else over the
//    fewest nodes, filled whole nodes first, under the fewest leaves;
//  - node counts of --constraint ([a*2&b*4]): for each label in turn, the
//    best-scored nodes that have it (greedy; leaves are not considered).
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/job.h"
#include "core/rng.h"
#include "sched/bitset.h"
#include "sched/plan.h"
#include "sched/plugin.h"
#include "sched/policy.h"
#include "sched/request.h"
#include "sched/working_state.h"

namespace shoal::sched {

// Nodes that a request may use at all (partition, labels, GPU model), cached
// per distinct combination for one pass.
class EligibilityCache {
 public:
  // With `filters` null, the built-in eligibility (NodeEligible) decides.
  explicit EligibilityCache(
      const Inventory& inv,
      const std::vector<std::shared_ptr<const FilterPlugin>>* filters = nullptr)
      : inv_(&inv), filters_(filters) {}
  const NodeBitset& Eligible(const Request& req);
  // The most GPUs of the request's models any eligible node has.
  int MaxNodeGpus(const Request& req);

 private:
  struct Entry {
    int partition;
    uint64_t models;
    LabelMask labels;
    std::vector<LabelMask> label_choices;
    bool cpu_only;
    std::shared_ptr<const NodeBitset> allowed;  // the request's node lists; null: any
    NodeBitset nodes;
    int max_gpus;
  };
  Entry& Find(const Request& req);
  bool Admits(const InvNode& n, const Request& req) const;
  const Inventory* inv_;
  const std::vector<std::shared_ptr<const FilterPlugin>>* filters_;
  std::vector<Entry> entries_;
};

struct PlaceContext {
  const ScorePlugin& score;
  ScorePass* pass;
  Rng& rng;
  const PolicyParams& params;
  EligibilityCache& eligibility;
  PassStats& stats;
};

std::optional<Allocation> Place(const WorkingState& state, const Request& req, PlaceContext& ctx);

// The default GPU choice on a node that fits `demand`: for whole GPUs, the
// tightest NVLink island that holds them all, else the fewest islands; for
// shares, the GPUs with the least room that still fits.
uint64_t PickGpus(const WorkingState& state, NodeIndex n, const NodeDemand& demand);

// Whether `gpus` lie within one NVLink island of node n.
bool WithinOneIsland(const InvNode& node, uint64_t gpus);

// The node allocation for `demand` with `gpus` on node n.
NodeAllocation MakeNodeAllocation(const WorkingState& state, NodeIndex n, const NodeDemand& demand,
                                  uint64_t gpus);

}  // namespace shoal::sched
