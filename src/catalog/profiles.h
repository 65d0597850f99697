// Node profiles: the hardware of common GPU servers, by name ("dgx-h100"),
// with the source of every figure. Cluster files, the simulator and (later)
// the simulated GPU provider and `shoal plan` build nodes from them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"

namespace shoal::catalog {

struct NodeProfile {
  std::string_view name;       // "dgx-h100"
  std::string_view gpu_model;  // canonical model name, e.g. "H100-SXM-80GB"
  int gpus = 0;
  int64_t gpu_memory_mib = 0;
  int nvlink_island_size = 0;  // GPUs per NVLink/NVSwitch island; 1: PCIe only
  int numa_nodes = 1;          // GPUs are spread evenly over them
  int64_t cpu_milli = 0;       // hardware threads x 1000
  int64_t memory_mib = 0;      // host memory
  double gpu_tdp_w = 0;        // per GPU
  std::string_view source;     // where the figures come from
};

// Every profile Shoal knows.
const std::vector<NodeProfile>& Profiles();
// Null when unknown.
const NodeProfile* FindProfile(std::string_view name);
std::vector<std::string> ProfileNames();

// A node of the profile, with GPUs indexed 0..n-1, NVLink islands and NUMA
// nodes filled in, and UUIDs derived from the node name.
Node MakeNode(const NodeProfile& profile, std::string name);

// A UUID in NVIDIA's form ("GPU-5f2c1a3b-..."), stable for `key`: the same
// key gives the same UUID on every run and platform.
std::string DerivedUuid(std::string_view prefix, std::string_view key);

}  // namespace shoal::catalog
