// The subcommands of the `shoal` binary. Each takes the arguments after its
// name and returns the process exit code: 0 success, 1 failure, 2 bad usage.
#pragma once

#include <string>
#include <vector>

namespace shoal::cli {

int RunSim(const std::vector<std::string>& args);
int RunServer(const std::vector<std::string>& args);

}  // namespace shoal::cli
