// Clusters for the simulator: Shoal's own cluster file (config/cluster_file.h),
// or the node lists and cluster specs that come with the public traces.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"

namespace shoal::trace {

struct ClusterLoadOptions {
  // Node lists carry no network: nodes are placed under leaf switches in order.
  int nodes_per_leaf = 32;
  int leaves_per_spine = 16;
  // Gavel cluster specs count GPUs; they are grouped into nodes of this size.
  int gavel_gpus_per_node = 8;
};

// Detects the kind of file by its name and content: a Shoal cluster file
// (.toml), an Alibaba openb node list, a PAI 2020 machine spec, an Alibaba
// spot-GPU 2026 node list (CSV, by header line), or a Gavel cluster spec (.json).
//
// Node lists become one node per row, named as in the file (spot nodes, which
// are numbered, get the prefix "spot-"), all GPUs of a node in one NVLink
// island and NUMA node, GPU models as the trace spells them (so that a trace's
// GPU-type constraints match), all in partition "default". What a list does not
// say is left 0: GPU memory for models of undisclosed size, and host memory for
// the spot list, which has no memory column.
Result<Cluster> LoadCluster(const std::string& path, const ClusterLoadOptions& options = {});

// A cluster of these GPU models in these numbers, `gavel_gpus_per_node` to a
// node (the last node of a model holds what is left), named <model>-NNN,
// with the host figures of a Gavel cluster spec's nodes. What a Gavel spec
// builds; also the candidates of `shoal plan mix`.
Result<Cluster> ModelMixCluster(const std::string& name,
                                const std::vector<std::pair<std::string, int64_t>>& gpus_by_model,
                                const ClusterLoadOptions& options = {});

}  // namespace shoal::trace
