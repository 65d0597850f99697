// The on-disk protocol between the agent (Steps) and a step's supervisor
// (shoal-step). One folder per step, <steps_dir>/<job>.<epoch>/ (0711: the
// user may open the files named below but not list the folder):
//
//   request.json  the agent, before it starts the supervisor (0600: the
//                 job's environment may hold secrets)
//   pid           the supervisor, before Launch returns: "<pid> <start
//                 ticks> <started ms>" (start ticks: /proc/<pid>/stat field
//                 22, which tells a live supervisor from a reused pid)
//   hostfile      the supervisor: the MPI hostfile (0644)
//   script        the supervisor: the batch script (0700, the user's)
//   progress      the supervisor, empty (0600, the user's): the tasks write
//                 their rate of progress to it ($SHOAL_PROGRESS_FILE), the
//                 agent reads its last line (ReadProgressFile)
//   tasks         the supervisor, once every task started: "<pid> <start
//                 ticks>" a line, to clean up after a supervisor killed by force
//   stop          the agent (Stop), before it signals the supervisor:
//                 "<grace ms>"; also read when the supervisor starts
//   result.json   the supervisor, last: how the step ended
//
// and in <steps_dir>: events, the FIFO of change notifications;
// launcher.sock, where the launcher (launcher.h) takes "launch <job>.<epoch>"
// requests; launcher.lock, held by the launcher that serves. Files that a
// reader may see while they are written (pid, tasks, stop, result.json)
// are written to a temporary name and renamed. Thread-safe (no state).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/launch/cgroup.h"
#include "agent/launch/steps.h"
#include "agent/launch/users.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal::agent {

inline constexpr char kRequestFile[] = "request.json";
inline constexpr char kPidFile[] = "pid";
inline constexpr char kHostfileFile[] = "hostfile";
inline constexpr char kScriptFile[] = "script";
inline constexpr char kProgressFile[] = "progress";
inline constexpr char kTasksFile[] = "tasks";
inline constexpr char kStopFile[] = "stop";
// "<signal> <leader_only 0|1>": a signal for the step's tasks, forwarded by
// the supervisor when SIGUSR1 tells it the file is there.
inline constexpr char kSignalFile[] = "signal";
inline constexpr char kResultFile[] = "result.json";
inline constexpr char kEventsFifo[] = "events";
inline constexpr char kLauncherSocket[] = "launcher.sock";
inline constexpr char kLauncherLock[] = "launcher.lock";
// <state_dir>/steps/outputs/journal: where each forgotten step's output went
// and whose it is (StepOutput), so that its log stays readable after the
// step's folder is gone and the agent has restarted. One line a job, "<job>
// <EncodeOutput>", appended (a file a job cost more CPU to make than the rest
// of a job's handling on a disk that has seen many come and go); the newest
// line of a job wins, and the file is rewritten with the newest
// kKeptOutputs jobs when it holds twice that many lines. Earlier releases
// kept a file a job, outputs/<job>: read, and folded into the journal, at
// start.
inline constexpr char kOutputsDir[] = "outputs";
inline constexpr char kOutputsJournal[] = "journal";
inline constexpr size_t kKeptOutputs = 10000;
// The tasks' output of `shoal run` steps: <job>.<epoch>.<step>/task-<rank>.out
// and .err, each folder the job user's; removed with the job's own step.
inline constexpr char kStepOutputsDir[] = "stepout";

// "<job>.<epoch>", and back (nullopt for any other name).
std::string StepDirName(StepKey key);
std::optional<StepKey> ParseStepDirName(std::string_view name);

// What the agent hands a supervisor: the step (its work_dir resolved), the
// user's account as the agent looked it up, and the agent's settings that
// the supervisor enforces too.
struct SupervisorRequest {
  StepRequest step;
  UserAccount account;
  bool allow_root_jobs = false;
  CgroupLayout cgroup;
  std::vector<GpuDeviceNode> gpu_devices;  // every GPU device file of the node, for the fence
  ContainerHost container;
  CdiEdits cdi;  // for the step's GPUs, from the node's CDI specs
};
std::string EncodeRequest(const SupervisorRequest& request);
Result<SupervisorRequest> DecodeRequest(std::string_view text);

// A finished step's output, kept after its folder (kOutputsDir).
std::string EncodeOutput(uint64_t epoch, const StepOutput& output);
Result<std::pair<uint64_t, StepOutput>> DecodeOutput(std::string_view text);

// How a step ended.
struct StepRecord {
  int exit_code = 0;  // the first failed task's status; 128+signal when a signal ended it
  int signal = 0;
  std::string message;
  Time started{};
  Time ended{};
};
std::string EncodeRecord(const StepRecord& record);
Result<StepRecord> DecodeRecord(std::string_view text);

// A process named so that a reused pid is never mistaken for it.
struct ProcessIdentity {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
};
// The identity of a running process (NotFound when it is gone or a zombie).
Result<ProcessIdentity> IdentityOf(pid_t pid);
// The CPU time a running process has used, with that of the children it
// has waited for, in seconds (nullopt when it is gone or a zombie).
std::optional<double> ProcessCpuSeconds(pid_t pid);
bool IsAlive(const ProcessIdentity& process);
// Sends `sig` to the process, or with `group` to the process group it
// leads, only if it is still the process named; false when it is gone.
bool SignalIfAlive(const ProcessIdentity& process, int sig, bool group = false);
// Every process below `root`. Read from /proc as a whole, so it costs a
// read per process on the host: for what a step left behind.
std::vector<pid_t> Descendants(pid_t root);

// The pid file: the supervisor's identity and when it started.
std::string EncodePidFile(const ProcessIdentity& supervisor, Time started);
Result<std::pair<ProcessIdentity, Time>> DecodePidFile(std::string_view text);

// The tasks file: one identity a line.
std::string EncodeTasksFile(const std::vector<ProcessIdentity>& tasks);
std::vector<ProcessIdentity> DecodeTasksFile(std::string_view text);

// The progress file: the rate on its last complete line ("1234.5", or
// "1234.5 samples/s": the first word is the figure, the rest is for people),
// when it is a number above 0 and at most api::kMaxProgressRate. Reads
// only the file's last 256 bytes, never follows a symbolic link and reads
// nothing but a regular file; nullopt when there is no such figure.
std::optional<double> ReadProgressFile(const std::string& path);

// The wall clock, for the times in these files.
Time WallNow();

}  // namespace shoal::agent
