// CLI11 glue shared by the subcommands that use it (not by the small ones:
// CLI11 is a heavy header).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::cli {

// Parses `raw` (shoal's arguments after the subcommand) with `app`; returns
// the exit code to stop with (0 after --help, 2 on a usage error, told on
// stderr as "<who>: ..."), or -1 to go on.
int ParseApp(CLI::App& app, const std::vector<std::string>& raw, std::string_view who);

}  // namespace shoal::cli
