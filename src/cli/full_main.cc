// shoal-full: the commands of `shoal` that run for long or carry much (the
// daemons, the simulator, the planner, the benchmarks), with everything they
// link. `shoal` (main.cc) runs this program in its own place for them, with
// the same arguments, so that the commands typed many times a day load none
// of it.
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>&);
};

constexpr Command kCommands[] = {
    {"up", shoal::cli::RunUp},         {"agent", shoal::cli::RunAgent},
    {"doctor", shoal::cli::RunDoctor}, {"server", shoal::cli::RunServer},
    {"sim", shoal::cli::RunSim},       {"bench", shoal::cli::RunBench},
    {"plan", shoal::cli::RunPlan},
};

}  // namespace

int main(int argc, char** argv) {
  // A peer that goes away mid-write is an error to report, not a reason to die.
  std::signal(SIGPIPE, SIG_IGN);
  const std::string name = argc > 1 ? argv[1] : "";
  for (const Command& c : kCommands) {
    if (name == c.name) return c.run(std::vector<std::string>(argv + 2, argv + argc));
  }
  std::fprintf(stderr,
               "shoal-full: '%s' is not one of its commands; `shoal` runs it for up, "
               "agent, doctor, server, sim, bench and plan (shoal --help)\n",
               name.c_str());
  return 2;
}
