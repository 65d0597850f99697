#include "config/cluster_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "catalog/mig.h"
#include "catalog/profiles.h"
#include "config/toml_reader.h"
#include "core/strings.h"
#include "core/time.h"

namespace shoal::config {

namespace {

constexpr int kMaxNodesPerGroup = 100'000;

// The tables of a cluster file; each reads its keys or fails with their line.

Result<Partition> ReadPartition(const TableReader& r) {
  SHOAL_RETURN_IF_ERROR(
      r.CheckKeys({"name", "default", "up", "max_time", "default_time", "max_nodes_per_job",
                   "max_gpus_per_job", "allowed_accounts", "priority_tier", "idle_util_pct",
                   "idle_minutes", "idle_action", "require_acceptance"}));
  Partition p;
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> name, r.String("name"));
  if (!name || name->empty()) return r.Error("", "a partition needs a name");
  p.name = *name;
  SHOAL_ASSIGN_OR_RETURN(std::optional<bool> is_default, r.Bool("default"));
  p.is_default = is_default.value_or(false);
  SHOAL_ASSIGN_OR_RETURN(std::optional<bool> up, r.Bool("up"));
  p.up = up.value_or(true);
  SHOAL_ASSIGN_OR_RETURN(std::optional<Duration> max_time, r.TimeLimit("max_time"));
  p.max_time = max_time.value_or(Duration(0));
  SHOAL_ASSIGN_OR_RETURN(std::optional<Duration> default_time, r.TimeLimit("default_time"));
  p.default_time = default_time.value_or(Duration(0));
  if (p.max_time.count() > 0 && p.default_time > p.max_time) {
    return r.Error("default_time", "is longer than max_time");
  }
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> max_nodes,
                         r.Int("max_nodes_per_job", 0, 1'000'000));
  p.max_nodes_per_job = static_cast<int>(max_nodes.value_or(0));
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> max_gpus,
                         r.Int("max_gpus_per_job", 0, 100'000'000));
  p.max_gpus_per_job = static_cast<int>(max_gpus.value_or(0));
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> accounts,
                         r.StringList("allowed_accounts"));
  if (accounts) p.allowed_accounts = std::move(*accounts);
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> tier, r.Int("priority_tier", 0, 1000));
  p.priority_tier = static_cast<int>(tier.value_or(0));
  SHOAL_ASSIGN_OR_RETURN(std::optional<double> idle_util, r.Number("idle_util_pct"));
  p.idle_util_pct = idle_util.value_or(p.idle_util_pct);
  if (p.idle_util_pct < 0 || p.idle_util_pct > 100)
    return r.Error("idle_util_pct", "must be 0 to 100");
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> idle_minutes, r.Int("idle_minutes", 0, 1'000'000));
  p.idle_minutes = static_cast<int>(idle_minutes.value_or(p.idle_minutes));
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> idle_action, r.String("idle_action"));
  if (idle_action) {
    if (*idle_action != "notify" && *idle_action != "cancel")
      return r.Error("idle_action", "is notify or cancel");
    p.idle_action = *idle_action;
  }
  SHOAL_ASSIGN_OR_RETURN(std::optional<bool> require_acceptance, r.Bool("require_acceptance"));
  p.require_acceptance = require_acceptance.value_or(false);
  return p;
}

Result<Account> ReadAccount(const TableReader& r) {
  SHOAL_RETURN_IF_ERROR(r.CheckKeys({"name", "shares", "max_gpus"}));
  Account a;
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> name, r.String("name"));
  if (!name || name->empty()) return r.Error("", "an account needs a name");
  a.name = *name;
  SHOAL_ASSIGN_OR_RETURN(std::optional<double> shares, r.Number("shares"));
  a.shares = shares.value_or(1.0);
  if (!(a.shares > 0)) return r.Error("shares", "must be greater than 0");
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> max_gpus, r.Int("max_gpus", 0, 100'000'000));
  a.max_gpus = static_cast<int>(max_gpus.value_or(0));
  return a;
}

// A [[nodes]] group before its nodes are named and placed.
struct NodeGroup {
  std::vector<Node> nodes;
  std::optional<NetworkPlace> place;
  std::optional<std::vector<std::string>> partitions;
};

Result<NodeGroup> ReadNodeGroup(const TableReader& r) {
  SHOAL_RETURN_IF_ERROR(r.CheckKeys({"count", "profile", "prefix", "name", "partitions", "labels",
                                     "place", "gpus", "gpu_model", "gpu_memory",
                                     "nvlink_island_size", "numa_nodes", "cpus", "memory", "mig"}));
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> count, r.Int("count", 1, kMaxNodesPerGroup));
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> profile_name, r.String("profile"));

  // Start from the profile, or from nothing, and apply the keys given.
  catalog::NodeProfile spec;
  std::string default_prefix = "node-";
  if (profile_name) {
    const catalog::NodeProfile* profile = catalog::FindProfile(*profile_name);
    if (profile == nullptr) {
      return r.Error("profile", fmt::format("unknown profile '{}' (known: {})", *profile_name,
                                            Join(catalog::ProfileNames(), ", ")));
    }
    spec = *profile;
    default_prefix = std::string(profile->name) + "-";
  }
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> gpus, r.Int("gpus", 0, kMaxGpusPerNode));
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> gpu_model, r.String("gpu_model"));
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> gpu_memory, r.MemoryMib("gpu_memory"));
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> island,
                         r.Int("nvlink_island_size", 1, kMaxGpusPerNode));
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> numa, r.Int("numa_nodes", 1, 64));
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> cpus, r.Int("cpus", 0, 1'000'000));
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> memory, r.MemoryMib("memory"));
  if (!profile_name) {
    // A node described by hand must say what it has: a forgotten key would
    // otherwise become a node with no CPUs or memory.
    if (!cpus) return r.Error("", "a node group without a profile needs 'cpus'");
    if (!memory) return r.Error("", "a node group without a profile needs 'memory'");
    if (gpus.value_or(0) > 0 && !gpu_model)
      return r.Error("", "a node group with GPUs needs 'gpu_model'");
    if (gpus.value_or(0) > 0 && !gpu_memory)
      return r.Error("", "a node group with GPUs needs 'gpu_memory'");
    spec.nvlink_island_size = 0;  // one island unless told otherwise
    spec.numa_nodes = 1;
  }
  if (gpus) spec.gpus = static_cast<int>(*gpus);
  if (gpu_model) spec.gpu_model = *gpu_model;  // the string outlives MakeNode below
  if (gpu_memory) spec.gpu_memory_mib = *gpu_memory;
  if (island) spec.nvlink_island_size = static_cast<int>(*island);
  if (numa) spec.numa_nodes = static_cast<int>(*numa);
  if (cpus) spec.cpu_milli = *cpus * 1000;
  if (memory) spec.memory_mib = *memory;

  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> prefix, r.String("prefix"));
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> name, r.String("name"));
  if (name && prefix) return r.Error("name", "give either 'name' or 'prefix', not both");
  if (name && count.value_or(1) != 1)
    return r.Error("name", "names one node; use 'prefix' with 'count'");
  if (name && name->empty()) return r.Error("name", "must not be empty");

  // Every GPU of the group split into MIG slices: "7x1g.10gb".
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> mig, r.String("mig"));
  std::vector<std::string> slices;
  if (mig) {
    auto profiles = catalog::ParseMigLayout(*mig, spec.gpu_model);
    if (!profiles.ok()) return r.Error("mig", profiles.status().message());
    slices = std::move(*profiles);
  }

  SHOAL_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> labels, r.StringList("labels"));
  NodeGroup group;
  SHOAL_ASSIGN_OR_RETURN(group.partitions, r.StringList("partitions"));
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> place, r.String("place"));
  if (place) {
    auto parsed = NetworkPlace::Parse(*place);
    if (!parsed.ok()) return r.Error("place", parsed.status().message());
    group.place = *parsed;
  }

  int n = static_cast<int>(count.value_or(1));
  // At least three digits, so that names sort the same as the cluster grows.
  int width = std::max<int>(3, static_cast<int>(std::to_string(n).size()));
  for (int i = 1; i <= n; ++i) {
    std::string node_name =
        name ? *name : fmt::format("{}{:0{}}", prefix.value_or(default_prefix), i, width);
    Node node = catalog::MakeNode(spec, std::move(node_name));
    if (!slices.empty()) {
      catalog::MigLayouts layouts;
      for (const Gpu& g : node.gpus)
        layouts.emplace_back(g.index, slices);
      auto split = catalog::PartitionGpus(node.gpus, layouts);
      if (!split.ok()) return r.Error("mig", split.status().message());
      node.gpus = std::move(*split);
    }
    if (labels) node.labels = *labels;
    group.nodes.push_back(std::move(node));
  }
  return group;
}

}  // namespace

void PlaceInOrder(std::vector<Node>& nodes, const std::vector<bool>& placed,
                  const NetworkLayout& layout) {
  int k = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (placed[i]) continue;
    int leaf = k / layout.nodes_per_leaf;
    nodes[i].place = NetworkPlace{fmt::format("spine{}", leaf / layout.leaves_per_spine),
                                  fmt::format("leaf{}", leaf)};
    ++k;
  }
}

Partition ImpliedPartition() {
  Partition p;
  p.name = "default";
  p.is_default = true;
  return p;
}

Result<bool> ReadPartitionsAndAccounts(const TableReader& top, Cluster& cluster) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<TableReader> account_tables, top.Tables("account"));
  for (const TableReader& r : account_tables) {
    SHOAL_ASSIGN_OR_RETURN(Account account, ReadAccount(r));
    for (const Account& a : cluster.accounts) {
      if (a.name == account.name)
        return r.Error("name", fmt::format("account '{}' is defined twice", a.name));
    }
    cluster.accounts.push_back(std::move(account));
  }
  SHOAL_ASSIGN_OR_RETURN(std::vector<TableReader> partition_tables, top.Tables("partition"));
  for (const TableReader& r : partition_tables) {
    SHOAL_ASSIGN_OR_RETURN(Partition partition, ReadPartition(r));
    for (const Partition& p : cluster.partitions) {
      if (p.name == partition.name) {
        return r.Error("name", fmt::format("partition '{}' is defined twice", p.name));
      }
    }
    if (!cluster.accounts.empty()) {
      for (const std::string& a : partition.allowed_accounts) {
        bool known = std::any_of(cluster.accounts.begin(), cluster.accounts.end(),
                                 [&](const Account& acc) { return acc.name == a; });
        if (!known) return r.Error("allowed_accounts", fmt::format("unknown account '{}'", a));
      }
    }
    cluster.partitions.push_back(std::move(partition));
  }
  const bool implied = cluster.partitions.empty();
  if (implied) cluster.partitions.push_back(ImpliedPartition());
  if (cluster.partitions.size() == 1) cluster.partitions[0].is_default = true;
  int defaults = 0;
  for (size_t i = 0; i < cluster.partitions.size(); ++i) {
    if (!cluster.partitions[i].is_default) continue;
    if (++defaults > 1) {
      return partition_tables[i].Error(
          "default", "a second default partition; exactly one may have default = true");
    }
  }
  if (defaults == 0) {
    return partition_tables[0].Error("", "no partition has default = true; exactly one must");
  }
  return implied;
}

Status ReadPower(const TableReader& top, Cluster& cluster) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<TableReader> budget_tables, top.Tables("power_budget"));
  if (budget_tables.size() > kMaxPowerBudgets) {
    return budget_tables[kMaxPowerBudgets].Error(
        "", fmt::format("at most {} power budgets are supported", kMaxPowerBudgets));
  }
  for (const TableReader& r : budget_tables) {
    SHOAL_RETURN_IF_ERROR(r.CheckKeys({"name", "kw", "label"}));
    PowerBudget b;
    SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> name, r.String("name"));
    if (!name || name->empty()) return r.Error("", "a power budget needs a name");
    b.name = *name;
    for (const PowerBudget& other : cluster.power_budgets) {
      if (other.name == b.name)
        return r.Error("name", fmt::format("power budget '{}' is defined twice", b.name));
    }
    SHOAL_ASSIGN_OR_RETURN(std::optional<double> kw, r.Number("kw"));
    if (!kw) return r.Error("", "a power budget needs 'kw'");
    if (!(*kw > 0) || *kw > 1e7) return r.Error("kw", "must be more than 0 (kilowatts)");
    b.watts = *kw * 1000;
    SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> label, r.String("label"));
    b.label = label.value_or("");
    cluster.power_budgets.push_back(std::move(b));
  }
  SHOAL_ASSIGN_OR_RETURN(std::optional<TableReader> power, top.Table("power"));
  if (!power) return Status::Ok();
  SHOAL_RETURN_IF_ERROR(power->CheckKeys({"gpu_idle_fraction", "node_idle_w"}));
  SHOAL_ASSIGN_OR_RETURN(std::optional<double> idle, power->Number("gpu_idle_fraction"));
  if (idle) {
    if (!(*idle >= 0 && *idle <= 1)) return power->Error("gpu_idle_fraction", "must be 0 to 1");
    cluster.power.gpu_idle_fraction = *idle;
  }
  SHOAL_ASSIGN_OR_RETURN(std::optional<double> node_w, power->Number("node_idle_w"));
  if (node_w) {
    if (!(*node_w >= 0) || *node_w > 1e6)
      return power->Error("node_idle_w", "must be 0 or more (watts)");
    cluster.power.node_idle_w = *node_w;
  }
  return Status::Ok();
}

Result<Cluster> ParseClusterToml(std::string_view text, std::string_view origin) {
  SHOAL_ASSIGN_OR_RETURN(TomlDocument doc, TomlDocument::Parse(text, origin));
  const TableReader top = doc.Root();
  SHOAL_RETURN_IF_ERROR(
      top.CheckKeys({"name", "network", "partition", "account", "nodes", "power_budget", "power"}));

  Cluster cluster;
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> name, top.String("name"));
  cluster.name = name.value_or(std::filesystem::path(origin).stem().string());

  NetworkLayout network;
  SHOAL_ASSIGN_OR_RETURN(std::optional<TableReader> network_table, top.Table("network"));
  if (network_table) {
    const TableReader& r = *network_table;
    SHOAL_RETURN_IF_ERROR(r.CheckKeys({"nodes_per_leaf", "leaves_per_spine"}));
    SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> per_leaf, r.Int("nodes_per_leaf", 1, 100'000));
    SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> per_spine, r.Int("leaves_per_spine", 1, 100'000));
    if (per_leaf) network.nodes_per_leaf = static_cast<int>(*per_leaf);
    if (per_spine) network.leaves_per_spine = static_cast<int>(*per_spine);
  }

  SHOAL_ASSIGN_OR_RETURN(bool implicit_partition, ReadPartitionsAndAccounts(top, cluster));
  SHOAL_RETURN_IF_ERROR(ReadPower(top, cluster));
  const Partition* default_partition = cluster.DefaultPartition();

  SHOAL_ASSIGN_OR_RETURN(std::vector<TableReader> readers, top.Tables("nodes"));
  if (readers.empty()) return top.Error("", "a cluster needs at least one [[nodes]] table");
  std::vector<bool> placed;
  std::set<std::string> names;
  for (const TableReader& r : readers) {
    SHOAL_ASSIGN_OR_RETURN(NodeGroup group, ReadNodeGroup(r));
    std::vector<std::string> partitions;
    if (group.partitions) {
      if (implicit_partition) {
        return r.Error("partitions", "names partitions, but the file defines no [[partition]]");
      }
      for (const std::string& p : *group.partitions) {
        if (cluster.FindPartition(p) == nullptr) {
          std::vector<std::string> known;
          for (const Partition& q : cluster.partitions)
            known.push_back(q.name);
          return r.Error("partitions",
                         fmt::format("unknown partition '{}' (known: {})", p, Join(known, ", ")));
        }
      }
      partitions = *group.partitions;
    } else if (default_partition != nullptr) {
      partitions = {default_partition->name};
    }
    for (Node& node : group.nodes) {
      if (!names.insert(node.name).second) {
        return r.Error("", fmt::format("node '{}' is defined twice", node.name));
      }
      node.id = NodeId(static_cast<uint32_t>(cluster.nodes.size() + 1));
      node.partitions = partitions;
      if (group.place) node.place = *group.place;
      placed.push_back(group.place.has_value());
      cluster.nodes.push_back(std::move(node));
    }
  }
  PlaceInOrder(cluster.nodes, placed, network);
  Status valid = cluster.Validate();
  if (!valid.ok()) return InvalidArgument(fmt::format("{}: {}", origin, valid.message()));
  return cluster;
}

}  // namespace shoal::config
