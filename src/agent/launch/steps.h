// Job steps on a node: each runs under its own supervisor process (as
// Slurm's slurmstepd), forked by the node's long-lived launcher
// (`shoal-step --launcher`, launcher.h) so that it and the job outlive an
// agent restart. The supervisor starts the step's tasks as the
// job's user, each in its own session and process group, with stdout/stderr
// in files, CUDA_VISIBLE_DEVICES set to exactly the step's GPUs, the
// distributed-training environment (see TaskEnvironment), and cgroup limits
// for CPU and memory with process tracking where the host allows it. On a
// stop request it sends SIGTERM to every task's process group, then SIGKILL
// (and kills whatever is left in the step's cgroup) after the grace period,
// and records how the step ended.
//
// Everything about a step lives in one directory, <steps_dir>/<job>.<epoch>/:
// the agent writes the request there before starting the supervisor, and
// the supervisor writes its pid and, at the end, the step's exit status
// (atomically, by rename). An agent that restarts finds its steps by reading
// these directories (Scan).
//
// Steps is used from the agent's threads; its methods are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/launch/cgroup.h"
#include "agent/launch/users.h"
#include "core/job.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal::agent {

// One GPU of a step as this host knows it.
struct StepGpu {
  FencedGpu fence;
  std::string cuda_name;
  // For the node's CDI specs (the agent's own: not sent to the supervisor):
  // its UUID, and a slice's MIG index (GpuDevice::mig_index).
  std::string uuid;
  int mig_index = -1;
};

// The GPUs the fence lets a step open: its gpu_units, else its GPU indices
// as whole GPUs.
struct StepRequest;
std::vector<FencedGpu> FencedGpusOf(const StepRequest& step);

// What one node runs for one job.
struct StepRequest {
  uint64_t job = 0;
  uint64_t epoch = 0;  // the allocation's epoch: a (job, epoch, step) starts at most once
  uint32_t step = 0;   // 0: the job's own step
  // Step 0 of a batch job: the script, one task, on the job's first node.
  bool batch = false;
  // The job has a batch step (its steps are then numbered from 1: Slurm's
  // SLURM_STEP_ID is one less).
  bool has_batch_step = false;
  // What runs, without a shell (the steps of `shoal run`); empty: `command`.
  // With `script`: the script's arguments.
  std::vector<std::string> argv;
  int gpus_per_task = 0;  // each task sees this many of `gpus` (0: all of them)
  // --pty: task 0 runs on a pseudo-terminal of this size (0: the default)
  // fed from the step's input FIFO (pty_relay.h).
  bool pty = false;
  int pty_rows = 0;
  int pty_cols = 0;
  // The shoal binary that `srun` and `scontrol` run inside the job (they
  // come first on the tasks' PATH); empty: no such commands.
  std::string slurm_commands;
  std::string user;  // the job's owner; resolved to uid/gid with getpwnam
  // The job's Shoal account (not a host account): the agent's /metrics
  // labels the step's GPUs with it.
  std::string job_account;
  std::string job_name;
  int gpu_power_cap_w = 0;  // the job's --gpu-power-cap: the agent holds its GPUs to it
  ContainerSpec container;  // the job's --container-*: its tasks run in that image
  std::string command;      // shell command, or the batch script's text when `script`
  bool script = false;
  std::string work_dir;          // empty: the user's home directory
  std::string stdout_path;       // absolute or relative to work_dir, with sbatch's %-patterns
  std::string stderr_path;       // (ResolveOutputPath); empty: "slurm-%j.out" (stderr joins stdout)
  bool append_output = false;    // add to the output files (else the first task empties them)
  std::vector<std::string> env;  // KEY=VALUE from the job spec, before Shoal's own variables
  uint64_t array_job_id = 0;     // an array task's array (0: not an array task)
  int array_task_id = -1;        // its index in the array
  // The server may run the job again elsewhere when it loses this node: the
  // agent stops such a step itself when it cannot reach the server (fencing).
  bool requeueable = false;

  // Placement.
  std::string node_name;
  int node_rank = 0;
  std::vector<std::string> nodes;   // every node's host name or address, in rank order
  std::vector<int> tasks_per_node;  // tasks on each node, same order (sum: the world size)
  std::string master_addr;          // rank 0's host
  int master_port = 0;
  std::vector<int> gpus;  // GPU indices on this node (the scheduler's)
  // What each of `gpus` is on this host, in the same order (the agent fills
  // them in from its devices): the physical GPU the fence lets the step
  // open, and what CUDA_VISIBLE_DEVICES names ("3", or "MIG-<uuid>" for a
  // MIG slice). Empty: each of `gpus` is the whole GPU of that index.
  std::vector<StepGpu> gpu_units;
  int64_t cpu_milli = 0;                     // CPU limit; 0: none
  int64_t memory_mib = 0;                    // memory limit; 0: none
  Duration grace{std::chrono::seconds(10)};  // between SIGTERM and SIGKILL
  // From the launch order: past this the server has given the epoch up (0:
  // no limit). Not kept in the step's folder: it only gates the start.
  Time not_after{};
};

// The environment of one task of a step (local_rank 0..tasks_per_node-1 on
// this node): the job's own variables, then SHOAL_JOB_ID, SHOAL_JOB_NAME,
// SHOAL_NODE_RANK, SHOAL_NNODES, SHOAL_NODELIST, SHOAL_HOSTFILE (hostfile
// path), SHOAL_PROGRESS_FILE (progress_file, where given), MASTER_ADDR, MASTER_PORT, WORLD_SIZE,
// RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, GROUP_RANK, TF_CONFIG (a MultiWorkerMirrored
// cluster of every task, on ports master_port+1+rank), CUDA_VISIBLE_DEVICES,
// and the SLURM_* equivalents common launchers read (SLURM_JOB_ID,
// SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, SLURM_NODEID, SLURM_NNODES).
// Pure: no I/O.
std::vector<std::string> TaskEnvironment(const StepRequest& step, int local_rank,
                                         const std::string& hostfile,
                                         const std::string& progress_file = "");

// The MPI hostfile for a step: one line per node, "<host> slots=<tasks>".
std::string Hostfile(const StepRequest& step);

enum class StepPhase {
  kStarting,  // directory written, supervisor not confirmed yet
  kRunning,   // the supervisor is alive
  kExited,    // the supervisor recorded how the step ended
  kLost,      // the supervisor is gone without a record (killed, or the host rebooted)
};

// A step's name on this node.
struct StepKey {
  uint64_t job = 0;
  uint64_t epoch = 0;
  uint32_t step = 0;  // 0: the job's own step
  friend auto operator<=>(const StepKey&, const StepKey&) = default;
};

struct StepState {
  uint64_t job = 0;
  uint64_t epoch = 0;
  uint32_t step = 0;
  StepPhase phase = StepPhase::kStarting;
  int exit_code = 0;    // of the first task that failed, else 0
  int signal = 0;       // the signal that ended it, if one did
  std::string message;  // why it failed to start or how it ended, for people
  Time started{};
  Time ended{};
  StepKey key() const { return {job, epoch, step}; }
};

// Where a step's rank-0 stdout and stderr go (after %j/%u/%N and work_dir)
// and whose they are: the files a user controls are only ever read with
// that user's rights (ReadOutputAs).
struct StepOutput {
  std::string stdout_path;
  std::string stderr_path;
  UserAccount owner;
};

// What the NVIDIA container toolkit's CDI specs add to a container for a
// step's GPUs (agent/cdi.h): device files, bind mounts, variables, hooks.
struct CdiEdits {
  struct DeviceNode {
    std::string path;       // in the container
    std::string host_path;  // empty: the same
  };
  struct Mount {
    std::string host_path;
    std::string container_path;
    std::vector<std::string> options;
  };
  struct Hook {
    std::string stage;  // an OCI hook stage: createRuntime, createContainer, ...
    std::string path;
    std::vector<std::string> args;
    std::vector<std::string> env;
  };
  std::vector<DeviceNode> devices;
  std::vector<Mount> mounts;
  std::vector<std::string> env;
  std::vector<Hook> hooks;
  bool empty() const { return devices.empty() && mounts.empty() && env.empty() && hooks.empty(); }
};

// What this node offers jobs that run in a container (docs/containers.md).
struct ContainerHost {
  // An OCI runtime's command. Rootless (the default): crun, run as the
  // job's user in a user namespace that maps only that user, the task in
  // the step's cgroup (joined by Shoal before the runtime starts), the
  // image unpacked as the user's. Otherwise (rootless = false) run as root
  // with the job's processes the user's: runc, or crun where the cgroup
  // layout suits it (docs/containers.md).
  std::string runtime = "crun";
  bool rootless = true;
  std::string image_dir = "/var/lib/shoal/images";  // where image names are found
  std::string cache_dir;                            // unpacked images; empty: <state_dir>/images
  int64_t cache_mib = 20480;                        // the cache's size limit
  std::string image_tool;                           // the shoal-image binary
  // Where CDI specs are read (root's files only); none: no CDI.
  std::vector<std::string> cdi_dirs = {"/etc/cdi", "/var/run/cdi"};
};

struct StepsOptions {
  std::string dir;  // <steps_dir>: best on a tmpfs (AgentConfig::steps_dir)
  // Finished steps' output records, which must outlive the machine's
  // restart (empty: <steps_dir>/outputs).
  std::string outputs_dir;
  // The agent's own state files, which must too (MIG layouts, power
  // limits; empty: the steps folder's parent).
  std::string state_dir;
  std::string supervisor;        // path of the shoal-step binary
  bool allow_root_jobs = false;  // run jobs whose user is root (single-user machines only)
  std::vector<GpuDeviceNode> gpu_devices;  // the node's GPU device files, fenced per step
  std::string cgroup_root;                 // empty: detect (v2, else v1 cpu/memory/pids, else none)
                                           // a path: a cgroup2 mount, or a folder of v1 hierarchies
                                           // (cpu/, memory/, pids/); "none": process groups only
  ContainerHost container;
};

class Steps {
 public:
  static Result<std::unique_ptr<Steps>> Open(StepsOptions options);
  virtual ~Steps() = default;

  // Starts a step and says where its output goes (as Output would).
  // Refuses (with a message for the job's record) a user that does not
  // exist, root unless allowed, any user but the agent's own when the agent
  // is not root, and a (job, epoch) that was started before.
  virtual Result<StepOutput> Launch(const StepRequest& request) = 0;
  // Asks the step's supervisor to stop it (SIGTERM, then SIGKILL after
  // `grace`). Unknown steps are not an error.
  virtual Status Stop(StepKey key, Duration grace) = 0;
  // Sends `sig` to the step's tasks through its supervisor: to each task's
  // own process when `leader_only`, else to every process of the step.
  // A step that is not running is not an error.
  virtual Status Signal(StepKey key, int sig, bool leader_only) = 0;
  // Every step on disk and its phase.
  virtual std::vector<StepState> Scan() = 0;
  // Removes a step's directory once the server knows how it ended.
  // A step whose supervisor is still alive is kept (and still refused a
  // second launch); after Forget, only the server's epochs keep a stale
  // launch of the same (job, epoch) from running again.
  virtual void Forget(StepKey key) = 0;
  // The steps folder.
  virtual const std::string& dir() const = 0;
  // Where the agent keeps its own state files (StepsOptions::state_dir).
  virtual const std::string& state_dir() const = 0;
  // What process tracking and limits this host allows, for the agent's log
  // ("cgroup v2 (cpu, memory)", "cgroup v1 (cpu, memory, pids)", "none: ...").
  virtual std::string Isolation() const = 0;
  // Where a step's output went and whose it is, for logs.
  virtual Result<StepOutput> Output(StepKey key) const = 0;
  // The request a step was launched with (NotFound once it is forgotten).
  virtual Result<StepRequest> Request(StepKey key) const = 0;
  // Where task `rank` of a `shoal run` step (key.step > 0) wrote, and whose
  // it is: readable until the job's own step is forgotten.
  virtual Result<StepOutput> TaskOutput(StepKey key, int rank) const = 0;
  // The input FIFO of a --pty step's terminal (pty_relay.h); NotFound for
  // a step without one, Unavailable for a step not running here (not yet,
  // or no more).
  virtual Result<std::string> TerminalInput(StepKey key) const = 0;
  // The output of steps already forgotten, newest epoch per job (at most
  // the newest 10,000 jobs' are kept), for logs after an agent restart.
  virtual std::map<uint64_t, std::pair<uint64_t, StepOutput>> FinishedOutputs() = 0;

  // One step's state, as Scan reports it; NotFound when there is no such step.
  virtual Result<StepState> Get(StepKey key) = 0;
  // The CPU time a running step's processes have used, in seconds: its
  // cgroup's count, else the sum over its processes now (or its tasks'
  // leaders without a cgroup); nullopt when there is nothing to read. The
  // agent's simulated GPUs follow it, so that a `sleep` shows idle.
  virtual std::optional<double> CpuSeconds(StepKey /*key*/) const { return std::nullopt; }
  // The rate of progress a running step's tasks last wrote to their
  // progress file (ReadProgressFile); nullopt when there is none.
  virtual std::optional<double> Progress(StepKey /*key*/) const { return std::nullopt; }

  // Change notifications, so that the agent learns at once that a step
  // ended. Each supervisor writes one line "<job>.<epoch>\n" to the FIFO
  // <steps_dir>/events when its step has ended and its record is on disk;
  // Steps holds the FIFO open for reading (a supervisor whose agent is down
  // writes nothing: the next agent finds the record with Scan). A
  // notification is a hint, never the only way to learn: call Scan or Get
  // after one, and Scan periodically as well (a notification may be lost
  // when the FIFO is full for a second or more).
  //
  // A descriptor that polls readable (POLLIN) when notifications are
  // waiting, to poll beside the agent's own; read it only through
  // WaitForChanges. Valid while Steps lives.
  virtual int ChangeFd() const = 0;
  // Waits up to `timeout` (zero: not at all) for notifications and returns
  // the steps they name, each once, oldest first; empty when none came.
  virtual std::vector<StepKey> WaitForChanges(Duration timeout) = 0;
};

}  // namespace shoal::agent
