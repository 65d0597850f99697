// The launcher: one long-lived process per steps folder that forks each
// step's supervisor, so that a job's start costs a fork of a small
// single-threaded process instead of an exec (a new process image, the
// dynamic loader, C++ start-up: about 0.6 ms of CPU per job on the
// development machine, a fifth of what a trivial job costs in all).
//
// It is `shoal-step --launcher <steps_dir>`, started by the agent when it
// finds none, in a session of its own; like the supervisors it outlives
// the agent, and a restarted agent uses it again. It listens on
// <steps_dir>/launcher.sock (0600, and it answers only its own uid), takes
// one request per connection:
//
//   "launch <job>.<epoch>\n"  answers kLauncherTook, then forks; the child
//                             becomes the step's supervisor (supervisor.h)
//                             and answers kSupervisorUp once its pid file
//                             is written (the connection closes without it
//                             if it could not start)
//   "quit\n"                  the agent is stopping: exit (supervisors go on)
//
// and reaps the supervisors it forked. It exits after kLauncherIdle without
// a request once none of its supervisors runs, and after serving a request
// once its executable was replaced on disk (an upgrade), so that the next
// launch starts the new one. Only one serves a folder: the one holding
// launcher.lock.
#pragma once

#include <sys/un.h>

#include <chrono>
#include <optional>
#include <span>
#include <string>

namespace shoal::agent {

inline constexpr std::chrono::seconds kLauncherIdle{60};
inline constexpr char kLauncherTook = 'f';
inline constexpr char kSupervisorUp = '1';

// The address of the launcher's socket in `steps_dir`; none when the path
// does not fit a unix socket address (107 bytes).
std::optional<sockaddr_un> LauncherAddress(const std::string& steps_dir);

// The body of `shoal-step --launcher`: says it is listening through the
// pipe on kReadyFd (supervisor.h), then serves until told to quit or idle.
// `title`: the memory of the process's command line (argv[0] to the end of
// the last argument), which each forked supervisor rewrites to name its step.
int RunLauncher(const std::string& steps_dir, std::span<char> title = {});

}  // namespace shoal::agent
