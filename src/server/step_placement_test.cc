// Where `shoal run` steps go in a job: the rows srun gave in a 2-node job
// with 2 tasks a node (a real Slurm 22.05 on loopback, 2026-12-01),
// and what Shoal does where srun's answer came from its own quirks.
#include "server/step_placement.h"

#include <gtest/gtest.h>

namespace shoal::server {
namespace {

std::vector<StepNode> TwoByTwo() {
  return {{.name = "node1", .host = "10.0.0.1", .job_tasks = 2, .cpus = 0, .gpus = 4},
          {.name = "node2", .host = "10.0.0.2", .job_tasks = 2, .cpus = 0, .gpus = 4}};
}

TEST(PlaceStep, AsSrunPlacesStepsInAJob) {
  struct Case {
    std::string name;
    StepSpec spec;
    std::vector<int> nodes;
    std::vector<int> tasks;
  };
  const std::vector<Case> cases = {
      {"no options: the job's layout", {}, {0, 1}, {2, 2}},
      {"-n 3: block over the task slots", {.tasks = 3}, {0, 1}, {2, 1}},
      {"-n 4", {.tasks = 4}, {0, 1}, {2, 2}},
      {"-n 1: one node", {.tasks = 1}, {0}, {1}},
      {"-N 1 -n 2", {.tasks = 2, .nodes = 1}, {0}, {2}},
      {"-N 2 -n 3", {.tasks = 3, .nodes = 2}, {0, 1}, {2, 1}},
      {"-N 1: the job's tasks on the first node", {.nodes = 1}, {0}, {2}},
      {"--ntasks-per-node=1", {.tasks_per_node = 1}, {0, 1}, {1, 1}},
      {"-w node2", {.node_list = {"node2"}}, {1}, {2}},
      {"-w by host", {.node_list = {"10.0.0.2"}}, {1}, {2}},
      {"-x node1", {.exclude = {"node1"}}, {1}, {2}},
      {"-n 3 --ntasks-per-node 2", {.tasks = 3, .tasks_per_node = 2}, {0, 1}, {2, 1}},
      {"--gpus-per-task 2 -n 4", {.tasks = 4, .gpus_per_task = 2}, {0, 1}, {2, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = PlaceStep(c.spec, TwoByTwo());
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(p->nodes, c.nodes);
    EXPECT_EQ(p->tasks, c.tasks);
  }
}

TEST(PlaceStep, WhatDoesNotFitIsRefusedWithTheReason) {
  const std::vector<std::pair<StepSpec, std::string>> cases = {
      {{.tasks = 6}, "6 tasks asked for; the job has 4 task slots"},  // srun: "More processors"
      {{.tasks = 5, .nodes = 2}, "3 tasks on node1: more than the job's 2"},
      {{.nodes = 3}, "3 nodes asked for; the job has 2"},
      {{.tasks = 1, .nodes = 2}, "1 tasks cannot run on 2 nodes"},
      {{.node_list = {"node9"}}, "--nodelist: node9 is not one of the job's nodes"},
      {{.exclude = {"node1", "node2"}}, "no node of the job is left"},
      {{.tasks = 4, .gpus_per_task = 3}, "2 tasks x 3 GPUs on node1: the job has 4 GPUs"},
      {{.tasks = 5, .tasks_per_node = 2}, "5 tasks at 2 per node need 3 nodes; the job has 2"},
  };
  for (const auto& [spec, why] : cases) {
    auto p = PlaceStep(spec, TwoByTwo());
    ASSERT_FALSE(p.ok()) << why;
    EXPECT_NE(p.status().message().find(why), std::string::npos) << p.status().message();
  }
}

TEST(PlaceStep, CpusOfTheJobAreTaskSlotsToo) {
  // sbatch -N 1 --exclusive (one task, 32 CPUs): srun --ntasks-per-node=8 fits.
  const std::vector<StepNode> one = {{.name = "n", .host = "n", .job_tasks = 1, .cpus = 32}};
  auto p = PlaceStep({.tasks_per_node = 8}, one);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->tasks, std::vector<int>{8});
  EXPECT_FALSE(PlaceStep({.tasks = 33}, one).ok());
}

}  // namespace
}  // namespace shoal::server
