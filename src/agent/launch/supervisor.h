// The step supervisor: the body of the shoal-step program (step_main.cc),
// one process per job step, started detached by Steps::Launch so that the
// step outlives the agent (as Slurm's slurmstepd does).
//
// What it does, in order: detaches (the process the agent waits for exits
// once the supervisor's pid file is written, and the supervisor goes on
// in a session of its own, re-parented away from the agent); becomes the
// child subreaper of everything the job starts; makes the step's cgroup
// and sets its limits; writes the hostfile (and the batch script); starts
// each task in its own session, in the cgroup, with stdin from /dev/null,
// as the job's user, in the work folder, with stdout/stderr in files the
// user owns and with only the task's environment; waits. On SIGTERM (the
// agent's Stop) it sends SIGTERM to every task's process group and to
// the cgroup, and SIGKILL after the grace period read from the step's
// `stop` file. When the tasks have ended it kills whatever they left
// behind (daemons included), records how the step ended (result.json),
// notifies the agent through the events FIFO, removes the cgroup and exits.
//
// The supervisor is single-threaded; between fork and exec a task's child
// makes only system calls on data prepared before the fork.
#pragma once

#include <string>

namespace shoal::agent {

// Runs the step in <steps_dir>/<name>/ and returns the exit code of the
// calling process: in the process the agent waits for, 0 once the
// supervisor is running (its pid file written), 1 if it could not start;
// the supervisor itself returns 0 after recording how the step ended.
int RunSupervisor(const std::string& steps_dir, const std::string& name);

// Closes every descriptor above 2 (whatever the agent let through) and
// makes sure that 0, 1 and 2 are open, on /dev/null where they were not.
void SanitizeDescriptors();

}  // namespace shoal::agent
