// Clusters for the simulator: Shoal's own cluster file (TOML), or the node
// lists and cluster specs that come with the public traces.
#pragma once

#include <string>
#include <string_view>

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
// spot-GPU 2026 node list (CSV), or a Gavel cluster spec (JSON).
Result<Cluster> LoadCluster(const std::string& path, const ClusterLoadOptions& options = {});

// Parses Shoal's cluster file format; `origin` names the source in errors.
Result<Cluster> ParseClusterToml(std::string_view text, std::string_view origin);

}  // namespace shoal::trace
