// The cluster's network as a two-level tree: leaf switches under spine
// switches, nodes under leaves (DESIGN.md, "Resource model"). Jobs that span
// fewer leaves cross fewer switch hops; the scheduler keeps multi-node jobs
// under as few leaves as it can, and reports say how well it did.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/ids.h"

namespace shoal {

class Topology {
 public:
  struct Leaf {
    std::string spine;
    std::string name;
    std::vector<NodeId> nodes;
  };

  // Nodes without a place go under "spine0/leaf0".
  static Topology FromNodes(const std::vector<Node>& nodes);

  const std::vector<Leaf>& leaves() const { return leaves_; }
  const std::vector<std::string>& spines() const { return spines_; }
  // Index into leaves() and spines(); -1 for an unknown node.
  int LeafOf(NodeId node) const;
  int SpineOfLeaf(int leaf) const { return leaf_spine_[static_cast<size_t>(leaf)]; }
  // Distinct leaves and spines that a set of nodes spans.
  int LeavesSpanned(const std::vector<NodeId>& nodes) const;
  int SpinesSpanned(const std::vector<NodeId>& nodes) const;

 private:
  std::vector<Leaf> leaves_;
  std::vector<std::string> spines_;
  std::vector<int> leaf_spine_;
  std::unordered_map<NodeId, int> leaf_of_;
};

}  // namespace shoal
