#include "plan/fabric.h"

#include <fmt/format.h>

#include <cmath>

namespace shoal::plan {

namespace {

int CeilDiv(int64_t a, int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

}  // namespace

Result<Fabric> DesignFatTree(const FabricRequest& r) {
  if (r.nodes < 1 || r.rails < 1 || r.switch_ports < 4 || r.oversubscription < 1) {
    return InvalidArgument(
        "fabric: nodes and rails must be positive, radix >= 4, oversubscription >= 1");
  }
  const int k = r.switch_ports;
  Fabric f;
  f.oversubscription = r.oversubscription;
  // A leaf splits its ports down:up in the oversubscription ratio (32:32 for
  // a non-blocking radix-64 leaf, as in DGX SuperPOD).
  f.leaf_down = static_cast<int>(std::floor(k * r.oversubscription / (r.oversubscription + 1)));
  f.leaf_up = k - f.leaf_down;
  f.nodes_per_su = f.leaf_down;
  f.scalable_units = CeilDiv(r.nodes, f.nodes_per_su);
  f.nics = r.nodes * r.rails;
  f.node_leaf_cables = f.nics;
  f.leaves = r.rails * f.scalable_units;
  if (f.nics <= k) {
    // One switch takes every NIC: no rails, no spines.
    f.tiers = 1;
    f.leaves = 1;
    f.scalable_units = 1;
    f.nodes_per_su = r.nodes;
    f.leaf_down = f.nics;
    f.leaf_up = 0;
  } else {
    // Every leaf fills all its uplinks (SuperPOD cables every port, even in a
    // partly filled SU).
    const int64_t uplinks = static_cast<int64_t>(f.leaves) * f.leaf_up;
    f.leaf_spine_cables = static_cast<int>(uplinks);
    if (f.leaves <= k) {
      // Two tiers: each spine reaches every leaf.
      f.tiers = 2;
      f.spines = CeilDiv(uplinks, k);
    } else {
      // Three tiers: spines give half their ports to leaves, half to cores.
      f.tiers = 3;
      f.spines = CeilDiv(uplinks, k / 2);
      const int64_t spine_up = static_cast<int64_t>(f.spines) * (k / 2);
      f.spine_core_cables = static_cast<int>(spine_up);
      f.cores = CeilDiv(spine_up, k);
      // A core switch reaches every spine group through one port each; past
      // k^3/4 endpoints a fourth tier would be needed.
      const int64_t max_endpoints = static_cast<int64_t>(k) * k * k / 4;
      if (static_cast<int64_t>(f.nics) * 1 > max_endpoints * r.oversubscription) {
        return Unsatisfiable(fmt::format(
            "{} NICs exceed a three-tier fat tree of radix-{} switches ({} endpoints at {}:1)",
            f.nics, k, static_cast<int64_t>(max_endpoints * r.oversubscription),
            r.oversubscription));
      }
    }
  }
  // A module may carry two links: count modules as the hardware has them.
  f.link_ends = 2 * f.Cables();
  const int switch_ends = f.link_ends - f.node_leaf_cables;
  f.transceivers = CeilDiv(f.node_leaf_cables, std::max(1, r.nics_per_optic)) +
                   CeilDiv(switch_ends, std::max(1, r.links_per_switch_optic));
  f.bisection_gbps = f.nics * r.nic_gbps / 2 / r.oversubscription;
  return f;
}

}  // namespace shoal::plan
