// Node acceptance in the controller: nodes joining a partition that requires
// it wait drained, acceptance tests run as jobs the controller places itself,
// and results resume or drain the node (docs/acceptance.md, "In the cluster").
#include <gtest/gtest.h>

#include "server/controller.h"
#include "server/controller_testing.h"
#include "state/store.h"

namespace shoal::server {
namespace {

using testing::kAdmin;
using testing::kAlice;
using testing::kNodeAgent;
using testing::MakeNode;

using std::chrono::seconds;

class AcceptanceTest : public ::testing::Test {
 protected:
  AcceptanceTest() : c_(Config()) {}

  static ControllerConfig Config() {
    ControllerConfig cfg;
    Partition p;
    p.name = "gpu";
    p.is_default = true;
    p.require_acceptance = true;
    cfg.partitions.push_back(p);
    Partition open;
    open.name = "open";
    cfg.partitions.push_back(open);
    return cfg;
  }

  Time At(int s) const { return kTimeZero + seconds(1000000 + s); }

  void Register(Controller& c, const std::string& name, std::vector<std::string> partitions = {},
                int at = 0) {
    Node n = MakeNode(name);
    n.partitions = std::move(partitions);
    ASSERT_TRUE(c.RegisterNode(kNodeAgent, n, At(at)).ok());
  }

  api::Json NodeOf(const std::string& name) { return *c_.NodeJson(name); }

  AcceptanceResult Verdict(bool passed, std::string summary = "") {
    AcceptanceResult r;
    r.passed = passed;
    r.summary = std::move(summary);
    r.time = At(50);
    if (!passed) r.failures = {"gpu3 gemm bf16: 598 TFLOP/s, below 656 TFLOP/s"};
    return r;
  }

  JobSpec AcceptanceJob(const std::string& node) {
    JobSpec s;
    s.command = "shoal bench node --json";
    s.acceptance_node = node;
    s.time_limit = std::chrono::minutes(30);
    return s;
  }

  JobSpec Work(int gpus) {
    JobSpec s;
    s.gpus = gpus;
    s.command = "train.sh";
    s.time_limit = std::chrono::hours(1);
    return s;
  }

  JobState StateOf(JobId id) {
    return *ParseJobState((*c_.ShowJob(kAdmin, id))["state"].get<std::string>());
  }

  JobId SubmitOk(const Identity& who, JobSpec spec) {
    auto r = c_.Submit(who, std::move(spec), At(1));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? JobId((*r)["jobs"][0].get<uint64_t>()) : JobId(0);
  }

  Controller c_;
};

TEST_F(AcceptanceTest, NewNodesJoinDrainedOnlyWhereRequired) {
  Register(c_, "n1");
  Register(c_, "n2", {"open"});
  EXPECT_EQ(NodeOf("n1")["state"], "drained");
  EXPECT_EQ(NodeOf("n1")["state_reason"], "awaiting acceptance");
  EXPECT_EQ(NodeOf("n2")["state"], "up");
  // Work is not placed on a node awaiting acceptance.
  JobId work = SubmitOk(kAlice, Work(1));
  c_.SchedulePass(At(2));
  EXPECT_EQ(StateOf(work), JobState::kPending);
  // A node that registers again (an agent restart) keeps waiting.
  Register(c_, "n1", {}, 3);
  EXPECT_EQ(NodeOf("n1")["state"], "drained");
}

TEST_F(AcceptanceTest, PassResumesAndFailDrainsWithTheFigures) {
  Register(c_, "n1");
  Register(c_, "n2");
  auto pass = c_.RecordAcceptance(kAdmin, "n1", Verdict(true, "all checks passed"), At(10));
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ((*pass)["action"], "resumed");
  EXPECT_EQ(NodeOf("n1")["state"], "up");
  EXPECT_EQ(NodeOf("n1")["acceptance"]["passed"], true);
  auto fail =
      c_.RecordAcceptance(kAdmin, "n2", Verdict(false, "gpu3 gemm bf16 598 < 656 TFLOP/s"), At(11));
  ASSERT_TRUE(fail.ok());
  EXPECT_EQ((*fail)["action"], "drained");
  EXPECT_EQ(NodeOf("n2")["state"], "drained");
  EXPECT_EQ(NodeOf("n2")["state_reason"], "acceptance failed: gpu3 gemm bf16 598 < 656 TFLOP/s");
  EXPECT_EQ(NodeOf("n2")["acceptance"]["failures"].size(), 1u);
  // A later pass lifts the failed acceptance's drain too.
  ASSERT_TRUE(c_.RecordAcceptance(kAdmin, "n2", Verdict(true, "all checks passed"), At(12)).ok());
  EXPECT_EQ(NodeOf("n2")["state"], "up");
  // A failure on a node in service drains it (what runs may finish).
  ASSERT_TRUE(c_.RecordAcceptance(kAdmin, "n1", Verdict(false, "hbm copy low"), At(13)).ok());
  EXPECT_EQ(NodeOf("n1")["state"], "draining");
  c_.Tick(At(14));
  EXPECT_EQ(NodeOf("n1")["state"], "drained");
  // Only admins record results.
  EXPECT_EQ(c_.RecordAcceptance(kAlice, "n1", Verdict(true), At(15)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.RecordAcceptance(kAdmin, "nope", Verdict(true), At(15)).status().code(),
            StatusCode::kNotFound);
}

TEST_F(AcceptanceTest, AnAdminDrainIsNeverLifted) {
  Register(c_, "n1", {"open"});
  ASSERT_TRUE(c_.Drain(kAdmin, "n1", "disk swap", At(1)).ok());
  auto pass = c_.RecordAcceptance(kAdmin, "n1", Verdict(true, "all checks passed"), At(2));
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ((*pass)["action"], "kept");
  EXPECT_EQ(NodeOf("n1")["state_reason"], "disk swap");
  ASSERT_TRUE(c_.RecordAcceptance(kAdmin, "n1", Verdict(false, "slow"), At(3)).ok());
  EXPECT_EQ(NodeOf("n1")["state_reason"], "disk swap") << "the admin's reason stays";
  EXPECT_EQ(NodeOf("n1")["acceptance"]["passed"], false) << "the result is stored all the same";
}

TEST_F(AcceptanceTest, AcceptanceJobsRunOnTheirNodeOnly) {
  Register(c_, "n1");
  Register(c_, "n2", {"open"});
  // Only admins submit them, and only for registered nodes.
  EXPECT_EQ(c_.Submit(kAlice, AcceptanceJob("n1"), At(1)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.Submit(kAdmin, AcceptanceJob("n9"), At(1)).status().code(), StatusCode::kNotFound);
  JobId test = SubmitOk(kAdmin, AcceptanceJob("n1"));
  c_.SchedulePass(At(2));
  EXPECT_EQ(StateOf(test), JobState::kRunning);
  Outbox out = c_.TakeOutbox();
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].node, "n1");
  EXPECT_EQ(out.launches[0].allocation.GpuCount(), 8);
  EXPECT_TRUE(out.launches[0].allocation.exclusive);
  EXPECT_EQ(NodeOf("n1")["state"], "drained") << "the test does not resume the node";

  // On an up node it waits for the node's jobs, and holds the whole node once started.
  JobId work = SubmitOk(kAdmin, [&] {
    JobSpec s = Work(1);
    s.partition = "open";
    return s;
  }());
  c_.SchedulePass(At(3));
  ASSERT_EQ(StateOf(work), JobState::kRunning);
  JobId test2 = SubmitOk(kAdmin, AcceptanceJob("n2"));
  c_.SchedulePass(At(4));
  EXPECT_EQ(StateOf(test2), JobState::kPending);
  EXPECT_EQ((*c_.ShowJob(kAdmin, test2))["reason_detail"], "node n2 still runs other jobs");

  // A node drained by an admin never runs one.
  ASSERT_TRUE(c_.Drain(kAdmin, "n2", "disk swap", At(5)).ok());
  c_.TakeOutbox();
  Heartbeat hb;
  hb.events.push_back({work, 1, 0, JobEvent::kExited, 0, 0, ""});
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n2", hb, At(6)).ok());
  c_.Tick(At(7));
  c_.SchedulePass(At(7));
  EXPECT_EQ(StateOf(test2), JobState::kPending);
  EXPECT_TRUE(c_.TakeOutbox().launches.empty());
}

TEST_F(AcceptanceTest, MultiNodeTestsHoldEveryNodeInRankOrder) {
  Register(c_, "n1");
  Register(c_, "n2");
  EXPECT_EQ(c_.Submit(kAdmin, AcceptanceJob("n2,n2"), At(1)).status().code(),
            StatusCode::kInvalidArgument);
  JobId test = SubmitOk(kAdmin, AcceptanceJob("n2,n1"));
  c_.SchedulePass(At(2));
  EXPECT_EQ(StateOf(test), JobState::kRunning);
  Outbox out = c_.TakeOutbox();
  ASSERT_EQ(out.launches.size(), 2u);
  EXPECT_EQ(out.launches[0].node, "n2");
  EXPECT_EQ(out.launches[0].node_rank, 0);
  EXPECT_EQ(out.launches[1].node, "n1");
  EXPECT_EQ(out.launches[1].nodes, (std::vector<std::string>{"n2", "n1"}));
  EXPECT_EQ(out.launches[1].allocation.GpuCount(), 8);
}

TEST_F(AcceptanceTest, StatePersistsAcrossARestart) {
  Register(c_, "n1");
  Register(c_, "n2");
  ASSERT_TRUE(
      c_.RecordAcceptance(kAdmin, "n2", Verdict(false, "gpu3 gemm bf16 598 < 656 TFLOP/s"), At(10))
          .ok());
  auto store = state::NewMemoryStore();
  ASSERT_TRUE(store->Commit(c_.TakeBatch()).ok());
  auto loaded = store->Load(kTimeZero);
  ASSERT_TRUE(loaded.ok());
  // Through the records' JSON, as the SQLite store keeps them.
  for (Node& n : loaded->nodes)
    n = *api::NodeFromJson(api::ToJson(n));
  Controller again(Config());
  ASSERT_TRUE(again.Restore(*loaded, At(20)).ok());
  Register(again, "n1", {}, 21);
  Register(again, "n2", {}, 21);
  EXPECT_EQ((*again.NodeJson("n1"))["state_reason"], "awaiting acceptance");
  EXPECT_EQ((*again.NodeJson("n1"))["state"], "drained");
  EXPECT_EQ((*again.NodeJson("n2"))["state_reason"],
            "acceptance failed: gpu3 gemm bf16 598 < 656 TFLOP/s");
  EXPECT_EQ((*again.NodeJson("n2"))["acceptance"]["passed"], false);
  ASSERT_TRUE(
      again.RecordAcceptance(kAdmin, "n1", Verdict(true, "all checks passed"), At(22)).ok());
  EXPECT_EQ((*again.NodeJson("n1"))["state"], "up");
}

TEST(AcceptanceJsonTest, ReportsBodiesAreReadStrictly) {
  auto a = api::AcceptanceFromJson(api::Json::parse(
      R"({"passed": false, "summary": "s", "time": 1700000000, "report": {"failures": ["a", "b"], "raw": {}}})"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->failures.size(), 2u);
  EXPECT_FALSE(api::AcceptanceFromJson(api::Json::parse(R"({"summary": "s"})")).ok());
  EXPECT_FALSE(api::AcceptanceFromJson(api::Json::parse(R"({"passed": true, "extra": 1})")).ok());
}

}  // namespace
}  // namespace shoal::server
