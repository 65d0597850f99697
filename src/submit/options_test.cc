// Table-driven tests of each `shoal submit` option in its forms, and of every
// way an option's value can be wrong.
#include <gtest/gtest.h>

#include <functional>

#include "submit/submit.h"

namespace shoal::submit {
namespace {

// The spec that `args` (options only) give, with a command to run; the
// command goes first so that an option at the end without its value does not
// take it.
Result<Submission> Options(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"--wrap=true"};
  all.insert(all.end(), args.begin(), args.end());
  return ParseSubmit(all, "", "");
}

std::string Describe(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args)
    out += "[" + a + "]";
  return out;
}

struct OkCase {
  std::vector<std::string> args;
  std::function<void(const JobSpec&)> check;
};

// Runs each case; stops at the first one that does not parse.
void ExpectEach(const std::vector<OkCase>& cases) {
  for (const OkCase& c : cases) {
    auto sub = Options(c.args);
    ASSERT_TRUE(sub.ok()) << Describe(c.args) << ": " << sub.status().ToString();
    SCOPED_TRACE(Describe(c.args));
    c.check(sub->spec);
  }
}

// Each option in each of its forms: name, size, time limit and queue.
TEST(OptionsTest, JobAndQueueOptionsInEachForm) {
  using std::chrono::hours;
  using std::chrono::minutes;
  ExpectEach({
      {{"-J", "train"}, [](const JobSpec& s) { EXPECT_EQ(s.name, "train"); }},
      {{"-Jtrain"}, [](const JobSpec& s) { EXPECT_EQ(s.name, "train"); }},
      {{"--job-name=my job"}, [](const JobSpec& s) { EXPECT_EQ(s.name, "my job"); }},
      {{"--job-name", "x"}, [](const JobSpec& s) { EXPECT_EQ(s.name, "x"); }},
      {{"-N", "2"}, [](const JobSpec& s) { EXPECT_EQ(s.nodes, 2); }},
      {{"-N3"}, [](const JobSpec& s) { EXPECT_EQ(s.nodes, 3); }},
      {{"--nodes=4"}, [](const JobSpec& s) { EXPECT_EQ(s.nodes, 4); }},
      {{"--nodes", "2-2"}, [](const JobSpec& s) { EXPECT_EQ(s.nodes, 2); }},
      {{"-n", "8"}, [](const JobSpec& s) { EXPECT_EQ(s.tasks, 8); }},
      {{"--ntasks=3"}, [](const JobSpec& s) { EXPECT_EQ(s.tasks, 3); }},
      {{"-N2", "--ntasks-per-node=4"}, [](const JobSpec& s) { EXPECT_EQ(s.tasks, 8); }},
      {{"-c", "4"}, [](const JobSpec& s) { EXPECT_EQ(s.cpu_milli_per_node, 4000); }},
      {{"--cpus-per-task=2"}, [](const JobSpec& s) { EXPECT_EQ(s.cpu_milli_per_node, 2000); }},
      {{"-t", "90"}, [](const JobSpec& s) { EXPECT_EQ(s.time_limit, minutes(90)); }},
      {{"-t4:00:00"}, [](const JobSpec& s) { EXPECT_EQ(s.time_limit, hours(4)); }},
      {{"--time=1-12:00:00"}, [](const JobSpec& s) { EXPECT_EQ(s.time_limit, hours(36)); }},
      {{"--time", "2h"}, [](const JobSpec& s) { EXPECT_EQ(s.time_limit, hours(2)); }},
      {{"-p", "gpu"}, [](const JobSpec& s) { EXPECT_EQ(s.partition, "gpu"); }},
      {{"--partition=batch"}, [](const JobSpec& s) { EXPECT_EQ(s.partition, "batch"); }},
      {{"-A", "ml"}, [](const JobSpec& s) { EXPECT_EQ(s.account, "ml"); }},
      {{"--account=vision"}, [](const JobSpec& s) { EXPECT_EQ(s.account, "vision"); }},
      {{"-q", "high"}, [](const JobSpec& s) { EXPECT_EQ(s.qos, "high"); }},
      {{"--qos=low"}, [](const JobSpec& s) { EXPECT_EQ(s.qos, "low"); }},
  });
}

// Each option in each of its forms: GPUs, and what goes with each.
TEST(OptionsTest, GpuOptionsInEachForm) {
  ExpectEach({
      {{"--gres=gpu:a100:8"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.gpus_per_node, 8);
         EXPECT_EQ(s.gpus, 0);
         EXPECT_EQ(s.gpu_models, std::vector<std::string>{"a100"});
       }},
      {{"--gres=gpu"}, [](const JobSpec& s) { EXPECT_EQ(s.gpus_per_node, 1); }},
      {{"--gres", "gpu:4"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.gpus_per_node, 4);
         EXPECT_TRUE(s.gpu_models.empty());
       }},
      {{"--gres=gpu:H100-SXM-80GB"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.gpus_per_node, 1);
         EXPECT_EQ(s.gpu_models, std::vector<std::string>{"H100-SXM-80GB"});
       }},
      {{"--gres=gpu:1g.10gb:2"},
       [](const JobSpec& s) { EXPECT_EQ(s.gpu_models, std::vector<std::string>{"1g.10gb"}); }},
      {{"--gres=none"}, [](const JobSpec& s) { EXPECT_EQ(s.TotalGpus(), 0); }},
      {{"--gres=gpu:a100:0"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.TotalGpus(), 0);
         EXPECT_TRUE(s.gpu_models.empty());
       }},
      {{"--gpus=16"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.gpus, 16);
         EXPECT_EQ(s.gpus_per_node, 0);
         EXPECT_EQ(s.nodes, 0);
       }},
      {{"-G", "a100:2"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.gpus, 2);
         EXPECT_EQ(s.gpu_models, std::vector<std::string>{"a100"});
       }},
      {{"-G2"}, [](const JobSpec& s) { EXPECT_EQ(s.gpus, 2); }},
      {{"--gpus=2", "-G", "3"}, [](const JobSpec& s) { EXPECT_EQ(s.gpus, 3); }},
      {{"--gpus", "4", "-N", "2"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.gpus, 4);
         EXPECT_EQ(s.nodes, 2);
       }},
      {{"--gpus-per-node=h100:4"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.gpus_per_node, 4);
         EXPECT_EQ(s.gpu_models, std::vector<std::string>{"h100"});
       }},
      {{"--gpus-per-node", "8"}, [](const JobSpec& s) { EXPECT_EQ(s.gpus_per_node, 8); }},
      {{"--gpus=1", "--gpu-share=500"}, [](const JobSpec& s) { EXPECT_EQ(s.gpu_milli, 500); }},
      {{"--gpu-share=1000"}, [](const JobSpec& s) { EXPECT_EQ(s.gpu_milli, 1000); }},
      {{"--gpus=2", "--cpus-per-gpu=8"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.cpu_milli_per_gpu, 8000);
         EXPECT_EQ(s.cpu_milli_per_node, 0);
       }},
      {{"--gpus=2", "--mem-per-gpu=64G"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.mem_mib_per_gpu, 65536);
         EXPECT_EQ(s.mem_mib_per_node, 0);
       }},
      {{"--gpus=1", "--gpu-speed=h100=1,a100=0.55"},
       [](const JobSpec& s) {
         using Speeds = std::vector<std::pair<std::string, double>>;
         EXPECT_EQ(s.gpu_speeds, (Speeds{{"h100", 1}, {"a100", 0.55}}));
       }},
      {{"--gpus=1", "--gpu-speed", " V100 = 4 "},
       [](const JobSpec& s) {
         using Speeds = std::vector<std::pair<std::string, double>>;
         EXPECT_EQ(s.gpu_speeds, (Speeds{{"V100", 4}}));
       }},
  });
}

// Each option in each of its forms: memory, arrays and dependencies.
TEST(OptionsTest, MemoryArrayAndDependencyOptionsInEachForm) {
  ExpectEach({
      {{"--mem=16G"}, [](const JobSpec& s) { EXPECT_EQ(s.mem_mib_per_node, 16384); }},
      {{"--mem", "512"}, [](const JobSpec& s) { EXPECT_EQ(s.mem_mib_per_node, 512); }},
      {{"--mem=1.5T"}, [](const JobSpec& s) { EXPECT_EQ(s.mem_mib_per_node, 1536 * 1024); }},
      {{"--mem=1G", "--mem=2G"}, [](const JobSpec& s) { EXPECT_EQ(s.mem_mib_per_node, 2048); }},
      {{"--array=0-3%2"},
       [](const JobSpec& s) {
         ASSERT_NE(s.array, nullptr);
         EXPECT_EQ(s.array->indices, (std::vector<int>{0, 1, 2, 3}));
         EXPECT_EQ(s.array->max_running, 2);
       }},
      {{"--array", "1,5"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.array->indices, (std::vector<int>{1, 5}));
       }},
      {{"-a", "2-3"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.array->indices, (std::vector<int>{2, 3}));
       }},
      {{"-d", "afterok:12:13"},
       [](const JobSpec& s) {
         ASSERT_EQ(s.dependencies.size(), 2u);
         EXPECT_EQ(s.dependencies[1], (Dependency{DependencyType::kAfterOk, JobId(13)}));
       }},
      {{"--dependency=afterany:5,afternotok:6"},
       [](const JobSpec& s) {
         ASSERT_EQ(s.dependencies.size(), 2u);
         EXPECT_EQ(s.dependencies[0].type, DependencyType::kAfterAny);
         EXPECT_EQ(s.dependencies[1].type, DependencyType::kAfterNotOk);
       }},
      {{"-d", "after:7,singleton"},
       [](const JobSpec& s) {
         ASSERT_EQ(s.dependencies.size(), 2u);
         EXPECT_EQ(s.dependencies[0], (Dependency{DependencyType::kAfter, JobId(7)}));
         EXPECT_EQ(s.dependencies[1].type, DependencyType::kSingleton);
         EXPECT_EQ(FormatDependencies(s.dependencies), "after:7,singleton");
         EXPECT_FALSE(s.dependency_any);
       }},
      {{"--dependency=afterok:1:2?afterany:3"},
       [](const JobSpec& s) {
         ASSERT_EQ(s.dependencies.size(), 3u);
         EXPECT_TRUE(s.dependency_any);
         EXPECT_EQ(s.dependencies[1], (Dependency{DependencyType::kAfterOk, JobId(2)}));
         EXPECT_EQ(s.dependencies[2], (Dependency{DependencyType::kAfterAny, JobId(3)}));
         EXPECT_EQ(FormatDependencies(s.dependencies, s.dependency_any),
                   "afterok:1?afterok:2?afterany:3");
       }},
  });
}

// Each option in each of its forms: requeue, files, working directory and node constraints.
TEST(OptionsTest, OutputAndPlacementOptionsInEachForm) {
  ExpectEach({
      {{"--requeue"}, [](const JobSpec& s) { EXPECT_TRUE(s.requeue); }},
      {{"--requeue", "--no-requeue"}, [](const JobSpec& s) { EXPECT_FALSE(s.requeue); }},
      {{"--exclusive"}, [](const JobSpec& s) { EXPECT_TRUE(s.exclusive); }},
      {{"-o", "out-%j.txt"}, [](const JobSpec& s) { EXPECT_EQ(s.stdout_path, "out-%j.txt"); }},
      {{"--output=/tmp/o"}, [](const JobSpec& s) { EXPECT_EQ(s.stdout_path, "/tmp/o"); }},
      {{"-e", "err.txt"}, [](const JobSpec& s) { EXPECT_EQ(s.stderr_path, "err.txt"); }},
      {{"--error=/tmp/e"}, [](const JobSpec& s) { EXPECT_EQ(s.stderr_path, "/tmp/e"); }},
      {{"-D", "/data/run 1"}, [](const JobSpec& s) { EXPECT_EQ(s.work_dir, "/data/run 1"); }},
      {{"--chdir=/x"}, [](const JobSpec& s) { EXPECT_EQ(s.work_dir, "/x"); }},
      {{"-C", "ib&nvme"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.constraints, (std::vector<std::string>{"ib", "nvme"}));
       }},
      {{"-C", "a100|h100&ib"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.constraints, (std::vector<std::string>{"a100|h100", "ib"}));
       }},
      {{"-C", "ib&[rackA|rackB|rackA]"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.constraints, (std::vector<std::string>{"[rackA|rackB]", "ib"}));
       }},
      {{"-C", "[ a100 | h100 ],nvme"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.constraints, (std::vector<std::string>{"[a100|h100]", "nvme"}));
       }},
      {{"-C", "[ib]"},
       [](const JobSpec& s) { EXPECT_EQ(s.constraints, (std::vector<std::string>{"ib"})); }},
      {{"--constraint=ib,rack=r12,ib"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.constraints, (std::vector<std::string>{"ib", "rack=r12"}));
       }},
  });
}

// Slurm's node counts: [a*2&b*4] are all of the job's nodes (its node count
// without -N), a*2 at least some of them.
TEST(OptionsTest, ConstraintCountsSetTheNodeCount) {
  ExpectEach({
      {{"-C", "[rack1*2&rack2*4]"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.constraints, (std::vector<std::string>{"[rack1*2&rack2*4]"}));
         EXPECT_EQ(s.nodes, 6);
       }},
      {{"--constraint= [ r1 * 2 , r2*4 ] "},
       [](const JobSpec& s) {
         EXPECT_EQ(s.constraints, (std::vector<std::string>{"[r1*2&r2*4]"}));
         EXPECT_EQ(s.nodes, 6);
       }},
      {{"-C", "[a*2&b*4]", "-N", "6"}, [](const JobSpec& s) { EXPECT_EQ(s.nodes, 6); }},
      {{"-C", "[a*1]"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.constraints, (std::vector<std::string>{"[a*1]"}));
         EXPECT_EQ(s.nodes, 1);
       }},
      {{"-C", "graphics*4"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.constraints, (std::vector<std::string>{"graphics*4"}));
         EXPECT_EQ(s.nodes, 4);
       }},
      {{"-N", "16", "-C", "graphics*4"}, [](const JobSpec& s) { EXPECT_EQ(s.nodes, 16); }},
      {{"-C", "[a*1&b*1]", "--gpus=4"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.nodes, 2);
         EXPECT_EQ(s.gpus, 4);
       }},
      {{"-C", "[a*1&b*1]", "--gpus-per-node=8"},
       [](const JobSpec& s) { EXPECT_EQ(s.TotalGpus(), 16); }},
      {{"-C", "[a*1&b*1]", "-w", "n1,n2"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.nodes, 0) << "--nodelist gives the node count";
         EXPECT_EQ(s.node_list.size(), 2u);
       }},
  });
}

// Each option in each of its forms: hold, start time, environment and mail.
TEST(OptionsTest, HoldBeginAndExportOptionsInEachForm) {
  ExpectEach({
      {{"-H"}, [](const JobSpec& s) { EXPECT_TRUE(s.hold); }},
      {{"--hold"}, [](const JobSpec& s) { EXPECT_TRUE(s.hold); }},
      {{"--begin=1700000000"},
       [](const JobSpec& s) { EXPECT_EQ(s.begin_time, TimeFromSeconds(1700000000)); }},
      {{"--begin", "2024-01-02T03:04:05"},
       [](const JobSpec& s) { EXPECT_EQ(s.begin_time, TimeFromSeconds(1704164645)); }},
      {{"--begin=2024-01-02T03:04:05Z"},
       [](const JobSpec& s) { EXPECT_EQ(s.begin_time, TimeFromSeconds(1704164645)); }},
      {{"--begin=2024-01-02"},
       [](const JobSpec& s) { EXPECT_EQ(s.begin_time, TimeFromSeconds(1704153600)); }},
      {{"--begin=2024-02-29T23:59"},
       [](const JobSpec& s) { EXPECT_EQ(s.begin_time, TimeFromSeconds(1709251140)); }},
      {{"--begin=2024-01-02", "--begin=now"},
       [](const JobSpec& s) { EXPECT_FALSE(s.begin_time.has_value()); }},
      {{"--export=NONE"}, [](const JobSpec& s) { EXPECT_TRUE(s.env.empty()); }},
      {{"--export=A=1,B=x=y,C="},
       [](const JobSpec& s) {
         EXPECT_EQ(s.env,
                   (std::map<std::string, std::string>{{"A", "1"}, {"B", "x=y"}, {"C", ""}}));
       }},
      {{"--export", "ALL,LR=3e-4"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.env, (std::map<std::string, std::string>{{"LR", "3e-4"}}));
       }},
      {{"--mail-type=END,FAIL"},
       [](const JobSpec& s) {
         EXPECT_EQ(s.mail_types, MailBit(MailEvent::kEnd) | MailBit(MailEvent::kFail));
       }},
      {{"--mail-type=ALL", "--mail-user=ann@example.org"},
       [](const JobSpec& s) {
         EXPECT_EQ(FormatMailTypes(s.mail_types), "BEGIN,END,FAIL,REQUEUE,INVALID_DEPEND");
         EXPECT_EQ(s.mail_user, "ann@example.org");
       }},
  });
}

TEST(OptionsTest, AbbreviationsAndAliasesAsGetoptLongReadsThem) {
  // An unambiguous prefix names its option, as sbatch's getopt_long takes it;
  // an exact name wins over the longer names it begins (--gpus, --gpus-per-node).
  ExpectEach({
      {{"--part=gpu"}, [](const JobSpec& s) { EXPECT_EQ(s.partition, "gpu"); }},
      {{"--err=e.txt"}, [](const JobSpec& s) { EXPECT_EQ(s.stderr_path, "e.txt"); }},
      {{"--gpus=2"}, [](const JobSpec& s) { EXPECT_EQ(s.gpus, 2); }},
      {{"--tasks-per-node=2", "-N", "2"}, [](const JobSpec& s) { EXPECT_EQ(s.tasks_per_node, 2); }},
      {{"--tasks-per-n", "3", "-N", "1"}, [](const JobSpec& s) { EXPECT_EQ(s.tasks_per_node, 3); }},
  });
  auto slurm_only = Options({"--reserv=workshop", "--hin=nomultithread"});
  ASSERT_TRUE(slurm_only.ok()) << slurm_only.status().ToString();
  EXPECT_EQ(slurm_only->spec.reservation, "workshop");
  ASSERT_EQ(slurm_only->notes.size(), 1u);
  EXPECT_NE(slurm_only->notes[0].find("--hint=nomultithread"), std::string::npos);
}

TEST(OptionsTest, DefaultsWhenNothingIsGiven) {
  auto sub = Options({});
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  const JobSpec& s = sub->spec;
  EXPECT_EQ(s.nodes, 0);
  EXPECT_EQ(s.TotalGpus(), 0);
  EXPECT_EQ(s.gpu_milli, kMilliPerGpu);
  EXPECT_EQ(s.cpu_milli_per_node, 0);
  EXPECT_EQ(s.mem_mib_per_node, 0);
  EXPECT_EQ(s.time_limit.count(), 0);
  EXPECT_FALSE(s.requeue || s.hold || s.exclusive);
  EXPECT_TRUE(s.user.empty());
  EXPECT_TRUE(sub->notes.empty());
}

struct ErrorCase {
  std::vector<std::string> args;
  std::string message;  // a part of the error message
};

// Runs each case; every one must be refused with its message.
void ExpectErrors(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    auto sub = Options(c.args);
    ASSERT_FALSE(sub.ok()) << Describe(c.args) << " was accepted";
    EXPECT_EQ(sub.status().code(), StatusCode::kInvalidArgument) << Describe(c.args);
    EXPECT_NE(sub.status().message().find(c.message), std::string::npos)
        << Describe(c.args) << "\n  got:  " << sub.status().message() << "\n  want: " << c.message;
  }
}

TEST(OptionsTest, ErrorsSayWhatIsWrong) {
  ExpectErrors({
      // Options without a Shoal meaning.
      {{"--frobnicate=yes"}, "option --frobnicate has no meaning in Shoal"},
      {{"--gpu-speed=h100"}, "--gpu-speed=h100: 'h100' is not MODEL=SPEED"},
      {{"--gpu-speed=h100=0"}, "'h100=0' is not MODEL=SPEED with a speed above 0"},
      {{"--gpu-speed==1"}, "'=1' is not MODEL=SPEED"},
      {{"--gpu-speed=a100=fast"}, "'a100=fast' is not MODEL=SPEED"},
      {{"--gpu-s=a100=1"}, "option --gpu-s is ambiguous"},
      {{"--nodefile=hosts"}, "give the node names with --nodelist"},
      {{"--nodelist=./hosts"}, "a file of node names is not supported"},
      {{"-w", "n[1-2", "-N", "2"}, "-w n[1-2: "},
      {{"-w", "n[1-3]", "-N", "4"}, "Shoal takes all of a job's nodes from --nodelist"},
      {{"-w", "n1,n1"}, "--nodelist names n1 twice"},
      {{"-w", "n[1-2]", "-x", "n2"}, "node n2 is both in --nodelist and in --exclude"},
      {{"-x", "n[1-100000]"}, "-x n[1-100000]: "},
      {{"--partiton=gpu"}, "(did you mean --partition?)"},
      {{"--gpus-per=1"}, "option --gpus-per is ambiguous: it could be --gpus-per-"},
      {{"--input=data.txt"}, "reads no standard input; redirect inside it"},
      {{"--signal=USR3@60"}, "--signal=USR3@60: 'USR3' is not a signal"},
      {{"--signal=USR1@-5"}, "the time after @ is 0 to 65535 seconds"},
      {{"--signal=B:99"}, "signal 99 is not 1 to 64"},
      // Missing, extra and empty values.
      {{"-N"}, "-N needs a value"},
      {{"--job-name"}, "--job-name needs a value"},
      {{"-J", ""}, "-J needs a value"},
      {{"--time="}, "--time needs a value"},
      {{"--hold=yes"}, "--hold takes no value"},
      {{"-Hx"}, "-H takes no value"},
      {{"--exclusive=user"}, "--exclusive takes no value"},
      {{"--requeue=1"}, "--requeue takes no value"},
      // Counts.
      {{"-N", "2-4"}, "-N 2-4: node ranges (MIN-MAX) are not supported; give one number of nodes"},
      {{"-N", "0"}, "-N 0: the number of nodes must be between 1 and 100000"},
      {{"--nodes=-1"}, "--nodes=-1: the number of nodes must be between 1 and 100000"},
      {{"-N", "two"}, "'two' is not a whole number"},
      {{"-N", "1000000000000"}, "between 1 and 100000"},
      {{"-n", "0"}, "the number of tasks must be between 1 and 1000000"},
      {{"-n", "1.5"}, "'1.5' is not a whole number"},
      {{"--ntasks-per-node=0"}, "tasks per node must be between"},
      {{"-c", "-2"}, "CPUs per task must be between 1 and 100000"},
      {{"--cpus-per-gpu=0", "--gpus=1"}, "CPUs per GPU must be between"},
      // GPUs.
      {{"--gpus=1000000000000"}, "--gpus=1000000000000: GPUs must be between 0 and 1000000"},
      {{"-G", "-1"}, "GPUs must be between 0 and 1000000"},
      {{"--gpus-per-node=65"}, "GPUs per node must be between 0 and 64"},
      {{"--gpus=a:b:3"}, "give [TYPE:]COUNT"},
      {{"--gpus=a100:"}, "'' is not a whole number"},
      {{"--gpus=a*b:3"}, "'a*b' is not a GPU type"},
      {{"--gres=gpu:a100:2:3"}, "give gpu[:TYPE][:COUNT]"},
      {{"--gres=shard:2"}, "Shoal knows only the gpu resource, not 'shard'"},
      {{"--gres=gpu:1,shard:1"}, "give one GPU request"},
      {{"--gres=gpu:-1"}, "GPUs per node must be between 0 and 64"},
      {{"--gres=gpu:"}, "'' is not a GPU type"},
      {{"--gres=gpu:a100:x"}, "'x' is not a whole number"},
      {{"--gres=gpu:100"}, "GPUs per node must be between 0 and 64"},
      {{"--gres=gpu:2", "--gpus-per-node=2"},
       "--gpus-per-node=2 conflicts with --gres given before it: ask for GPUs one way"},
      {{"--gpus=2", "--gres=gpu:2"}, "--gres=gpu:2 conflicts with --gpus"},
      {{"-G", "2", "--gpus-per-node=1"}, "conflicts with --gpus"},
      {{"--gpu-share=0", "--gpus=1"}, "the GPU share must be between 1 and 1000"},
      {{"--gpu-share=1001", "--gpus=1"}, "the GPU share must be between 1 and 1000"},
      {{"--gpu-share=500"}, "--gpu-share needs a GPU count"},
      {{"--gpus=3", "-N", "2"}, "3 GPUs in total do not divide evenly over 2 nodes"},
      {{"--gpus=1", "-N", "2"}, "1 GPUs in total is fewer than the 2 nodes"},
      // CPUs and memory.
      {{"-c", "4", "--cpus-per-gpu=2", "--gpus=1"},
       "--cpus-per-gpu=2 conflicts with --cpus-per-task"},
      {{"--cpus-per-gpu=4"}, "--cpus-per-gpu needs GPUs"},
      {{"-N", "2", "-n", "1"}, "1 tasks cannot use 2 nodes"},
      {{"-N", "2", "--ntasks-per-node=2", "-n", "5"},
       "5 tasks do not fit 2 nodes x --ntasks-per-node=2"},
      {{"--gpus=8", "--ntasks-per-node=2"}, "--ntasks-per-node needs a node count"},
      {{"-n", "1000", "-c", "1000"},
       "1000 tasks per node x 1000 CPUs per task is 1000000 CPUs per node"},
      {{"-N", "100000", "--ntasks-per-node=100000"}, "is more than 1000000 tasks"},
      {{"--mem=1G", "--mem-per-gpu=2G", "--gpus=1"}, "--mem-per-gpu=2G conflicts with --mem"},
      {{"--mem-per-gpu=0", "--gpus=1"}, "must be at least 1 MiB"},
      {{"--mem=12Q"}, "give a size such as"},
      {{"--mem=-5G"}, "give a size such as"},
      {{"--mem=100T"}, "more than 64T"},
      {{"--mem=99999999999999999999999"}, "give a size such as"},
      {{"--mem-per-gpu=8G"}, "--mem-per-gpu needs GPUs"},
      // Times.
      {{"-t", "0"}, "-t 0: must be more than 0"},
      {{"-t", "UNLIMITED"}, "Shoal needs a finite limit"},
      {{"--time=abc"}, "is not a time limit"},
      {{"--time=400-00:00:00"}, "more than 365 days"},
      {{"--time=99999999999999999999d"}, "too long"},
      {{"--time=9223372036854775807"}, "too long"},
      {{"--begin=now+1hour"}, "relative times are not supported: give Unix seconds or YYYY-MM-DD"},
      {{"--begin=16:00"}, "unsupported form"},
      {{"--begin=tomorrow"}, "unsupported form"},
      {{"--begin=2024-02-30"}, "not a valid date and time"},
      {{"--begin=2024-01-01T24:00:00"}, "not a valid date and time"},
      {{"--begin=1900-01-01"}, "not a valid date and time"},
      {{"--begin=99999999999999"}, "too far in the future"},
      {{"--begin=999999999999"}, "Unix seconds must be between"},
      // Text values.
      {{"-p", "a,b"}, "Shoal takes one partition, not a list"},
      {{"-p", "a b"}, "spaces are not allowed"},
      {{"-A", "x\ty"}, "control characters are not allowed"},
      {{"--job-name=a\nb"}, "--job-name=a\\x0ab: control characters are not allowed"},
      {{"-J", std::string(300, 'x')}, "longer than 256 characters"},
      {{"-o", std::string(100000, 'x')}, "the value is longer than 65536 bytes"},
      {{"-C", "[a|b]&[c|d]"}, "one matching choice [a|b] at most"},
      {{"-C", "[a|b"}, "in closed brackets"},
      {{"-C", "[a&b]"}, "inside [ ] give choices joined with |"},
      {{"-C", "ib[a|b]"}, "join [a|b] to the other labels with & or ,"},
      {{"-C", "[a||b]"}, "an empty label"},
      {{"-C", "!a"}, "NOT (!) is not supported"},
      {{"-C", "(a|b)&c"}, "parentheses are not supported"},
      {{"-C", "a||b"}, "an empty label"},
      {{"-C", "a&&b"}, "an empty label"},
      {{"-C", "a b"}, "'a b' is not a label"},
      // Arrays, dependencies and the environment.
      {{"--array=5-1"}, "is not an array"},
      {{"--array=99999999999999"}, "index too large"},
      {{"--array=0-1000000"}, "at most 100,000 tasks"},
      {{"--array=1%0"}, "the limit after % must be a positive number"},
      {{"-d", "singleton:5"}, "singleton takes no job ids"},
      {{"-d", "aftercorr:5"}, "dependency type 'aftercorr' is not supported"},
      {{"-d", "afterok:abc"}, "'abc' is not a job id"},
      {{"--export=1A=2"}, "'1A' is not a variable name"},
      {{"--export=ALL,NONE"}, "ALL and NONE together make no sense"},
      {{"--export=A=1,,B=2"}, "'' is not ALL, NONE, NAME or NAME=value"},
      {{"--wrap= "}, "an empty command"},
      {{"--mail-type=END,SOMETIMES"}, "mail type 'SOMETIMES'"},
      {{"--mail-user=-oQ/tmp"}, "not a mail address"},
      {{"--mail-user=a b"}, "--mail-user"},
      {{"--wrap=x", "--wrap=y", "-N", "2", "job"},
       "give either --wrap or a command after the options"},
  });
}

// Slurm's node counts: every way they can be malformed, or disagree with the
// job's node count.
TEST(OptionsTest, ConstraintCountErrorsSayWhatIsWrong) {
  ExpectErrors({
      {{"-C", "a*2&b*4"}, "counts of more than one label go in brackets, as in Slurm"},
      {{"-C", "a*2,ib"}, "counts of more than one label go in brackets"},
      {{"-C", "ib&[a*2&b*4]"}, "label counts go alone"},
      {{"-C", "[a*2&b*4]&ib"}, "label counts go alone"},
      {{"-C", "[a*2]&[b*4]"}, "label counts go alone"},
      {{"-C", "[a*2&b]"}, "'b' has no count"},
      {{"-C", "[a*2|b*4]"}, "a choice (a|b) cannot be counted"},
      {{"-C", "a|b*2"}, "a choice (a|b) cannot be counted"},
      {{"-C", "a*0"}, "the count of 'a' must be a whole number, 1 to 100000"},
      {{"-C", "a*x"}, "the count of 'a' must be a whole number"},
      {{"-C", "a*1000000"}, "the count of 'a' must be a whole number"},
      {{"-C", "a*2*2"}, "the count of 'a' must be a whole number"},
      {{"-C", "*2"}, "'*2' is not a label with a count"},
      {{"-C", "a b*2"}, "'a b*2' is not a label with a count"},
      {{"-C", "[a*2&a*3]"}, "label 'a' is counted twice"},
      {{"-C", "[a*2&&b*4]"}, "an empty label"},
      {{"-C", "[a*2&b*4]", "-N", "5"},
       "constraint [a*2&b*4] asks for 6 nodes and the job for 5: leave out -N, or make it 6"},
      {{"-C", "[a*2&b*4]", "-N", "7"}, "asks for 6 nodes and the job for 7"},
      {{"-C", "a*4", "-N", "2"}, "asks for at least 4 nodes and the job for 2"},
      {{"-C", "[a*1&b*1]", "-w", "n1,n2,n3"}, "asks for 2 nodes and --nodelist names 3: list 2"},
      {{"-C", "[a*3&b*3]", "--gpus=8"}, "8 GPUs in total do not divide evenly over 6 nodes"},
      {{"-C", "[(a|b)*1&c*2]"}, "parentheses are not supported"},
  });
}

TEST(OptionsTest, NotesForOptionsAcceptedWithACaveat) {
  struct Case {
    std::vector<std::string> args;
    std::string note;  // empty: no note
  } cases[] = {
      {{"--mail-type=END"}, ""},
      {{"--mail-type=NONE"}, ""},
      {{"--export=ALL"}, ""},
      {{"--hint=nomultithread"}, "--hint=nomultithread: accepted; it has no meaning in Shoal"},
      {{"--mail-user=me@example.org"}, ""},
      {{"--mem=0"}, "Shoal gives the job whole nodes"},
      {{"--begin=2024-01-02"}, "--begin=2024-01-02 is read as UTC"},
      {{"--begin=1700000000"}, ""},
      {{"-d", "afterok:1?afterok:2"}, ""},
      {{"-d", "afterok:1?afterok:2,afterany:3"}, "every dependency is an alternative"},
  };
  for (const Case& c : cases) {
    auto sub = Options(c.args);
    ASSERT_TRUE(sub.ok()) << Describe(c.args) << ": " << sub.status().ToString();
    if (c.note.empty()) {
      EXPECT_TRUE(sub->notes.empty()) << Describe(c.args);
      continue;
    }
    ASSERT_EQ(sub->notes.size(), 1u) << Describe(c.args);
    EXPECT_NE(sub->notes[0].find(c.note), std::string::npos) << sub->notes[0];
  }
}

// The options as the help lists them, one "-J, --job-name=NAME" a line.
std::string ListedOptions() {
  std::string out;
  for (const OptionInfo& o : OptionList()) {
    if (o.short_name != 0) out += std::string("-") + o.short_name + ", ";
    out += "--" + std::string(o.long_name);
    if (!o.value_name.empty()) out += "=" + std::string(o.value_name);
    out += "\n";
  }
  return out;
}

TEST(OptionsTest, HelpListsEveryOption) {
  const std::string help = ListedOptions();
  for (const char* want : {"-J, --job-name=NAME",
                           "-N, --nodes=N",
                           "-n, --ntasks=N",
                           "--ntasks-per-node=N",
                           "-c, --cpus-per-task=N",
                           "-t, --time=LIMIT",
                           "-p, --partition=NAME",
                           "-A, --account=NAME",
                           "-q, --qos=NAME",
                           "--gres=gpu[:TYPE][:N]",
                           "-G, --gpus=[TYPE:]N",
                           "--gpus-per-node=[TYPE:]N",
                           "--gpu-share=MILLI",
                           "--cpus-per-gpu=N",
                           "--mem-per-gpu=SIZE",
                           "--mem=SIZE",
                           "--array=SPEC",
                           "-d, --dependency=LIST",
                           "--requeue",
                           "--no-requeue",
                           "--exclusive",
                           "-o, --output=PATH",
                           "-e, --error=PATH",
                           "-D, --chdir=DIR",
                           "-C, --constraint=L1&L2|L3",
                           "-H, --hold",
                           "--begin=TIME",
                           "--export=LIST",
                           "--wrap=CMD",
                           "--mail-type=TYPES"}) {
    EXPECT_NE(help.find(want), std::string::npos) << want;
  }
}

// What the help lists is what the parser reads: every listed option is
// known, with a value exactly when the help names one, under both spellings.
TEST(OptionsTest, HelpAgreesWithTheParser) {
  const std::vector<OptionInfo> options = OptionList();
  ASSERT_GE(options.size(), 30u);
  for (const OptionInfo& o : options) {
    const std::string long_name = "--" + std::string(o.long_name);
    EXPECT_EQ(TakesValue(long_name), !o.value_name.empty()) << long_name;
    if (o.short_name != 0) {
      EXPECT_EQ(TakesValue(std::string("-") + o.short_name), !o.value_name.empty()) << long_name;
    }
    EXPECT_FALSE(o.help.empty()) << long_name;
  }
  EXPECT_FALSE(TakesValue("--no-such-option"));
  EXPECT_FALSE(TakesValue("--hold"));
  EXPECT_TRUE(TakesValue("-N"));
}

}  // namespace
}  // namespace shoal::submit
