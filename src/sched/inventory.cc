#include "sched/inventory.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/strings.h"
#include "core/topology.h"

namespace shoal::sched {

namespace {

// A layout fingerprint: the same cluster layout gives the same version.
uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}
uint64_t HashString(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : s)
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

}  // namespace

uint64_t InvNode::GpusOfModels(uint64_t model_mask) const {
  if ((models & ~model_mask) == 0) return all_gpus;  // every GPU qualifies (the usual case)
  uint64_t out = 0;
  for (int g = 0; g < gpu_count; ++g) {
    if (model_mask >> gpu_model[g] & 1) out |= uint64_t{1} << g;
  }
  return out;
}

Result<std::shared_ptr<const Inventory>> Inventory::Build(const Cluster& cluster) {
  SHOAL_RETURN_IF_ERROR(cluster.Validate());
  auto inv = std::make_shared<Inventory>();
  inv->partitions_ = cluster.partitions;
  if (inv->partitions_.empty()) {
    Partition p;
    p.name = "default";
    p.is_default = true;
    inv->partitions_.push_back(p);
  }
  if (inv->partitions_.size() > kMaxPartitions) {
    return InvalidArgument(fmt::format("{} partitions; at most {} are supported",
                                       inv->partitions_.size(), kMaxPartitions));
  }
  for (size_t i = 0; i < inv->partitions_.size(); ++i) {
    if (inv->partitions_[i].is_default) inv->default_partition_ = static_cast<int>(i);
  }
  std::map<std::string, int> model_index;
  std::map<std::string, int> label_index;
  const Topology topology = Topology::FromNodes(cluster.nodes);
  for (const Topology::Leaf& leaf : topology.leaves()) {
    inv->leaves_.push_back(leaf.name);
    inv->leaf_nodes_.emplace_back();
  }
  for (size_t l = 0; l < topology.leaves().size(); ++l) {
    inv->leaf_spine_.push_back(static_cast<uint32_t>(topology.SpineOfLeaf(static_cast<int>(l))));
  }
  inv->spines_ = topology.spines();
  uint64_t version = HashString(cluster.name);
  inv->nodes_.reserve(cluster.nodes.size());
  for (const Node& node : cluster.nodes) {
    InvNode n;
    n.id = node.id;
    n.index = static_cast<uint32_t>(inv->nodes_.size());
    n.name = node.name;
    n.cpu_milli = node.cpu_milli;
    n.mem_mib = node.memory_mib;
    n.gpu_count = node.GpuCount();
    n.all_gpus = n.gpu_count == 64 ? ~uint64_t{0} : (uint64_t{1} << n.gpu_count) - 1;
    if (node.partitions.empty()) {
      n.partitions = uint64_t{1} << inv->default_partition_;
    }
    for (const std::string& p : node.partitions)
      n.partitions |= uint64_t{1} << inv->PartitionIndex(p);
    for (const std::string& l : node.labels) {
      auto [it, inserted] = label_index.emplace(l, static_cast<int>(label_index.size()));
      if (it->second >= kMaxLabels) {
        return InvalidArgument(fmt::format("more than {} distinct node labels", kMaxLabels));
      }
      n.labels.Set(it->second);
      version = Mix(version, HashString(l));
    }
    std::map<int, uint64_t> islands;
    for (int g = 0; g < n.gpu_count; ++g) {
      const Gpu& gpu = node.gpus[g];
      auto [it, inserted] = model_index.emplace(gpu.model, static_cast<int>(model_index.size()));
      if (it->second >= kMaxModels) {
        return InvalidArgument(fmt::format("more than {} distinct GPU models", kMaxModels));
      }
      n.gpu_model.push_back(static_cast<uint8_t>(it->second));
      n.models |= uint64_t{1} << it->second;
      islands[gpu.nvlink_island] |= uint64_t{1} << g;
      version = Mix(version, HashString(gpu.model) + static_cast<uint64_t>(gpu.nvlink_island));
    }
    for (auto& [island, mask] : islands)
      n.island_masks.push_back(mask);
    n.idle_w = cluster.power.node_idle_w;
    for (const Gpu& gpu : node.gpus) {
      n.gpu_rated_w.push_back(gpu.rated_w);
      n.idle_w += cluster.power.gpu_idle_fraction * gpu.rated_w;
    }
    for (size_t b = 0; b < cluster.power_budgets.size() && b < kMaxPowerBudgets; ++b) {
      const std::string& label = cluster.power_budgets[b].label;
      if (label.empty() ||
          std::find(node.labels.begin(), node.labels.end(), label) != node.labels.end()) {
        n.power_budgets |= uint64_t{1} << b;
      }
    }
    n.leaf = static_cast<uint32_t>(topology.LeafOf(node.id));
    n.spine = inv->leaf_spine_[n.leaf];
    inv->leaf_nodes_[n.leaf].push_back(static_cast<NodeIndex>(inv->nodes_.size()));
    inv->max_gpus_per_node_ = std::max(inv->max_gpus_per_node_, n.gpu_count);
    inv->total_gpus_ += n.gpu_count;
    version = Mix(version, HashString(n.name));
    version = Mix(version, n.partitions);
    version =
        Mix(version, static_cast<uint64_t>(n.cpu_milli) * 31 + static_cast<uint64_t>(n.mem_mib));
    version = Mix(version, static_cast<uint64_t>(n.leaf) << 32 | n.spine);
    inv->by_id_[node.id.value()] = static_cast<NodeIndex>(inv->nodes_.size());
    inv->by_name_[node.name] = static_cast<NodeIndex>(inv->nodes_.size());
    inv->nodes_.push_back(std::move(n));
  }
  // Node ids are mostly 1..N: then a vector finds a node's index without hashing.
  uint32_t max_id = 0;
  for (const auto& [id, index] : inv->by_id_)
    max_id = std::max(max_id, id);
  if (max_id <= 2 * inv->nodes_.size() + 1024) {
    inv->dense_ids_.assign(size_t{max_id} + 1, kNoNode);
    for (const auto& [id, index] : inv->by_id_)
      inv->dense_ids_[id] = index;
    inv->by_id_.clear();
  }
  inv->models_.resize(model_index.size());
  for (auto& [name, i] : model_index)
    inv->models_[i] = name;
  inv->labels_.resize(label_index.size());
  for (auto& [name, i] : label_index)
    inv->labels_[i] = name;
  for (const Partition& p : inv->partitions_)
    version = Mix(version, HashString(p.name));
  inv->gpu_idle_fraction_ = cluster.power.gpu_idle_fraction;
  for (size_t b = 0; b < cluster.power_budgets.size(); ++b) {
    InvPowerBudget budget{cluster.power_budgets[b].name, cluster.power_budgets[b].watts,
                          NodeBitset(inv->nodes_.size())};
    for (const InvNode& n : inv->nodes_) {
      if (n.power_budgets >> b & 1) budget.nodes.Set(n.index);
    }
    inv->power_budgets_.push_back(std::move(budget));
  }
  inv->version_ = version;
  return std::shared_ptr<const Inventory>(std::move(inv));
}

int Inventory::PartitionIndex(std::string_view name) const {
  for (size_t i = 0; i < partitions_.size(); ++i) {
    if (partitions_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::optional<NodeIndex> Inventory::IndexOfSparse(NodeId id) const {
  auto it = by_id_.find(id.value());
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

std::optional<NodeIndex> Inventory::IndexOfName(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

Result<uint64_t> Inventory::ModelMask(const std::vector<std::string>& requested) const {
  uint64_t all = models_.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << models_.size()) - 1;
  if (requested.empty()) {
    // Any whole GPU: a MIG slice is only for a job that names its profile.
    uint64_t whole = 0;
    for (size_t m = 0; m < models_.size(); ++m) {
      if (models_[m].find('/') == std::string::npos) whole |= uint64_t{1} << m;
    }
    return whole;
  }
  uint64_t mask = 0;
  for (const std::string& r : requested) {
    uint64_t matched = 0;
    for (size_t m = 0; m < models_.size(); ++m) {
      if (GpuModelMatches(r, models_[m])) matched |= uint64_t{1} << m;
    }
    if (matched == 0) {
      return Unsatisfiable(
          fmt::format("no node has GPU model '{}' (the cluster has: {})", r, ModelNames(all)));
    }
    mask |= matched;
  }
  return mask;
}

namespace {

// "[a|b]" -> "a|b".
std::string_view StripBrackets(std::string_view term) {
  if (term.starts_with('[') && term.ends_with(']')) return term.substr(1, term.size() - 2);
  return term;
}

}  // namespace

Result<LabelMask> Inventory::Labels(const std::vector<std::string>& constraints) const {
  LabelMask mask;
  for (const std::string& c : constraints) {
    if (c.find('|') != std::string::npos) continue;  // a choice: LabelChoices, MatchingChoices
    if (c.find('*') != std::string::npos) continue;  // counts: LabelCounts
    auto it = std::find(labels_.begin(), labels_.end(), c);
    if (it == labels_.end()) return Unsatisfiable(fmt::format("no node has label '{}'", c));
    mask.Set(static_cast<int>(it - labels_.begin()));
  }
  return mask;
}

Result<std::vector<LabelMask>> Inventory::LabelChoices(
    const std::vector<std::string>& constraints) const {
  std::vector<LabelMask> out;
  for (const std::string& c : constraints) {
    if (c.find('|') == std::string::npos || c.find('*') != std::string::npos) continue;
    // Labels no node has are choices no node takes; all of them: none. A
    // matching choice "[a|b]" admits the nodes with either here, too.
    LabelMask mask;
    for (std::string_view label : Split(StripBrackets(c), '|')) {
      auto it = std::find(labels_.begin(), labels_.end(), label);
      if (it != labels_.end()) mask.Set(static_cast<int>(it - labels_.begin()));
    }
    if (mask.empty()) return Unsatisfiable(fmt::format("no node has any of the labels '{}'", c));
    out.push_back(mask);
  }
  return out;
}

std::vector<LabelMask> Inventory::MatchingChoices(
    const std::vector<std::string>& constraints) const {
  std::vector<LabelMask> out;
  for (const std::string& c : constraints) {
    if (!c.starts_with('[') || c.find('*') != std::string::npos) continue;
    for (std::string_view label : Split(StripBrackets(c), '|')) {
      auto it = std::find(labels_.begin(), labels_.end(), label);
      if (it == labels_.end()) continue;  // a choice no node takes (LabelChoices: not all)
      LabelMask mask;
      mask.Set(static_cast<int>(it - labels_.begin()));
      out.push_back(mask);
    }
  }
  return out;
}

Result<std::vector<CountedLabel>> Inventory::LabelCounts(const ConstraintCounts& counts) const {
  std::vector<CountedLabel> out;
  for (const ConstraintCounts::Term& t : counts.terms) {
    auto it = std::find(labels_.begin(), labels_.end(), t.label);
    if (it == labels_.end()) return Unsatisfiable(fmt::format("no node has label '{}'", t.label));
    CountedLabel c;
    c.label.Set(static_cast<int>(it - labels_.begin()));
    c.count = t.count;
    out.push_back(c);
  }
  return out;
}

std::string Inventory::LabelNames(const LabelMask& mask) const {
  std::string out;
  for (size_t i = 0; i < labels_.size(); ++i) {
    if (!(mask.bits[i >> 6] >> (i & 63) & 1)) continue;
    if (!out.empty()) out += '|';
    out += labels_[i];
  }
  return out;
}

std::string Inventory::ModelNames(uint64_t mask) const {
  std::string out;
  for (size_t m = 0; m < models_.size(); ++m) {
    if (!(mask >> m & 1)) continue;
    if (!out.empty()) out += ", ";
    out += models_[m];
  }
  return out.empty() ? "none" : out;
}

}  // namespace shoal::sched
