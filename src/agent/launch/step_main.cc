// shoal-step: the launcher of job steps' supervisors (launcher.h), started
// by the agent as `shoal-step --launcher <steps_dir>`; a step's supervisor
// (supervisor.h) is a fork of it. `shoal-step <steps_dir> <job>.<epoch>`
// runs one supervisor directly; `shoal-step --pty-relay ...` is the terminal
// of a `shoal run --pty` step (pty_relay.h). Not meant to be run by hand.
#include <cstdio>
#include <cstring>
#include <span>

#include "agent/launch/launcher.h"
#include "agent/launch/pty_relay.h"
#include "agent/launch/supervisor.h"

int main(int argc, char** argv) {
  // First of all: nothing the agent had open (its listening sockets) may
  // live on in a process that outlives it.
  shoal::agent::SanitizeDescriptors();
  if (argc == 3 && std::strcmp(argv[1], "--launcher") == 0) {
    char* end = argv[2] + std::strlen(argv[2]);  // the arguments lie one after another
    return shoal::agent::RunLauncher(argv[2], std::span<char>(argv[0], end));
  }
  if (argc >= 2 && std::strcmp(argv[1], "--pty-relay") == 0)
    return shoal::agent::RunPtyRelay(argc, argv);
  if (argc == 3 && argv[1][0] != '-') return shoal::agent::RunSupervisor(argv[1], argv[2]);
  std::fprintf(
      stderr,
      "usage: shoal-step --launcher STEPS_DIR | shoal-step STEPS_DIR JOB.EPOCH | shoal-step "
      "--pty-relay INPUT ROWS COLS -- PROGRAM... (started by the shoal agent)\n");
  return 2;
}
