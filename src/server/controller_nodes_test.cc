// The controller's nodes at fleet scale: listings by page and filter, the
// summary by model and state, the heartbeat interval it asks of a large
// fleet, and registrations that reach the scheduler once per pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "server/controller_testing.h"

namespace shoal::server {
namespace {

using namespace testing;  // NOLINT

class ControllerNodesTest : public ControllerFixture {
 protected:
  // Two 4-GPU jobs started on the one node: one that may be requeued, one not.
  std::pair<JobId, JobId> TwoJobsOnOneNode() {
    JobSpec requeueable = Spec(4);
    requeueable.requeue = true;
    const JobId a = Submit(kAlice, requeueable, 1);
    const JobId b = Submit(kAlice, Spec(4), 1);
    c_.SchedulePass(At(2));
    return {a, b};
  }
};

std::vector<std::string> Names(const NodePage& page) {
  std::vector<std::string> out;
  for (const NodeView& v : page.nodes)
    out.push_back(v.node.name);
  return out;
}

// A node as its agent registers it after boot `boot`.
Node Booted(const std::string& name, const std::string& boot) {
  Node n = MakeNode(name);
  n.boot_id = boot;
  return n;
}

TEST_F(ControllerNodesTest, ListingsComeInPagesInNameOrderAndFilter) {
  for (const char* name : {"n3", "n1", "n5", "n2", "n4"})
    Register(name);
  ASSERT_TRUE(c_.Drain(kAdmin, "n2", "bad fan", At(1)).ok());
  ASSERT_TRUE(c_.Drain(kAdmin, "n4", "bad fan", At(1)).ok());

  NodeFilter f;
  f.limit = 2;
  NodePage page = c_.ListNodes(f);
  EXPECT_EQ(Names(page), (std::vector<std::string>{"n1", "n2"}));
  ASSERT_TRUE(page.next_after.has_value());
  f.after = *page.next_after;
  page = c_.ListNodes(f);
  EXPECT_EQ(Names(page), (std::vector<std::string>{"n3", "n4"}));
  f.after = *page.next_after;
  page = c_.ListNodes(f);
  EXPECT_EQ(Names(page), (std::vector<std::string>{"n5"}));
  EXPECT_FALSE(page.next_after.has_value());

  NodeFilter draining;
  draining.state = NodeState::kDraining;
  EXPECT_EQ(Names(c_.ListNodes(draining)), (std::vector<std::string>{"n2", "n4"}));
  NodeFilter other_model;
  other_model.model = "A100-SXM-80GB";
  EXPECT_TRUE(c_.ListNodes(other_model).nodes.empty());
  NodeFilter h100;
  h100.model = "H100-SXM-80GB";
  h100.after = "n4";
  EXPECT_EQ(Names(c_.ListNodes(h100)), (std::vector<std::string>{"n5"}));
}

TEST_F(ControllerNodesTest, TheSummaryCountsNodesAndGpusByModelAndState) {
  Register("a1");
  Register("a2");
  Register("small", 4);
  ASSERT_TRUE(c_.Drain(kAdmin, "a2", "maintenance", At(1)).ok());
  const JobId id = Submit(kAlice, Spec(3), 1);
  c_.SchedulePass(At(2));
  ASSERT_EQ(StateOf(id), JobState::kRunning);

  const api::Json s = c_.NodeSummary();
  EXPECT_EQ(s["nodes"], 3);
  int nodes = 0, gpus = 0, used = 0, draining = 0;
  for (const api::Json& row : s["summary"]) {
    EXPECT_EQ(row["model"], "H100-SXM-80GB");
    nodes += row["nodes"].get<int>();
    gpus += row["gpus"].get<int>();
    used += row["gpus_used"].get<int>();
    if (row["state"] == "draining") draining += row["nodes"].get<int>();
  }
  EXPECT_EQ(nodes, 3);
  EXPECT_EQ(gpus, 20);
  EXPECT_EQ(used, 3);
  EXPECT_EQ(draining, 1);
}

TEST_F(ControllerNodesTest, ALargeFleetIsAskedToBeatLessOftenWithinTheNodeTimeout) {
  ControllerConfig cfg = Config();
  cfg.max_heartbeat_rate = 10;
  cfg.node_timeout = std::chrono::seconds(9);
  Controller c(cfg);
  auto beat_s = [&](const std::string& node) {
    auto r = c.ReceiveHeartbeat(kNodeAgent, node, Heartbeat{}, At(1));
    EXPECT_TRUE(r.ok());
    return r.ok() ? (*r)["heartbeat_s"].get<double>() : -1.0;
  };
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(c.RegisterNode(kNodeAgent, MakeNode("n" + std::to_string(i)), At(0)).ok());
  EXPECT_DOUBLE_EQ(beat_s("n0"), 0.5);  // 5 nodes at 10 beats/s: the agents' own 1 s stands
  for (int i = 5; i < 20; ++i)
    ASSERT_TRUE(c.RegisterNode(kNodeAgent, MakeNode("n" + std::to_string(i)), At(0)).ok());
  EXPECT_DOUBLE_EQ(beat_s("n0"), 2.0);
  for (int i = 20; i < 100; ++i)
    ASSERT_TRUE(c.RegisterNode(kNodeAgent, MakeNode("n" + std::to_string(i)), At(0)).ok());
  EXPECT_DOUBLE_EQ(beat_s("n0"), 3.0);  // never more than a third of the node timeout
  // The registration's answer says it too.
  auto reg = c.RegisterNode(kNodeAgent, MakeNode("n0"), At(2));
  ASSERT_TRUE(reg.ok());
  EXPECT_DOUBLE_EQ((*reg)["heartbeat_s"].get<double>(), 3.0);
}

TEST_F(ControllerNodesTest, AJobForANodeThatHasJustRegisteredIsAcceptedAndRuns) {
  Register("small", 2);
  c_.SchedulePass(At(0));
  EXPECT_FALSE(c_.Submit(kAlice, Spec(8), At(0)).ok());  // nothing holds 8 GPUs yet
  // The inventory is rebuilt at the next pass, not at each registration;
  // a job that does not fit the old one has it rebuilt at once.
  Register("big", 8, 1);
  const JobId id = Submit(kAlice, Spec(8), 1);
  ASSERT_NE(id, JobId(0));
  c_.SchedulePass(At(2));
  EXPECT_EQ(StateOf(id), JobState::kRunning);
  EXPECT_EQ((*c_.NodeJson("big"))["gpus_used"], 8);
  // One that nothing holds (13 GPUs of 12) is refused all the same.
  Register("other-small", 2, 3);
  EXPECT_FALSE(c_.Submit(kAlice, Spec(13), At(3)).ok());
  EXPECT_TRUE(c_.Submit(kAlice, Spec(12), At(3)).ok());
}

// A scrape right after a registration, before any pass, shows the node.
// A fleet re-registering after a controller restart: a node that comes
// back as it was writes nothing and asks for no pass; one that changed, or
// was down, is written.
TEST_F(ControllerNodesTest, ANodeThatComesBackAsItWasWritesNothing) {
  Register("n1");
  Register("n2");
  ASSERT_TRUE(c_.Drain(kAdmin, "n2", "bad fan", At(1)).ok());
  EXPECT_EQ(c_.TakeBatch().nodes.size(), 2u);
  c_.SchedulePass(At(2));
  ASSERT_FALSE(c_.WantsPass());
  Register("n1", 8, 3);
  Register("n2", 8, 3);
  EXPECT_TRUE(c_.TakeBatch().nodes.empty()) << "nothing changed";
  EXPECT_FALSE(c_.WantsPass());
  EXPECT_EQ((*c_.NodeJson("n2"))["state"], "draining") << "still drained";
  Register("n1", 4, 4);  // its GPUs changed
  state::Batch b = c_.TakeBatch();
  ASSERT_EQ(b.nodes.size(), 1u);
  EXPECT_EQ(b.nodes[0].GpuCount(), 4);
  EXPECT_TRUE(c_.WantsPass());
  // Lost, then back as it was: its state changed.
  c_.SchedulePass(At(5));
  c_.Tick(At(200));
  c_.TakeBatch();
  ASSERT_EQ((*c_.NodeJson("n1"))["state"], "down");
  Register("n1", 4, 201);
  b = c_.TakeBatch();
  ASSERT_EQ(b.nodes.size(), 1u);
  EXPECT_EQ(b.nodes[0].state, NodeState::kUp);
}

// While a fleet joins, passes rebuild the inventory at most once per
// rebuild_pacing times the last rebuild's cost; a job only a node that has
// just joined can hold still has it rebuilt at once, and runs there.
TEST_F(ControllerNodesTest, PassesPaceInventoryRebuildsWhileNodesJoin) {
  ControllerConfig cfg = Config();
  cfg.paced_rebuild_from = std::chrono::microseconds(0);  // every rebuild paces the next
  cfg.rebuild_pacing = 1000000;                           // by a second or more
  Controller c(cfg);
  ASSERT_TRUE(c.RegisterNode(kNodeAgent, MakeNode("n1"), At(0)).ok());
  c.SchedulePass(At(1));
  EXPECT_TRUE(c.layout_settled()) << "the first rebuild is not paced";
  ASSERT_TRUE(c.RegisterNode(kNodeAgent, MakeNode("n2"), At(2)).ok());
  c.SchedulePass(At(3));
  EXPECT_FALSE(c.layout_settled()) << "paced: n2 waits for a later pass";
  JobSpec on_n2 = Spec(8);
  on_n2.node_list = {"n2"};
  auto r = c.Submit(kAlice, on_n2, At(4));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(c.layout_settled()) << "a job only n2 can hold rebuilds it at once";
  c.SchedulePass(At(5));
  auto shown = c.ShowJob(kAdmin, JobId((*r)["jobs"][0].get<uint64_t>()));
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ((*shown)["state"], "running");
  EXPECT_EQ((*shown)["allocation"][0]["node"], "n2");
}

TEST_F(ControllerNodesTest, MetricsShowANodeThatHasJustRegistered) {
  Register("n1");
  c_.SchedulePass(At(0));
  Register("n2", 8, 1);
  const MetricsView v = c_.Metrics();
  ASSERT_EQ(v.nodes->size(), 2u);
  EXPECT_EQ((*v.nodes)[1].name, "n2");
  EXPECT_EQ(v.now.size(), 2u);
}

TEST_F(ControllerNodesTest, ALostNodeFailsOnlyItsOwnJobs) {
  Register("n1");
  Register("n2");
  const JobId a = Submit(kAlice, Spec(8), 1);
  const JobId b = Submit(kAlice, Spec(8), 1);
  c_.SchedulePass(At(2));
  ASSERT_EQ(StateOf(a), JobState::kRunning);
  ASSERT_EQ(StateOf(b), JobState::kRunning);
  const std::string node_of_a = (*c_.ShowJob(kAdmin, a))["allocation"][0]["node"];
  const std::string other = node_of_a == "n1" ? "n2" : "n1";
  // Only the other node keeps beating; the first goes silent past the timeout.
  for (int t = 10; t <= 40; t += 10) {
    Beat(other, t);
    c_.Tick(At(t));
  }
  EXPECT_EQ((*c_.NodeJson(node_of_a))["state"], "down");
  EXPECT_EQ(StateOf(a), JobState::kNodeFail);
  EXPECT_EQ(StateOf(b), JobState::kRunning);
  EXPECT_EQ((*c_.NodeJson(other))["jobs"].size(), 1u);
}

// A GPU fails (XID) under two 4-GPU jobs of one node: its heartbeat says the
// GPU is unhealthy and the job on it exited with an error. A requeueable job
// goes back to the queue (the failure was the GPU's); one that may not be
// requeued fails. The node drains; the other jobs run on.
TEST_F(ControllerNodesTest, AJobThatDiesWithItsGpuIsRequeuedIfItMayBe) {
  Register("n1");
  const auto [a, b] = TwoJobsOnOneNode();
  ASSERT_EQ(StateOf(a), JobState::kRunning);
  ASSERT_EQ(StateOf(b), JobState::kRunning);
  auto first_gpu = [&](JobId id) {
    return (*c_.ShowJob(kAdmin, id))["allocation"][0]["gpus"][0].get<int>();
  };
  for (JobId id : {a, b}) {
    Heartbeat hb;
    for (int g = 0; g < 8; ++g) {
      GpuReport r;
      r.index = g;
      r.healthy = g != first_gpu(id);
      r.health_reason = r.healthy ? "" : "XID 79";
      hb.gpus.push_back(r);
    }
    hb.events.push_back({id, EpochOf(id), 0, JobEvent::kExited, 1, 0, ""});
    ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", hb, At(3)).ok());
  }
  EXPECT_EQ(StateOf(a), JobState::kPending);
  EXPECT_EQ((*c_.ShowJob(kAdmin, a))["restarts"].get<int>(), 1);
  EXPECT_EQ(StateOf(b), JobState::kFailed);
  EXPECT_EQ((*c_.NodeJson("n1"))["state"], "draining");
}

// A node that reboots within the node timeout registers again with a new
// boot id and nothing running. What ran there ended with the reboot: a
// requeueable job goes back to the queue, any other ends NODE_FAIL. An
// agent that only restarted (same boot id) keeps its jobs.
TEST_F(ControllerNodesTest, ANodeThatRebootedEndsOrRequeuesWhatRanThere) {
  ASSERT_TRUE(c_.RegisterNode(kNodeAgent, Booted("n1", "boot-1"), At(0)).ok());
  const auto [a, b] = TwoJobsOnOneNode();
  ASSERT_EQ(StateOf(a), JobState::kRunning);
  ASSERT_EQ(StateOf(b), JobState::kRunning);
  const std::string on = "n1";

  // The agent restarts: same boot, jobs kept and reported back to it.
  auto same = c_.RegisterNode(kNodeAgent, Booted(on, "boot-1"), At(5));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)["running"].size(), 2u);
  EXPECT_EQ(StateOf(a), JobState::kRunning);

  // The machine reboots: a new boot id, nothing left for the agent to keep.
  auto fresh = c_.RegisterNode(kNodeAgent, Booted(on, "boot-3"), At(6));
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ((*fresh)["running"].size(), 0u);
  EXPECT_EQ(StateOf(a), JobState::kPending);
  EXPECT_EQ((*c_.ShowJob(kAdmin, a))["restarts"].get<int>(), 1);
  EXPECT_EQ(StateOf(b), JobState::kNodeFail);
  EXPECT_EQ((*c_.NodeJson(on))["state"], "up");
  EXPECT_EQ((*c_.NodeJson(on))["jobs"].size(), 0u);
}

// A gang across two nodes: one reboots; the other's part is stopped, and
// the job goes back to the queue once that node says it has.
TEST_F(ControllerNodesTest, AGangWithARebootedNodeIsRequeuedOnceTheRestHasStopped) {
  ASSERT_TRUE(c_.RegisterNode(kNodeAgent, Booted("n1", "boot-1"), At(0)).ok());
  ASSERT_TRUE(c_.RegisterNode(kNodeAgent, Booted("n2", "boot-2"), At(0)).ok());
  JobSpec gang = Spec(16);
  gang.nodes = 2;
  gang.requeue = true;
  const JobId g = Submit(kAlice, gang, 1);
  c_.SchedulePass(At(1));
  ASSERT_EQ(StateOf(g), JobState::kRunning);
  const uint64_t epoch = EpochOf(g);
  c_.TakeOutbox();
  auto reg = c_.RegisterNode(kNodeAgent, Booted("n1", "boot-3"), At(2));
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ((*reg)["running"].size(), 0u);
  EXPECT_EQ(StateOf(g), JobState::kRunning);  // n2's part still runs
  const Outbox out = c_.TakeOutbox();         // and is stopped
  EXPECT_TRUE(std::any_of(out.kills.begin(), out.kills.end(),
                          [](const KillOrder& k) { return k.node == "n2"; }));
  Heartbeat hb;
  hb.events.push_back({g, epoch, 0, JobEvent::kExited, 0, 15, "killed"});
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n2", hb, At(3)).ok());
  EXPECT_EQ(StateOf(g), JobState::kPending);
  EXPECT_EQ((*c_.ShowJob(kAdmin, g))["restarts"].get<int>(), 1);
}

// `shoal node mig`: an admin's, for a drained node with no job, with a
// layout its GPUs take; the node's re-registration with slices then
// schedules jobs that name their profile.
TEST_F(ControllerNodesTest, MigOrdersGoToDrainedEmptyNodesAndSlicesRunJobs) {
  Register("n1", 2);
  const std::vector<int> all;
  EXPECT_EQ(c_.MigTarget(kAlice, "n1", "7x1g.10gb", all).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.MigTarget(kAdmin, "nx", "7x1g.10gb", all).status().code(), StatusCode::kNotFound);
  auto up = c_.MigTarget(kAdmin, "n1", "7x1g.10gb", all);
  EXPECT_NE(up.status().message().find("is up: drain it first"), std::string::npos)
      << up.status().message();
  EXPECT_NE(c_.MigTarget(kAdmin, "n1", "8x1g.10gb", all).status().message().find("GPU 0"),
            std::string::npos);
  EXPECT_NE(c_.MigTarget(kAdmin, "n1", "none", {5}).status().message().find("no GPU 5"),
            std::string::npos);
  const JobId busy = Submit(kAlice, Spec(1), 1);
  c_.SchedulePass(At(2));
  ASSERT_EQ(StateOf(busy), JobState::kRunning);
  ASSERT_TRUE(c_.Drain(kAdmin, "n1", "MIG", At(3)).ok());
  auto running = c_.MigTarget(kAdmin, "n1", "7x1g.10gb", all);
  EXPECT_NE(running.status().message().find("still runs job"), std::string::npos)
      << running.status().message();
  Exit("n1", busy, 0, 4);
  auto target = c_.MigTarget(kAdmin, "n1", "7x1g.10gb", {1});
  ASSERT_TRUE(target.ok()) << target.status().message();
  EXPECT_EQ(*target, "127.0.0.1:1");

  // The agent re-registers with GPU 1 split; the admin resumes the node.
  Node sliced = MakeNode("n1", 1);
  for (int gi = 1; gi <= 7; ++gi) {
    Gpu g = sliced.gpus[0];
    g.index = gi;
    g.device = 1;
    g.model = "H100-SXM-80GB/1g.10gb";
    g.uuid = "MIG-" + std::to_string(gi);
    g.mig_profile = "1g.10gb";
    g.mig_gi = gi;
    g.mig_ci = 0;
    sliced.gpus.push_back(g);
  }
  ASSERT_TRUE(c_.RegisterNode(kNodeAgent, sliced, At(5)).ok());
  ASSERT_TRUE(c_.Resume(kAdmin, "n1", At(5)).ok());
  NodeFilter h100;
  h100.model = "H100-SXM-80GB";
  EXPECT_EQ(Names(c_.ListNodes(h100)), (std::vector<std::string>{"n1"}));
  h100.model = "H100-SXM-80GB/1g.10gb";
  EXPECT_EQ(Names(c_.ListNodes(h100)), (std::vector<std::string>{"n1"}));
  JobSpec two_slices = Spec(2);
  two_slices.gpu_models = {"1g.10gb"};
  const JobId inference = Submit(kAlice, two_slices, 6);
  const JobId whole = Submit(kAlice, Spec(1), 6);
  c_.SchedulePass(At(7));
  EXPECT_EQ(StateOf(inference), JobState::kRunning);
  EXPECT_EQ(StateOf(whole), JobState::kRunning);
  const api::Json slices = (*c_.ShowJob(kAdmin, inference))["allocation"][0];
  EXPECT_EQ(slices["gpus"], (api::Json{1, 2})) << slices.dump();
  const api::Json gpu = (*c_.ShowJob(kAdmin, whole))["allocation"][0];
  EXPECT_EQ(gpu["gpus"], (api::Json{0})) << "the one whole GPU: " << gpu.dump();
  // Two whole GPUs are more than the node has now.
  EXPECT_EQ(c_.Submit(kAlice, Spec(2), At(8)).status().code(), StatusCode::kUnsatisfiable);
}

}  // namespace
}  // namespace shoal::server
