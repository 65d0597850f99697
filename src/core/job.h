// Jobs: what a user asks for (JobSpec), where it runs (Allocation), and how
// it got there (Job, with its state and the reason it waits).
#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/ids.h"
#include "core/shared.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal {

enum class JobState : uint8_t {
  kPending,
  kRunning,
  kCompleted,
  kFailed,
  kCancelled,
  kTimeout,
  kNodeFail,
  kPreempted,  // preempted and not requeued
};

inline constexpr JobState kJobStates[] = {
    JobState::kPending,   JobState::kRunning, JobState::kCompleted, JobState::kFailed,
    JobState::kCancelled, JobState::kTimeout, JobState::kNodeFail,  JobState::kPreempted};

std::string_view JobStateName(JobState state);
// Slurm's compact code for the state, as squeue's ST column shows it: PD, R,
// CD, F, CA, TO, NF, PR.
std::string_view JobStateCode(JobState state);
// A state by its name or its compact code, in any case ("pending", "PD").
Result<JobState> ParseJobState(std::string_view text);
bool IsTerminal(JobState state);

// Why a pending job waits. Every pending job has one (STYLE habit 3).
enum class PendingReason : uint8_t {
  kNone,                      // not yet looked at
  kResources,                 // would fit the cluster, but not what is free now
  kPriority,                  // fits now, but higher-priority work goes first
  kDependency,                // waits for the jobs it depends on
  kDependencyNeverSatisfied,  // a job it depends on ended the wrong way
  kHeld,                      // held by its user or an admin
  kBeginTime,                 // asked not to start before a given time
  kGpuModelUnavailable,       // no usable node has the GPU model it asks for
  kPartitionLimit,            // exceeds a limit of its partition (time, nodes, GPUs, account)
  kPartitionDown,             // its partition does not accept work now
  kAccountLimit,              // its account holds its GPU limit already
  kNodesUnavailable,          // the nodes that could run it are down or drained
  kUnsatisfiable,             // no node of the cluster could ever run it
  kArrayLimit,                // its array has as many tasks running as it may
  kQosLimit,                  // exceeds a limit of its QoS (per job, or what its user holds)
  kReservation,               // its reservation has not begun (or is gone), or the nodes
                              // it could use are reserved for others
  kPowerBudget,               // starting it would cross a power budget (site, row or rack)
  kPlanConflict,              // placed by a pass, but the placement failed the commit's check
                              // (kept last: parsers loop up to it)
};

std::string_view PendingReasonName(PendingReason reason);

// Slurm's: after (the job has started, or was cancelled), afterok, afterany,
// afternotok (it ended so), singleton (no other job of the user with this
// job's name runs; `job` is then 0).
enum class DependencyType : uint8_t { kAfterOk, kAfterAny, kAfterNotOk, kAfter, kSingleton };
std::string_view DependencyTypeName(DependencyType t);

struct Dependency {
  DependencyType type = DependencyType::kAfterOk;
  JobId job;
  friend bool operator==(const Dependency&, const Dependency&) = default;
};

// A job's dependencies as Slurm reads them: every one must be satisfied
// (clauses joined with ,) or, with `any`, one is enough (joined with ?).
struct DependencyList {
  std::vector<Dependency> deps;
  bool any = false;
  friend bool operator==(const DependencyList&, const DependencyList&) = default;
};

// Parses Slurm's "afterok:12:13,afterany:14" (also "afternotok") or
// "afterok:12?afterany:14". As in Slurm 22.05, a ? anywhere makes the whole
// list any-of, and a dependency given twice is kept once.
Result<DependencyList> ParseDependencies(std::string_view text);
std::string FormatDependencies(const std::vector<Dependency>& deps, bool any = false);

// sbatch --mail-type: the events a job's user is mailed about (Slurm's
// MailType), as bits of JobSpec::mail_types.
enum class MailEvent : uint16_t {
  kBegin = 1 << 0,
  kEnd = 1 << 1,
  kFail = 1 << 2,
  kRequeue = 1 << 3,
  kInvalidDepend = 1 << 4,
  kTimeLimit = 1 << 5,  // it reached its time limit
  kTimeLimit90 = 1 << 6,
  kTimeLimit80 = 1 << 7,
  kTimeLimit50 = 1 << 8,
  kArrayTasks = 1 << 9,  // an array's tasks are mailed about one by one, not as a whole
};
constexpr uint16_t MailBit(MailEvent e) {
  return static_cast<uint16_t>(e);
}
// Parses "BEGIN,END,FAIL" and the rest of sbatch's words (ALL is BEGIN, END,
// FAIL, REQUEUE and INVALID_DEPEND; NONE is none; STAGE_OUT means nothing here).
Result<uint16_t> ParseMailTypes(std::string_view text);
std::string FormatMailTypes(uint16_t types);

// A job array: one job per index, at most `max_running` of them at once (0: no limit).
struct ArraySpec {
  std::vector<int> indices;
  int max_running = 0;
  friend bool operator==(const ArraySpec&, const ArraySpec&) = default;
};

// Parses Slurm's "0-99%10", "1,3,5", "0-15:4" (a step) into an ArraySpec.
Result<ArraySpec> ParseArraySpec(std::string_view text);
std::string FormatArraySpec(const ArraySpec& a);

// Limits on what one job spec may hold, checked by JobSpec::Validate (so at
// submit, with a clear message) and by the CLI before it sends anything.
// A batch script may be as large as Slurm's default max_script_size (4 MB).
inline constexpr size_t kMaxScriptBytes = 4 << 20;
inline constexpr size_t kMaxNameBytes =
    256;  // job name, user, account, partition, QoS, models, labels
inline constexpr size_t kMaxPathBytes = 4096;    // work_dir, stdout, stderr (PATH_MAX)
inline constexpr size_t kMaxEnvBytes = 1 << 20;  // all variables, keys and values together
inline constexpr size_t kMaxEnvVariables = 4096;
inline constexpr size_t kMaxListEntries = 64;  // GPU models, constraints
// --gpu-power-cap, in watts: a first check; the agent holds a cap to the
// range NVML gives for each GPU.
inline constexpr int kMinGpuPowerCapW = 50;
inline constexpr int kMaxGpuPowerCapW = 2000;
inline constexpr int kMaxTasksPerNode = 512;          // Slurm's MAX_TASKS_PER_NODE
inline constexpr size_t kMaxNodeListEntries = 10000;  // --nodelist, --exclude
inline constexpr size_t kMaxScriptArgs = 4096;        // a batch script's arguments

// A bind mount into a job's container: --container-mounts' SRC[:DST[:ro|rw]].
struct ContainerMount {
  std::string source;  // on the node; opened with the job user's rights
  std::string target;  // in the container (same as source when not given)
  bool read_only = false;
  friend bool operator==(const ContainerMount&, const ContainerMount&) = default;
};
inline constexpr size_t kMaxContainerMounts = 64;
inline constexpr size_t kMaxContainerImageBytes = 1024;  // --container-image

// Parses --container-mounts' comma-separated list. Both paths absolute,
// without ".." or commas; flags ro or rw.
Result<std::vector<ContainerMount>> ParseContainerMounts(std::string_view text);
std::string FormatContainerMount(const ContainerMount& m);
// --container-env's comma-separated names, trimmed, empty ones dropped
// (ValidateContainer checks them).
std::vector<std::string> ParseContainerEnv(std::string_view text);

// The OCI image a job's tasks run in, with pyxis' options (docs/containers.md).
struct ContainerSpec {
  std::string image;  // --container-image; empty: no container
  std::vector<ContainerMount> mounts{};
  std::string work_dir{};  // --container-workdir; empty: the job's work folder
  // --container-env: variables the job's environment sets over the image's.
  std::vector<std::string> env{};
  bool mount_home = true;  // --no-container-mount-home turns it off
  friend bool operator==(const ContainerSpec&, const ContainerSpec&) = default;
};
// Checks a container spec on its own (JobSpec::Validate calls it).
Status ValidateContainer(const ContainerSpec& c);

// What a user asks for. Resources come in one of three shapes:
//  - nodes x gpus_per_node: a gang of `nodes` nodes with the same GPUs on each;
//  - gpus (total) with nodes == 0: as few nodes as the GPUs need;
//  - no GPUs: `nodes` nodes (default 1) with CPUs and memory only.
struct JobSpec {
  std::string name;
  std::string user;
  std::string account;
  std::string partition;  // empty: the cluster's default partition
  std::string qos;
  std::string reservation;  // --reservation: runs only there, only while it lasts

  // What runs; a batch script's text when `script` is set. Shared (as is
  // `env`) by the tasks of an array.
  Shared<std::string> command;
  bool script = false;
  std::vector<std::string> script_args{};  // the batch script's arguments ($1, ...)
  // A command given as words (`shoal submit -- python x.py`): run as they
  // are, without a shell, as srun runs its program (signals then reach the
  // program itself); `command` is then their shell-quoted join, for people.
  std::vector<std::string> argv{};
  Shared<std::map<std::string, std::string>> env;
  std::string work_dir;
  std::string stdout_path;
  std::string stderr_path;

  int nodes = 0;
  int gpus_per_node = 0;
  int gpus = 0;
  int gpu_milli = kMilliPerGpu;         // share of each GPU; below 1000 a GPU may be shared
  std::vector<std::string> gpu_models;  // acceptable models; empty: any
  // --gpu-speed h100=1,a100=0.55: how fast the job runs on each model (only
  // ratios matter); speed-aware policies run it where it ends soonest and
  // never on a model it does not name. Empty: estimated (server/speeds.h).
  std::vector<std::pair<std::string, double>> gpu_speeds;
  // --gpu-power-cap 500W: each of its GPUs is held to this many watts while
  // it runs (the agent sets the power limit through NVML and restores it
  // afterwards); power budgets count the cap. 0: no cap.
  int gpu_power_cap_w = 0;  // kMinGpuPowerCapW to kMaxGpuPowerCapW
  int64_t cpu_milli_per_gpu = 0;
  int64_t mem_mib_per_gpu = 0;
  int64_t cpu_milli_per_node = 0;  // in addition to the per-GPU amounts
  int64_t mem_mib_per_node = 0;
  std::vector<std::string> constraints;  // node labels the job needs
  bool exclusive = false;                // whole nodes, shared with nobody
  // --nodelist: the job runs on all of these nodes (and no others: `nodes`
  // is their count); --exclude: never on these.
  std::vector<std::string> node_list{};
  std::vector<std::string> exclude{};

  Duration time_limit{0};  // 0: the partition's default
  std::vector<Dependency> dependencies;
  bool dependency_any = false;  // --dependency joined with ?: one satisfied is enough
  bool requeue = false;         // may be requeued after preemption or node failure
  bool hold = false;
  std::optional<Time> begin_time;
  int tasks = 0;  // processes to start over all nodes; 0: one per node
  // As submitted, for the job's environment (SLURM_NTASKS_PER_NODE,
  // SLURM_CPUS_PER_TASK) and its steps' defaults; 0: not given.
  int tasks_per_node = 0;
  int cpus_per_task = 0;
  // Where and on which host it was submitted (SLURM_SUBMIT_DIR, _HOST).
  std::string submit_dir;
  std::string submit_host;
  int gpus_per_task = 0;       // --gpus-per-task: its steps' tasks each see that many
  std::string comment;         // the user's, shown back
  uint16_t mail_types = 0;     // MailBit()s: what the user is mailed about
  std::string mail_user;       // where; empty: the job's user (local mail)
  bool append_output = false;  // --open-mode=append (else its output files start empty)
  // --signal=[B:]SIG@T: `signal` (1-64; 0: none) goes to the job's steps,
  // or only to its batch shell when `signal_batch_only`, `signal_before_s`
  // seconds before its time limit.
  int signal = 0;
  int signal_before_s = 0;
  bool signal_batch_only = false;
  // Shared, never changed: every task of an array holds the same one (a
  // copy per task made memory and time quadratic in the tasks: 2,000 tasks
  // held 16 MB of indices, 100,000 would have held 40 GB).
  std::shared_ptr<const ArraySpec> array;
  // An acceptance test (admins only): the controller itself places the job on
  // this node (or these, comma-separated, in rank order: the multi-node NCCL
  // test), whole and exclusive, when each is drained for acceptance or up and
  // idle; the scheduler never sees it.
  std::string acceptance_node;
  ContainerSpec container{};

  // GPUs over all nodes: nodes x gpus_per_node, or `gpus`.
  int TotalGpus() const;
  // Checks the numbers make sense on their own (no cluster needed).
  Status Validate() const;
};

// A job step: tasks started inside a running job's allocation (`shoal
// run`, Slurm's srun). Step 0 is the job's own: its batch script (one task,
// on the first node, as Slurm runs it) or its command (every task of the
// job). Other steps are numbered from 1 in the order they are asked for.
struct StepSpec {
  std::string name{};
  std::vector<std::string> argv{};       // run as it is, without a shell
  int tasks = 0;                         // 0: tasks_per_node on each node, else one per node
  int nodes = 0;                         // 0: as many of the job's nodes as the tasks need (all)
  int tasks_per_node = 0;                // 0: spread the tasks evenly
  std::vector<std::string> node_list{};  // only these of the job's nodes (--nodelist)
  std::vector<std::string> exclude{};    // not these (--exclude)
  int gpus_per_task = 0;                 // 0: every task sees all the job's GPUs on its node
  int cpus_per_task = 0;
  bool kill_on_bad_exit = false;  // a task that fails stops the step's others
  // --pty: task 0 runs on a pseudo-terminal (of this many rows and columns;
  // 0: the terminal's default) that `shoal run` types into.
  bool pty = false;
  int pty_rows = 0;
  int pty_cols = 0;
  std::map<std::string, std::string> env{};  // on top of the job's environment
  std::string work_dir{};                    // empty: the job's
  ContainerSpec container{};                 // srun's --container-*; no image: the job's
  friend bool operator==(const StepSpec&, const StepSpec&) = default;
};

enum class StepState : uint8_t { kRunning, kCompleted, kFailed, kCancelled };
std::string_view StepStateName(StepState state);
Result<StepState> ParseStepState(std::string_view text);

// At most this many steps of one job are kept (the oldest finished go first).
inline constexpr size_t kMaxKeptSteps = 256;
inline constexpr int kMaxArgvEntries = 4096;

struct JobStep {
  uint32_t id = 0;
  StepSpec spec;
  std::vector<std::string> nodes;  // where it runs, in rank order
  std::vector<int> tasks;          // tasks on each of those nodes
  StepState state = StepState::kRunning;
  int exit_code = 0;  // the largest of its tasks' (srun's rule)
  int exit_signal = 0;
  std::string reason;   // why it ended as it did, for people
  int master_port = 0;  // its MASTER_PORT (0: none)
  Time start_time{};
  Time end_time{};
  int TaskCount() const;
  friend bool operator==(const JobStep&, const JobStep&) = default;
};

// One node's part of an allocation.
struct NodeAllocation {
  NodeId node;
  uint64_t gpu_mask = 0;         // bit i: GPU with index i
  int gpu_milli = kMilliPerGpu;  // share of each of those GPUs
  int64_t cpu_milli = 0;
  int64_t mem_mib = 0;
  bool exclusive = false;  // the node is the job's alone

  int GpuCount() const { return std::popcount(gpu_mask); }
  friend bool operator==(const NodeAllocation&, const NodeAllocation&) = default;
};

struct Allocation {
  std::vector<NodeAllocation> nodes;

  bool empty() const { return nodes.empty(); }
  int TotalGpus() const;
  // GPUs weighted by share: two half GPUs count as one.
  double GpuEquivalents() const;
  friend bool operator==(const Allocation&, const Allocation&) = default;
};

// "0-3,6" for a GPU mask.
std::string FormatGpuMask(uint64_t mask);

// How a job used its GPUs, from the agents' telemetry: every heartbeat adds
// one sample per allocated GPU that reported telemetry. Means are over those
// samples; energy is the GPUs' own energy counters' increase (or power x
// interval where a GPU has no counter).
struct JobEfficiency {
  uint64_t samples = 0;
  double util_mean_pct = 0;
  double util_peak_pct = 0;
  double mem_mean_mib = 0;
  int64_t mem_peak_mib = 0;
  double energy_wh = 0;
  // The job's own progress in its latest run, as its first node's tasks
  // wrote it to $SHOAL_PROGRESS_FILE (units a second, the job's choice of
  // unit): the mean of the heartbeats that carried a figure. Learned speeds
  // (server/speeds.h) come from it.
  uint64_t progress_samples = 0;
  double progress_rate = 0;
  friend bool operator==(const JobEfficiency&, const JobEfficiency&) = default;
};

struct Job {
  JobId id;
  JobSpec spec;
  JobState state = JobState::kPending;
  PendingReason reason = PendingReason::kNone;
  std::string reason_detail;
  Time submit_time{};
  Time start_time{};
  Time end_time{};
  // When it last went back to the queue (a requeue); unset: its submit.
  // LAS's starvation knob counts the wait from here (Tiresias).
  Time requeued_at{};
  Duration time_limit{0};  // the effective limit (the spec's or the partition's default)
  Allocation allocation;
  uint64_t epoch = 0;  // bumped at every start so a stale launch never runs twice
  int restarts = 0;
  int exit_code = 0;
  int exit_signal = 0;
  int64_t priority = 0;  // set by an admin: replaces the computed priority when > 0
  // The rendezvous ports it holds while it runs: MASTER_PORT, and
  // TF_CONFIG's one per task after it (0: none yet).
  int master_port = 0;
  JobId array_job_id;      // the array's first job, for array tasks; 0 otherwise
  int array_task_id = -1;  // the task's index, for array tasks
  double gpu_seconds = 0;  // GPU-seconds used so far (shares count as fractions)
  // gpu_seconds when its current run began: a restarted server counts a
  // running job's service from it, whenever its record was last written.
  double gpu_seconds_at_start = 0;
  JobEfficiency efficiency;
  // Every allocated GPU stayed under its partition's idle threshold since
  // `idle_since` for at least the partition's idle_minutes.
  bool idle = false;
  Time idle_since{};
  // Steps started with `shoal run` in this run of the job (cleared when it
  // is requeued), and the id the next one gets.
  std::vector<JobStep> steps;
  uint32_t next_step = 1;
};

}  // namespace shoal
