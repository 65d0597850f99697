// Tests of batch scripts: where directives are read, how a line splits into
// words, which source wins, and errors that name path:line.
#include "submit/directives.h"

#include <gtest/gtest.h>

#include "submit/submit.h"

namespace shoal::submit {
namespace {

TEST(SplitWordsTest, QuotesEscapesAndComments) {
  struct Case {
    std::string text;
    std::vector<std::string> words;
  } cases[] = {
      {"", {}},
      {"   \t ", {}},
      {" -N 2  --gpus=8\t-t 1:00:00", {"-N", "2", "--gpus=8", "-t", "1:00:00"}},
      {R"(--job-name="my job")", {"--job-name=my job"}},
      {R"(-J 'it is' -o "a b")", {"-J", "it is", "-o", "a b"}},
      {R"(-J "say \"hi\" \\ \$HOME \n")", {"-J", R"(say "hi" \ $HOME \n)"}},
      {R"(-J 'no \escapes "here"')", {"-J", R"(no \escapes "here")"}},
      {R"(-J a\ b)", {"-J", "a b"}},
      {R"(-J "")", {"-J", ""}},
      {R"(-J x""y'')", {"-J", "xy"}},
      {"-N 2 # two nodes", {"-N", "2"}},
      {"-N 2 #", {"-N", "2"}},
      {"-J a#b", {"-J", "a#b"}},
      {"-J '#x'", {"-J", "#x"}},
      {"# all comment", {}},
      {"trailing\\", {"trailing"}},
  };
  for (const Case& c : cases) {
    auto words = SplitWords(c.text);
    ASSERT_TRUE(words.ok()) << c.text << ": " << words.status().ToString();
    EXPECT_EQ(*words, c.words) << c.text;
  }
  EXPECT_EQ(SplitWords("-J 'open").status().message(), "a ' quote is not closed");
  EXPECT_EQ(SplitWords(R"(-J "open)").status().message(), "a \" quote is not closed");
  EXPECT_EQ(SplitWords(R"(-J "open\")").status().message(), "a \" quote is not closed");
}

Result<Submission> Script(std::string_view text,
                          const std::vector<std::string>& args = {"job.sh"}) {
  return ParseSubmit(args, text, "job.sh");
}

TEST(DirectivesTest, MixedSbatchAndShoalLines) {
  const std::string script =
      "#!/bin/bash\n"
      "#SBATCH --job-name=\"pretrain 7b\"\n"
      "#SBATCH -N 2 --gres=gpu:a100:8 # eight per node\n"
      "\n"
      "# a comment between directives\n"
      "#SHOAL --gpu-share=1000\n"
      "#SBATCH\t--time=2-00:00:00\n"
      "#SBATCH -p gpu -A ml -q high\n"
      "#SBATCH --ntasks-per-node=8 --cpus-per-task=6 --mem=512G\n"
      "#SBATCH -o logs/%x-%j.out -e logs/%x-%j.err\n"
      "#SBATCH --requeue --exclusive -C ib&nvme\n"
      "#SHOAL --array=0-3%2\n"
      "#SBATCH\n"
      "\n"
      "srun python train.py\n";
  auto sub = Script(script);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  const JobSpec& s = sub->spec;
  EXPECT_EQ(s.name, "pretrain 7b");
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.gpus_per_node, 8);
  EXPECT_EQ(s.gpu_models, std::vector<std::string>{"a100"});
  EXPECT_EQ(s.time_limit, std::chrono::hours(48));
  EXPECT_EQ(s.partition, "gpu");
  EXPECT_EQ(s.account, "ml");
  EXPECT_EQ(s.qos, "high");
  EXPECT_EQ(s.tasks, 16);
  EXPECT_EQ(s.cpu_milli_per_node, 48000);
  EXPECT_EQ(s.mem_mib_per_node, 512 * 1024);
  EXPECT_EQ(s.stdout_path, "logs/%x-%j.out");
  EXPECT_EQ(s.stderr_path, "logs/%x-%j.err");
  EXPECT_TRUE(s.requeue);
  EXPECT_TRUE(s.exclusive);
  EXPECT_EQ(s.constraints, (std::vector<std::string>{"ib", "nvme"}));
  ASSERT_NE(s.array, nullptr);
  EXPECT_EQ(s.array->max_running, 2);
  EXPECT_TRUE(s.script);
  EXPECT_EQ(s.command, script);
  EXPECT_TRUE(sub->notes.empty());
}

TEST(DirectivesTest, CommandLineOverShoalOverSbatch) {
  const std::string script =
      "#!/bin/sh\n"
      "#SBATCH -N 2 -t 1:00:00 -J slurm --gres=gpu:a100:4 --mem=64G\n"
      "#SHOAL -t 2:00:00 -J shoal --gpus-per-node=h100:8\n"
      "#SBATCH -p slurm-part\n"
      "run\n";
  struct Case {
    std::vector<std::string> args;
    int nodes;
    int64_t minutes;
    std::string name;
    int gpus_per_node;
    int gpus;
    std::vector<std::string> models;
  } cases[] = {
      // #SHOAL replaces #SBATCH's GPUs, model included, without a conflict.
      {{"job.sh"}, 2, 120, "shoal", 8, 0, {"h100"}},
      {{"-N", "4", "job.sh"}, 4, 120, "shoal", 8, 0, {"h100"}},
      {{"-t", "30", "-J", "cli", "job.sh"}, 2, 30, "cli", 8, 0, {"h100"}},
      // The command line's --gpus replaces the scripts' per-node request.
      {{"--gpus=4", "-N", "1", "job.sh"}, 1, 120, "shoal", 0, 4, {}},
  };
  for (const auto& c : cases) {
    auto sub = Script(script, c.args);
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    EXPECT_EQ(sub->spec.nodes, c.nodes);
    EXPECT_EQ(sub->spec.time_limit, std::chrono::minutes(c.minutes));
    EXPECT_EQ(sub->spec.name, c.name);
    EXPECT_EQ(sub->spec.gpus_per_node, c.gpus_per_node);
    EXPECT_EQ(sub->spec.gpus, c.gpus);
    EXPECT_EQ(sub->spec.gpu_models, c.models);
  }
}

TEST(DirectivesTest, MemoryAndCpuGroupsAreReplacedWhole) {
  const std::string script =
      "#SBATCH --gpus=2 --mem=64G -c 4\n"
      "run\n";
  // Within the script --mem and --mem-per-gpu would conflict; from the
  // command line --mem-per-gpu replaces the script's --mem.
  auto sub = Script(script, {"--mem-per-gpu=16G", "--cpus-per-gpu=3", "job.sh"});
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.mem_mib_per_gpu, 16384);
  EXPECT_EQ(sub->spec.mem_mib_per_node, 0);
  EXPECT_EQ(sub->spec.cpu_milli_per_gpu, 3000);
  EXPECT_EQ(sub->spec.cpu_milli_per_node, 0);
}

TEST(DirectivesTest, ReadingStopsAtTheFirstCommand) {
  auto sub = Script(
      "#!/bin/bash\n"
      "#SBATCH -N 2\n"
      "  \n"
      "module load cuda\n"
      "#SBATCH -N 3\n"
      "#SBATCH --mail-user=nobody\n"
      "#SHOAL -N 4\n");
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.nodes, 2);
  ASSERT_EQ(sub->notes.size(), 1u);
  EXPECT_EQ(sub->notes[0],
            "job.sh:5: directives after the first command are ignored, as sbatch ignores them");
}

TEST(DirectivesTest, CommentsThatLookLikeDirectivesGetOneNote) {
  auto sub = Script(
      "#!/bin/bash\n"
      "  #SBATCH -N 2\n"
      "#sbatch -N 3\n"
      "#SBATCH--nodes=4\n"
      "##SBATCH -N 5\n"
      "# SBATCH -N 6\n"
      "#SHOALS -N 7\n"
      "true\n");
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.nodes, 0);
  ASSERT_EQ(sub->notes.size(), 1u);
  EXPECT_NE(sub->notes[0].find("job.sh:2: this line is a comment, not a directive"),
            std::string::npos);
}

TEST(DirectivesTest, ShebangIsOptional) {
  auto sub = Script("#SBATCH -N 2\necho hi\n");
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.nodes, 2);
  // Without a trailing newline the last line still counts.
  sub = Script("#SBATCH -N 3\necho hi");
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.nodes, 3);
}

TEST(DirectivesTest, ErrorsNamePathAndLine) {
  struct Case {
    std::string script;
    std::string message;  // the whole message
  } cases[] = {
      {"#!/bin/bash\n#SBATCH --frobnicate=yes\nrun\n",
       "job.sh:2: option --frobnicate has no meaning in Shoal"},
      {"#!/bin/bash\n#SBATCH -N 2\n#SHOAL --nodelist=n[1-4]\nrun\n",
       "asks for 2 nodes and lists 4: the job runs on every listed node"},
      {"#SBATCH -w n[1\nrun\n", "job.sh:1: -w n[1: unbalanced brackets in 'n[1'"},
      {"#SBATCH -F nodes.txt\nrun\n",
       "job.sh:1: option -F has no meaning in Shoal: give the node names with --nodelist"},
      {"#!/bin/bash\n#SBATCH --gres=gpu:4\n\n#SBATCH --gpus-per-node=4\nrun\n",
       "job.sh:4: --gpus-per-node=4 conflicts with --gres given before it: ask for GPUs one way"},
      {"#!/bin/bash\n#SBATCH --job-name=my job\nrun\n",
       "job.sh:2: 'job' is not an option (quote values that hold spaces)"},
      {"#!/bin/bash\n#SBATCH -J \"open\nrun\n", "job.sh:2: a \" quote is not closed"},
      {"#SBATCH -N\nrun\n", "job.sh:1: -N needs a value"},
      {"#SBATCH -N 2-8\nrun\n",
       "job.sh:1: -N 2-8: node ranges (MIN-MAX) are not supported; give one number of nodes"},
      {"#SBATCH --wrap=hostname\nrun\n",
       "job.sh:1: --wrap=hostname: --wrap belongs on the command line, not in a script"},
      {"#SBATCH -- -N 2\nrun\n", "job.sh:1: '--' is not an option (quote values that hold spaces)"},
      {"#!/bin/bash\r\n#SBATCH -N 2\r\nrun\r\n",
       "job.sh:1: the script has DOS line breaks (\\r\\n); convert it with dos2unix"},
      {std::string("#!/bin/sh\nrun\n\0\n", 16),
       "job.sh:3: the script holds a NUL byte; is it a binary file?"},
      {"#!/bin/bash\n#SBATCH -N 2\n",
       "job.sh runs no command: it holds only comments and directives"},
      {"\n\n   \n", "job.sh runs no command: it holds only comments and directives"},
  };
  for (const Case& c : cases) {
    auto sub = Script(c.script);
    ASSERT_FALSE(sub.ok()) << c.script;
    EXPECT_EQ(sub.status().message(), c.message) << c.script;
  }
}

TEST(DirectivesTest, ErrorsWithoutAPathSayScript) {
  std::vector<std::string> notes;
  JobSpec spec;
  Status s = ApplyScriptDirectives("#SBATCH --foo\n", "", spec, notes);
  EXPECT_EQ(s.message(), "script:1: option --foo has no meaning in Shoal");
}

TEST(DirectivesTest, TooLargeAScript) {
  std::string script = "#!/bin/sh\n";
  script.append(kMaxScriptBytes, '\n');
  auto sub = Script(script);
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(sub.status().message(), "job.sh: the script is larger than 4 MiB");
}

TEST(DirectivesTest, ApplyScriptDirectivesKeepsWhatItDoesNotSet) {
  JobSpec spec;
  spec.name = "keep";
  spec.command = "the command";
  spec.time_limit = std::chrono::hours(1);
  std::vector<std::string> notes;
  Status s = ApplyScriptDirectives("#SBATCH -N 2 --mail-type=ALL\n#SHOAL -t 30\nrun\n", "a.sh",
                                   spec, notes);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(spec.name, "keep");
  EXPECT_EQ(spec.command, "the command");
  EXPECT_EQ(spec.nodes, 2);
  EXPECT_EQ(spec.time_limit, std::chrono::minutes(30));
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(FormatMailTypes(spec.mail_types), "BEGIN,END,FAIL,REQUEUE,INVALID_DEPEND");
}

}  // namespace
TEST(DirectivesTest, PyxisContainerOptions) {
  const std::string script =
      "#!/bin/sh\n"
      "#SBATCH --container-image=nvcr.io#nvidia/pytorch:24.01-py3\n"
      "#SBATCH --container-mounts=/data:/data:ro,/scratch\n"
      "#SBATCH --container-workdir=/workspace --container-env=PATH,NCCL_DEBUG\n"
      "#SBATCH --no-container-mount-home\n"
      "python train.py\n";
  auto sub = Script(script);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  const ContainerSpec& c = sub->spec.container;
  EXPECT_EQ(c.image, "nvcr.io#nvidia/pytorch:24.01-py3");
  EXPECT_EQ(c.mounts, (std::vector<ContainerMount>{{"/data", "/data", true},
                                                   {"/scratch", "/scratch", false}}));
  EXPECT_EQ(c.work_dir, "/workspace");
  EXPECT_EQ(c.env, (std::vector<std::string>{"PATH", "NCCL_DEBUG"}));
  EXPECT_FALSE(c.mount_home);
  // The command line wins over the script, as for every option.
  auto over =
      Script(script, {"--container-image=/images/other.tar", "--container-mount-home", "job.sh"});
  ASSERT_TRUE(over.ok()) << over.status().ToString();
  EXPECT_EQ(over->spec.container.image, "/images/other.tar");
  EXPECT_TRUE(over->spec.container.mount_home);

  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {"#SBATCH --container-mounts=data:/data\n", "not an absolute path"},
           {"#SBATCH --container-mounts=/a:/b:rx\n", "the flag is ro or rw"},
           {"#SBATCH --container-mounts=/a/../etc:/b\n", "climbs"},
           {"#SBATCH --container-mounts=/etc:/\n", "cannot cover the image's /"},
           {"#SBATCH --container-mounts=/a:/b:ro:x\n", "not SRC[:DST[:ro|rw]]"},
       }) {
    auto r = Script("#!/bin/sh\n#SBATCH --container-image=x\n" + bad + "true\n");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  }
  auto lone = Script("#!/bin/sh\n#SBATCH --container-mounts=/data\ntrue\n");
  ASSERT_FALSE(lone.ok());
  EXPECT_NE(lone.status().message().find("need --container-image"), std::string::npos)
      << lone.status().message();
  auto env = Script("#!/bin/sh\n#SBATCH --container-image=x --container-env=1BAD\ntrue\n");
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("'1BAD' is not a variable name"), std::string::npos)
      << env.status().message();
}

}  // namespace shoal::submit
