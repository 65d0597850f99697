#include "trace/cluster_file.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "catalog/profiles.h"
#include "core/strings.h"
#include "core/time.h"
#include "trace/text_file.h"

namespace shoal::trace {

namespace {

constexpr int kMaxNodesPerGroup = 100'000;

// ---------------------------------------------------------------------------
// Reading TOML tables with errors that point at the line.

// One table of the file and its name in errors ("nodes[2]"). It reads values
// of the expected type or fails with the file, line and key.
class TableReader {
 public:
  TableReader(std::string_view origin, const toml::table& table, std::string where)
      : origin_(origin), table_(table), where_(std::move(where)) {}

  Status Error(std::string_view key, std::string_view message) const {
    const toml::node* at = key.empty() ? nullptr : table_.get(key);
    int64_t line = at != nullptr ? at->source().begin.line : table_.source().begin.line;
    std::string name = where_.empty() ? std::string(key)
                       : key.empty()  ? where_
                                      : fmt::format("{}.{}", where_, key);
    if (name.empty()) return InvalidArgument(fmt::format("{}:{}: {}", origin_, line, message));
    return InvalidArgument(fmt::format("{}:{}: {}: {}", origin_, line, name, message));
  }

  // Fails on the first key that is not in `allowed`, suggesting the nearest one.
  Status CheckKeys(std::initializer_list<std::string_view> allowed) const {
    for (auto&& [key, value] : table_) {
      std::string_view k = key.str();
      if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
      std::string_view nearest;
      size_t best = 3;  // suggest only near misses
      for (std::string_view a : allowed) {
        size_t d = EditDistance(k, a);
        if (d < best) {
          best = d;
          nearest = a;
        }
      }
      std::string where = where_.empty() ? "" : where_ + ": ";
      std::string hint = nearest.empty() ? fmt::format(" (known: {})", JoinViews(allowed))
                                         : fmt::format(" (did you mean '{}'?)", nearest);
      return InvalidArgument(fmt::format("{}:{}: {}unknown key '{}'{}", origin_,
                                         value.source().begin.line, where, k, hint));
    }
    return Status::Ok();
  }

  Result<std::optional<std::string>> String(std::string_view key) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return std::optional<std::string>();
    if (!n->is_string()) return Error(key, "must be a string");
    return std::optional<std::string>(n->as_string()->get());
  }

  Result<std::optional<int64_t>> Int(std::string_view key, int64_t lo, int64_t hi) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return std::optional<int64_t>();
    if (!n->is_integer()) return Error(key, "must be an integer");
    int64_t v = n->as_integer()->get();
    if (v < lo || v > hi) return Error(key, fmt::format("{} is out of range [{}, {}]", v, lo, hi));
    return std::optional<int64_t>(v);
  }

  Result<std::optional<double>> Number(std::string_view key) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return std::optional<double>();
    if (n->is_integer()) return std::optional<double>(static_cast<double>(n->as_integer()->get()));
    if (!n->is_floating_point()) return Error(key, "must be a number");
    return std::optional<double>(n->as_floating_point()->get());
  }

  Result<std::optional<bool>> Bool(std::string_view key) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return std::optional<bool>();
    if (!n->is_boolean()) return Error(key, "must be true or false");
    return std::optional<bool>(n->as_boolean()->get());
  }

  Result<std::optional<std::vector<std::string>>> StringList(std::string_view key) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return std::optional<std::vector<std::string>>();
    const toml::array* array = n->as_array();
    if (array == nullptr) return Error(key, "must be a list of strings, e.g. [\"a\", \"b\"]");
    std::vector<std::string> out;
    for (const toml::node& element : *array) {
      if (!element.is_string()) return Error(key, "must be a list of strings, e.g. [\"a\", \"b\"]");
      out.push_back(element.as_string()->get());
    }
    return std::optional<std::vector<std::string>>(std::move(out));
  }

  // "512G", "80GiB", or an integer number of MiB.
  Result<std::optional<int64_t>> MemoryMib(std::string_view key) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return std::optional<int64_t>();
    if (n->is_integer()) {
      int64_t v = n->as_integer()->get();
      if (v < 0) return Error(key, "must not be negative");
      return std::optional<int64_t>(v);
    }
    if (!n->is_string()) return Error(key, "must be a size such as \"512G\" or an integer of MiB");
    auto mib = ParseMemoryMib(n->as_string()->get());
    if (!mib.ok()) return Error(key, mib.status().message());
    return std::optional<int64_t>(*mib);
  }

  // Slurm time forms ("7-00:00:00", "4h"); an integer is minutes, as in Slurm.
  Result<std::optional<Duration>> TimeLimit(std::string_view key) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return std::optional<Duration>();
    if (n->is_integer()) {
      int64_t minutes = n->as_integer()->get();
      if (minutes < 0) return Error(key, "must not be negative");
      return std::optional<Duration>(std::chrono::minutes(minutes));
    }
    if (!n->is_string()) return Error(key, "must be a time such as \"1-00:00:00\" or \"4h\"");
    auto d = ParseDuration(n->as_string()->get());
    if (!d.ok()) return Error(key, d.status().message());
    return std::optional<Duration>(*d);
  }

  // The tables of an array of tables ([[key]]); empty when the key is absent.
  Result<std::vector<const toml::table*>> Tables(std::string_view key) const {
    std::vector<const toml::table*> out;
    const toml::node* n = table_.get(key);
    if (n == nullptr) return out;
    if (n->is_table())
      return Error(key, fmt::format("write [[{}]] (a list of tables), not [{}]", key, key));
    const toml::array* array = n->as_array();
    if (array == nullptr)
      return Error(key, fmt::format("must be a list of tables, written [[{}]]", key));
    for (const toml::node& element : *array) {
      if (!element.is_table())
        return Error(key, fmt::format("must be a list of tables, written [[{}]]", key));
      out.push_back(element.as_table());
    }
    return out;
  }

 private:
  static std::string JoinViews(std::initializer_list<std::string_view> names) {
    std::string out;
    for (std::string_view n : names) {
      if (!out.empty()) out += ", ";
      out += n;
    }
    return out;
  }

  std::string_view origin_;
  const toml::table& table_;
  std::string where_;
};

// ---------------------------------------------------------------------------
// Placing nodes in the network and checking the result.

// Puts the nodes without a place under leaves in order, `nodes_per_leaf` to a
// leaf and `leaves_per_spine` leaves to a spine.
void PlaceInOrder(std::vector<Node>& nodes, const std::vector<bool>& placed, int nodes_per_leaf,
                  int leaves_per_spine) {
  int k = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (placed[i]) continue;
    int leaf = k / nodes_per_leaf;
    nodes[i].place =
        NetworkPlace{fmt::format("spine{}", leaf / leaves_per_spine), fmt::format("leaf{}", leaf)};
    ++k;
  }
}

Status ValidateWithOrigin(const Cluster& cluster, std::string_view origin) {
  Status status = cluster.Validate();
  if (!status.ok()) return InvalidArgument(fmt::format("{}: {}", origin, status.message()));
  return Status::Ok();
}

Partition DefaultPartition() {
  Partition p;
  p.name = "default";
  p.is_default = true;
  return p;
}

// ---------------------------------------------------------------------------
// Shoal's cluster file.

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
                                     "nvlink_island_size", "numa_nodes", "cpus", "memory"}));
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
    if (labels) node.labels = *labels;
    group.nodes.push_back(std::move(node));
  }
  return group;
}

}  // namespace

namespace {

Result<toml::table> ParseTomlText(std::string_view text, std::string_view origin) {
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("{}:{}:{}: {}", origin, e.source().begin.line,
                                       e.source().begin.column, e.description()));
  }
}

// Accounts and partitions (at least one, exactly one default) into `cluster`.
Status ReadAccountsAndPartitions(const TableReader& top, std::string_view origin, Cluster& cluster,
                                 std::vector<const toml::table*>& partition_tables,
                                 bool& implicit_partition) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<const toml::table*> account_tables, top.Tables("account"));
  for (size_t i = 0; i < account_tables.size(); ++i) {
    TableReader r(origin, *account_tables[i], fmt::format("account[{}]", i + 1));
    SHOAL_ASSIGN_OR_RETURN(Account account, ReadAccount(r));
    for (const Account& a : cluster.accounts) {
      if (a.name == account.name)
        return r.Error("name", fmt::format("account '{}' is defined twice", a.name));
    }
    cluster.accounts.push_back(std::move(account));
  }
  SHOAL_ASSIGN_OR_RETURN(partition_tables, top.Tables("partition"));
  for (size_t i = 0; i < partition_tables.size(); ++i) {
    TableReader r(origin, *partition_tables[i], fmt::format("partition[{}]", i + 1));
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
  implicit_partition = cluster.partitions.empty();
  if (implicit_partition) cluster.partitions.push_back(DefaultPartition());
  if (cluster.partitions.size() == 1) cluster.partitions[0].is_default = true;
  int defaults = 0;
  for (size_t i = 0; i < cluster.partitions.size(); ++i) {
    if (!cluster.partitions[i].is_default) continue;
    if (++defaults > 1) {
      TableReader r(origin, *partition_tables[i], fmt::format("partition[{}]", i + 1));
      return r.Error("default", "a second default partition; exactly one may have default = true");
    }
  }
  if (defaults == 0) {
    TableReader r(origin, *partition_tables[0], "partition[1]");
    return r.Error("", "no partition has default = true; exactly one must");
  }
  return Status::Ok();
}

}  // namespace

// A table of settings ([server], [agent]) as text: strings as they are,
// numbers and booleans written out, lists of strings joined with commas.
Result<std::map<std::string, std::string>> ReadSettings(const TableReader& top,
                                                        const toml::table& root,
                                                        std::string_view table) {
  std::map<std::string, std::string> out;
  const toml::node* n = root.get(table);
  if (n == nullptr) return out;
  if (!n->is_table()) return top.Error(table, fmt::format("must be a table, written [{}]", table));
  for (const auto& [key, value] : *n->as_table()) {
    std::string text_value;
    if (auto sv = value.value<std::string>()) {
      text_value = *sv;
    } else if (auto iv = value.value<int64_t>()) {
      text_value = std::to_string(*iv);
    } else if (auto dv = value.value<double>()) {
      text_value = fmt::format("{}", *dv);
    } else if (auto bv = value.value<bool>()) {
      text_value = *bv ? "true" : "false";
    } else if (const toml::array* list = value.as_array(); list != nullptr) {
      std::vector<std::string> items;
      for (const toml::node& item : *list) {
        auto text = item.value<std::string>();
        if (!text)
          return top.Error(table, fmt::format("'{}' must be a list of strings", key.str()));
        items.push_back(*text);
      }
      text_value = Join(items, ",");
    } else {
      return top.Error(
          table,
          fmt::format("'{}' must be a string, number, boolean or list of strings", key.str()));
    }
    out[std::string(key.str())] = text_value;
  }
  return out;
}

Result<ServerFile> ParseServerToml(std::string_view text, std::string_view origin) {
  SHOAL_ASSIGN_OR_RETURN(toml::table root, ParseTomlText(text, origin));
  TableReader top(origin, root, "");
  SHOAL_RETURN_IF_ERROR(top.CheckKeys({"server", "partition", "account"}));
  ServerFile out;
  std::vector<const toml::table*> partition_tables;
  bool implicit = false;
  SHOAL_RETURN_IF_ERROR(
      ReadAccountsAndPartitions(top, origin, out.cluster, partition_tables, implicit));
  SHOAL_ASSIGN_OR_RETURN(out.server, ReadSettings(top, root, "server"));
  return out;
}

Result<std::map<std::string, std::string>> ParseSettingsToml(std::string_view text,
                                                             std::string_view origin,
                                                             std::string_view table) {
  SHOAL_ASSIGN_OR_RETURN(toml::table root, ParseTomlText(text, origin));
  TableReader top(origin, root, "");
  SHOAL_RETURN_IF_ERROR(top.CheckKeys({table}));
  return ReadSettings(top, root, table);
}

Result<Cluster> ParseClusterToml(std::string_view text, std::string_view origin) {
  SHOAL_ASSIGN_OR_RETURN(toml::table root, ParseTomlText(text, origin));
  TableReader top(origin, root, "");
  SHOAL_RETURN_IF_ERROR(top.CheckKeys({"name", "network", "partition", "account", "nodes"}));

  Cluster cluster;
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> name, top.String("name"));
  cluster.name = name.value_or(FileStem(origin));

  ClusterLoadOptions network;
  if (const toml::node* n = root.get("network"); n != nullptr) {
    if (!n->is_table()) return top.Error("network", "must be a table, written [network]");
    TableReader r(origin, *n->as_table(), "network");
    SHOAL_RETURN_IF_ERROR(r.CheckKeys({"nodes_per_leaf", "leaves_per_spine"}));
    SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> per_leaf, r.Int("nodes_per_leaf", 1, 100'000));
    SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> per_spine, r.Int("leaves_per_spine", 1, 100'000));
    if (per_leaf) network.nodes_per_leaf = static_cast<int>(*per_leaf);
    if (per_spine) network.leaves_per_spine = static_cast<int>(*per_spine);
  }

  std::vector<const toml::table*> partition_tables;
  bool implicit_partition = false;
  SHOAL_RETURN_IF_ERROR(
      ReadAccountsAndPartitions(top, origin, cluster, partition_tables, implicit_partition));
  const Partition* default_partition = cluster.DefaultPartition();

  SHOAL_ASSIGN_OR_RETURN(std::vector<const toml::table*> node_tables, top.Tables("nodes"));
  if (node_tables.empty()) return top.Error("", "a cluster needs at least one [[nodes]] table");
  std::vector<TableReader> readers;
  readers.reserve(node_tables.size());
  for (size_t i = 0; i < node_tables.size(); ++i) {
    readers.emplace_back(origin, *node_tables[i], fmt::format("nodes[{}]", i + 1));
  }
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
  PlaceInOrder(cluster.nodes, placed, network.nodes_per_leaf, network.leaves_per_spine);
  SHOAL_RETURN_IF_ERROR(ValidateWithOrigin(cluster, origin));
  return cluster;
}

namespace {

// ---------------------------------------------------------------------------
// Node lists and cluster specs of the public traces.

// GPU memory of the models the node lists name, where the name or the vendor
// says it; models the traces do not disclose (G2, G3, MISC, GPU-series-N) get 0.
int64_t KnownGpuMemoryMib(std::string_view model) {
  static constexpr std::pair<std::string_view, int64_t> kKnown[] = {
      {"K80", 12 * 1024},  // per GPU of the dual-GPU board
      {"P100", 16 * 1024},
      {"T4", 16 * 1024},
      {"V100", 16 * 1024},  // PAI and Gavel V100s are the 16 GB part
      {"V100M16", 16 * 1024},
      {"V100M32", 32 * 1024},
      {"A10", 24 * 1024},
      {"A100-SXM4-80GB", 80 * 1024},
      {"A800-SXM4-80GB", 80 * 1024},
      {"H800", 80 * 1024},
  };
  for (const auto& [name, mib] : kKnown) {
    if (name == model) return mib;
  }
  return 0;
}

// One row of a node list, in the trace's own terms.
struct ListedNode {
  std::string name;
  std::string model;
  int gpus = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
};

Result<Cluster> BuildListCluster(std::string name, const std::vector<ListedNode>& listed,
                                 const ClusterLoadOptions& options, std::string_view origin) {
  if (options.nodes_per_leaf < 1 || options.leaves_per_spine < 1) {
    return InvalidArgument("nodes_per_leaf and leaves_per_spine must be at least 1");
  }
  Cluster cluster;
  cluster.name = std::move(name);
  cluster.partitions.push_back(DefaultPartition());
  for (const ListedNode& l : listed) {
    catalog::NodeProfile spec;
    spec.gpu_model = l.model;
    spec.gpus = l.gpus;
    spec.gpu_memory_mib = KnownGpuMemoryMib(l.model);
    spec.nvlink_island_size = 0;  // the lists say nothing of links: one island
    spec.numa_nodes = 1;
    spec.cpu_milli = l.cpu_milli;
    spec.memory_mib = l.memory_mib;
    Node node = catalog::MakeNode(spec, l.name);
    node.id = NodeId(static_cast<uint32_t>(cluster.nodes.size() + 1));
    node.partitions = {"default"};
    cluster.nodes.push_back(std::move(node));
  }
  PlaceInOrder(cluster.nodes, std::vector<bool>(cluster.nodes.size(), false),
               options.nodes_per_leaf, options.leaves_per_spine);
  SHOAL_RETURN_IF_ERROR(ValidateWithOrigin(cluster, origin));
  return cluster;
}

using RowReader = Status (*)(const std::vector<std::string_view>& fields, ListedNode& node);

// Reads the rows of a node list whose header is exactly `header`, handing the
// fields of each row to `read_row`.
Result<std::vector<ListedNode>> ReadList(const TextFile& file, std::string_view header,
                                         RowReader read_row) {
  LineCursor cursor(file);
  cursor.Next();  // the header, checked by the caller
  size_t columns = Split(header, ',').size();
  std::vector<ListedNode> out;
  while (cursor.Next()) {
    std::vector<std::string_view> f = cursor.Fields(',');
    if (f.size() != columns) {
      return cursor.Error(
          fmt::format("expected {} columns ({}), found {}", columns, header, f.size()));
    }
    ListedNode node;
    Status s = read_row(f, node);
    if (!s.ok()) return cursor.Error(s.message());
    if (node.name.empty()) return cursor.Error("the node has no name");
    if (node.gpus < 0 || node.gpus > kMaxGpusPerNode) {
      return cursor.Error(
          fmt::format("{} GPUs is out of range [0, {}]", node.gpus, kMaxGpusPerNode));
    }
    if (node.cpu_milli < 0 || node.memory_mib < 0) return cursor.Error("negative CPUs or memory");
    out.push_back(std::move(node));
  }
  return out;
}

Result<int64_t> Number(std::string_view field, std::string_view column) {
  auto v = ParseInt(field);
  if (!v.ok()) return InvalidArgument(fmt::format("{}: '{}' is not an integer", column, field));
  if (*v < 0) return InvalidArgument(fmt::format("{}: {} is negative", column, *v));
  return *v;
}

constexpr std::string_view kOpenbHeader = "sn,cpu_milli,memory_mib,gpu,model";
constexpr std::string_view kPaiHeader = "machine,gpu_type,cap_cpu,cap_mem,cap_gpu";
constexpr std::string_view kSpotHeader = "gpu_model,gpu_capacity_num,cpu_num,node_name";

Status ReadOpenbRow(const std::vector<std::string_view>& f, ListedNode& n) {
  n.name = std::string(f[0]);
  SHOAL_ASSIGN_OR_RETURN(n.cpu_milli, Number(f[1], "cpu_milli"));
  SHOAL_ASSIGN_OR_RETURN(n.memory_mib, Number(f[2], "memory_mib"));
  SHOAL_ASSIGN_OR_RETURN(int64_t gpus, Number(f[3], "gpu"));
  n.gpus = static_cast<int>(std::min<int64_t>(gpus, kMaxGpusPerNode + 1));
  n.model = std::string(f[4]);
  if (n.gpus > 0 && n.model.empty()) return InvalidArgument("a node with GPUs has no model");
  return Status::Ok();
}

Status ReadPaiRow(const std::vector<std::string_view>& f, ListedNode& n) {
  n.name = std::string(f[0]);
  SHOAL_ASSIGN_OR_RETURN(int64_t cores, Number(f[2], "cap_cpu"));
  SHOAL_ASSIGN_OR_RETURN(int64_t mem_gb, Number(f[3], "cap_mem"));
  SHOAL_ASSIGN_OR_RETURN(int64_t gpus, Number(f[4], "cap_gpu"));
  n.cpu_milli = cores * 1000;
  n.memory_mib = mem_gb * 1024;  // the spec's GB are taken as GiB
  n.gpus = static_cast<int>(std::min<int64_t>(gpus, kMaxGpusPerNode + 1));
  // "CPU" marks the CPU-only machines, which have no GPU model.
  if (f[1] != "CPU") n.model = std::string(f[1]);
  if (n.gpus > 0 && n.model.empty()) return InvalidArgument("a machine with GPUs has gpu_type CPU");
  return Status::Ok();
}

Status ReadSpotRow(const std::vector<std::string_view>& f, ListedNode& n) {
  n.model = std::string(f[0]);
  SHOAL_ASSIGN_OR_RETURN(int64_t gpus, Number(f[1], "gpu_capacity_num"));
  SHOAL_ASSIGN_OR_RETURN(int64_t cpus, Number(f[2], "cpu_num"));
  n.gpus = static_cast<int>(std::min<int64_t>(gpus, kMaxGpusPerNode + 1));
  n.cpu_milli = cpus * 1000;
  n.memory_mib = 0;  // the list has no memory column
  // Spot nodes are numbered "0", "1", ...: a prefix keeps names readable.
  n.name = f[3].empty() ? "" : "spot-" + std::string(f[3]);
  return Status::Ok();
}

Result<Cluster> LoadNodeList(const TextFile& file, std::string_view header, RowReader read_row,
                             const ClusterLoadOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<ListedNode> nodes, ReadList(file, header, read_row));
  return BuildListCluster(FileStem(file.path()), nodes, options, file.path());
}

// Gavel's cluster spec: {"philly": ["500:0:0"]}, GPU counts of V100:P100:K80.
Result<Cluster> LoadGavelSpec(const TextFile& file, const ClusterLoadOptions& options) {
  const std::string& path = file.path();
  if (options.gavel_gpus_per_node < 1 || options.gavel_gpus_per_node > kMaxGpusPerNode) {
    return InvalidArgument(fmt::format("gavel_gpus_per_node must be in [1, {}]", kMaxGpusPerNode));
  }
  std::string trace_name;
  std::string spec;
  try {
    nlohmann::ordered_json doc = nlohmann::ordered_json::parse(file.text());
    if (!doc.is_object() || doc.size() != 1) {
      return InvalidArgument(fmt::format(
          "{}: a Gavel cluster spec is an object with one entry, "
          "{{\"name\": [\"v100:p100:k80\"]}}; this file has {}",
          path,
          doc.is_object() ? std::to_string(doc.size()) + " entries" : std::string("no object")));
    }
    auto it = doc.begin();
    trace_name = it.key();
    const nlohmann::ordered_json& specs = it.value();
    if (!specs.is_array() || specs.size() != 1 || !specs[0].is_string()) {
      return InvalidArgument(fmt::format(
          "{}: \"{}\" must list exactly one spec such as \"300:300:300\"", path, trace_name));
    }
    spec = specs[0].get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }

  std::vector<std::string_view> counts = Split(spec, ':');
  if (counts.size() != 3) {
    return InvalidArgument(fmt::format("{}: '{}' is not a V100:P100:K80 GPU count", path, spec));
  }
  static constexpr std::string_view kModels[] = {"V100", "P100", "K80"};
  // Gavel's simulator gives jobs GPUs only; the host figures are the per-GPU
  // share of an AWS p3.16xlarge (64 vCPUs, 488 GiB for 8 GPUs) so that nodes
  // are not empty of CPUs and memory.
  constexpr int64_t kCpuMilliPerGpu = 8000;
  constexpr int64_t kMemoryMibPerGpu = int64_t{61} * 1024;
  std::vector<ListedNode> nodes;
  for (size_t m = 0; m < 3; ++m) {
    auto count = ParseInt(counts[m]);
    if (!count.ok() || *count < 0 || *count > 10'000'000) {
      return InvalidArgument(fmt::format("{}: '{}' is not a V100:P100:K80 GPU count", path, spec));
    }
    int64_t left = *count;
    int64_t total_nodes = (left + options.gavel_gpus_per_node - 1) / options.gavel_gpus_per_node;
    int width = std::max<int>(3, static_cast<int>(std::to_string(total_nodes).size()));
    for (int64_t i = 1; left > 0; ++i) {
      ListedNode n;
      n.gpus = static_cast<int>(std::min<int64_t>(left, options.gavel_gpus_per_node));
      left -= n.gpus;
      n.model = std::string(kModels[m]);
      n.name = fmt::format("{}-{:0{}}", ToLower(kModels[m]), i, width);
      n.cpu_milli = kCpuMilliPerGpu * n.gpus;
      n.memory_mib = kMemoryMibPerGpu * n.gpus;
      nodes.push_back(std::move(n));
    }
  }
  return BuildListCluster(trace_name, nodes, options, path);
}

}  // namespace

Result<Cluster> LoadCluster(const std::string& path, const ClusterLoadOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(TextFile file, TextFile::Read(path));
  std::string ext = FileExtension(path);
  if (ext == "toml") return ParseClusterToml(file.text(), path);
  if (ext == "json") return LoadGavelSpec(file, options);
  std::string_view header = Trim(file.FirstLine());
  if (header == kOpenbHeader) return LoadNodeList(file, header, ReadOpenbRow, options);
  if (header == kPaiHeader) return LoadNodeList(file, header, ReadPaiRow, options);
  if (header == kSpotHeader) return LoadNodeList(file, header, ReadSpotRow, options);
  if (header.empty()) return InvalidArgument(fmt::format("{}: the file is empty", path));
  return InvalidArgument(
      fmt::format("{}:1: unknown cluster file (expected a .toml cluster file, a .json Gavel "
                  "cluster spec, or a node list "
                  "with header '{}', '{}' or '{}'), found '{}'",
                  path, kOpenbHeader, kPaiHeader, kSpotHeader, header.substr(0, 80)));
}

}  // namespace shoal::trace
