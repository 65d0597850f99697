// Shoal's cluster file (TOML): the nodes, partitions, accounts and network of
// a cluster, for the simulator and `shoal plan`. Every key but `nodes` is
// optional:
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
// Unknown keys are errors (config/toml_reader.h), so a typo cannot silently
// drop a setting. Errors read "file:line: table.key: what is wrong";
// [[nodes]], [[partition]] and [[account]] tables are numbered from 1
// (nodes[2] is the second group). Node ids are NodeId(1..N) in file order.
//
// The node lists of the public traces are read by trace/clusters.h, which
// also loads cluster files by path.
#pragma once

#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"

namespace shoal::config {

class TableReader;

// How nodes without a place are laid out under leaf and spine switches.
struct NetworkLayout {
  int nodes_per_leaf = 32;
  int leaves_per_spine = 16;
};

// Parses a cluster file; `origin` names the source in errors, and the file's
// stem is the cluster's name when the file has no `name`.
Result<Cluster> ParseClusterToml(std::string_view text, std::string_view origin);

// Reads the [[account]] and [[partition]] tables of `top` (a cluster file's or
// the server configuration's) into `cluster`: at least one partition (an
// implied "default" when there are none) and exactly one default. Returns
// whether the default partition was implied.
Result<bool> ReadPartitionsAndAccounts(const TableReader& top, Cluster& cluster);

// Reads the [[power_budget]] tables (name, kw, label) and the [power] table
// (gpu_idle_fraction, node_idle_w) of `top` into `cluster` (docs/power.md).
Status ReadPower(const TableReader& top, Cluster& cluster);

// Puts the nodes whose `placed` is false under leaves in order,
// `nodes_per_leaf` to a leaf and `leaves_per_spine` leaves to a spine.
void PlaceInOrder(std::vector<Node>& nodes, const std::vector<bool>& placed,
                  const NetworkLayout& layout);

// A partition "default" marked as the default, for clusters that define none.
Partition ImpliedPartition();

}  // namespace shoal::config
