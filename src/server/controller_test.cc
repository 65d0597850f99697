// The controller's commands and lifecycle, driven directly with a fixed clock
// (no threads, no HTTP): what each command changes, records and orders.
#include "server/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include "sched/plugin.h"
#include "sched/working_state.h"
#include "server/controller_testing.h"
#include "server/metrics.h"

namespace shoal::server {
namespace {

using testing::kAdmin;
using testing::kAlice;
using testing::kNodeAgent;
using testing::MakeNode;

using std::chrono::seconds;

using testing::kBob;
using testing::Spec;

class ControllerTest : public testing::ControllerFixture {
 protected:
  // Alice's batch script on 2 nodes of 2 GPUs, `tasks` tasks, scheduled:
  // its id and the script's one launch.
  std::pair<JobId, LaunchOrder> StartTwoNodeScript(const std::string& script, int tasks) {
    c_.SetJobTokenKey("a key for this test");
    Register("n1");
    Register("n2");
    JobSpec spec = Spec(0, script);
    spec.script = true;
    spec.nodes = 2;
    spec.gpus_per_node = 2;
    spec.tasks = tasks;
    const JobId id = Submit(kAlice, spec);
    c_.SchedulePass(At(1));
    Outbox out = c_.TakeOutbox();
    EXPECT_EQ(out.launches.size(), 1u);  // the script, on the first node alone
    return {id, out.launches.empty() ? LaunchOrder{} : out.launches[0]};
  }
};

TEST_F(ControllerTest, SubmitScheduleLaunchComplete) {
  Register("n1");
  JobId id = Submit(kAlice, Spec(2));
  state::Batch b = c_.TakeBatch();
  ASSERT_EQ(b.jobs.size(), 1u);
  EXPECT_EQ(b.jobs[0].spec.user, "alice");
  EXPECT_EQ(*b.next_job_id, id.value() + 1);
  c_.SchedulePass(At(1));
  EXPECT_EQ(StateOf(id), JobState::kRunning);
  Outbox out = c_.TakeOutbox();
  ASSERT_EQ(out.launches.size(), 1u);
  EXPECT_EQ(out.launches[0].node, "n1");
  EXPECT_EQ(out.launches[0].allocation.GpuCount(), 2);
  EXPECT_EQ(out.launches[0].epoch, 1u);
  Exit("n1", id, 0, 60);
  EXPECT_EQ(StateOf(id), JobState::kCompleted);
  b = c_.TakeBatch();
  ASSERT_FALSE(b.jobs.empty());
  EXPECT_EQ(b.jobs.back().state, JobState::kCompleted);
  EXPECT_GT(b.jobs.back().gpu_seconds, 0);
}

// gittins on a server: the service of the jobs that complete, and at start
// the store's, feed its table; other policies keep no history.
TEST_F(ControllerTest, GittinsLearnsTheServiceOfCompletedJobs) {
  ControllerConfig cfg = Config();
  cfg.policy = "gittins";
  Controller g(cfg);
  ASSERT_TRUE(g.UsesServiceHistory());
  EXPECT_FALSE(c_.UsesServiceHistory());
  std::vector<Job> past(40);
  for (size_t i = 0; i < past.size(); ++i) {
    past[i].state = JobState::kCompleted;
    past[i].gpu_seconds = 100.0 * static_cast<double>(i + 1);
  }
  g.SeedServiceHistory(past);
  c_.SeedServiceHistory(past);
  EXPECT_EQ(g.ServiceHistorySize(), 40u);
  EXPECT_EQ(c_.ServiceHistorySize(), 0u);

  for (Controller* c : {&g, &c_}) {
    ASSERT_TRUE(c->RegisterNode(kNodeAgent, MakeNode("n1", 8), At(0)).ok());
    auto submitted = c->Submit(kAlice, Spec(1), At(0));
    ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
    const JobId id((*submitted)["jobs"][0].get<uint64_t>());
    c->SchedulePass(At(1));
    Heartbeat hb;
    hb.events.push_back({id, 1, 0, JobEvent::kExited, 0, 0, ""});
    ASSERT_TRUE(c->ReceiveHeartbeat(kNodeAgent, "n1", hb, At(61)).ok());
    auto shown = c->ShowJob(kAdmin, id);
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ((*shown)["state"], "completed");
  }
  EXPECT_EQ(g.ServiceHistorySize(), 41u);
  EXPECT_EQ(c_.ServiceHistorySize(), 0u);
}

TEST_F(ControllerTest, UsersTouchOnlyTheirOwnJobs) {
  Register("n1");
  JobId mine = Submit(kAlice, Spec(1));
  EXPECT_EQ(c_.Cancel(kBob, mine, At(1)).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.Hold(kBob, mine, At(1)).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.ShowJob(kBob, mine).status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(c_.ListJobs(kBob, {})->empty());
  EXPECT_EQ(c_.ListJobs(kBob, {.user = "alice", .all_users = false, .states = {}}).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.ListJobs(kAlice, {})->size(), 1u);
  EXPECT_EQ(c_.ListJobs(kAdmin, {.user = "", .all_users = true, .states = {}})->size(), 1u);
  EXPECT_EQ(c_.SetPriority(kAlice, mine, 10, At(1)).code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(c_.Cancel(kAdmin, mine, At(2)).ok());
  EXPECT_EQ(StateOf(mine), JobState::kCancelled);
  EXPECT_EQ(c_.Cancel(kAlice, mine, At(3)).code(), StatusCode::kFailedPrecondition);
}

TEST_F(ControllerTest, NodesCannotSubmitAndUsersCannotRegister) {
  EXPECT_EQ(c_.Submit(kNodeAgent, Spec(1), At(0)).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.RegisterNode(kAlice, MakeNode("n1"), At(0)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.Drain(kAlice, "n1", "x", At(0)).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.CreateToken(kAlice, {.user = "eve", .role = "admin"}, At(0)).status().code(),
            StatusCode::kPermissionDenied);
}

// A node's certificate acts for its node only, and only while it is the
// one the node joined with; join tokens work once, for their node.
TEST_F(ControllerTest, NodeCredentialsActForTheirOwnNodeOnly) {
  const Identity n1{.user = "n1", .role = "node", .node_name = "n1", .credential = "AA"};
  const Identity n2{.user = "n2", .role = "node", .node_name = "n2", .credential = "BB"};
  ASSERT_TRUE(c_.RegisterNode(n1, MakeNode("n1"), At(0)).ok());
  ASSERT_TRUE(c_.RegisterNode(n2, MakeNode("n2"), At(0)).ok());
  EXPECT_EQ((*c_.NodeJson("n1"))["credential"], "AA");  // bound at its first registration
  auto as_n1 = c_.RegisterNode(n2, MakeNode("n1"), At(1));
  EXPECT_EQ(as_n1.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(as_n1.status().message().find("acts for node n2, not n1"), std::string::npos);
  EXPECT_EQ(c_.ReceiveHeartbeat(n2, "n1", Heartbeat{}, At(1)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(c_.ReceiveHeartbeat(n1, "n1", Heartbeat{}, At(1)).ok());
  // Another certificate for the same name (not the one n1 joined with).
  Identity impostor = n1;
  impostor.credential = "CC";
  EXPECT_EQ(c_.ReceiveHeartbeat(impostor, "n1", Heartbeat{}, At(2)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.RegisterNode(impostor, MakeNode("n1"), At(2)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_FALSE(c_.RegisterNode(kNodeAgent, MakeNode("bad/name"), At(2)).ok());

  auto join_token = [&](const std::string& node, Duration ttl = Duration(0)) {
    auto t = c_.CreateToken(kAdmin, {.role = "join", .ttl = ttl, .node = node}, At(3));
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return Identity{.user = "root", .role = "join", .token_id = (*t)["id"].get<std::string>()};
  };
  // An unbound token cannot take a joined node's name; a bound one re-keys it once.
  EXPECT_EQ(c_.Join(join_token(""), "n1", "DD", At(4)).code(), StatusCode::kPermissionDenied);
  const Identity for_n1 = join_token("n1");
  EXPECT_EQ(c_.Join(for_n1, "n2", "DD", At(4)).code(), StatusCode::kPermissionDenied);
  ASSERT_TRUE(c_.Join(for_n1, "n1", "DD", At(4)).ok());
  EXPECT_EQ(c_.Join(for_n1, "n1", "EE", At(4)).code(), StatusCode::kUnauthenticated);  // used
  EXPECT_EQ(c_.ReceiveHeartbeat(n1, "n1", Heartbeat{}, At(5)).status().code(),
            StatusCode::kPermissionDenied);  // the old certificate
  Identity rekeyed = n1;
  rekeyed.credential = "DD";
  EXPECT_TRUE(c_.ReceiveHeartbeat(rekeyed, "n1", Heartbeat{}, At(5)).ok());
  // Expiry: a join token lasts an hour unless told otherwise.
  EXPECT_EQ(c_.Join(join_token("n5"), "n5", "FF", At(3) + std::chrono::hours(2)).code(),
            StatusCode::kUnauthenticated);
  EXPECT_TRUE(c_.Join(join_token("n6", seconds(10)), "n6", "FF", At(9)).ok());
  EXPECT_EQ(c_.Join(kAdmin, "n7", "FF", At(9)).code(), StatusCode::kPermissionDenied);
  // Node names and ttl are checked when the token is made.
  EXPECT_FALSE(c_.CreateToken(kAdmin, {.user = "x", .role = "user", .node = "n1"}, At(9)).ok());
  EXPECT_FALSE(c_.CreateToken(kAdmin, {.role = "join", .node = "a b"}, At(9)).ok());
  EXPECT_FALSE(
      c_.CreateToken(kAdmin, {.user = "x", .role = "user", .ttl = seconds(-1)}, At(9)).ok());
}

// --kill-on-bad-exit: a task fails before the other node has reported its
// part running, so the stop may reach that agent before the launch does (and
// find nothing to stop). When the node then reports the part, the stop is
// sent again, once.
TEST_F(ControllerTest, AStopThatMayHaveOvertakenItsLaunchIsSentAgain) {
  const auto [id, script] = StartTwoNodeScript("#!/bin/sh\nsleep 100\n", 2);
  ASSERT_EQ(script.nodes.size(), 2u);
  const std::string first = script.node;
  const std::string second = script.nodes[1];
  StepSpec run;
  run.argv = {"x"};
  run.tasks = 2;
  run.kill_on_bad_exit = true;
  ASSERT_TRUE(c_.CreateStep(kAlice, id, run, At(2)).ok());
  ASSERT_EQ(c_.TakeOutbox().launches.size(), 2u);
  auto beat = [&](const std::string& node, bool step_runs, bool step_failed, int at) {
    Heartbeat hb;
    hb.running.push_back({id, EpochOf(id), 0});
    if (step_runs) hb.running.push_back({id, EpochOf(id), 1});
    if (step_failed) hb.events.push_back({id, EpochOf(id), 1, JobEvent::kExited, 3, 0, ""});
    if (node != first) hb.running.erase(hb.running.begin());  // the script runs on the first
    ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, node, hb, At(at)).ok());
  };
  auto kills_for = [&](const std::string& node) {
    size_t n = 0;
    for (const KillOrder& k : c_.TakeOutbox().kills)
      n += k.node == node && k.step == 1u ? 1 : 0;
    return n;
  };
  beat(first, false, true, 3);  // the first node's task fails at once
  EXPECT_EQ(kills_for(second), 1u);
  beat(second, true, false, 4);  // the second's part shows up after all
  EXPECT_EQ(kills_for(second), 1u) << "the stop is sent again";
  beat(second, true, false, 5);
  EXPECT_EQ(kills_for(second), 0u) << "once";
}

// A batch script runs once, on the first node; `shoal run` steps go where
// the job's nodes are, each with its own end; the job ends when its script
// has and every step it left running is stopped.
TEST_F(ControllerTest, BatchScriptsRunOnceAndStepsRunInTheAllocation) {
  const auto [id, launch] = StartTwoNodeScript("#!/bin/sh\nsrun hostname\n", 4);
  Outbox out;
  out.launches = {launch};
  EXPECT_TRUE(out.launches[0].batch);
  EXPECT_EQ(out.launches[0].node_rank, 0);
  EXPECT_EQ(out.launches[0].nodes.size(), 2u);
  EXPECT_GE(out.launches[0].master_port, 20000);
  // Each node's CPUs, for SLURM_JOB_CPUS_PER_NODE.
  ASSERT_EQ(out.launches[0].node_cpus.size(), 2u);
  EXPECT_EQ(out.launches[0].node_cpus[0], api::WholeCpus(out.launches[0].allocation.cpu_milli));
  const std::string first = out.launches[0].node;
  const std::string second = out.launches[0].nodes[1];

  // Only its owner (or its own token) starts steps.
  EXPECT_EQ(c_.CreateStep(kBob, id, {.argv = {"hostname"}}, At(2)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.CreateStep(kAlice, id, {.argv = {"x"}, .tasks = 9}, At(2)).status().code(),
            StatusCode::kInvalidArgument);
  auto step = c_.CreateStep(kAlice, id, {.argv = {"hostname"}, .tasks = 3}, At(2));
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_EQ((*step)["id"], 1);
  EXPECT_EQ((*step)["tasks"], api::Json({2, 1}));
  out = c_.TakeOutbox();
  ASSERT_EQ(out.launches.size(), 2u);
  for (const LaunchOrder& o : out.launches) {
    EXPECT_EQ(o.step, 1u);
    EXPECT_FALSE(o.batch);
    ASSERT_TRUE(o.run.has_value());
    EXPECT_EQ(o.run->argv, std::vector<std::string>{"hostname"});
    EXPECT_EQ(o.step_tasks, (std::vector<int>{2, 1}));
    EXPECT_EQ(o.node_cpus.size(), 2u);
    EXPECT_FALSE(o.job_token.empty()) << "the job's tasks get a token to start steps with";
  }
  EXPECT_NE(out.launches[0].master_port, 0);

  // The step's parts end: it ends with the largest exit code.
  auto step_exit = [&](const std::string& node, int code, int at) {
    Heartbeat hb;
    hb.events.push_back({id, EpochOf(id), 1, JobEvent::kExited, code, 0, ""});
    if (node == first) hb.running.push_back({id, EpochOf(id), 0});
    ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, node, hb, At(at)).ok());
  };
  step_exit(first, 0, 3);
  EXPECT_EQ((*c_.ShowJob(kAdmin, id))["steps"][0]["state"], "running");
  step_exit(second, 2, 4);
  const api::Json ended = (*c_.ShowJob(kAdmin, id))["steps"][0];
  EXPECT_EQ(ended["state"], "failed");
  EXPECT_EQ(ended["exit_code"], 2);
  EXPECT_EQ(StateOf(id), JobState::kRunning);  // a step's failure is not the job's

  // A step left running when the script ends is stopped; the job waits for it.
  ASSERT_TRUE(c_.CreateStep(kAlice, id, {.argv = {"sleep", "9"}, .nodes = 1}, At(5)).ok());
  c_.TakeOutbox();
  Exit(first, id, 0, 6);
  EXPECT_EQ(StateOf(id), JobState::kRunning);
  out = c_.TakeOutbox();
  ASSERT_FALSE(out.kills.empty());
  EXPECT_EQ(out.kills[0].node, first);
  Heartbeat hb;
  hb.events.push_back({id, EpochOf(id), 2, JobEvent::kExited, 143, 15, ""});
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, first, hb, At(7)).ok());
  EXPECT_EQ(StateOf(id), JobState::kCompleted);
  EXPECT_EQ((*c_.ShowJob(kAdmin, id))["steps"][1]["state"], "failed");
  // No steps in a job that has ended.
  EXPECT_EQ(c_.CreateStep(kAlice, id, {.argv = {"x"}}, At(8)).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(ControllerTest, BadSubmissionsAreRefusedWithReasons) {
  Register("n1");
  struct Case {
    const char* what;
    JobSpec spec;
    StatusCode code;
  };
  auto spec = [](auto&& f) {
    JobSpec s = Spec(1);
    f(s);
    return s;
  };
  Case cases[] = {
      {"no command", spec([](JobSpec& s) { s.command = ""; }), StatusCode::kInvalidArgument},
      {"unknown partition", spec([](JobSpec& s) { s.partition = "cpu"; }),
       StatusCode::kInvalidArgument},
      {"nine GPUs on one node", spec([](JobSpec& s) {
         s.gpus = 0;
         s.nodes = 1;
         s.gpus_per_node = 9;
       }),
       StatusCode::kUnsatisfiable},
      {"unknown GPU model", spec([](JobSpec& s) { s.gpu_models = {"B200"}; }),
       StatusCode::kUnsatisfiable},
      {"over the partition's time", spec([](JobSpec& s) { s.time_limit = std::chrono::hours(48); }),
       StatusCode::kInvalidArgument},
      {"negative GPUs", spec([](JobSpec& s) { s.gpus = -1; }), StatusCode::kInvalidArgument},
      {"share of zero", spec([](JobSpec& s) { s.gpu_milli = 0; }), StatusCode::kInvalidArgument},
      {"unknown dependency", spec([](JobSpec& s) {
         s.dependencies = {{DependencyType::kAfterOk, JobId(999)}};
       }),
       StatusCode::kNotFound},
  };
  for (const Case& k : cases) {
    auto r = c_.Submit(kAlice, k.spec, At(0));
    EXPECT_EQ(r.status().code(), k.code) << k.what << ": " << r.status().ToString();
  }
  EXPECT_TRUE(c_.TakeBatch().jobs.empty()) << "nothing refused is recorded";
}

// --constraint node counts are checked at submit: more nodes with a label
// than the cluster has, or a -N that disagrees with the counts, is refused;
// counts that fit run on as many nodes as they add up to.
TEST_F(ControllerTest, ConstraintCountsAreCheckedAtSubmit) {
  for (const auto& [name, label] : {std::pair{"p1", "rack1"}, {"q1", "rack2"}, {"q2", "rack2"}}) {
    Node n = MakeNode(name);
    n.labels = {label};
    ASSERT_TRUE(c_.RegisterNode(kNodeAgent, n, At(0)).ok());
  }
  JobSpec s = Spec(0);
  s.gpus_per_node = 8;
  s.constraints = {"[rack1*2&rack2*1]"};
  auto two = c_.Submit(kAlice, s, At(0));
  EXPECT_EQ(two.status().code(), StatusCode::kUnsatisfiable);
  EXPECT_NE(two.status().message().find("asks for 2 nodes with label 'rack1'"), std::string::npos)
      << two.status().ToString();
  s.constraints = {"[rack1*1&rack2*2]"};
  s.nodes = 2;
  EXPECT_EQ(c_.Submit(kAlice, s, At(0)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(c_.TakeBatch().jobs.empty()) << "nothing refused is recorded";
  s.nodes = 0;
  Submit(kAlice, s);
  c_.SchedulePass(At(1));
  EXPECT_EQ(c_.TakeOutbox().launches.size(), 3u);
}

TEST_F(ControllerTest, GangFailureStopsTheOtherNodes) {
  Register("n1");
  Register("n2");
  JobSpec s = Spec(0);
  s.nodes = 2;
  s.gpus_per_node = 8;
  JobId id = Submit(kAlice, s);
  c_.SchedulePass(At(1));
  ASSERT_EQ(c_.TakeOutbox().launches.size(), 2u);
  Exit("n1", id, 3, 10);
  Outbox out = c_.TakeOutbox();
  ASSERT_EQ(out.kills.size(), 1u);
  EXPECT_EQ(out.kills[0].node, "n2");
  EXPECT_EQ(StateOf(id), JobState::kRunning) << "until every node's task has exited";
  Exit("n2", id, 0, 11, 15);
  EXPECT_EQ(StateOf(id), JobState::kFailed);
  EXPECT_EQ((*c_.ShowJob(kAdmin, id))["exit_code"].get<int>(), 3);
}

TEST_F(ControllerTest, SignalBeforeTheTimeLimitAndOnRequest) {
  Register("n1");
  // --signal=B:USR1@30 on a batch script with a 100 s limit: once, at 70 s,
  // to the batch shell's own process on the first node.
  JobSpec warned = Spec(2, "#!/bin/sh\nsrun train\n");
  warned.script = true;
  warned.time_limit = seconds(100);
  warned.signal = SIGUSR1;
  warned.signal_before_s = 30;
  warned.signal_batch_only = true;
  JobId id = Submit(kAlice, warned);
  c_.SchedulePass(At(0));
  c_.TakeOutbox();
  ASSERT_EQ(StateOf(id), JobState::kRunning);
  Beat("n1", 60);
  c_.Tick(At(60));
  EXPECT_TRUE(c_.TakeOutbox().kills.empty());
  Beat("n1", 71);
  c_.Tick(At(71));
  Outbox out = c_.TakeOutbox();
  ASSERT_EQ(out.kills.size(), 1u);
  EXPECT_EQ(out.kills[0].signal, SIGUSR1);
  EXPECT_TRUE(out.kills[0].leader_only);
  EXPECT_EQ(out.kills[0].step, std::optional<uint32_t>(0));
  c_.Tick(At(72));
  EXPECT_TRUE(c_.TakeOutbox().kills.empty()) << "the warning goes once";
  EXPECT_EQ(StateOf(id), JobState::kRunning) << "a signal stops nothing";
  // shoal cancel --signal: the owner's, not another user's; a bad signal
  // and a job that is not running are refused.
  EXPECT_EQ(c_.Signal(kBob, id, SIGUSR2, false, At(73)).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c_.Signal(kAlice, id, 65, false, At(73)).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(c_.Signal(kAlice, id, SIGUSR2, true, At(73)).ok());
  out = c_.TakeOutbox();
  ASSERT_EQ(out.kills.size(), 1u);
  EXPECT_EQ(out.kills[0].signal, SIGUSR2);
  JobId pending = Submit(kAlice, Spec(8), 74);
  EXPECT_EQ(c_.Signal(kAlice, pending, SIGUSR2, false, At(74)).code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(ControllerTest, CancelTimeLimitAndNodeLoss) {
  Register("n1");
  Register("n2");
  JobId cancelled = Submit(kAlice, Spec(8));
  JobSpec limited = Spec(4);
  limited.time_limit = seconds(100);
  JobId timed = Submit(kAlice, limited);
  JobSpec requeue = Spec(4);
  requeue.requeue = true;
  JobId requeued = Submit(kAlice, requeue);
  c_.SchedulePass(At(1));
  c_.TakeOutbox();
  ASSERT_EQ(StateOf(cancelled), JobState::kRunning);
  ASSERT_TRUE(c_.Cancel(kAlice, cancelled, At(2)).ok());
  Outbox out = c_.TakeOutbox();
  ASSERT_EQ(out.kills.size(), 1u);
  const std::string node_of_cancelled = out.kills[0].node;
  Exit(node_of_cancelled, cancelled, 0, 3, 15);
  EXPECT_EQ(StateOf(cancelled), JobState::kCancelled);
  // Time limit: a kill at start + 100 s, then the exit makes it a timeout.
  Beat("n1", 45);
  Beat("n2", 45);
  c_.Tick(At(50));
  EXPECT_TRUE(c_.TakeOutbox().kills.empty());
  Beat("n1", 95);
  Beat("n2", 95);
  c_.Tick(At(102));
  out = c_.TakeOutbox();
  ASSERT_EQ(out.kills.size(), 1u);
  Exit(out.kills[0].node, timed, 0, 103, 15);
  EXPECT_EQ(StateOf(timed), JobState::kTimeout);
  // Node loss: the requeueable job goes back to pending, but only once its
  // node has surely fenced it: last seen at 103 s, down after 30 s, then the
  // agent's own 30 s (node timeout) + 30 s (kill grace) + 5 s margin.
  std::string node_of_requeued;
  const api::Json shown = *c_.ShowJob(kAdmin, requeued);
  for (const auto& j : shown["allocation"])
    node_of_requeued = j["node"];
  const std::string other = node_of_requeued == "n1" ? "n2" : "n1";
  Beat(other, 125);  // the other node keeps reporting; this one last reported at 103 s
  c_.Tick(At(140));
  EXPECT_EQ(StateOf(requeued), JobState::kRunning);
  EXPECT_NE((*c_.ShowJob(kAdmin, requeued))["reason_detail"].get<std::string>().find("at 1000168"),
            std::string::npos);
  Beat(other, 160);
  c_.Tick(At(167));
  EXPECT_EQ(StateOf(requeued), JobState::kRunning);
  c_.SchedulePass(At(167));
  EXPECT_TRUE(c_.TakeOutbox().launches.empty());  // never twice at once
  Beat(other, 168);
  c_.Tick(At(168));
  EXPECT_EQ(StateOf(requeued), JobState::kPending);
  EXPECT_EQ((*c_.ShowJob(kAdmin, requeued))["restarts"].get<int>(), 1);
  EXPECT_EQ((*c_.NodeJson(node_of_requeued))["state"], "down");
  EXPECT_EQ((*c_.NodeJson(other))["state"], "up");
}

// A node is never lost for the controller's own deafness: time the loop ran
// late is credited to every node, and nodes are judged by what had arrived
// before the oldest request still waiting.
TEST_F(ControllerTest, NodesAreNotLostWhileTheControllerCouldNotHearThem) {
  Register("n1");                             // last heard at 0 s; the node timeout is 30 s
  c_.Tick(At(40), /*heard_through=*/At(20));  // requests from 20 s on still wait
  EXPECT_EQ((*c_.NodeJson("n1"))["state"], "up");
  c_.CreditUnheard(seconds(25));  // the loop was 25 s late
  c_.Tick(At(50));
  EXPECT_EQ((*c_.NodeJson("n1"))["state"], "up");
  c_.Tick(At(56));
  EXPECT_EQ((*c_.NodeJson("n1"))["state"], "down");
}

TEST_F(ControllerTest, NodeFailWithoutRequeue) {
  Register("n1");
  JobId id = Submit(kAlice, Spec(1));
  c_.SchedulePass(At(1));
  c_.Tick(At(40));
  EXPECT_EQ(StateOf(id), JobState::kNodeFail);
}

TEST_F(ControllerTest, ReconcileKillsUnknownAndFailsLost) {
  Register("n1");
  JobId id = Submit(kAlice, Spec(1));
  c_.SchedulePass(At(1));
  c_.TakeOutbox();
  Heartbeat hb;
  hb.running.push_back({JobId(4242), 1});  // not ours
  hb.running.push_back({id, EpochOf(id)});
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", hb, At(5)).ok());
  Outbox out = c_.TakeOutbox();
  ASSERT_EQ(out.kills.size(), 1u);
  EXPECT_EQ(out.kills[0].job, JobId(4242));
  // A heartbeat past the launch grace that does not list the job: it was lost.
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", Heartbeat{}, At(10)).ok());
  EXPECT_EQ(StateOf(id), JobState::kRunning) << "still within the launch grace";
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", Heartbeat{}, At(20)).ok());
  EXPECT_EQ(StateOf(id), JobState::kFailed);
}

// A launch that never reached its node (no step reported, no refusal) puts
// the job back in the queue under a new epoch: it never ran, whatever its
// requeue setting says. The order, should it arrive late, is killed.
TEST_F(ControllerTest, AnUndeliveredLaunchRequeuesTheJob) {
  Register("n1");
  JobId id = Submit(kAlice, Spec(1));
  c_.SchedulePass(At(1));
  ASSERT_EQ(c_.TakeOutbox().launches.size(), 1u);
  const uint64_t first_epoch = EpochOf(id);
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", Heartbeat{}, At(10)).ok());
  EXPECT_EQ(StateOf(id), JobState::kRunning) << "still within the launch grace";
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", Heartbeat{}, At(20)).ok());
  EXPECT_EQ(StateOf(id), JobState::kPending);
  const api::Json shown = *c_.ShowJob(kAdmin, id);
  EXPECT_NE(shown.dump().find("the launch never reached n1"), std::string::npos) << shown.dump();
  // It starts again under a new epoch; the old order, arriving late, is killed.
  c_.SchedulePass(At(21));
  c_.TakeOutbox();
  EXPECT_EQ(StateOf(id), JobState::kRunning);
  EXPECT_GT(EpochOf(id), first_epoch);
  Heartbeat late;
  late.running.emplace_back(id, first_epoch);
  late.running.emplace_back(id, EpochOf(id));
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", late, At(22)).ok());
  Outbox out = c_.TakeOutbox();
  ASSERT_EQ(out.kills.size(), 1u);
  EXPECT_EQ(out.kills[0].epoch, first_epoch);
  EXPECT_EQ(StateOf(id), JobState::kRunning);
}

TEST_F(ControllerTest, StaleEpochsChangeNothing) {
  Register("n1");
  JobSpec s = Spec(1);
  s.requeue = true;
  JobId id = Submit(kAlice, s);
  c_.SchedulePass(At(1));
  ASSERT_TRUE(c_.Requeue(kAlice, id, At(2)).ok());
  Exit("n1", id, 0, 3, 15);
  ASSERT_EQ(StateOf(id), JobState::kPending);
  c_.SchedulePass(At(4));
  ASSERT_EQ(EpochOf(id), 2u);
  // An exit of the first run arrives late: it must not end the second.
  Heartbeat hb;
  hb.events.push_back({id, 1, 0, JobEvent::kExited, 0, 0, ""});
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", hb, At(5)).ok());
  EXPECT_EQ(StateOf(id), JobState::kRunning);
}

// sbatch --test-only: when and where, from the running jobs' time limits;
// nothing is stored and no id is used up.
TEST_F(ControllerTest, TestOnlySaysWhenAndWhereAndStoresNothing) {
  Register("n1");
  Register("n2");
  JobSpec big = Spec(8);
  big.cpu_milli_per_gpu = 2000;
  JobId a = Submit(kAlice, big);
  JobSpec half = Spec(4);
  half.time_limit = std::chrono::hours(2);
  JobId b = Submit(kAlice, half);
  c_.SchedulePass(At(1));
  ASSERT_EQ(StateOf(a), JobState::kRunning);
  ASSERT_EQ(StateOf(b), JobState::kRunning);

  JobSpec probe = Spec(4);
  probe.cpu_milli_per_gpu = 3000;
  auto now = c_.TestSubmit(kAlice, probe, At(2));
  ASSERT_TRUE(now.ok()) << now.status().ToString();
  EXPECT_EQ((*now)["start_time"], ToSeconds(At(2)));
  EXPECT_EQ((*now)["cpus"], 12);
  EXPECT_EQ((*now)["gpus"], 4);
  EXPECT_EQ((*now)["partition"], "gpu");
  EXPECT_EQ((*now)["job"], 3);

  auto later = c_.TestSubmit(kAlice, Spec(8), At(2));
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ((*later)["start_time"], ToSeconds(At(1) + std::chrono::hours(1)))
      << "when the 8-GPU job's time limit ends";
  JobSpec gang = Spec(0);
  gang.nodes = 2;
  gang.gpus_per_node = 8;
  gang.begin_time = At(1) + std::chrono::hours(3);
  auto both = c_.TestSubmit(kAlice, gang, At(2));
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ((*both)["start_time"], ToSeconds(*gang.begin_time)) << "not before --begin";
  std::vector<std::string> nodes = (*both)["nodes"].get<std::vector<std::string>>();
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(nodes, (std::vector<std::string>{"n1", "n2"}));

  // Refused as a submission would be.
  JobSpec too_long = Spec(1);
  too_long.time_limit = std::chrono::hours(48);
  EXPECT_EQ(c_.TestSubmit(kAlice, too_long, At(2)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c_.TestSubmit(kNodeAgent, Spec(1), At(2)).status().code(),
            StatusCode::kPermissionDenied);
  JobSpec three = Spec(0);
  three.nodes = 3;
  three.gpus_per_node = 8;
  EXPECT_FALSE(c_.TestSubmit(kAlice, three, At(2)).ok());

  // Nothing was stored: the next job gets the id the answer named.
  EXPECT_EQ(Submit(kAlice, Spec(1), 3), JobId(3));
}

TEST_F(ControllerTest, DrainAndResume) {
  Register("n1");
  JobId id = Submit(kAlice, Spec(1));
  c_.SchedulePass(At(1));
  ASSERT_TRUE(c_.Drain(kAdmin, "n1", "disk swap", At(2)).ok());
  EXPECT_EQ((*c_.NodeJson("n1"))["state"], "draining");
  JobId waits = Submit(kAlice, Spec(1), 3);
  c_.SchedulePass(At(3));
  EXPECT_EQ(StateOf(waits), JobState::kPending);
  Exit("n1", id, 0, 4);
  c_.Tick(At(5));
  EXPECT_EQ((*c_.NodeJson("n1"))["state"], "drained");
  ASSERT_TRUE(c_.Resume(kAdmin, "n1", At(6)).ok());
  c_.SchedulePass(At(7));
  EXPECT_EQ(StateOf(waits), JobState::kRunning);
}

// A score plugin with a bug: it always picks a node's lowest GPUs, free or
// not, so the plan's second start on a node takes GPUs its first one took.
class LowestGpusScore final : public sched::ScorePlugin {
 public:
  std::string_view Name() const override { return "lowest-gpus"; }
  sched::CandidateScan Scan() const override { return sched::CandidateScan::kFirstFit; }
  sched::NodeChoice Evaluate(const sched::WorkingState&, sched::NodeIndex,
                             const sched::NodeDemand& d, sched::ScorePass*, Rng&) const override {
    return {d.gpus >= 64 ? ~uint64_t{0} : (uint64_t{1} << d.gpus) - 1, 0};
  }
};

// Optimistic plan, verified commit: a start that fails the check before
// commit is dropped, and neither silently nor as a failure of the job: it
// waits with reason plan_conflict and the metrics count the drop.
TEST(ControllerPlanCheckTest, AStartThatNoLongerFitsIsDroppedWithAReasonAndCounted) {
  auto registry = std::make_shared<sched::Registry>(sched::BuiltinRegistry());
  registry->AddScore("lowest-gpus", [] { return std::make_shared<LowestGpusScore>(); });
  ControllerConfig cfg;
  cfg.policy = "greedy:score=lowest-gpus";
  cfg.registry = registry;
  Controller c(cfg);
  const Time t0 = kTimeZero + seconds(1000000);
  ASSERT_TRUE(c.RegisterNode(kNodeAgent, MakeNode("n1", 8), t0).ok());
  auto submit = [&] {
    auto r = c.Submit(kAlice, Spec(1), t0);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? JobId((*r)["jobs"][0].get<uint64_t>()) : JobId(0);
  };
  const JobId first = submit();
  const JobId second = submit();

  c.SchedulePass(t0 + seconds(1));
  const api::Json one = *c.ShowJob(kAlice, first);
  const api::Json two = *c.ShowJob(kAlice, second);
  EXPECT_EQ(one["state"], "running");
  EXPECT_EQ(two["state"], "pending");
  EXPECT_EQ(two["reason"], "plan_conflict");
  EXPECT_NE(two.value("reason_detail", "").find("failed the check before commit"),
            std::string::npos)
      << two.dump();
  EXPECT_EQ(c.TakeOutbox().launches.size(), 1u) << "nothing is launched for the dropped start";
  EXPECT_EQ(c.Metrics().plan_starts_dropped, 1u);
  const std::string text = RenderMetrics(c.Metrics(), LoopStats{}, t0 + seconds(1));
  EXPECT_NE(text.find("# TYPE shoal_scheduler_plan_starts_dropped_total counter\n"),
            std::string::npos);
  EXPECT_NE(text.find("\nshoal_scheduler_plan_starts_dropped_total 1\n"), std::string::npos)
      << text;

  // Once the first job has left its GPU, a later pass places the second one
  // there, and the reason goes with the wait.
  Heartbeat hb;
  hb.events.push_back({first, one["epoch"].get<uint64_t>(), 0, JobEvent::kExited, 0, 0, ""});
  ASSERT_TRUE(c.ReceiveHeartbeat(kNodeAgent, "n1", hb, t0 + seconds(2)).ok());
  c.SchedulePass(t0 + seconds(3));
  const api::Json started = *c.ShowJob(kAlice, second);
  EXPECT_EQ(started["state"], "running");
  EXPECT_FALSE(started.contains("reason_detail")) << started.dump();
  EXPECT_EQ(c.Metrics().plan_starts_dropped, 1u);
}

}  // namespace
}  // namespace shoal::server
