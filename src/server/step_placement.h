// Where a `shoal run` step's tasks go inside its job's allocation, as srun
// places them inside an sbatch allocation (checked against Slurm 22.05):
//   - no -n, -N or --ntasks-per-node: the job's own layout (its tasks on
//     each of its nodes);
//   - -N N: the first N of the job's nodes, with the job's tasks on each;
//   - --ntasks-per-node T: T on each node used;
//   - -n K without -N: block distribution over the job's task slots (on
//     each node the larger of its tasks and CPUs there), first nodes first,
//     as few nodes as the tasks need; more tasks than slots is an error, as
//     Slurm's "More processors requested than permitted";
//   - -n K with -N N: K spread over N nodes, the first K % N one more.
// --nodelist narrows the nodes to those named (by node name or host), in
// the job's order; --exclude takes nodes out. --gpus-per-task needs that
// many of the job's GPUs on a node for each of its tasks there. Pure.
#pragma once

#include <string>
#include <vector>

#include "core/job.h"
#include "core/status.h"

namespace shoal::server {

struct StepNode {
  std::string name;
  std::string host;
  int job_tasks = 1;  // the job's tasks on this node
  int cpus = 0;       // the job's CPUs on this node: tasks may also use those (its slots)
  int gpus = 0;       // the job's GPUs on this node
};

struct StepPlacement {
  std::vector<int> nodes;  // indices into the job's nodes, in rank order
  std::vector<int> tasks;  // tasks on each of them
};

Result<StepPlacement> PlaceStep(const StepSpec& step, const std::vector<StepNode>& job_nodes);

}  // namespace shoal::server
