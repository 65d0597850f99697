// The scale-out network of a GPU cluster: a rail-optimised fat tree (leaf,
// spine and, past two tiers, core switches), as NVIDIA's DGX SuperPOD
// reference architectures build it. Pure; thread-safe.
//
// Every node has `rails` NICs; NIC r of every node in a scalable unit (SU)
// goes to the SU's leaf switch r, so an SU is as many nodes as a leaf has
// downlinks. Leaves connect to spines; when leaves outnumber a spine's ports,
// spines are split into groups joined by a core tier. Leaves may be
// oversubscribed (more downlinks than uplinks); spines and cores are not.
#pragma once

#include "core/status.h"

namespace shoal::plan {

struct FabricRequest {
  int nodes = 0;
  int rails = 8;                  // compute NICs per node
  int switch_ports = 64;          // radix of every switch
  double oversubscription = 1.0;  // leaf downlinks per uplink (1: non-blocking)
  double nic_gbps = 400;
  // Links one optical module carries: on the nodes (2: twin-port OSFP
  // serving two NICs) and on the switches (2: 64 ports in 32 OSFP cages).
  int nics_per_optic = 1;
  int links_per_switch_optic = 1;
};

struct Fabric {
  int tiers = 0;         // 1: leaves only; 2: leaf-spine; 3: leaf-spine-core
  int nodes_per_su = 0;  // nodes under one set of rail leaves
  int scalable_units = 0;
  int leaf_down = 0;  // ports per leaf to nodes
  int leaf_up = 0;    // ports per leaf to spines
  int leaves = 0;
  int spines = 0;
  int cores = 0;
  int node_leaf_cables = 0;
  int leaf_spine_cables = 0;
  int spine_core_cables = 0;
  int nics = 0;
  int transceivers = 0;  // optical modules at both ends of every cable
  int link_ends = 0;     // 2 per cable: what optics are priced and powered by
  double bisection_gbps = 0;
  double oversubscription = 1;

  int Switches() const { return leaves + spines + cores; }
  int Cables() const { return node_leaf_cables + leaf_spine_cables + spine_core_cables; }
};

// Fails when the request exceeds three tiers of this radix (k^3/4 endpoints
// non-blocking) or is malformed.
Result<Fabric> DesignFatTree(const FabricRequest& request);

}  // namespace shoal::plan
