// shoal: one command, one subcommand per stage of a GPU cluster's life.
//
// This program carries the commands users type many times a day (submit,
// queue, show, ...): it is linked statically, so that its process loads
// nothing, and starts in well under a millisecond of CPU. The daemons and the heavy tools (server,
// agent, up, sim, plan, bench, doctor) are in `shoal-full` beside it, which
// it runs in its place (exec: same process, same arguments).
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/paths.h"

namespace {

struct Command {
  const char* name;
  // Null: the command is shoal-full's (full_main.cc).
  int (*run)(const std::vector<std::string>&);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"submit", shoal::cli::RunSubmit, "submit a job: a batch script, --wrap=COMMAND, or a command"},
    {"run", shoal::cli::RunRun,
     "run tasks (srun): a step inside a job, or in a new allocation that ends with it"},
    {"alloc", shoal::cli::RunAlloc,
     "hold an allocation (salloc) while a shell or command runs; `shoal run` inside it"},
    {"queue", shoal::cli::RunQueue, "pending and running jobs, why they wait, where they run"},
    {"show", shoal::cli::RunShow, "everything about one job"},
    {"cancel", shoal::cli::RunCancel, "cancel jobs"},
    {"hold", shoal::cli::RunHold, "keep pending jobs from starting"},
    {"release", shoal::cli::RunRelease, "let held jobs start"},
    {"requeue", shoal::cli::RunRequeue, "stop running jobs and queue them again"},
    {"priority", shoal::cli::RunPriority, "set a job's priority (admins)"},
    {"logs", shoal::cli::RunLogs, "a job's output (-f: follow it while it runs)"},
    {"history", shoal::cli::RunHistory, "finished jobs and their GPU-hours"},
    {"speeds", shoal::cli::RunSpeeds,
     "what jobs' progress taught of their speed on each GPU model; forget a job's"},
    {"nodes", shoal::cli::RunNodes, "nodes, their GPUs in use and their state"},
    {"top", shoal::cli::RunTop,
     "every GPU, live: utilisation, memory, power, temperature, job (like nvtop)"},
    {"node", shoal::cli::RunNode, "re-partition a node's GPUs into MIG slices (admins)"},
    {"drain", shoal::cli::RunDrain, "take nodes out of service (admins)"},
    {"resume", shoal::cli::RunResume, "put drained nodes back in service (admins)"},
    {"token", shoal::cli::RunToken, "create, list and revoke API tokens (admins)"},
    {"partition", shoal::cli::RunPartition,
     "list and show partitions; create and change them (admins)"},
    {"account", shoal::cli::RunAccount,
     "list and show accounts: shares, GPU limits, use; create and change them (admins)"},
    {"qos", shoal::cli::RunQos,
     "list and show QoS: priority, per-job and per-user limits, preemption; change them (admins)"},
    {"reservation", shoal::cli::RunReservation,
     "reserve nodes for users, accounts or maintenance (admins); list and show reservations"},
    {"up", nullptr, "a whole cluster on this machine: server and agents (simulated or real GPUs)"},
    {"agent", nullptr, "run the node agent: GPUs, telemetry, job launch"},
    {"doctor", nullptr,
     "check that this host is ready to be a GPU node: driver, fabric, libraries, links"},
    {"server", nullptr, "run the controller: API, scheduler, durable state"},
    {"sim", nullptr, "replay a job trace through the scheduler on a cluster"},
    {"bench", nullptr,
     "measure GPUs, links and NCCL against expected figures; accept nodes (--cluster)"},
    {"plan", nullptr, "size a cluster for a workload: GPUs, nodes, fabric, power, cost"},
};

void Usage(FILE* out) {
  std::fprintf(out, "usage: shoal <command> [options]\n\ncommands:\n");
  for (const Command& c : kCommands)
    std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(out, "\n`shoal <command> --help` describes a command's options.\n");
}

// Runs shoal-full in this process's place with the same arguments; returns
// only when it cannot.
int RunFull(char** argv) {
  const std::string full = shoal::cli::CompanionPath(shoal::cli::kFullBinary);
  ::execv(full.c_str(), argv);
  std::fprintf(stderr, "shoal %s: cannot run %s (%s); it is installed beside shoal\n", argv[1],
               full.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // A peer that goes away mid-write is an error to report, not a reason to die.
  std::signal(SIGPIPE, SIG_IGN);
  // Inside Shoal jobs this binary is also `srun` and `scontrol` (agent/launch).
  const std::string self = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "";
  if (self == "srun") return shoal::cli::RunSrun(std::vector<std::string>(argv + 1, argv + argc));
  if (self == "scontrol")
    return shoal::cli::RunScontrol(std::vector<std::string>(argv + 1, argv + argc));
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    Usage(stdout);
    return 0;
  }
  if (name == "--version" || name == "version") {
    const shoal::cli::DataDirChoice data = shoal::cli::ChooseDataDir();
    std::printf("shoal %s\ndata: %s (%s)\n", SHOAL_VERSION, data.path.c_str(),
                std::string(data.source).c_str());
    return 0;
  }
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    if (c.run == nullptr) return RunFull(argv);
    return c.run(std::vector<std::string>(argv + 2, argv + argc));
  }
  // Told as every command tells a usage error (cli/app.h).
  std::fprintf(stderr, "shoal: unknown command '%s' (shoal --help)\n", name.c_str());
  return 2;
}
