// `shoal server`'s configuration file (TOML): a [server] table, and partitions
// and accounts as in a cluster file.
//
//   [server]
//   listen = "127.0.0.1:6820"
//   state_dir = "/var/lib/shoal"
//   policy = "multifactor"
//   node_timeout = "30s"
//   metrics_public = false   # true: GET /metrics without a token
//   metrics_per_gpu = false  # true: every GPU's DCGM series on GET /metrics too
//   mail_program = "/usr/sbin/sendmail"  # sbatch --mail-type (default: it, if there; "none")
//   [[partition]]
//   name = "gpu"
//   default = true
//   max_time = "7-00:00:00"
//   idle_util_pct = 5        # idle GPUs: under 5 % ...
//   idle_minutes = 30        # ... for 30 minutes (0: off) ...
//   idle_action = "notify"   # ... flag the job ("cancel": and cancel it)
//   require_acceptance = true  # new nodes join drained until `shoal bench --cluster` passes them
#pragma once

#include <map>
#include <string>

#include "core/status.h"
#include "server/server.h"

namespace shoal::server {

// Reads a configuration file into `options` (settings it does not name keep
// their value). Unknown settings are errors.
Status LoadServerConfig(const std::string& path, ServerOptions& options);

// Applies one [server] setting (also used for command-line overrides).
Status ApplyServerSetting(const std::string& key, const std::string& value, ServerOptions& options);

}  // namespace shoal::server
