#include "sched/placement.h"

#include <algorithm>
#include <bit>

namespace shoal::sched {

namespace {

uint64_t TakeLowest(uint64_t mask, int k) {
  uint64_t out = 0;
  for (int i = 0; i < k && mask != 0; ++i) {
    const uint64_t low = mask & (~mask + 1);
    out |= low;
    mask &= mask - 1;
  }
  return out;
}

struct Candidate {
  NodeIndex node;
  uint32_t leaf;
  uint32_t spine;
  int capacity;  // spread: GPUs this node can give; gang: unused
  NodeChoice choice;
};

bool Better(const NodeChoice& a, NodeIndex an, const NodeChoice& b, NodeIndex bn) {
  if (a.score != b.score) return a.score > b.score;
  if (a.tie != b.tie) return a.tie > b.tie;
  return an < bn;
}

// Calls f(node) for usable eligible nodes that may fit `demand`, per the scan order.
template <typename F>
void ForEachCandidate(const WorkingState& state, const NodeBitset& eligible, const NodeDemand& d,
                      F&& f) {
  const int k = d.gpu_milli >= kMilliPerGpu ? std::min(d.gpus, state.max_gpus()) : 0;
  if (d.gpus > state.max_gpus()) return;
  NodeBitset::ForEachAnd(state.AtLeast(k), eligible, f);
}

std::optional<NodeIndex> PlaceOne(const WorkingState& state, const NodeBitset& eligible,
                                  const NodeDemand& d, PlaceContext& ctx, NodeChoice* choice_out) {
  std::optional<NodeIndex> best;
  NodeChoice best_choice;
  // Scores node n if it fits; returns whether it did.
  auto consider = [&](NodeIndex n) {
    ++ctx.stats.placements_tried;
    if (!state.Fits(n, d)) return false;
    NodeChoice c = ctx.score.Evaluate(state, n, d, ctx.pass, ctx.rng);
    if (!best || Better(c, n, best_choice, *best)) {
      best = n;
      best_choice = c;
    }
    return true;
  };
  const CandidateScan scan = ctx.score.Scan();
  if (scan == CandidateScan::kFirstFit) {
    ForEachCandidate(state, eligible, d, [&](NodeIndex n) { return !consider(n); });
  } else if (scan == CandidateScan::kTightestFirst && d.gpu_milli >= kMilliPerGpu && d.gpus > 0 &&
             !d.exclusive) {
    // Nodes with exactly k free GPUs, k rising from the request: the tightest
    // bucket with a fit wins, and at most max_candidates of its nodes are scored.
    int scored = 0;
    const int limit = std::max(1, ctx.params.max_candidates);
    auto visit = [&](NodeIndex n) {
      if (consider(n)) ++scored;
      return scored < limit;
    };
    for (int k = d.gpus; k <= state.max_gpus() && scored == 0; ++k) {
      if (k + 1 <= state.max_gpus()) {
        NodeBitset::ForEachAndNot(state.AtLeast(k), eligible, state.AtLeast(k + 1), visit);
      } else {
        NodeBitset::ForEachAnd(state.AtLeast(k), eligible, visit);
      }
    }
  } else {
    ForEachCandidate(state, eligible, d, [&](NodeIndex n) {
      consider(n);
      return true;
    });
  }
  if (best && choice_out != nullptr) *choice_out = best_choice;
  return best;
}

struct LeafSum {
  uint32_t leaf;
  uint32_t spine;
  int64_t units;
};

// Per-leaf sums of candidates sorted by (leaf, node): nodes, or GPUs they can give.
std::vector<LeafSum> SumByLeaf(const std::vector<Candidate>& cands, bool count_nodes) {
  std::vector<LeafSum> leaves;
  for (const Candidate& c : cands) {
    const int64_t units = count_nodes ? 1 : c.capacity;
    if (leaves.empty() || leaves.back().leaf != c.leaf) leaves.push_back({c.leaf, c.spine, 0});
    leaves.back().units += units;
  }
  return leaves;
}

// Chooses leaves for `need` units: one leaf if any holds enough (the tightest
// such), else the fewest leaves of one spine (the tightest spine), else the
// largest leaves overall. Returns the chosen leaves, or empty when all leaves
// together are not enough.
std::vector<uint32_t> ChooseLeaves(std::vector<LeafSum> leaves, int64_t need) {
  int64_t total = 0;
  const LeafSum* single = nullptr;
  for (const LeafSum& l : leaves) {
    total += l.units;
    if (l.units >= need && (single == nullptr || l.units < single->units)) single = &l;
  }
  if (total < need) return {};
  if (single != nullptr) return {single->leaf};
  auto by_size = [](const LeafSum& a, const LeafSum& b) {
    return a.units != b.units ? a.units > b.units : a.leaf < b.leaf;
  };
  // Per spine: how many leaves its largest ones need to reach `need`.
  std::vector<LeafSum> sorted = leaves;
  std::sort(sorted.begin(), sorted.end(), [&](const LeafSum& a, const LeafSum& b) {
    return a.spine != b.spine ? a.spine < b.spine : by_size(a, b);
  });
  std::vector<uint32_t> best;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    int64_t sum = 0;
    std::vector<uint32_t> chosen;
    while (j < sorted.size() && sorted[j].spine == sorted[i].spine) {
      if (sum < need) {
        sum += sorted[j].units;
        chosen.push_back(sorted[j].leaf);
      }
      ++j;
    }
    if (sum >= need && (best.empty() || chosen.size() < best.size())) best = chosen;
    i = j;
  }
  if (!best.empty()) return best;
  std::sort(leaves.begin(), leaves.end(), by_size);
  int64_t sum = 0;
  for (const LeafSum& l : leaves) {
    if (sum >= need) break;
    sum += l.units;
    best.push_back(l.leaf);
  }
  return best;
}

// Candidates in the given leaves (or all leaves when `leaves` is null), sorted by (leaf, node).
template <typename Accept>
std::vector<Candidate> Gather(const WorkingState& state, const NodeBitset& eligible,
                              const NodeDemand& d, const std::vector<uint32_t>* leaves,
                              PlaceContext& ctx, Accept&& accept) {
  const Inventory& inv = state.inventory();
  std::vector<Candidate> cands;
  auto visit = [&](NodeIndex n) {
    ++ctx.stats.placements_tried;
    if (!eligible.Test(n) || !state.Fits(n, d)) return true;
    Candidate c{n, inv.node(n).leaf, inv.node(n).spine, 1, {}};
    if (accept(c)) cands.push_back(c);
    return true;
  };
  if (leaves == nullptr) {
    ForEachCandidate(state, eligible, d, visit);
  } else {
    for (uint32_t leaf : *leaves) {
      for (NodeIndex n : inv.LeafNodes(leaf))
        visit(n);
    }
  }
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.leaf != b.leaf ? a.leaf < b.leaf : a.node < b.node;
  });
  return cands;
}

// Leaf sums from the state's per-leaf counts: upper bounds that need no node scan.
std::vector<LeafSum> LeafBounds(const WorkingState& state, const NodeDemand& d, bool count_nodes) {
  const Inventory& inv = state.inventory();
  std::vector<LeafSum> out;
  const int k = d.gpu_milli >= kMilliPerGpu ? d.gpus : 0;
  for (uint32_t leaf = 0; leaf < inv.leaves().size(); ++leaf) {
    const int64_t units = count_nodes ? state.LeafNodesWithAtLeast(leaf, k)
                          : d.gpu_milli >= kMilliPerGpu
                              ? state.LeafFreeGpus(leaf)
                              : static_cast<int64_t>(inv.LeafNodes(leaf).size()) * kMaxGpusPerNode;
    if (units > 0) out.push_back({leaf, inv.SpineOfLeaf(leaf), units});
  }
  return out;
}

std::optional<Allocation> PlaceGang(const WorkingState& state, const NodeBitset& eligible,
                                    const Request& req, PlaceContext& ctx) {
  const int per_node = req.shape == Shape::kGang ? req.gpus_per_node : 0;
  const NodeDemand d = req.Demand(per_node);
  const Inventory& inv = state.inventory();
  // Choose leaves from the per-leaf counts first; scan only their nodes. The
  // counts are upper bounds (they ignore CPUs, memory and eligibility): when
  // the chosen leaves fall short, scan every node.
  std::vector<uint32_t> leaves =
      ChooseLeaves(LeafBounds(state, d, /*count_nodes=*/true), req.nodes);
  if (leaves.empty()) return std::nullopt;
  auto all = [](const Candidate&) { return true; };
  std::vector<Candidate> cands = Gather(state, eligible, d, &leaves, ctx, all);
  if (static_cast<int>(cands.size()) < req.nodes) {
    cands = Gather(state, eligible, d, nullptr, ctx, all);
    if (static_cast<int>(cands.size()) < req.nodes) return std::nullopt;
    leaves = ChooseLeaves(SumByLeaf(cands, /*count_nodes=*/true), req.nodes);
  } else {
    leaves = ChooseLeaves(SumByLeaf(cands, /*count_nodes=*/true), req.nodes);
  }
  std::vector<Candidate> chosen;
  for (Candidate& c : cands) {
    if (std::find(leaves.begin(), leaves.end(), c.leaf) == leaves.end()) continue;
    c.choice = ctx.score.Evaluate(state, c.node, d, ctx.pass, ctx.rng);
    chosen.push_back(c);
  }
  // Fill the chosen leaves largest first so that the gang spans as few as it can.
  std::vector<int> leaf_rank(inv.leaves().size(), 0);
  for (size_t i = 0; i < leaves.size(); ++i)
    leaf_rank[leaves[i]] = static_cast<int>(i);
  std::sort(chosen.begin(), chosen.end(), [&](const Candidate& a, const Candidate& b) {
    if (leaf_rank[a.leaf] != leaf_rank[b.leaf]) return leaf_rank[a.leaf] < leaf_rank[b.leaf];
    return Better(a.choice, a.node, b.choice, b.node);
  });
  Allocation alloc;
  for (int i = 0; i < req.nodes; ++i) {
    alloc.nodes.push_back(MakeNodeAllocation(state, chosen[i].node, d, chosen[i].choice.gpus));
  }
  return alloc;
}

std::optional<Allocation> PlaceSpread(const WorkingState& state, const NodeBitset& eligible,
                                      const Request& req, PlaceContext& ctx) {
  const NodeDemand one = req.Demand(1);
  auto capacity = [&](Candidate& c) {
    const NodeIndex n = c.node;
    int cap = std::popcount(state.FitGpus(n, one));
    if (req.cpu_per_gpu > 0) {
      cap = static_cast<int>(
          std::min<int64_t>(cap, (state.CpuFree(n) - req.cpu_base) / req.cpu_per_gpu));
    }
    if (req.mem_per_gpu > 0) {
      cap = static_cast<int>(
          std::min<int64_t>(cap, (state.MemFree(n) - req.mem_base) / req.mem_per_gpu));
    }
    c.capacity = cap;
    return cap > 0;
  };
  auto enough = [&](const std::vector<Candidate>& cs) {
    int64_t sum = 0;
    for (const Candidate& c : cs)
      sum += c.capacity;
    return sum >= req.total_gpus;
  };
  std::vector<uint32_t> leaves =
      ChooseLeaves(LeafBounds(state, one, /*count_nodes=*/false), req.total_gpus);
  if (leaves.empty()) return std::nullopt;
  std::vector<Candidate> cands = Gather(state, eligible, one, &leaves, ctx, capacity);
  if (!enough(cands)) {
    cands = Gather(state, eligible, one, nullptr, ctx, capacity);
    if (!enough(cands)) return std::nullopt;
  }
  leaves = ChooseLeaves(SumByLeaf(cands, /*count_nodes=*/false), req.total_gpus);
  if (leaves.empty()) return std::nullopt;
  std::vector<Candidate> pool;
  for (const Candidate& c : cands) {
    if (std::find(leaves.begin(), leaves.end(), c.leaf) != leaves.end()) pool.push_back(c);
  }
  // Whole nodes first (the most GPUs), then the tightest node for what remains.
  std::sort(pool.begin(), pool.end(), [](const Candidate& a, const Candidate& b) {
    return a.capacity != b.capacity ? a.capacity > b.capacity : a.node < b.node;
  });
  Allocation alloc;
  int remaining = req.total_gpus;
  std::vector<bool> used(pool.size(), false);
  while (remaining > 0) {
    int pick = -1;
    for (size_t i = 0; i < pool.size(); ++i) {
      if (used[i]) continue;
      if (pool[i].capacity <= remaining) {
        pick = static_cast<int>(i);  // the largest that does not overshoot
        break;
      }
    }
    if (pick < 0) {
      // Every remaining node has more than needed: the tightest of them.
      for (size_t i = pool.size(); i-- > 0;) {
        if (!used[i]) {
          pick = static_cast<int>(i);
          break;
        }
      }
    }
    if (pick < 0) return std::nullopt;
    used[static_cast<size_t>(pick)] = true;
    const Candidate& c = pool[static_cast<size_t>(pick)];
    const int take = std::min(c.capacity, remaining);
    const NodeDemand d = req.Demand(take);
    NodeChoice choice = ctx.score.Evaluate(state, c.node, d, ctx.pass, ctx.rng);
    alloc.nodes.push_back(MakeNodeAllocation(state, c.node, d, choice.gpus));
    remaining -= take;
  }
  return alloc;
}

// Slurm's node counts ([a*2&b*4], a*2): for each counted label in the job's
// order, the best-scored `count` fitting nodes that have it and are not taken
// yet, then the best of the rest for any nodes left over (a*2 with more
// nodes). Greedy: a node with two counted labels goes to the first, which can
// miss a placement that an exact matching would find; and, as in Slurm,
// counts do not keep the job under few leaf switches.
std::optional<Allocation> PlaceCounted(const WorkingState& state, const NodeBitset& eligible,
                                       const Request& req, PlaceContext& ctx) {
  const NodeDemand d = req.Demand(req.shape == Shape::kGang ? req.gpus_per_node : 0);
  const Inventory& inv = state.inventory();
  std::vector<Candidate> cands =
      Gather(state, eligible, d, nullptr, ctx, [](const Candidate&) { return true; });
  if (static_cast<int>(cands.size()) < req.nodes) return std::nullopt;
  for (Candidate& c : cands)
    c.choice = ctx.score.Evaluate(state, c.node, d, ctx.pass, ctx.rng);
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return Better(a.choice, a.node, b.choice, b.node);
  });
  std::vector<bool> taken(cands.size(), false);
  Allocation alloc;
  // Takes `count` untaken candidates with `label` (any, when null).
  auto take = [&](const LabelMask* label, int count) {
    for (size_t i = 0; i < cands.size() && count > 0; ++i) {
      if (taken[i] || (label != nullptr && !inv.node(cands[i].node).labels.Intersects(*label)))
        continue;
      taken[i] = true;
      alloc.nodes.push_back(MakeNodeAllocation(state, cands[i].node, d, cands[i].choice.gpus));
      --count;
    }
    return count == 0;
  };
  int counted = 0;
  for (const CountedLabel& c : req.label_counts) {
    if (!take(&c.label, c.count)) return std::nullopt;
    counted += c.count;
  }
  if (!take(nullptr, req.nodes - counted)) return std::nullopt;
  return alloc;
}

}  // namespace

const NodeBitset& EligibilityCache::Eligible(const Request& req) {
  return Find(req).nodes;
}

int EligibilityCache::MaxNodeGpus(const Request& req) {
  return Find(req).max_gpus;
}

EligibilityCache::Entry& EligibilityCache::Find(const Request& req) {
  const bool cpu_only = req.shape == Shape::kCpuOnly;
  for (Entry& e : entries_) {
    if (e.partition == req.partition && e.models == req.model_mask && e.labels == req.labels &&
        e.label_choices == req.label_choices && e.cpu_only == cpu_only &&
        e.allowed == req.allowed_nodes) {
      return e;
    }
  }
  Entry e{req.partition,     req.model_mask,           req.labels, req.label_choices, cpu_only,
          req.allowed_nodes, NodeBitset(inv_->size()), 0};
  for (NodeIndex n = 0; n < inv_->size(); ++n) {
    const InvNode& node = inv_->node(n);
    if (!Admits(node, req)) continue;
    e.nodes.Set(n);
    e.max_gpus = std::max(e.max_gpus, std::popcount(node.GpusOfModels(req.model_mask)));
  }
  entries_.push_back(std::move(e));
  return entries_.back();
}

bool EligibilityCache::Admits(const InvNode& n, const Request& req) const {
  if (filters_ == nullptr) return NodeEligible(n, req);
  // The user's own node lists hold whatever the filters are.
  if (req.allowed_nodes != nullptr && !req.allowed_nodes->Test(n.index)) return false;
  for (const auto& f : *filters_) {
    if (!f->Admits(n, req)) return false;
  }
  return true;
}

namespace {

// Place for a request without matching choices.
std::optional<Allocation> PlaceChoice(const WorkingState& state, const Request& req,
                                      PlaceContext& ctx) {
  const NodeBitset& eligible = ctx.eligibility.Eligible(req);
  if (!req.label_counts.empty()) return PlaceCounted(state, eligible, req, ctx);
  if (req.shape == Shape::kSpread) {
    if (req.total_gpus <= ctx.eligibility.MaxNodeGpus(req)) {
      // Small enough for one node: keep it on one node (NVLink, no network hops).
      const NodeDemand d = req.Demand(req.total_gpus);
      NodeChoice choice;
      auto n = PlaceOne(state, eligible, d, ctx, &choice);
      if (!n) return std::nullopt;
      return Allocation{{MakeNodeAllocation(state, *n, d, choice.gpus)}};
    }
    return PlaceSpread(state, eligible, req, ctx);
  }
  if (req.nodes == 1) {
    const NodeDemand d = req.Demand(req.shape == Shape::kGang ? req.gpus_per_node : 0);
    NodeChoice choice;
    auto n = PlaceOne(state, eligible, d, ctx, &choice);
    if (!n) return std::nullopt;
    return Allocation{{MakeNodeAllocation(state, *n, d, choice.gpus)}};
  }
  return PlaceGang(state, eligible, req, ctx);
}

}  // namespace

std::optional<Allocation> Place(const WorkingState& state, const Request& req, PlaceContext& ctx) {
  if (req.matching_choices.empty()) return PlaceChoice(state, req, ctx);
  // --constraint [a|b]: the first choice, in the job's order, that all its
  // nodes can share (Slurm tries them so).
  for (size_t k = 0; k < req.matching_choices.size(); ++k) {
    if (auto a = PlaceChoice(state, req.WithChoice(k), ctx)) return a;
  }
  return std::nullopt;
}

bool WithinOneIsland(const InvNode& node, uint64_t gpus) {
  for (uint64_t island : node.island_masks) {
    if ((gpus & ~island) == 0) return true;
  }
  return gpus == 0;
}

uint64_t PickGpus(const WorkingState& state, NodeIndex n, const NodeDemand& d) {
  if (d.gpus == 0) return 0;
  const uint64_t cand = state.FitGpus(n, d);
  if (std::popcount(cand) == d.gpus) return cand;
  const InvNode& node = state.inventory().node(n);
  if (d.gpu_milli < kMilliPerGpu) {
    // Shares: the GPUs with the least room left that still fit, so that whole
    // GPUs stay whole.
    std::vector<std::pair<int, int>> room;  // (free milli, gpu)
    for (uint64_t bits = cand; bits != 0; bits &= bits - 1) {
      const int g = std::countr_zero(bits);
      room.push_back({kMilliPerGpu - state.UsedMilli(n, g), g});
    }
    std::sort(room.begin(), room.end());
    uint64_t out = 0;
    for (int i = 0; i < d.gpus && i < static_cast<int>(room.size()); ++i)
      out |= uint64_t{1} << room[i].second;
    return out;
  }
  // Whole GPUs: the tightest island that holds them all.
  int best_avail = kMaxGpusPerNode + 1;
  uint64_t best_island = 0;
  for (uint64_t island : node.island_masks) {
    const int avail = std::popcount(cand & island);
    if (avail >= d.gpus && avail < best_avail) {
      best_avail = avail;
      best_island = island;
    }
  }
  if (best_island != 0) return TakeLowest(cand & best_island, d.gpus);
  // Else the fewest islands: largest first.
  std::vector<uint64_t> islands = node.island_masks;
  std::sort(islands.begin(), islands.end(), [&](uint64_t a, uint64_t b) {
    return std::popcount(cand & a) > std::popcount(cand & b);
  });
  uint64_t out = 0;
  int need = d.gpus;
  for (uint64_t island : islands) {
    const uint64_t take = TakeLowest(cand & island, need);
    out |= take;
    need -= std::popcount(take);
    if (need == 0) break;
  }
  return out;
}

NodeAllocation MakeNodeAllocation(const WorkingState& state, NodeIndex n, const NodeDemand& d,
                                  uint64_t gpus) {
  const InvNode& node = state.inventory().node(n);
  NodeAllocation a;
  a.node = node.id;
  a.gpu_mask = gpus;
  a.gpu_milli = d.gpu_milli;
  a.cpu_milli = d.exclusive ? state.CpuFree(n) : d.cpu_milli;
  a.mem_mib = d.exclusive ? state.MemFree(n) : d.mem_mib;
  a.exclusive = d.exclusive;
  return a;
}

}  // namespace shoal::sched
