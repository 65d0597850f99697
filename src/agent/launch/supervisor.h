// The step supervisor: one process per job step, forked by the launcher
// (launcher.h, in the shoal-step program) for Steps::Launch, so that the
// step outlives the agent (as Slurm's slurmstepd does).
//
// What it does, in order: takes a session of its own, writes its pid file
// and says so to the agent (the launcher forked it; it outlives both the
// launcher and the agent); becomes the child subreaper of everything the
// job starts; makes the step's cgroup
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
// The supervisor is single-threaded; between vfork and exec a task's child
// makes only system calls on data prepared before the vfork.
#pragma once

#include <string>

namespace shoal::agent {

// The descriptor on which the agent waits for the supervisor to be up: it
// reads one byte once the pid file is written, or end-of-file when the
// supervisor could not start.
inline constexpr int kReadyFd = 3;

// Runs the step in <steps_dir>/<name>/, saying it is up (one byte) on
// `ready_fd`: returns 1 if the supervisor could not start, else 0 after
// recording how the step ended. Run in a child of the launcher (launcher.h),
// or as `shoal-step <steps_dir> <name>` by hand.
int RunSupervisor(const std::string& steps_dir, const std::string& name, int ready_fd = kReadyFd);

// For the launcher and the supervisor, first thing: the working folder
// "/", umask 022, SIGCHLD, SIGTERM, SIGINT and SIGHUP blocked (they are
// taken synchronously), SIGPIPE ignored. False when "/" cannot be entered.
bool SettleProcess();

// Closes every descriptor above 2 but the ready pipe (whatever the agent
// let through), and makes sure that 0, 1 and 2 are open, on /dev/null
// where they were not.
void SanitizeDescriptors();

}  // namespace shoal::agent
