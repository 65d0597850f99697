// CLI11 glue: every `shoal` subcommand parses its arguments with a CLI::App
// through ParseApp, so that all of them print help and usage errors alike.
// CLI11 is a heavy header: include this only from .cc files.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::cli {

struct ClientFlags;

// Parses `raw` (shoal's arguments after the subcommand) with `app`; returns
// the exit code to stop with (0 after --help, which prints the usage and
// options on stdout; 2 on a usage error, told by UsageError), or -1 to go on.
int ParseApp(CLI::App& app, const std::vector<std::string>& raw, std::string_view who);

// Tells a usage error on stderr as "<who>: <what> (<who> --help)" and returns
// the exit code for it (2). For what ParseApp cannot check, such as a value
// out of range.
int UsageError(std::string_view who, std::string_view what);

// Adds the options of commands that talk to the server (--server, --token,
// --json) to `app`, filling `flags`; help lists them under "Server".
void AddClientFlags(CLI::App& app, ClientFlags& flags);

}  // namespace shoal::cli
