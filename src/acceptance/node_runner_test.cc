#include "acceptance/node_runner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "acceptance/bench_testing.h"

namespace shoal::acceptance {
namespace {

// Fake node binaries: shell scripts in a temporary folder.
class NodeRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("shoal-runner-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Script(const std::string& name, const std::string& body) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  std::string File(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::filesystem::path dir_;
};

TEST_F(NodeRunnerTest, ReadsResultsAndPassesOptions) {
  NodeResults want = testing::Node(2);
  want.measurements.push_back(testing::Figure(TestKind::kGemm, "bf16", 1, 770, kUnitTflops));
  const std::string results = File("results.json", ToJson(want));
  const std::string args = (dir_ / "args").string(), env = (dir_ / "env").string();
  NodeRunOptions o;
  o.binary = Script(
      "node", "echo \"$@\" > " + args + "\nenv > " + env + "\necho progress >&2\ncat " + results);
  o.node.quick = true;
  o.node.tests = {TestKind::kGemm};
  o.extra_env = {"SHOAL_TEST_MARK=42"};
  const auto run = RunNode(o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->results, want);
  EXPECT_NE(Read(args).find("--tests gemm --quick"), std::string::npos) << Read(args);
  // GPU indices follow PCI order, as NVML's do.
  EXPECT_NE(Read(env).find("CUDA_DEVICE_ORDER=PCI_BUS_ID"), std::string::npos);
  EXPECT_NE(Read(env).find("SHOAL_TEST_MARK=42"), std::string::npos);
}

TEST_F(NodeRunnerTest, FailuresSayWhatWentWrong) {
  struct Row {
    std::string what;
    std::string body;
    int timeout_s;
    std::string error;
  };
  const Row rows[] = {
      {"garbage on stdout", "echo 'Segmentation fault (core dumped)'", 10,
       "printed malformed results"},
      {"nothing on stdout", "true", 10, "the node results are empty"},
      {"a half-written result", "printf '{\"schema\": \"shoal-bench-node/1\", \"gpus\": ['", 10,
       "not valid JSON"},
      {"a failing exit", "echo '{}'; exit 3", 10, "exited with status 3"},
      {"a crash", "kill -SEGV $$", 10, "killed by signal 11"},
      {"a hang", "exec sleep 30", 1, "ran past 1 s"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    NodeRunOptions o;
    o.binary = Script("node", r.body);
    o.timeout_s = r.timeout_s;
    const auto run = RunNode(o);
    ASSERT_FALSE(run.ok());
    EXPECT_NE(run.status().message().find(r.error), std::string::npos) << run.status().message();
  }
}

TEST_F(NodeRunnerTest, MissingBinary) {
  NodeRunOptions o;
  o.binary = (dir_ / "absent").string();
  const auto run = RunNode(o);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kNotFound);
  EXPECT_NE(run.status().message().find("absent"), std::string::npos);
  o.binary = File("not-executable", "#!/bin/sh\n");
  EXPECT_FALSE(RunNode(o).ok());
}

TEST_F(NodeRunnerTest, FindsTheBinaryBesideShoalOrFromTheEnvironment) {
  // The test binary has no shoal-bench-node beside it: the error says where it looked.
  ::unsetenv("SHOAL_BENCH_NODE");
  const auto beside = FindNodeBinary();
  if (!beside.ok()) {
    EXPECT_NE(beside.status().message().find("shoal-bench-node"), std::string::npos);
    EXPECT_NE(beside.status().message().find("CUDA toolkit"), std::string::npos);
  }
  const std::string fake = Script("fake-node", "true");
  ::setenv("SHOAL_BENCH_NODE", fake.c_str(), 1);
  EXPECT_EQ(*FindNodeBinary(), fake);
  ::setenv("SHOAL_BENCH_NODE", (dir_ / "nope").c_str(), 1);
  EXPECT_FALSE(FindNodeBinary().ok());
  ::unsetenv("SHOAL_BENCH_NODE");
}

TEST_F(NodeRunnerTest, SamplesTelemetryWhileTheNodeRuns) {
  const std::string results = File("results.json", ToJson(testing::Node(1)));
  std::atomic<int> calls{0};
  NodeRunOptions o;
  o.binary = Script("node", "sleep 0.3\ncat " + results);
  o.telemetry_interval_ms = 20;
  o.telemetry = [&] {
    ++calls;
    TelemetrySample s;
    s.gpu_uuid = "GPU-00000000";
    return std::vector<TelemetrySample>{s};
  };
  const auto run = RunNode(o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_GE(calls.load(), 5);
  EXPECT_EQ(static_cast<int>(run->samples.size()), calls.load());
}

}  // namespace
}  // namespace shoal::acceptance
