// Pure helpers of a step's launch, shared by the agent (Steps) and the
// supervisor (shoal-step): checking a request, the placement arithmetic,
// the tasks' environment and where their output goes. No I/O, so that the
// tests can check them table by table.
//
// Placement defaults: an empty `nodes` means a one-node step on node_name;
// an empty `tasks_per_node` means one task on each node. MASTER_PORT and
// TF_CONFIG are set only when master_port is not 0 (TF_CONFIG's ports are
// master_port+1+rank). The step's own SLURM_* variables (ranks, its nodes
// and task counts) are set here; the job's (SLURM_JOB_NODELIST, ...) come in
// `env` (agent/protocol.cc). With them OpenMPI's mpirun takes the job for a
// Slurm allocation and starts its daemons with srun: the `srun` of a Shoal
// job, which runs them as a step.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/launch/steps.h"
#include "core/status.h"

namespace shoal::agent {

// What the supervisor relies on: a user, a node rank within the node list,
// a task count for every node and at least one here, KEY=VALUE entries in
// env, ports within range. The message is written for the job's record.
Status ValidateStepRequest(const StepRequest& step);

// Placement arithmetic over a validated request.
int NodeCount(const StepRequest& step);
int TasksOnNode(const StepRequest& step, int node_rank);
int WorldSize(const StepRequest& step);
// The global rank of this node's first task.
int FirstRank(const StepRequest& step);

// Slurm's compressed counts per node: {2, 2, 1} -> "2(x2),1" (tasks in
// SLURM_TASKS_PER_NODE, CPUs in SLURM_JOB_CPUS_PER_NODE).
std::string SlurmTaskCounts(const std::vector<int>& counts);

// Where a task's stdout (or stderr) goes: the pattern expanded as sbatch
// does (checked against Slurm 22.05): %j job id, %x job name, %A array job
// id (the job id when not an array), %a array task id (4294967294 when not
// an array), %N node name, %n node rank, %t task rank, %u user, %s step
// ("batch"), %% a percent sign; a width between % and a numeric letter
// zero-pads it (%4a: 0007); any other %-sequence stays as written. Relative
// paths are under work_dir. stderr with no pattern of its own shares
// stdout's file. work_dir must be resolved already (absolute).
std::string ResolveOutputPath(const StepRequest& step, bool stderr_stream, int rank);
// Whether an output pattern names a file of each node's or task's own (%N,
// %n or %t, zero-padded or not: %4t). Pure.
bool OutputNamedPerNode(std::string_view pattern);
// Whether stderr goes to the same file as stdout for every task.
bool StderrJoinsStdout(const StepRequest& step);

// The login variables a task gets besides its step's (nothing else of the
// agent's environment leaks): PATH, HOME, USER, LOGNAME, SHELL and LANG.
std::vector<std::string> LoginEnvironment(const std::string& user, const std::string& home,
                                          const std::string& shell);

// `base` with every KEY=VALUE of `overrides` set, a variable that is in both
// keeping its place in `base` with the value from `overrides`; entries
// without '=' are dropped.
std::vector<std::string> MergeEnvironment(std::vector<std::string> base,
                                          const std::vector<std::string>& overrides);

}  // namespace shoal::agent
