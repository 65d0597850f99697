// shoal-step: the supervisor of one job step (see supervisor.h). Started by
// the agent (Steps::Launch) as `shoal-step <steps_dir> <job>.<epoch>`; not
// meant to be run by hand.
#include <cstdio>

#include "agent/launch/supervisor.h"

int main(int argc, char** argv) {
  // First of all: nothing the agent had open (its listening sockets) may
  // live on in a process that outlives it.
  shoal::agent::SanitizeDescriptors();
  if (argc != 3) {
    std::fprintf(stderr, "usage: shoal-step STEPS_DIR JOB.EPOCH (started by the shoal agent)\n");
    return 2;
  }
  return shoal::agent::RunSupervisor(argv[1], argv[2]);
}
