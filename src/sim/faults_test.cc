// Faults in simulation: the --faults model, the seeded fault process, and
// replays through faults whose outcomes are worked out by hand.
#include "sim/faults.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "sim/engine.h"
#include "sim/report.h"
#include "sim/sim_testing.h"

namespace shoal::sim {
namespace {

TEST(FaultModelTest, ReadsRatesDurationsAndFactors) {
  auto m = ParseFaultModel(
      "node-fail=1%/day, node-repair=2h, gpu-xid=2/week, heartbeat-loss=0.5/h, gpu-slow=3, "
      "slow-factor=0.25, controller-restart=1/w, controller-down=90s, checkpoint=0");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_DOUBLE_EQ(m->node_fail_per_day, 0.01);
  EXPECT_EQ(m->node_repair, std::chrono::hours(2));
  EXPECT_DOUBLE_EQ(m->gpu_xid_per_day, 2.0 / 7);
  EXPECT_DOUBLE_EQ(m->heartbeat_loss_per_day, 12);
  EXPECT_DOUBLE_EQ(m->gpu_slow_per_day, 3);
  EXPECT_DOUBLE_EQ(m->slow_factor, 0.25);
  EXPECT_DOUBLE_EQ(m->controller_restart_per_day, 1.0 / 7);
  EXPECT_EQ(m->controller_down, std::chrono::seconds(90));
  EXPECT_EQ(m->checkpoint_every.count(), 0);
  // What it prints reads back the same.
  auto again = ParseFaultModel(FormatFaultModel(*m));
  ASSERT_TRUE(again.ok()) << FormatFaultModel(*m) << ": " << again.status().ToString();
  EXPECT_DOUBLE_EQ(again->gpu_xid_per_day, m->gpu_xid_per_day);
  EXPECT_EQ(again->controller_down, m->controller_down);
  EXPECT_FALSE(ParseFaultModel("none")->Any());
  EXPECT_FALSE(ParseFaultModel("")->Any());
}

TEST(FaultModelTest, RefusesWhatItCannotRead) {
  auto expect_error = [](const std::string& text, const std::string& says) {
    auto m = ParseFaultModel(text);
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_NE(m.status().message().find(says), std::string::npos) << m.status().message();
  };
  expect_error("node-fial=1%", "did you mean 'node-fail'");
  expect_error("node-fail=often", "a rate is");
  expect_error("node-fail=-1", "a rate is");
  expect_error("node-fail=1/month", "unknown unit");
  expect_error("node-fail=1%,node-repair=0", "positive duration");
  expect_error("gpu-slow=1,slow-factor=1.5", "above 0 and below 1");
  expect_error("node-fail", "not key=value");
  expect_error("checkpoint=1h", "no fault has a rate");
}

// Over many days the process gives each kind its rate, picks units
// uniformly and draws lengths with the asked-for mean.
TEST(FaultSourceTest, RatesUnitsAndLengthsAreAsAskedFor) {
  FaultModel m;
  m.node_fail_per_day = 0.5;
  m.gpu_xid_per_day = 0.05;
  m.node_repair = std::chrono::hours(4);
  const std::vector<int> gpus = {8, 8, 4, 0, 8};  // 5 nodes, 28 GPUs
  FaultSource src(m, gpus, 7, kTimeZero);
  const Time horizon = kTimeZero + std::chrono::hours(24 * 2000);
  std::map<Fault::Kind, int> count;
  std::vector<int> per_node(gpus.size());
  double repair_s = 0;
  Time last = kTimeZero;
  while (src.NextAt() < horizon) {
    const Fault f = src.Pop();
    ASSERT_GE(f.at, last) << "in time order";
    last = f.at;
    ++count[f.kind];
    ASSERT_LT(f.node, gpus.size());
    if (f.kind == Fault::Kind::kGpuXid) {
      ASSERT_LT(f.gpu, gpus[f.node]) << "a GPU the node has";
      ++per_node[f.node];
    } else {
      repair_s += ToSeconds(f.lasts);
    }
  }
  const double nodes_expected = 0.5 * 5 * 2000;  // 5,000
  const double xid_expected = 0.05 * 28 * 2000;  // 2,800
  EXPECT_NEAR(count[Fault::Kind::kNodeFail], nodes_expected, 4 * std::sqrt(nodes_expected));
  EXPECT_NEAR(count[Fault::Kind::kGpuXid], xid_expected, 4 * std::sqrt(xid_expected));
  EXPECT_EQ(count[Fault::Kind::kControllerRestart], 0);
  EXPECT_EQ(per_node[3], 0) << "a node without GPUs has no GPU failures";
  EXPECT_NEAR(per_node[2] / xid_expected, 4.0 / 28, 0.03) << "GPUs are picked uniformly";
  EXPECT_NEAR(repair_s / count[Fault::Kind::kNodeFail] / 3600, 4.0, 0.25);
  // The same seed gives the same faults.
  FaultSource a(m, gpus, 7, kTimeZero), b(m, gpus, 7, kTimeZero);
  for (int i = 0; i < 100; ++i) {
    const Fault fa = a.Pop(), fb = b.Pop();
    ASSERT_EQ(fa.at, fb.at);
    ASSERT_EQ(fa.node, fb.node);
    ASSERT_EQ(fa.lasts, fb.lasts);
  }
}

Fault At(double at_s, Fault::Kind kind, uint32_t node, double lasts_s, int gpu = 0) {
  Fault f;
  f.at = TimeFromSeconds(at_s);
  f.kind = kind;
  f.node = node;
  f.gpu = gpu;
  f.lasts = DurationFromSeconds(lasts_s);
  return f;
}

SimOptions Scripted(std::vector<Fault> faults) {
  SimOptions o;
  o.scripted_faults = std::move(faults);
  o.explain_every = 1;  // every pending job's reason is checked through the faults
  return o;
}

// A node crashes 2.5 h into a 10 h job that checkpoints hourly: the job stops
// at once, the controller marks the node down after the 30 s node timeout,
// and requeues the job at the fence (crash + 30 + 30 + 5 s). It lost the
// 1,800 s since its 2 h checkpoint and the 65 s held until the fence; it
// restarts when the node is back, pays the restart cost and runs the 80 % left.
TEST(SimFaultsTest, ANodeFailureLosesTheWorkSinceTheLastCheckpoint) {
  trace::Trace t;
  t.jobs = {Job("a", 0, 36000, 8)};
  SimResult r = RunSim(OneNode(), t, "fifo", Scripted({At(9000, Fault::Kind::kNodeFail, 0, 3600)}));
  const JobRecord& a = Find(r, "a");
  EXPECT_EQ(ToSeconds(a.end), 12600 + 30 + 0.8 * 36000);
  EXPECT_EQ(a.restarts, 1);
  EXPECT_EQ(ToSeconds(a.waited), 12600 - 9065);
  EXPECT_EQ(r.preemptions, 0);
  EXPECT_EQ(r.faults.node_failures, 1);
  EXPECT_EQ(r.faults.requeues, 1);
  EXPECT_DOUBLE_EQ(r.faults.lost_gpu_s, (9065 - 7200) * 8);
  EXPECT_DOUBLE_EQ(r.faults.out_of_service_gpu_s, 3600 * 8);
  EXPECT_DOUBLE_EQ(r.allocated_gpu_s, 9065 * 8 + (ToSeconds(a.end) - 12600) * 8);
  EXPECT_DOUBLE_EQ(r.restart_gpu_s, 30 * 8);
  const Summary s = Summarize(r);
  EXPECT_NEAR(s.goodput, 1 - (240 + 14920) / r.allocated_gpu_s, 1e-12);
}

// A node that reboots within the node timeout (crash at 9,000 s, back 20 s
// later) registers again before the controller noticed it gone: its job goes
// back to the queue then, with no fence to wait for, and starts again at
// once. It lost the 1,820 s since its 2 h checkpoint.
TEST(SimFaultsTest, ANodeThatRebootsBeforeItIsNoticedRequeuesItsJobsAsItReturns) {
  trace::Trace t;
  t.jobs = {Job("a", 0, 36000, 8)};
  SimResult r = RunSim(OneNode(), t, "fifo", Scripted({At(9000, Fault::Kind::kNodeFail, 0, 20)}));
  const JobRecord& a = Find(r, "a");
  EXPECT_EQ(a.restarts, 1);
  EXPECT_EQ(ToSeconds(a.end), 9020 + 30 + 0.8 * 36000);
  EXPECT_EQ(ToSeconds(a.waited), 0);
  EXPECT_EQ(r.faults.requeues, 1);
  EXPECT_DOUBLE_EQ(r.faults.lost_gpu_s, (9020 - 7200) * 8);
  EXPECT_DOUBLE_EQ(r.faults.out_of_service_gpu_s, 20 * 8);
}

// Before the controller notices a crashed node it still places work there
// (as shoal server would): b starts on n1 10 s after the crash, runs none of
// it, and goes back to the queue with a at the fence. Nothing starts on n1
// while it is known down; both restart when it returns.
TEST(SimFaultsTest, WorkPlacedOnANodeNotYetNoticedAsLostIsLostToo) {
  trace::Trace t;
  t.jobs = {Job("a", 0, 100000, 4), Job("c", 0, 100000, 8), Job("b", 110, 500, 4)};
  SimResult r = RunSim(Nodes(2), t, "fifo", Scripted({At(100, Fault::Kind::kNodeFail, 0, 1000)}));
  EXPECT_EQ(ToSeconds(Find(r, "b").first_start), 110);
  EXPECT_EQ(ToSeconds(Find(r, "b").end), 1100 + 30 + 500);
  EXPECT_EQ(ToSeconds(Find(r, "b").waited), 1100 - 165);
  EXPECT_EQ(ToSeconds(Find(r, "a").end), 1100 + 30 + 100000);
  EXPECT_EQ(Find(r, "c").restarts, 0) << "the other node's job is untouched";
  EXPECT_EQ(r.faults.requeues, 2);
  EXPECT_DOUBLE_EQ(r.faults.lost_gpu_s, 165 * 4 + (165 - 110) * 4);
}

// A heartbeat gap within the node timeout costs nothing. A longer one marks
// the node down: its agent stops the job as the controller gives up on it,
// and the job, which had not reached a checkpoint, starts over.
TEST(SimFaultsTest, LostHeartbeatsCostOnlyPastTheNodeTimeout) {
  trace::Trace t;
  t.jobs = {Job("a", 0, 1000, 8)};
  SimResult r = RunSim(OneNode(), t, "fifo",
                       Scripted({At(100, Fault::Kind::kHeartbeatLoss, 0, 20),
                                 At(200, Fault::Kind::kHeartbeatLoss, 0, 120)}));
  EXPECT_EQ(ToSeconds(Find(r, "a").end), 320 + 30 + 1000);
  EXPECT_EQ(r.faults.heartbeat_losses, 2);
  EXPECT_EQ(r.faults.heartbeat_losses_down, 1);
  EXPECT_DOUBLE_EQ(r.faults.lost_gpu_s, 265 * 8);
  EXPECT_DOUBLE_EQ(r.faults.out_of_service_gpu_s, 120 * 8);
}

// A GPU fails: the one job on it crashes, the node drains (nothing new
// starts there, though seven GPUs are healthy) until the GPU is repaired.
TEST(SimFaultsTest, AFailedGpuCrashesItsJobAndDrainsItsNode) {
  trace::Trace t;
  for (int i = 0; i < 8; ++i)
    t.jobs.push_back(Job("j" + std::to_string(i), 0, 10000, 1));
  t.jobs.push_back(Job("late", 200, 100, 1));
  SimResult r = RunSim(OneNode(), t, "fifo", Scripted({At(100, Fault::Kind::kGpuXid, 0, 500, 3)}));
  int crashed = 0;
  for (int i = 0; i < 8; ++i) {
    const JobRecord& j = Find(r, "j" + std::to_string(i));
    if (j.restarts == 0) {
      EXPECT_EQ(ToSeconds(j.end), 10000);
      continue;
    }
    ++crashed;
    EXPECT_EQ(ToSeconds(j.end), 600 + 30 + 10000) << "back when the GPU is repaired";
  }
  EXPECT_EQ(crashed, 1);
  EXPECT_EQ(ToSeconds(Find(r, "late").first_start), 10000) << "the node drained";
  EXPECT_EQ(r.faults.gpu_failures, 1);
  EXPECT_DOUBLE_EQ(r.faults.lost_gpu_s, 100);
  EXPECT_DOUBLE_EQ(r.faults.out_of_service_gpu_s, 500);
}

// A slow GPU slows its job for as long as it lasts; checkpoints are every
// 300 s of the run, whatever the pace, and a crash keeps the last one.
TEST(SimFaultsTest, ASlowGpuSlowsItsJobAndCheckpointsKeepThePace) {
  trace::Trace t;
  t.jobs = {Job("a", 0, 1000, 1)};
  // 100 s at full speed, 400 s at half (200 s of work), then full speed.
  SimResult slow =
      RunSim(OneNode(1), t, "fifo", Scripted({At(100, Fault::Kind::kGpuSlow, 0, 400)}));
  EXPECT_EQ(ToSeconds(Find(slow, "a").end), 1200);
  EXPECT_EQ(slow.faults.slow_gpus, 1);
  EXPECT_EQ(slow.faults.requeues, 0);
  // Then a crash at 700 s: half the work is done; the 600 s checkpoint had
  // 40 %, which is kept (the 300 s one had 20 %).
  SimOptions o =
      Scripted({At(100, Fault::Kind::kGpuSlow, 0, 400), At(700, Fault::Kind::kNodeFail, 0, 100)});
  o.faults.checkpoint_every = std::chrono::seconds(300);
  SimResult crash = RunSim(OneNode(1), t, "fifo", o);
  EXPECT_NEAR(ToSeconds(Find(crash, "a").end), 800 + 30 + 600, 0.002);
  EXPECT_DOUBLE_EQ(crash.faults.lost_gpu_s, 765 - 600);
}

// While the controller restarts nothing is scheduled: b waits for it
// although a ended meanwhile.
TEST(SimFaultsTest, NothingStartsWhileTheControllerRestarts) {
  trace::Trace t;
  t.jobs = {Job("a", 0, 100, 8), Job("b", 50, 100, 8)};
  SimResult r =
      RunSim(OneNode(), t, "fifo", Scripted({At(90, Fault::Kind::kControllerRestart, 0, 60)}));
  EXPECT_EQ(ToSeconds(Find(r, "a").end), 100);
  EXPECT_EQ(ToSeconds(Find(r, "b").first_start), 150);
  EXPECT_EQ(r.faults.controller_restarts, 1);
}

// Random faults of every kind, often, under every policy: the invariants
// hold (no GPU given twice, gangs whole, no job started twice or on a node
// known down, every pending job has a reason at every pass), every job
// ends, and the same seed gives the same run.
TEST(SimFaultsTest, EveryPolicyRunsThroughRandomFaults) {
  Cluster c = Nodes(3);
  const trace::Trace t = MixedQueue(300);
  auto model = ParseFaultModel(
      "node-fail=3/day,node-repair=30m,heartbeat-loss=6/day,heartbeat-gap=60s,gpu-xid=1/day,"
      "gpu-repair=1h,gpu-slow=1/day,slow-for=1h,controller-restart=8/day,controller-down=2m,"
      "checkpoint=10m");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  for (const char* policy : {"fifo", "backfill", "multifactor", "las", "gittins", "greedy"}) {
    SimOptions o;
    o.faults = *model;
    o.explain_every = 1;
    SimResult r = RunSim(c, t, policy, o);
    // A job slowed by a slow GPU may run past its time limit (twice its run time).
    const Summary sum = Summarize(r);
    EXPECT_EQ(sum.completed + sum.timeouts, 300) << policy;
    EXPECT_LE(sum.timeouts, 3) << policy;
    const FaultStats& f = r.faults;
    EXPECT_GT(f.node_failures, 0) << policy;
    EXPECT_GT(f.heartbeat_losses_down, 0) << policy;
    EXPECT_GT(f.gpu_failures, 0) << policy;
    EXPECT_GT(f.controller_restarts, 0) << policy;
    EXPECT_GT(f.requeues, 0) << policy;
    EXPECT_GT(f.lost_gpu_s, 0) << policy;
    const double goodput = sum.goodput;
    EXPECT_GT(goodput, 0.5) << policy;
    EXPECT_LT(goodput, 1.0) << policy;
    SimResult again = RunSim(c, t, policy, o);
    ASSERT_EQ(again.jobs.size(), r.jobs.size());
    for (size_t i = 0; i < r.jobs.size(); ++i)
      EXPECT_EQ(again.jobs[i].end, r.jobs[i].end) << policy << " " << r.jobs[i].name;
    EXPECT_DOUBLE_EQ(again.faults.lost_gpu_s, f.lost_gpu_s) << policy;
  }
}

TEST(SimFaultsTest, FillModeRefusesFaults) {
  trace::Trace t;
  t.jobs = {Job("a", 0, 100, 1)};
  SimOptions o;
  o.mode = Mode::kFill;
  o.faults.node_fail_per_day = 1;
  auto r = Simulate(OneNode(), t, *sched::Policy::Preset("fifo"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fill mode"), std::string::npos);
}

}  // namespace
}  // namespace shoal::sim
