// The cluster compiled for scheduling: every name turned into a small index or
// bit, every node's GPUs into masks, the network into leaf and spine indices.
//
// An Inventory is immutable and shared by every snapshot of the same cluster
// layout; it is rebuilt only when nodes, GPUs, labels or partitions change.
// Node states and GPU health change more often and travel in the Snapshot.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/constraints.h"
#include "core/status.h"
#include "sched/bitset.h"

namespace shoal::sched {

using NodeIndex = uint32_t;

// At most 64 GPU models and 64 partitions per cluster (masks are 64-bit), and
// 128 distinct node labels.
inline constexpr int kMaxModels = 64;
inline constexpr int kMaxPartitions = 64;
inline constexpr int kMaxLabels = 128;

struct LabelMask {
  uint64_t bits[2] = {0, 0};

  void Set(int i) { bits[i >> 6] |= uint64_t{1} << (i & 63); }
  bool Contains(const LabelMask& need) const {
    return (bits[0] & need.bits[0]) == need.bits[0] && (bits[1] & need.bits[1]) == need.bits[1];
  }
  bool Intersects(const LabelMask& o) const {
    return (bits[0] & o.bits[0]) != 0 || (bits[1] & o.bits[1]) != 0;
  }
  bool empty() const { return bits[0] == 0 && bits[1] == 0; }
  friend bool operator==(const LabelMask&, const LabelMask&) = default;
};

// One of Slurm's node counts of --constraint: `count` nodes of the job have `label`.
struct CountedLabel {
  LabelMask label;
  int count = 0;
  friend bool operator==(const CountedLabel&, const CountedLabel&) = default;
};

struct InvNode {
  NodeId id;
  uint32_t index = 0;  // its place in Inventory::nodes()
  std::string name;
  uint64_t partitions = 0;  // bit p: serves partition p
  LabelMask labels;
  uint64_t models = 0;  // bit m: has a GPU of model m
  uint32_t leaf = 0;
  uint32_t spine = 0;
  int64_t cpu_milli = 0;
  int64_t mem_mib = 0;
  int gpu_count = 0;
  uint64_t all_gpus = 0;               // bit i for each GPU index
  std::vector<uint8_t> gpu_model;      // model index of each GPU
  std::vector<uint64_t> island_masks;  // GPUs of each NVLink island
  std::vector<uint64_t>
      model_gpus;  // per model index present: GPUs of that model (kMaxModels long if mixed)
  // Power (sched/power.h): bit b of `power_budgets` when budget b covers
  // it; what it draws with nothing running; each GPU's rated draw.
  uint64_t power_budgets = 0;
  double idle_w = 0;
  std::vector<double> gpu_rated_w;

  // GPUs whose model is in `model_mask`.
  uint64_t GpusOfModels(uint64_t model_mask) const;
};

// A power budget compiled: the nodes it covers and its cap.
struct InvPowerBudget {
  std::string name;
  double watts = 0;
  NodeBitset nodes;
};

class Inventory {
 public:
  static Result<std::shared_ptr<const Inventory>> Build(const Cluster& cluster);

  const std::vector<InvNode>& nodes() const { return nodes_; }
  const InvNode& node(NodeIndex i) const { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  const std::vector<std::string>& models() const { return models_; }
  const std::vector<Partition>& partitions() const { return partitions_; }
  const std::vector<std::string>& leaves() const { return leaves_; }
  const std::vector<std::string>& spines() const { return spines_; }
  uint32_t SpineOfLeaf(uint32_t leaf) const { return leaf_spine_[leaf]; }
  const std::vector<NodeIndex>& LeafNodes(uint32_t leaf) const { return leaf_nodes_[leaf]; }
  const std::vector<InvPowerBudget>& power_budgets() const { return power_budgets_; }
  double gpu_idle_fraction() const { return gpu_idle_fraction_; }
  int max_gpus_per_node() const { return max_gpus_per_node_; }
  int total_gpus() const { return total_gpus_; }
  // Changes whenever the layout changes, so compiled requests can tell they are stale.
  uint64_t version() const { return version_; }

  // -1 when unknown.
  int PartitionIndex(std::string_view name) const;
  int DefaultPartition() const { return default_partition_; }
  std::optional<NodeIndex> IndexOf(NodeId id) const {
    if (dense_ids_.empty()) return IndexOfSparse(id);
    if (id.value() >= dense_ids_.size() || dense_ids_[id.value()] == kNoNode) return std::nullopt;
    return dense_ids_[id.value()];
  }
  std::optional<NodeIndex> IndexOfName(std::string_view name) const;

  // The models that `requested` names (when it is empty, every model of
  // whole GPUs: MIG slices are asked for by profile); an error naming the
  // first model no node has.
  Result<uint64_t> ModelMask(const std::vector<std::string>& requested) const;
  // The labels a job needs; an error naming the first label no node has.
  // A job's constraints: the labels every node needs (entries without '|'),
  // and for each entry "a|b|c" the labels of which a node needs one.
  Result<LabelMask> Labels(const std::vector<std::string>& constraints) const;
  Result<std::vector<LabelMask>> LabelChoices(const std::vector<std::string>& constraints) const;
  // A matching choice "[a|b|c]" (Slurm's: every node of the job has the same
  // one): each label a node has, alone, in the order given; none without one.
  std::vector<LabelMask> MatchingChoices(const std::vector<std::string>& constraints) const;
  // Slurm's node counts ([a*2&b*4]), in the order given; an error naming the
  // first label no node has. Labels, LabelChoices and MatchingChoices skip them.
  Result<std::vector<CountedLabel>> LabelCounts(const ConstraintCounts& counts) const;
  // The names of the labels in `mask`, joined with '|'.
  std::string LabelNames(const LabelMask& mask) const;
  std::string ModelNames(uint64_t mask) const;

 private:
  std::vector<InvNode> nodes_;
  std::vector<std::string> models_;
  std::vector<Partition> partitions_;
  std::vector<std::string> labels_;
  std::vector<std::string> leaves_;
  std::vector<std::string> spines_;
  std::vector<uint32_t> leaf_spine_;
  std::vector<std::vector<NodeIndex>> leaf_nodes_;
  std::vector<InvPowerBudget> power_budgets_;
  double gpu_idle_fraction_ = 0;
  std::optional<NodeIndex> IndexOfSparse(NodeId id) const;

  static constexpr NodeIndex kNoNode = ~NodeIndex{0};
  std::vector<NodeIndex> dense_ids_;  // by node id, when ids are few; else by_id_
  std::unordered_map<uint32_t, NodeIndex> by_id_;
  std::unordered_map<std::string, NodeIndex> by_name_;
  int default_partition_ = -1;
  int max_gpus_per_node_ = 0;
  int total_gpus_ = 0;
  uint64_t version_ = 0;
};

}  // namespace shoal::sched
