// Clusters for the simulator: Shoal's own cluster file (TOML), or the node
// lists and cluster specs that come with the public traces.
//
// The cluster file, every key but `nodes` optional:
//
//   name = "itp-16x8"
//   [network]                  # where nodes without a `place` go, in file order
//   nodes_per_leaf = 8
//   leaves_per_spine = 4
//   [[partition]]              # none: one partition "default" with every node
//   name = "gpu"
//   default = true             # exactly one; implied when there is only one
//   up = true
//   max_time = "7-00:00:00"    # Slurm forms or "4h"; an integer is minutes
//   default_time = "1-00:00:00"
//   max_nodes_per_job = 0      # 0: no limit
//   max_gpus_per_job = 0
//   priority_tier = 0
//   allowed_accounts = ["ml"]
//   [[account]]
//   name = "ml"
//   shares = 2.0
//   max_gpus = 64
//   [[nodes]]                  # a group of identical nodes
//   count = 16                 # default 1
//   profile = "dgx-a100"       # catalog/profiles.h; or describe the node:
//   gpus = 8                   #   gpu_model, gpu_memory ("80G" or MiB),
//   gpu_model = "V100"         #   nvlink_island_size (default: all GPUs),
//   gpu_memory = "32G"         #   numa_nodes (default 1), cpus (threads),
//   cpus = 64                  #   memory ("512G" or MiB). With a profile
//   memory = "512G"            #   these override the profile's figures.
//   prefix = "a100-"           # names a100-001...; default "<profile>-" or "node-"
//   name = "login1"            # instead of prefix, for a group of one
//   partitions = ["gpu"]       # default: the default partition
//   labels = ["ib"]
//   place = "spine1/leaf3"     # the whole group under one leaf
//
// Unknown keys are errors, so a typo cannot silently drop a setting. Errors
// read "file:line: table.key: what is wrong"; [[nodes]], [[partition]] and
// [[account]] tables are numbered from 1 (nodes[2] is the second group).
// Node ids are NodeId(1..N) in file order.
#pragma once

#include <map>
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
// spot-GPU 2026 node list (CSV, by header line), or a Gavel cluster spec (.json).
//
// Node lists become one node per row, named as in the file (spot nodes, which
// are numbered, get the prefix "spot-"), all GPUs of a node in one NVLink
// island and NUMA node, GPU models as the trace spells them (so that a trace's
// GPU-type constraints match), all in partition "default". What a list does not
// say is left 0: GPU memory for models of undisclosed size, and host memory for
// the spot list, which has no memory column.
Result<Cluster> LoadCluster(const std::string& path, const ClusterLoadOptions& options = {});

// Parses Shoal's cluster file format; `origin` names the source in errors.
Result<Cluster> ParseClusterToml(std::string_view text, std::string_view origin);

// The controller's configuration file: a [server] table of settings, and
// [[partition]] and [[account]] tables written as in a cluster file. It has
// no [[nodes]]: nodes join by registering.
struct ServerFile {
  Cluster cluster;                            // partitions and accounts
  std::map<std::string, std::string> server;  // [server] settings, values as text
};
Result<ServerFile> ParseServerToml(std::string_view text, std::string_view origin);

// A file of one table of settings (an agent's [agent]), values as text;
// lists of strings are joined with commas. Other tables are errors.
Result<std::map<std::string, std::string>> ParseSettingsToml(std::string_view text,
                                                             std::string_view origin,
                                                             std::string_view table);

}  // namespace shoal::trace
