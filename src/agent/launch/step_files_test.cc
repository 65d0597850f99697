#include "agent/launch/step_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "core/files.h"

namespace shoal::agent {
namespace {

TEST(StepFiles, DirNames) {
  EXPECT_EQ(StepDirName({12, 3}), "12.3");
  auto key = ParseStepDirName("12.3");
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(*key, (StepKey{12, 3}));
  EXPECT_EQ(StepDirName({12, 3, 4}), "12.3.4");
  EXPECT_EQ(ParseStepDirName("12.3.4"), (StepKey{12, 3, 4}));
  for (const char* bad : {"events", "12", "12.", ".3", "12.3.tmp", "a.b", "-1.2", "", "12.3.0",
                          "12.3.", "12.3.4.5", "12.3.99999999999"}) {
    EXPECT_FALSE(ParseStepDirName(bad).has_value()) << bad;
  }
}

// What a job writes to $SHOAL_PROGRESS_FILE, and what the agent makes of
// it: the last complete line's first word, when it is a rate.
TEST(StepFiles, ProgressIsTheLastCompleteLinesRate) {
  const std::string dir = ::testing::TempDir() + "progress-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/progress";
  auto rate_of = [&](const std::string& text) {
    EXPECT_TRUE(WriteFile(path, text, 0600).ok());
    return ReadProgressFile(path);
  };
  EXPECT_EQ(rate_of("1234.5\n"), 1234.5);
  EXPECT_EQ(rate_of("10\n20 samples/s\n"), 20);
  EXPECT_EQ(rate_of("10\n20\n3"), 20) << "a line part-way written is not read";
  EXPECT_EQ(rate_of("  7e3\tsteps/s \n"), 7000);
  EXPECT_EQ(rate_of(std::string(100000, 'x') + "\n55\n"), 55) << "only the tail is read";
  for (const char* bad :
       {"", "12", "0\n", "-5\n", "nan\n", "inf\n", "1e300\n", "12abc\n", "fast\n", "\n"}) {
    EXPECT_EQ(rate_of(bad), std::nullopt) << bad;
  }
  // A line longer than the tail read is not taken for the number it ends with.
  EXPECT_EQ(rate_of(std::string(300, '9') + "\n"), std::nullopt);

  // Nothing but a regular file, never through a symbolic link.
  EXPECT_TRUE(WriteFile(dir + "/secret", "42\n", 0600).ok());
  std::filesystem::remove(path);
  std::filesystem::create_symlink(dir + "/secret", path);
  EXPECT_EQ(ReadProgressFile(path), std::nullopt);
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(ReadProgressFile(path), std::nullopt) << "a FIFO is neither read nor waited on";
  EXPECT_EQ(ReadProgressFile(dir + "/missing"), std::nullopt);
  std::filesystem::remove_all(dir);
}

TEST(StepFiles, RequestRoundTrip) {
  SupervisorRequest r;
  r.step.job = 9;
  r.step.epoch = 2;
  r.step.user = "alice";
  r.step.job_account = "physics";
  r.step.command = "echo \"hi\"\n";
  r.step.script = true;
  r.step.env = {"A=1"};
  r.step.nodes = {"a", "b"};
  r.step.tasks_per_node = {1, 2};
  r.step.gpus = {3};
  r.step.memory_mib = 512;
  r.step.grace = Duration(2500);
  r.account = {"alice", 1000, 1000, "/home/alice", "/bin/bash", {1000, 27}};
  r.allow_root_jobs = true;
  r.cgroup.version = CgroupVersion::kV1;
  r.cgroup.v1_memory_dir = "/sys/fs/cgroup/memory/shoal/x";
  r.cgroup.v1_devices_dir = "/sys/fs/cgroup/devices/shoal/x";
  r.gpu_devices = {{0, 195, 0}, {1, 195, 1}};
  Result<SupervisorRequest> back = DecodeRequest(EncodeRequest(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->step.command, r.step.command);
  EXPECT_EQ(back->step.job_account, "physics");
  EXPECT_EQ(back->step.tasks_per_node, r.step.tasks_per_node);
  EXPECT_EQ(back->step.grace, Duration(2500));
  EXPECT_EQ(back->account.groups, r.account.groups);
  EXPECT_EQ(back->account.shell, "/bin/bash");
  EXPECT_TRUE(back->allow_root_jobs);
  EXPECT_EQ(back->cgroup.version, CgroupVersion::kV1);
  EXPECT_EQ(back->cgroup.v1_memory_dir, r.cgroup.v1_memory_dir);
  EXPECT_EQ(back->cgroup.v1_devices_dir, r.cgroup.v1_devices_dir);
  EXPECT_EQ(back->gpu_devices, r.gpu_devices);
  EXPECT_TRUE(back->step.container.image.empty());

  r.step.container = {"/images/bb.tar", {{"/data", "/in", true}}, "/w", {"PATH"}, false};
  r.container = {"runc", false, "/srv/images", "/var/cache/shoal", 1024, "/opt/shoal/shoal-image",
                 {}};
  r.cdi.devices = {{"/dev/nvidia0", ""}};
  r.cdi.mounts = {{"/usr/lib/libcuda.so.1", "/usr/lib/libcuda.so.1", {"ro", "bind"}}};
  r.cdi.env = {"NVIDIA_VISIBLE_DEVICES=void"};
  r.cdi.hooks = {{"createContainer", "/usr/bin/nvidia-ctk", {"nvidia-ctk", "hook"}, {"A=1"}}};
  back = DecodeRequest(EncodeRequest(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->step.container, r.step.container);
  EXPECT_EQ(back->container.runtime, "runc");
  EXPECT_FALSE(back->container.rootless);
  EXPECT_EQ(back->container.image_dir, "/srv/images");
  EXPECT_EQ(back->container.cache_dir, "/var/cache/shoal");
  EXPECT_EQ(back->container.cache_mib, 1024);
  EXPECT_EQ(back->container.image_tool, "/opt/shoal/shoal-image");
  EXPECT_EQ(back->cdi.devices[0].path, "/dev/nvidia0");
  EXPECT_EQ(back->cdi.mounts[0].options, r.cdi.mounts[0].options);
  EXPECT_EQ(back->cdi.env, r.cdi.env);
  EXPECT_EQ(back->cdi.hooks[0].args, r.cdi.hooks[0].args);
  EXPECT_EQ(back->cdi.hooks[0].env, r.cdi.hooks[0].env);

  EXPECT_FALSE(DecodeRequest("{").ok());
  EXPECT_FALSE(DecodeRequest(R"({"job": "nine"})").ok());  // wrong type: a Status, not a throw
}

TEST(StepFiles, OutputRoundTrip) {
  StepOutput o{"/home/a/out", "/home/a/err", {"alice", 1000, 1001, "", "", {1001, 27}}};
  auto back = DecodeOutput(EncodeOutput(7, o));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->first, 7u);
  EXPECT_EQ(back->second.stdout_path, o.stdout_path);
  EXPECT_EQ(back->second.stderr_path, o.stderr_path);
  EXPECT_EQ(back->second.owner.uid, 1000u);
  EXPECT_EQ(back->second.owner.gid, 1001u);
  EXPECT_EQ(back->second.owner.groups, o.owner.groups);
  EXPECT_FALSE(DecodeOutput(R"({"epoch": 1})").ok());
}

// Finished jobs' output records: one journal, the newest line of a job
// winning, a torn last line ignored, the newest kKeptOutputs jobs kept, and
// the file a job of earlier releases folded in.
TEST(StepFiles, FinishedOutputsJournalKeepsTheNewestJobs) {
  namespace fs = std::filesystem;
  const fs::path dir = ::testing::TempDir() + "outputs-" + std::to_string(::getpid());
  fs::remove_all(dir);
  const fs::path outputs = dir / "state" / kOutputsDir;
  fs::create_directories(outputs);
  auto record = [](uint64_t job, uint64_t epoch) {
    return EncodeOutput(epoch,
                        {"/out/" + std::to_string(job), "/err", {"alice", 1000, 1000, "", "", {}}});
  };
  std::string journal;
  const uint64_t jobs = 2 * kKeptOutputs + 5;
  for (uint64_t job = 1; job <= jobs; ++job)
    journal += std::to_string(job) + " " + record(job, 1) + "\n";
  journal += std::to_string(jobs) + " " + record(jobs, 2) + "\n";  // run again
  journal += "30001 {\"epo";                                       // torn by a crash
  ASSERT_TRUE(WriteFile((outputs / kOutputsJournal).string(), journal, 0600).ok());
  ASSERT_TRUE(WriteFile((outputs / "30000").string(), record(30000, 3), 0600).ok());

  StepsOptions options;
  options.dir = (dir / "run").string();
  options.outputs_dir = outputs.string();
  options.supervisor = "/bin/true";
  options.cgroup_root = "none";
  auto steps = Steps::Open(options);
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  for (int pass = 0; pass < 2; ++pass) {  // the second reads what the first wrote back
    const auto kept = (*steps)->FinishedOutputs();
    ASSERT_EQ(kept.size(), kKeptOutputs);
    EXPECT_EQ(kept.begin()->first, jobs - kKeptOutputs + 2) << "the oldest jobs go first";
    EXPECT_EQ(kept.at(jobs).first, 2u) << "a job's newest line wins";
    EXPECT_EQ(kept.at(30000).first, 3u);
    EXPECT_EQ(kept.at(30000).second.stdout_path, "/out/30000");
    EXPECT_EQ(kept.count(30001), 0u);
    EXPECT_FALSE(fs::exists(outputs / "30000")) << "folded into the journal";
    Result<std::string> text = ReadFile((outputs / kOutputsJournal).string());
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(std::count(text->begin(), text->end(), '\n'), static_cast<long>(kKeptOutputs));
  }
  struct stat st {};
  ASSERT_EQ(::stat((outputs / kOutputsJournal).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  steps->reset();
  fs::remove_all(dir);
}

TEST(StepFiles, RecordAndPidFileRoundTrip) {
  StepRecord rec{137, 9, "task 0 (rank 0) was killed by SIGKILL", Time(Duration(1000)),
                 Time(Duration(2500))};
  Result<StepRecord> back = DecodeRecord(EncodeRecord(rec));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->exit_code, 137);
  EXPECT_EQ(back->signal, 9);
  EXPECT_EQ(back->message, rec.message);
  EXPECT_EQ(back->ended, rec.ended);

  auto pid = DecodePidFile(EncodePidFile({1234, 5678}, Time(Duration(42))));
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(pid->first.pid, 1234);
  EXPECT_EQ(pid->first.start_ticks, 5678u);
  EXPECT_EQ(pid->second, Time(Duration(42)));
  EXPECT_FALSE(DecodePidFile("").ok());
  EXPECT_FALSE(DecodePidFile("0 1 2").ok());

  auto tasks = DecodeTasksFile(EncodeTasksFile({{10, 1}, {11, 2}}) + "junk\n");
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[1].pid, 11);
}

TEST(StepFiles, IdentityTellsAReusedPid) {
  Result<ProcessIdentity> self = IdentityOf(::getpid());
  ASSERT_TRUE(self.ok());
  EXPECT_TRUE(IsAlive(*self));
  EXPECT_FALSE(IsAlive({self->pid, self->start_ticks + 1}));
  EXPECT_FALSE(IsAlive({0, 0}));
}

}  // namespace
}  // namespace shoal::agent
