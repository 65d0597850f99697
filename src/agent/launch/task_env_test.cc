#include "agent/launch/task_env.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

namespace shoal::agent {
namespace {

std::map<std::string, std::string> AsMap(const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  for (const std::string& entry : env) {
    size_t eq = entry.find('=');
    EXPECT_NE(eq, std::string::npos) << entry;
    EXPECT_TRUE(out.emplace(entry.substr(0, eq), entry.substr(eq + 1)).second)
        << "set twice: " << entry;
  }
  return out;
}

StepRequest TwoNodeStep() {
  StepRequest s;
  s.job = 42;
  s.epoch = 3;
  s.user = "alice";
  s.job_name = "train";
  s.command = "python train.py";
  s.work_dir = "/home/alice/run";
  s.node_name = "gpu-b";
  s.node_rank = 1;
  s.nodes = {"gpu-a", "gpu-b"};
  s.tasks_per_node = {2, 3};
  s.master_addr = "10.0.0.1";
  s.master_port = 29500;
  s.gpus = {4, 5, 7};
  return s;
}

TEST(TaskEnvironment, RanksAndSizes) {
  struct Case {
    std::string name;
    int node_rank;
    std::vector<int> tasks_per_node;
    int local_rank;
    std::map<std::string, std::string> expected;
  };
  const std::vector<Case> cases = {
      {"first task of the first node",
       0,
       {2, 3},
       0,
       {{"RANK", "0"},
        {"LOCAL_RANK", "0"},
        {"WORLD_SIZE", "5"},
        {"LOCAL_WORLD_SIZE", "2"},
        {"NODE_RANK", "0"},
        {"GROUP_RANK", "0"},
        {"SLURM_PROCID", "0"},
        {"SLURM_LOCALID", "0"},
        {"SLURM_NTASKS", "5"},
        {"SLURM_NODEID", "0"},
        {"SLURM_NNODES", "2"},
        {"SHOAL_NODE_RANK", "0"},
        {"SHOAL_NNODES", "2"}}},
      {"last task of the second node",
       1,
       {2, 3},
       2,
       {{"RANK", "4"},
        {"LOCAL_RANK", "2"},
        {"WORLD_SIZE", "5"},
        {"LOCAL_WORLD_SIZE", "3"},
        {"NODE_RANK", "1"},
        {"GROUP_RANK", "1"},
        {"SLURM_PROCID", "4"},
        {"SLURM_LOCALID", "2"},
        {"SLURM_NODEID", "1"}}},
      {"no tasks_per_node: one a node",
       1,
       {},
       0,
       {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "1"}, {"SLURM_NTASKS", "2"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StepRequest s = TwoNodeStep();
    s.node_rank = c.node_rank;
    s.tasks_per_node = c.tasks_per_node;
    ASSERT_TRUE(ValidateStepRequest(s).ok());
    auto env = AsMap(TaskEnvironment(s, c.local_rank, "/steps/42.3/hostfile"));
    for (const auto& [key, value] : c.expected)
      EXPECT_EQ(env[key], value) << key;
  }
}

TEST(TaskEnvironment, JobAndPlacementVariables) {
  StepRequest s = TwoNodeStep();
  auto env = AsMap(TaskEnvironment(s, 0, "/steps/42.3/hostfile", "/steps/42.3/progress"));
  EXPECT_EQ(env["SHOAL_JOB_ID"], "42");
  EXPECT_EQ(env["SHOAL_PROGRESS_FILE"], "/steps/42.3/progress");
  EXPECT_EQ(env["SHOAL_JOB_NAME"], "train");
  EXPECT_EQ(env["SHOAL_NODELIST"], "gpu-a,gpu-b");
  EXPECT_EQ(env["SHOAL_HOSTFILE"], "/steps/42.3/hostfile");
  EXPECT_EQ(env["SLURMD_NODENAME"], "gpu-b");
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "4,5,7");
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  // The step's own layout as srun sets it (the job's comes in the request's env).
  EXPECT_EQ(env["SLURM_STEP_ID"], "0");
  EXPECT_EQ(env["SLURM_STEP_NODELIST"], "gpu-a,gpu-b");
  EXPECT_EQ(env["SLURM_STEP_NUM_NODES"], "2");
  EXPECT_EQ(env["SLURM_STEP_NUM_TASKS"], env["SLURM_NTASKS"]);
  EXPECT_EQ(env["SLURM_STEP_GPUS"], "4,5,7");
}

// The batch script: one process with the job's layout, no per-task
// variables of distributed training; steps of a batch job number as
// Slurm's do (the first `shoal run` is SLURM_STEP_ID 0).
TEST(TaskEnvironment, BatchStepAndStepNumbers) {
  StepRequest s = TwoNodeStep();
  s.batch = true;
  s.nodes = {"gpu-a"};
  s.tasks_per_node = {1};
  s.node_rank = 0;
  s.env = {"SLURM_NTASKS=5", "SLURM_NNODES=2"};
  ASSERT_TRUE(ValidateStepRequest(s).ok()) << ValidateStepRequest(s).message();
  auto env = AsMap(TaskEnvironment(s, 0, ""));
  EXPECT_EQ(env["SLURM_NTASKS"], "5");
  EXPECT_EQ(env["SLURM_NNODES"], "2");
  EXPECT_EQ(env["SLURM_PROCID"], "0");
  EXPECT_EQ(env.count("WORLD_SIZE"), 0u);
  EXPECT_EQ(env.count("RANK"), 0u);
  EXPECT_EQ(env.count("SLURM_STEP_ID"), 0u);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "4,5,7");

  StepRequest step = TwoNodeStep();
  step.step = 3;
  step.has_batch_step = true;
  step.gpus_per_task = 1;
  step.node_rank = 1;
  step.tasks_per_node = {2, 3};
  ASSERT_TRUE(ValidateStepRequest(step).ok()) << ValidateStepRequest(step).message();
  auto second = AsMap(TaskEnvironment(step, 1, ""));
  EXPECT_EQ(second["SLURM_STEP_ID"], "2");
  EXPECT_EQ(second["SLURM_TASKS_PER_NODE"], "2,3");
  EXPECT_EQ(second["CUDA_VISIBLE_DEVICES"], "5");  // its own GPU of 4,5,7
  EXPECT_EQ(SlurmTaskCounts({2, 2, 2, 1}), "2(x3),1");
  step.gpus_per_task = 2;  // 3 tasks x 2 GPUs > 3 GPUs here
  EXPECT_FALSE(ValidateStepRequest(step).ok());
}

// MIG slices are named to CUDA by their MIG UUIDs, each task its own with
// --gpus-per-task; the fence sees their GPU and instances.
TEST(TaskEnvironment, MigSlicesAreNamedByUuid) {
  StepRequest s = TwoNodeStep();
  auto unit = [](FencedGpu fence, std::string name) {
    return StepGpu{.fence = fence, .cuda_name = name, .uuid = name, .mig_index = -1};
  };
  s.gpu_units = {unit({.device = 1, .gi = 3, .ci = 0}, "MIG-aaa"),
                 unit({.device = 1, .gi = 4, .ci = 0}, "MIG-bbb"),
                 unit({.device = 2, .gi = -1, .ci = -1}, "2")};
  ASSERT_TRUE(ValidateStepRequest(s).ok()) << ValidateStepRequest(s).message();
  EXPECT_EQ(AsMap(TaskEnvironment(s, 0, ""))["CUDA_VISIBLE_DEVICES"], "MIG-aaa,MIG-bbb,2");
  s.gpus_per_task = 1;
  s.node_rank = 1;
  s.tasks_per_node = {2, 3};
  EXPECT_EQ(AsMap(TaskEnvironment(s, 1, ""))["CUDA_VISIBLE_DEVICES"], "MIG-bbb");
  const std::vector<FencedGpu> fenced = FencedGpusOf(s);
  ASSERT_EQ(fenced.size(), 3u);
  EXPECT_EQ(fenced[0].gi, 3);
  EXPECT_EQ(fenced[2].device, 2);
  s.gpu_units.pop_back();
  EXPECT_FALSE(ValidateStepRequest(s).ok()) << "one unit per GPU";
}

TEST(TaskEnvironment, TfConfigListsEveryTaskOnPortsAfterTheMaster) {
  StepRequest s = TwoNodeStep();
  auto env = AsMap(TaskEnvironment(s, 1, ""));
  nlohmann::json tf = nlohmann::json::parse(env["TF_CONFIG"]);
  std::vector<std::string> workers = tf["cluster"]["worker"];
  EXPECT_EQ(workers, (std::vector<std::string>{"gpu-a:29501", "gpu-a:29502", "gpu-b:29503",
                                               "gpu-b:29504", "gpu-b:29505"}));
  EXPECT_EQ(tf["task"]["type"], "worker");
  EXPECT_EQ(tf["task"]["index"], 3);
  EXPECT_EQ(env.count("SHOAL_HOSTFILE"), 0u);
}

TEST(TaskEnvironment, OutputNamedPerNode) {
  for (const char* own : {"out-%N.log", "%n", "task%4t.out", "/a/%j-%t"})
    EXPECT_TRUE(OutputNamedPerNode(own)) << own;
  for (const char* shared : {"slurm-%j.out", "100%%n", "%x.%A_%a", "plain", "%"})
    EXPECT_FALSE(OutputNamedPerNode(shared)) << shared;
}

TEST(TaskEnvironment, Defaults) {
  StepRequest s;
  s.job = 7;
  s.user = "bob";
  s.command = "true";
  s.node_name = "n1";
  ASSERT_TRUE(ValidateStepRequest(s).ok());
  auto env = AsMap(TaskEnvironment(s, 0, ""));
  EXPECT_EQ(env["WORLD_SIZE"], "1");
  EXPECT_EQ(env["RANK"], "0");
  EXPECT_EQ(env["MASTER_ADDR"], "n1");
  EXPECT_EQ(env["SHOAL_NODELIST"], "n1");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");  // no GPUs asked: none visible
  EXPECT_EQ(env.count("MASTER_PORT"), 0u);
  EXPECT_EQ(env.count("TF_CONFIG"), 0u);
  EXPECT_EQ(Hostfile(s), "n1 slots=1\n");
}

TEST(TaskEnvironment, ShoalVariablesWinOverTheJobsOwn) {
  StepRequest s = TwoNodeStep();
  s.env = {"FOO=bar", "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "RANK=99", "EMPTY="};
  auto env = AsMap(TaskEnvironment(s, 0, ""));
  EXPECT_EQ(env["FOO"], "bar");
  EXPECT_EQ(env["EMPTY"], "");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "4,5,7");
  EXPECT_EQ(env["RANK"], "2");
}

TEST(Hostfile, OneLinePerHostInRankOrder) {
  StepRequest s = TwoNodeStep();
  EXPECT_EQ(Hostfile(s), "gpu-a slots=2\ngpu-b slots=3\n");
  // Simulated nodes on one machine share a host: OpenMPI wants it once.
  s.nodes = {"127.0.0.1", "127.0.0.1", "10.0.0.9"};
  s.tasks_per_node = {2, 2, 1};
  EXPECT_EQ(Hostfile(s), "127.0.0.1 slots=4\n10.0.0.9 slots=1\n");
}

TEST(ValidateStepRequest, RefusesWhatTheSupervisorCannotRun) {
  struct Case {
    std::string name;
    void (*edit)(StepRequest&);
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"no user", [](StepRequest& s) { s.user.clear(); }, "no user"},
      {"no command", [](StepRequest& s) { s.command.clear(); }, "no command"},
      {"rank outside", [](StepRequest& s) { s.node_rank = 2; }, "outside"},
      {"negative rank", [](StepRequest& s) { s.node_rank = -1; }, "outside"},
      {"task list size", [](StepRequest& s) { s.tasks_per_node = {1}; }, "entries"},
      {"no task here",
       [](StepRequest& s) {
         s.tasks_per_node = {2, 0};
       },
       "task(s)"},
      {"port range", [](StepRequest& s) { s.master_port = 65533; }, "port"},
      {"env entry", [](StepRequest& s) { s.env = {"NOEQUALS"}; }, "KEY=VALUE"},
      {"env name", [](StepRequest& s) { s.env = {"=x"}; }, "KEY=VALUE"},
      {"gpu", [](StepRequest& s) { s.gpus = {-1}; }, "GPU"},
      {"memory", [](StepRequest& s) { s.memory_mib = -5; }, "negative"},
  };
  ASSERT_TRUE(ValidateStepRequest(TwoNodeStep()).ok());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StepRequest s = TwoNodeStep();
    c.edit(s);
    Status st = ValidateStepRequest(s);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find(c.message_part), std::string::npos) << st.message();
  }
}

TEST(ResolveOutputPath, PatternsAndWorkDir) {
  struct Case {
    std::string stdout_path;
    std::string stderr_path;
    bool stderr_stream;
    int rank;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"", "", false, 0, "/home/alice/run/slurm-42.out"},  // sbatch's default
      {"", "", true, 0, "/home/alice/run/slurm-42.out"},   // stderr joins stdout
      {"logs/%u-%j.%N.out", "", false, 0, "/home/alice/run/logs/alice-42.gpu-b.out"},
      {"/tmp/o-%j-%t.txt", "/tmp/e-%j-%t.txt", true, 3, "/tmp/e-42-3.txt"},
      {"100%%-%x", "", false, 0, "/home/alice/run/100%-train"},
      {"trailing%", "", false, 0, "/home/alice/run/trailing%"},
      {"%q-%-%5", "", false, 0, "/home/alice/run/%q-%-%5"},  // not patterns: kept
      // What sbatch wrote for the same patterns (Slurm 22.05, a job that is
      // not an array): %A is the job id, %a Slurm's NO_VAL, %s "batch".
      {"/o-%j-%x-%A-%a-%n-%t-%s-%4j-%5a", "", false, 0,
       "/o-42-train-42-4294967294-1-0-batch-0042-4294967294"},
  };
  for (const Case& c : cases) {
    StepRequest s = TwoNodeStep();
    s.stdout_path = c.stdout_path;
    s.stderr_path = c.stderr_path;
    EXPECT_EQ(ResolveOutputPath(s, c.stderr_stream, c.rank), c.expected) << c.stdout_path;
  }
}

TEST(ResolveOutputPath, ArrayTasksWriteTheirOwnFiles) {
  StepRequest s = TwoNodeStep();
  s.job = 43;
  s.array_job_id = 40;
  s.array_task_id = 7;
  s.stdout_path = "/r/%x-%A_%a.out";
  EXPECT_EQ(ResolveOutputPath(s, false, 0), "/r/train-40_7.out");
  s.stdout_path = "/r/%A-%3a.%j";
  EXPECT_EQ(ResolveOutputPath(s, false, 0), "/r/40-007.43");
  s.stdout_path.clear();  // sbatch's default for an array's task
  EXPECT_EQ(ResolveOutputPath(s, false, 0), "/home/alice/run/slurm-40_7.out");
}

TEST(MergeEnvironment, OverridesKeepTheirPlace) {
  EXPECT_EQ(MergeEnvironment({"A=1", "B=2", "bad"}, {"B=3", "C=4", "A=5"}),
            (std::vector<std::string>{"A=5", "B=3", "C=4"}));
  auto login = LoginEnvironment("bob", "/home/bob", "");
  auto merged = AsMap(MergeEnvironment(login, {"PATH=/opt/bin"}));
  EXPECT_EQ(merged["PATH"], "/opt/bin");
  EXPECT_EQ(merged["HOME"], "/home/bob");
  EXPECT_EQ(merged["USER"], "bob");
  EXPECT_EQ(merged["LOGNAME"], "bob");
  EXPECT_EQ(merged["SHELL"], "/bin/sh");
  EXPECT_EQ(merged.size(), 6u);
}

}  // namespace
}  // namespace shoal::agent
