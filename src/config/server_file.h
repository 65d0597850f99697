// The settings files of Shoal's daemons, read with config/toml_reader.h. The
// settings are handed over as text, for the daemon to apply one by one as it
// does its command-line overrides (server/config.h, agent/config.h).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/cluster.h"
#include "core/status.h"

namespace shoal::config {

// Settings of one table as text: strings as they are, numbers and booleans
// ("true", "false") written out, lists of strings joined with commas.
using Settings = std::map<std::string, std::string>;

// The controller's configuration file: a [server] table of settings, and
// [[partition]] and [[account]] tables written as in a cluster file
// (config/cluster_file.h). It has no [[nodes]]: nodes join by registering.
struct ServerFile {
  Cluster cluster;  // partitions and accounts
  Settings server;  // the [server] table
};
Result<ServerFile> ParseServerToml(std::string_view text, std::string_view origin);
// Reads and parses the file at `path` (NotFound when it cannot be read).
Result<ServerFile> LoadServerFile(const std::string& path);

// A file of one table of settings (the agent's [agent]); other tables are
// errors.
Result<Settings> ParseSettingsToml(std::string_view text, std::string_view origin,
                                   std::string_view table);
Result<Settings> LoadSettingsFile(const std::string& path, std::string_view table);

}  // namespace shoal::config
