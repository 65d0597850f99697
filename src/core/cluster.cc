#include "core/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "core/strings.h"

namespace shoal {

std::string_view NodeStateName(NodeState state) {
  switch (state) {
    case NodeState::kUp:
      return "up";
    case NodeState::kDraining:
      return "draining";
    case NodeState::kDrained:
      return "drained";
    case NodeState::kDown:
      return "down";
  }
  return "unknown";
}

Result<NodeState> ParseNodeState(std::string_view text) {
  std::string s = ToLower(Trim(text));
  if (s == "up" || s == "idle") return NodeState::kUp;
  if (s == "draining") return NodeState::kDraining;
  if (s == "drained" || s == "drain") return NodeState::kDrained;
  if (s == "down") return NodeState::kDown;
  return InvalidArgument(
      fmt::format("unknown node state '{}' (up, draining, drained, down)", text));
}

Result<NetworkPlace> NetworkPlace::Parse(std::string_view text) {
  std::vector<std::string_view> parts = Split(Trim(text), '/');
  for (std::string_view p : parts) {
    if (p.empty())
      return InvalidArgument(fmt::format("'{}' is not a network place (spine/leaf)", text));
  }
  if (parts.size() == 1) return NetworkPlace{"spine0", std::string(parts[0])};
  if (parts.size() == 2) return NetworkPlace{std::string(parts[0]), std::string(parts[1])};
  return InvalidArgument(fmt::format("'{}' is not a network place (spine/leaf)", text));
}

std::string NetworkPlace::ToString() const {
  return spine + "/" + leaf;
}

bool IsValidNodeName(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

bool Partition::AllowsAccount(std::string_view account) const {
  if (allowed_accounts.empty()) return true;
  return std::find(allowed_accounts.begin(), allowed_accounts.end(), account) !=
         allowed_accounts.end();
}

bool Reservation::Allows(std::string_view user, std::string_view account) const {
  return std::find(users.begin(), users.end(), user) != users.end() ||
         (!account.empty() &&
          std::find(accounts.begin(), accounts.end(), account) != accounts.end());
}

Duration Partition::DefaultTimeLimit() const {
  if (default_time.count() > 0) return default_time;
  if (max_time.count() > 0) return max_time;
  return std::chrono::hours(24);
}

Status Cluster::Validate() const {
  std::set<std::string_view> names;
  std::set<uint32_t> ids;
  for (const Node& node : nodes) {
    if (node.name.empty()) return InvalidArgument("a node has no name");
    if (!names.insert(node.name).second) {
      return InvalidArgument(fmt::format("node '{}' is defined twice", node.name));
    }
    if (!ids.insert(node.id.value()).second) {
      return InvalidArgument(
          fmt::format("node '{}' has the id {} of another node", node.name, node.id.value()));
    }
    if (node.GpuCount() > kMaxGpusPerNode) {
      return InvalidArgument(fmt::format("node '{}' has {} GPUs; at most {} are supported",
                                         node.name, node.GpuCount(), kMaxGpusPerNode));
    }
    if (node.cpu_milli < 0 || node.memory_mib < 0) {
      return InvalidArgument(fmt::format("node '{}' has negative CPUs or memory", node.name));
    }
    for (const std::string& p : node.partitions) {
      if (FindPartition(p) == nullptr) {
        return InvalidArgument(fmt::format("node '{}' names unknown partition '{}'", node.name, p));
      }
    }
  }
  std::set<std::string_view> partition_names;
  int defaults = 0;
  for (const Partition& p : partitions) {
    if (p.name.empty()) return InvalidArgument("a partition has no name");
    if (!partition_names.insert(p.name).second) {
      return InvalidArgument(fmt::format("partition '{}' is defined twice", p.name));
    }
    if (p.is_default) ++defaults;
  }
  if (!partitions.empty() && defaults != 1) {
    return InvalidArgument(
        fmt::format("exactly one partition must be the default ({} are)", defaults));
  }
  std::set<std::string_view> account_names;
  for (const Account& a : accounts) {
    if (!account_names.insert(a.name).second) {
      return InvalidArgument(fmt::format("account '{}' is defined twice", a.name));
    }
    if (!(a.shares > 0))
      return InvalidArgument(fmt::format("account '{}' needs shares > 0", a.name));
  }
  if (power_budgets.size() > kMaxPowerBudgets) {
    return InvalidArgument(fmt::format("{} power budgets; at most {} are supported",
                                       power_budgets.size(), kMaxPowerBudgets));
  }
  std::set<std::string_view> budget_names;
  for (const PowerBudget& b : power_budgets) {
    if (b.name.empty()) return InvalidArgument("a power budget has no name");
    if (!budget_names.insert(b.name).second) {
      return InvalidArgument(fmt::format("power budget '{}' is defined twice", b.name));
    }
    if (!(b.watts > 0)) {
      return InvalidArgument(fmt::format("power budget '{}' needs kw > 0", b.name));
    }
  }
  if (!(power.gpu_idle_fraction >= 0 && power.gpu_idle_fraction <= 1)) {
    return InvalidArgument("power gpu_idle_fraction: 0 to 1");
  }
  if (!(power.node_idle_w >= 0)) return InvalidArgument("power node_idle_w: 0 or more watts");
  return Status::Ok();
}

const Partition* Cluster::FindPartition(std::string_view partition) const {
  for (const Partition& p : partitions) {
    if (p.name == partition) return &p;
  }
  return nullptr;
}

const Partition* Cluster::DefaultPartition() const {
  for (const Partition& p : partitions) {
    if (p.is_default) return &p;
  }
  return nullptr;
}

const Node* Cluster::FindNode(std::string_view node_name) const {
  for (const Node& n : nodes) {
    if (n.name == node_name) return &n;
  }
  return nullptr;
}

int Cluster::TotalGpus() const {
  int total = 0;
  for (const Node& n : nodes)
    total += n.GpuCount();
  return total;
}

namespace {

// "h100" names "H100-SXM-80GB": equal, or a prefix that ends at a '-'.
bool NamesGpu(std::string_view requested, std::string_view gpu) {
  if (requested.size() > gpu.size()) return false;
  return EqualsIgnoreCase(requested, gpu.substr(0, requested.size())) &&
         (requested.size() == gpu.size() || gpu[requested.size()] == '-');
}

}  // namespace

bool GpuModelMatches(std::string_view requested, std::string_view model) {
  const size_t slash = model.find('/');
  const size_t asked = requested.find('/');
  if (slash == std::string_view::npos)
    return asked == std::string_view::npos && NamesGpu(requested, model);
  const std::string_view profile = model.substr(slash + 1);
  if (asked == std::string_view::npos) return EqualsIgnoreCase(requested, profile);
  return NamesGpu(requested.substr(0, asked), model.substr(0, slash)) &&
         EqualsIgnoreCase(requested.substr(asked + 1), profile);
}

}  // namespace shoal
