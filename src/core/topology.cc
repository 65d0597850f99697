#include "core/topology.h"

#include <algorithm>
#include <map>

namespace shoal {

Topology Topology::FromNodes(const std::vector<Node>& nodes) {
  Topology t;
  std::map<std::string, int> spine_index;
  std::map<std::pair<std::string, std::string>, int> leaf_index;
  for (const Node& n : nodes) {
    const std::string spine = n.place.spine.empty() ? "spine0" : n.place.spine;
    const std::string leaf = n.place.leaf.empty() ? "leaf0" : n.place.leaf;
    auto [s, new_spine] = spine_index.emplace(spine, static_cast<int>(t.spines_.size()));
    if (new_spine) t.spines_.push_back(spine);
    auto [l, new_leaf] =
        leaf_index.emplace(std::make_pair(spine, leaf), static_cast<int>(t.leaves_.size()));
    if (new_leaf) {
      t.leaves_.push_back(Leaf{spine, leaf, {}});
      t.leaf_spine_.push_back(s->second);
    }
    t.leaves_[static_cast<size_t>(l->second)].nodes.push_back(n.id);
    t.leaf_of_[n.id] = l->second;
  }
  return t;
}

int Topology::LeafOf(NodeId node) const {
  auto it = leaf_of_.find(node);
  return it == leaf_of_.end() ? -1 : it->second;
}

int Topology::LeavesSpanned(const std::vector<NodeId>& nodes) const {
  std::vector<int> leaves;
  for (NodeId n : nodes)
    leaves.push_back(LeafOf(n));
  std::sort(leaves.begin(), leaves.end());
  return static_cast<int>(std::unique(leaves.begin(), leaves.end()) - leaves.begin());
}

int Topology::SpinesSpanned(const std::vector<NodeId>& nodes) const {
  std::vector<int> spines;
  for (NodeId n : nodes) {
    const int leaf = LeafOf(n);
    spines.push_back(leaf < 0 ? -1 : SpineOfLeaf(leaf));
  }
  std::sort(spines.begin(), spines.end());
  return static_cast<int>(std::unique(spines.begin(), spines.end()) - spines.begin());
}

}  // namespace shoal
