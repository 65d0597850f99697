// Tests of whole submissions: what runs (script, --wrap or a command), how
// tasks, CPUs and GPUs combine, and the helpers the CLI uses.
#include "submit/submit.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>

namespace shoal::submit {
namespace {

TEST(SubmitTest, CommandAfterTheOptions) {
  auto sub = ParseSubmit({"-N1", "--gpus=1", "python", "train.py", "--lr", "3"}, "", "");
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.command, "python train.py --lr 3");
  EXPECT_FALSE(sub->spec.script);
  EXPECT_EQ(sub->spec.nodes, 1);
  EXPECT_EQ(sub->spec.gpus, 1);
}

TEST(SubmitTest, OptionsAfterTheCommandBelongToIt) {
  auto sub = ParseSubmit({"python", "-N", "2", "--mail-user=x"}, "", "");
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.command, "python -N 2 --mail-user=x");
  EXPECT_EQ(sub->spec.nodes, 0);
}

TEST(SubmitTest, DoubleDashEndsTheOptions) {
  auto sub = ParseSubmit({"-N", "2", "--", "-weird-program", "a b"}, "", "");
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.command, "-weird-program 'a b'");
  EXPECT_EQ(sub->spec.nodes, 2);
}

TEST(SubmitTest, Wrap) {
  for (const auto& args : {std::vector<std::string>{"--wrap=echo hi; sleep 1"},
                           std::vector<std::string>{"--wrap", "echo hi; sleep 1"}}) {
    auto sub = ParseSubmit(args, "", "");
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    // As sbatch does, the command becomes a batch script: it runs once.
    EXPECT_EQ(sub->spec.command, "#!/bin/sh\necho hi; sleep 1\n");
    EXPECT_TRUE(sub->spec.script);
  }
}

TEST(SubmitTest, BatchScript) {
  const std::string script = "#!/bin/bash\n#SBATCH -N 2\nsrun hostname\n";
  for (const auto& args :
       {std::vector<std::string>{"job.sh"}, std::vector<std::string>{"-t", "5", "job.sh"},
        std::vector<std::string>{}}) {
    auto sub = ParseSubmit(args, script, "job.sh");
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    EXPECT_TRUE(sub->spec.script);
    EXPECT_EQ(sub->spec.command, script);
    EXPECT_EQ(sub->spec.nodes, 2);
    EXPECT_TRUE(sub->spec.script_args.empty());
  }
}

TEST(SubmitTest, WordsAfterTheScriptAreItsArguments) {
  // As sbatch takes them: options or not, with a note for the ones that look
  // like options (they are usually meant for sbatch).
  auto sub =
      ParseSubmit({"-N", "2", "job.sh", "--lr", "0.1", "data dir"}, "#!/bin/sh\nrun\n", "job.sh");
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->spec.nodes, 2);
  EXPECT_EQ(sub->spec.script_args, (std::vector<std::string>{"--lr", "0.1", "data dir"}));
  ASSERT_EQ(sub->notes.size(), 1u);
  EXPECT_NE(sub->notes[0].find("'--lr' comes after job.sh"), std::string::npos) << sub->notes[0];
  auto plain = ParseSubmit({"job.sh", "one"}, "#!/bin/sh\nrun\n", "job.sh");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->spec.script_args, std::vector<std::string>{"one"});
  EXPECT_TRUE(plain->notes.empty());
  // Only a script takes arguments.
  JobSpec spec = plain->spec;
  spec.script = false;
  EXPECT_NE(spec.Validate().message().find("arguments are for a batch script"), std::string::npos);
}

TEST(SubmitTest, UnnamedJobsAreNamedAsSlurmNamesThem) {
  struct Case {
    std::vector<std::string> args;
    std::string script, path, name;
  };
  for (const Case& c : std::vector<Case>{
           {{"--wrap=echo hi"}, "", "", "wrap"},
           {{"/usr/bin/python3", "train.py"}, "", "", "python3"},
           {{"runs/train.sh"}, "#!/bin/sh\necho\n", "runs/train.sh", "train.sh"},
           {{"-J", "mine", "--wrap=true"}, "", "", "mine"},
       }) {
    auto sub = ParseSubmit(c.args, c.script, c.path);
    ASSERT_TRUE(sub.ok()) << sub.status().ToString();
    EXPECT_EQ(sub->spec.name, c.name);
  }
}

TEST(SubmitTest, WhatRunsMustBeOneThing) {
  struct Case {
    std::vector<std::string> args;
    std::string script;
    std::string message;
  } cases[] = {
      {{}, "", "nothing to run: give a batch script, --wrap=CMD, or a command after the options"},
      {{"-N", "2"}, "", "nothing to run"},
      {{"-N", "2", "--"}, "", "nothing to run"},
      {{"--wrap=hostname", "job.sh"}, "run\n", "give either --wrap or a batch script, not both"},
      {{"--wrap=hostname", "python"},
       "",
       "give either --wrap or a command after the options, not both"},
      {{"--", ""}, "", "the command is an empty word"},
      {{"--wrap"}, "", "--wrap needs a value"},
  };
  for (const Case& c : cases) {
    auto sub = ParseSubmit(c.args, c.script, "job.sh");
    ASSERT_FALSE(sub.ok()) << c.message;
    EXPECT_NE(sub.status().message().find(c.message), std::string::npos)
        << "got: " << sub.status().message() << "\nwant: " << c.message;
  }
}

// How -N, -n, --ntasks-per-node, -c, --cpus-per-gpu and the GPU options
// combine (the rules are in submit.h).
TEST(SubmitTest, TasksCpusAndGpusCombine) {
  struct Case {
    std::vector<std::string> args;
    int nodes;
    int tasks;
    int64_t cpu_milli_per_node;
    int64_t cpu_milli_per_gpu;
  } cases[] = {
      {{}, 0, 0, 0, 0},
      {{"-N", "2"}, 2, 0, 0, 0},
      {{"-n", "4"}, 0, 4, 4000, 0},  // one CPU per task, as in Slurm
      {{"-c", "8"}, 0, 0, 8000, 0},  // one task on the one node
      {{"-n", "4", "-c", "8"}, 0, 4, 32000, 0},
      {{"-c", "8", "-n", "4"}, 0, 4, 32000, 0},  // order does not matter
      {{"-N", "2", "-n", "8", "-c", "4"}, 2, 8, 16000, 0},
      {{"-N", "3", "-n", "8", "-c", "2"},
       3,
       8,
       6000,
       0},  // ceil(8 / 3) = 3 tasks on the fullest node
      {{"-N", "2", "--ntasks-per-node=4", "-c", "2"}, 2, 8, 8000, 0},
      {{"-N", "2", "--ntasks-per-node=4", "-n", "6"}, 2, 6, 4000, 0},
      {{"--gpus-per-node=8", "-N", "2", "-n", "16", "-c", "6"}, 2, 16, 48000, 0},
      {{"--gpus-per-node=8", "--ntasks-per-node=8", "-c", "6"}, 0, 8, 48000, 0},
      {{"--gres=gpu:4", "-N", "2", "-c", "10"}, 2, 0, 10000, 0},
      {{"--gpus=8", "-n", "8", "-c", "4"}, 0, 8, 0, 4000},  // nodes unknown: CPUs go with the GPUs
      {{"--gpus=3", "-n", "2"}, 0, 2, 0, 667},              // 2000 over 3 GPUs, rounded up
      {{"--gpus=8", "-c", "4"}, 0, 0, 4000, 0},             // one task per node
      {{"--gpus=8", "-N", "2", "-n", "8", "-c", "4"}, 2, 8, 16000, 0},
      {{"--gpus=4", "--cpus-per-gpu=6", "-n", "4"}, 0, 4, 0, 6000},
      {{"--gres=gpu:4", "--cpus-per-gpu=6"}, 0, 0, 0, 6000},
      {{"-c", "4", "-c", "2"}, 0, 0, 2000, 0},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.push_back("--wrap=true");
    auto sub = ParseSubmit(args, "", "");
    std::string shown;
    for (const auto& a : c.args)
      shown += a + " ";
    ASSERT_TRUE(sub.ok()) << shown << ": " << sub.status().ToString();
    EXPECT_EQ(sub->spec.nodes, c.nodes) << shown;
    EXPECT_EQ(sub->spec.tasks, c.tasks) << shown;
    EXPECT_EQ(sub->spec.cpu_milli_per_node, c.cpu_milli_per_node) << shown;
    EXPECT_EQ(sub->spec.cpu_milli_per_gpu, c.cpu_milli_per_gpu) << shown;
  }
}

TEST(SubmitTest, ApplyOption) {
  JobSpec spec;
  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyOption("--gres=gpu:a100:8", "", spec, notes).ok());
  EXPECT_EQ(spec.gpus_per_node, 8);
  EXPECT_EQ(spec.gpu_models, std::vector<std::string>{"a100"});
  ASSERT_TRUE(ApplyOption("-N", "2", spec, notes).ok());
  EXPECT_EQ(spec.nodes, 2);
  ASSERT_TRUE(ApplyOption("-N3", "", spec, notes).ok());
  EXPECT_EQ(spec.nodes, 3);
  ASSERT_TRUE(ApplyOption("--hold", "", spec, notes).ok());
  EXPECT_TRUE(spec.hold);
  // A lone -c reads the spec's tasks and nodes as they stand.
  ASSERT_TRUE(ApplyOption("-n", "6", spec, notes).ok());
  ASSERT_TRUE(ApplyOption("--cpus-per-task", "4", spec, notes).ok());
  EXPECT_EQ(spec.cpu_milli_per_node, 2 * 4 * 1000);
  ASSERT_TRUE(ApplyOption("--wrap", "hostname", spec, notes).ok());
  EXPECT_EQ(spec.command, "hostname");
  EXPECT_FALSE(spec.script);
  EXPECT_TRUE(notes.empty());

  EXPECT_EQ(ApplyOption("--hold", "yes", spec, notes).message(), "--hold takes no value");
  EXPECT_EQ(ApplyOption("--gres=gpu:1", "2", spec, notes).message(),
            "--gres=gpu:1: give the value once");
  EXPECT_EQ(ApplyOption("-N", "", spec, notes).message(), "-N needs a value");
  EXPECT_EQ(ApplyOption("--frobnicate", "me", spec, notes).message(),
            "option --frobnicate has no meaning in Shoal");
  EXPECT_EQ(ApplyOption("nodes", "2", spec, notes).message(), "'nodes' is not an option");
  EXPECT_EQ(ApplyOption("", "", spec, notes).message(), "'' is not an option");
}

TEST(SubmitTest, CommandStart) {
  struct Case {
    std::vector<std::string> args;
    size_t start;
  } cases[] = {
      {{}, 0},
      {{"job.sh"}, 0},
      {{"-N", "2", "-J", "x", "job.sh", "--foo"}, 4},
      {{"-H", "job.sh"}, 1},
      {{"-N2", "--hold", "--exclusive"}, 3},
      {{"--", "x"}, 1},
      {{"-J", "--", "x"}, 2},  // "--" is -J's value here
  };
  for (const auto& c : cases) {
    auto start = CommandStart(c.args);
    ASSERT_TRUE(start.ok()) << start.status().ToString();
    EXPECT_EQ(*start, c.start);
  }
  // Values go unchecked; Slurm's options take their values; an option
  // nobody knows is an error, so that the word after it is not taken for
  // the script.
  EXPECT_EQ(*CommandStart({"--mail-user=x", "-N", "abc", "job.sh"}), 3u);
  EXPECT_EQ(*CommandStart({"--hint", "compute_bound", "-v", "job.sh"}), 3u);
  EXPECT_EQ(CommandStart({"--partiton", "gpu", "--wrap=x"}).status().message(),
            "option --partiton has no meaning in Shoal (did you mean --partition?)");
  EXPECT_EQ(CommandStart({"-J", "x", "-N"}).status().message(), "-N needs a value");
}

TEST(ShellJoinTest, QuotesWhatTheShellWouldRead) {
  struct Case {
    std::vector<std::string> words;
    std::string line;
  } cases[] = {
      {{"python", "train.py", "--lr=3e-4", "-o", "a/b.c", "x@y:1,2%"},
       "python train.py --lr=3e-4 -o a/b.c x@y:1,2%"},
      {{"echo", "a b"}, "echo 'a b'"},
      {{"echo", "it's"}, "echo 'it'\\''s'"},
      {{"echo", ""}, "echo ''"},
      {{"echo", "$HOME", "*", "~", "#x", "a;b", "`x`"}, "echo '$HOME' '*' '~' '#x' 'a;b' '`x`'"},
      {{"FOO=1", "env"}, "'FOO=1' env"},
      {{"env", "FOO=1"}, "env FOO=1"},
  };
  for (const Case& c : cases)
    EXPECT_EQ(ShellJoin(c.words), c.line);
}

// The strongest check of the quoting: a shell gives the words back.
TEST(ShellJoinTest, ShellGivesTheWordsBack) {
  const std::vector<std::string> words = {
      "a b",   "it's",      "$HOME",      "`id`",        "",
      "*",     "~",         "say \"hi\"", "back\\slash", "FOO=1",
      "#c",    "tab\there", "new\nline",  "!",           "semi;colon",
      "&",     "|",         "'",          "''",          "(x)",
      "{a,b}", "[ab]",      "<in",        ">out",        "\xc3\xa9t\xc3\xa9"};
  std::vector<std::string> command = {"printf", "[%s]"};
  command.insert(command.end(), words.begin(), words.end());
  FILE* pipe = popen(ShellJoin(command).c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string got;
  char buf[256];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0)
    got.append(buf, n);
  ASSERT_EQ(pclose(pipe), 0);
  std::string want;
  for (const std::string& w : words)
    want += "[" + w + "]";
  EXPECT_EQ(got, want);
}

TEST(SubmitTest, LargestRequestsPass) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--gpus-per-node=64", "-N", "100000"},
           {"-N", "100000", "-n", "1000000"},
           {"--gpus=1000000"},
           {"-t", "365-00:00:00"},
           {"--mem=64T"},
           {"--gpus=1", "--gpu-share=1"},
           {"--array=0-99999%1"},
       }) {
    std::vector<std::string> with_command = args;
    with_command.push_back("--wrap=x");
    auto sub = ParseSubmit(with_command, "", "");
    EXPECT_TRUE(sub.ok()) << args[0] << ": " << sub.status().ToString();
  }
}

}  // namespace
}  // namespace shoal::submit

namespace shoal::submit {
namespace {

Submission MustParse(const std::vector<std::string>& args, std::string_view script = "") {
  auto sub = ParseSubmit(args, script, script.empty() ? "" : "job.sh");
  EXPECT_TRUE(sub.ok()) << sub.status().ToString();
  return sub.ok() ? *sub : Submission{};
}

TEST(SlurmOptionsTest, SlurmOnlyOptionsRunWithANoteAndStrictRefusesThem) {
  const std::string script = "#!/bin/bash\n#SBATCH --hint=nomultithread\n#SBATCH -v\nrun\n";
  Submission sub = MustParse({}, script);
  ASSERT_EQ(sub.notes.size(), 2u);
  EXPECT_EQ(sub.notes[0], "--hint=nomultithread: accepted; it has no meaning in Shoal");
  EXPECT_EQ(sub.notes[1], "--verbose: accepted; it has no meaning in Shoal");
  auto strict = ParseSubmit({"--strict", "job.sh"}, script, "job.sh");
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().message(),
            "--strict: these options have no meaning in Shoal: --hint=nomultithread --verbose");
  // --strict only belongs on the command line; a flag Slurm knows takes no value.
  EXPECT_FALSE(ParseSubmit({}, "#!/bin/sh\n#SBATCH --strict\nrun\n", "job.sh").ok());
  EXPECT_EQ(ParseSubmit({"--contiguous=yes", "--wrap=x"}, "", "").status().message(),
            "--contiguous takes no value");
}

TEST(SlurmOptionsTest, ExportSaysWhichVariablesTravel) {
  Submission all = MustParse({"--wrap=x"});
  EXPECT_TRUE(all.export_all);
  Submission none = MustParse({"--export=NONE", "--wrap=x"});
  EXPECT_FALSE(none.export_all);
  EXPECT_TRUE(none.export_names.empty());
  Submission named = MustParse({"--export=PATH,HOME,LR=0.1", "--wrap=x"});
  EXPECT_FALSE(named.export_all);
  EXPECT_EQ(named.export_names, (std::vector<std::string>{"PATH", "HOME"}));
  EXPECT_EQ(named.spec.env->at("LR"), "0.1");
  Submission all_plus = MustParse({"--export=ALL,LR=0.2", "--wrap=x"});
  EXPECT_TRUE(all_plus.export_all);
  EXPECT_EQ(all_plus.spec.env->at("LR"), "0.2");
  EXPECT_FALSE(ParseSubmit({"--export=ALL,NONE", "--wrap=x"}, "", "").ok());
  EXPECT_FALSE(ParseSubmit({"--export=1BAD", "--wrap=x"}, "", "").ok());
}

TEST(SlurmOptionsTest, TaskGpusAndPerCpuMemory) {
  Submission sub = MustParse({"-n", "8", "-N", "2", "--gpus-per-task=1", "--wrap=x"});
  EXPECT_EQ(sub.spec.gpus, 8);
  EXPECT_EQ(sub.spec.gpus_per_task, 1);
  EXPECT_EQ(ParseSubmit({"-n", "3", "-N", "2", "--gpus-per-task=1", "--wrap=x"}, "", "")
                .status()
                .message(),
            "3 tasks x 1 GPUs do not divide evenly over 2 nodes");
  EXPECT_FALSE(ParseSubmit({"--gpus-per-task=1", "--gpus=2", "--wrap=x"}, "", "").ok());
  Submission per_gpu = MustParse({"--gpus=4", "--ntasks-per-gpu=2", "--wrap=x"});
  EXPECT_EQ(per_gpu.spec.tasks, 8);
  // 2 tasks x 4 CPUs on the node, 2G each CPU.
  Submission mem = MustParse({"--ntasks-per-node=2", "-c", "4", "--mem-per-cpu=2G", "--wrap=x"});
  EXPECT_EQ(mem.spec.mem_mib_per_node, 8 * 2048);
  Submission whole = MustParse({"--mem=0", "--wrap=x"});
  EXPECT_TRUE(whole.spec.exclusive);
  EXPECT_EQ(whole.spec.mem_mib_per_node, 0);
}

TEST(SlurmOptionsTest, SignalBeforeTheTimeLimit) {
  Submission batch = MustParse({"--signal=B:USR1@90", "--wrap=x"});
  EXPECT_EQ(batch.spec.signal, SIGUSR1);
  EXPECT_EQ(batch.spec.signal_before_s, 90);
  EXPECT_TRUE(batch.spec.signal_batch_only);
  Submission steps = MustParse({"--signal=R:SIGTERM", "--wrap=x"});
  EXPECT_EQ(steps.spec.signal, SIGTERM);
  EXPECT_EQ(steps.spec.signal_before_s, 60) << "sbatch's default";
  EXPECT_FALSE(steps.spec.signal_batch_only);
  EXPECT_EQ(MustParse({"--signal=10@0", "--wrap=x"}).spec.signal, 10);
}

TEST(SlurmOptionsTest, OutputModeCommentWaitParsable) {
  Submission sub =
      MustParse({"--open-mode=append", "--comment=ablation 3", "--parsable", "-W", "--wrap=x"});
  EXPECT_TRUE(sub.spec.append_output);
  EXPECT_EQ(sub.spec.comment, "ablation 3");
  EXPECT_TRUE(sub.parsable);
  EXPECT_TRUE(sub.wait);
  EXPECT_FALSE(ParseSubmit({"--open-mode=sometimes", "--wrap=x"}, "", "").ok());
}

// --test-only: a question to the server, from the command line or, as
// sbatch takes it, from a script's #SBATCH line.
TEST(SlurmOptionsTest, TestOnly) {
  EXPECT_FALSE(MustParse({"--wrap=x"}).test_only);
  EXPECT_TRUE(MustParse({"--test-only", "-N", "2", "--wrap=x"}).test_only);
  auto script = ParseSubmit({"job.sh"}, "#!/bin/sh\n#SBATCH --test-only\nhostname\n", "job.sh");
  ASSERT_TRUE(script.ok()) << script.status().ToString();
  EXPECT_TRUE(script->test_only);
}

}  // namespace
}  // namespace shoal::submit
