// Schedule() on hand-made snapshots, for what the scenario files cannot
// express (tests/scenarios hold the rest).
#include "sched/schedule.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace shoal::sched {
namespace {

Time At(int hours) {
  return kTimeZero + std::chrono::hours(hours);
}

// Under LAS (queues at 3,600 and 36,000 GPU-seconds), a pending job whose
// request was compiled for another cluster layout is compiled again in the
// pass and keeps its own rank: in queue 2 it may not preempt a running job
// of queue 1, in queue 0 it may.
Plan RecompiledUnderLas(double pending_attained_gpu_s) {
  testing::ClusterBuilder c;
  c.Node("n1");
  testing::SnapshotBuilder s(c.Inventory());
  const JobId running =
      s.Running(testing::JobBuilder("r").Gpus(8).Requeue(), {"n1:0-7"}, At(-2), At(22));
  s.info(running).attained_gpu_s = 5000;
  s.info(running).preemptible = true;
  const JobId pending = s.Pending(testing::JobBuilder("p").Gpus(8), At(-1));
  s.info(pending).attained_gpu_s = pending_attained_gpu_s;
  s.info(pending).request.inventory_version ^= 1;
  auto params = Policy::Preset("las");
  EXPECT_TRUE(params.ok());
  auto policy = Policy::Create(*params, BuiltinRegistry());
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return Schedule(s.Build(), kTimeZero, *policy);
}

TEST(ScheduleTest, ARecompiledRequestKeepsItsRankForPreemption) {
  const Plan queue2 = RecompiledUnderLas(40000);
  EXPECT_TRUE(queue2.preemptions.empty());
  EXPECT_TRUE(queue2.starts.empty());
  const Plan queue0 = RecompiledUnderLas(0);
  ASSERT_EQ(queue0.preemptions.size(), 1u);
  ASSERT_EQ(queue0.starts.size(), 1u);
}

// Under LAS, a 4-GPU job preempts a running 8-GPU job of a lower queue; a
// second 4-GPU job goes on the other half of what the victim frees. The
// victim holds those GPUs until it stops, so that start too waits for it
// (after_preemption), or a server would find its GPUs taken. The plan also
// says when to look again (Plan::wake_at).
TEST(ScheduleTest, AStartOnWhatAVictimFreesWaitsForTheVictim) {
  testing::ClusterBuilder c;
  c.Node("n1");  // 8 GPUs
  testing::SnapshotBuilder s(c.Inventory());
  const JobId victim =
      s.Running(testing::JobBuilder("v").Gpus(8).Requeue(), {"n1:0-7"}, At(-2), At(22));
  s.info(victim).attained_gpu_s = 5000;
  s.info(victim).preemptible = true;
  const JobId first = s.Pending(testing::JobBuilder("a").Gpus(4), At(-1));
  const JobId second =
      s.Pending(testing::JobBuilder("b").Gpus(4), At(-1) + std::chrono::seconds(1));
  s.info(first).attained_gpu_s = 1600;  // queue 0: 2,000 GPU-seconds to go
  auto params = Policy::Preset("las");
  ASSERT_TRUE(params.ok());
  auto policy = Policy::Create(*params, BuiltinRegistry());
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  const Plan plan = Schedule(s.Build(), kTimeZero, *policy);
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].victim, victim);
  ASSERT_EQ(plan.starts.size(), 2u);
  EXPECT_EQ(plan.starts[0].job, first);
  EXPECT_EQ(plan.starts[1].job, second);
  for (const StartDecision& start : plan.starts)
    EXPECT_TRUE(start.after_preemption) << "job " << start.job.value();
  // The victim waits again, in queue 1: it may displace a starter once that
  // is in queue 2, the first after (36,000 - 1,600) / 4 GPU-seconds.
  EXPECT_EQ(plan.wake_at, kTimeZero + std::chrono::seconds(8600) + Duration(1));
}

// A pass that need not explain, on a cluster with no whole GPU free, under
// a policy that does not preempt, ends before ranking when the driver counts
// no waiting job that could start without one (Snapshot::pending_not_whole_gpus).
Plan QuietPass(const std::string& policy_name, int running_gpus, int not_whole_gpus) {
  testing::ClusterBuilder c;
  c.Node("n1");  // 8 GPUs
  testing::SnapshotBuilder s(c.Inventory());
  s.Running(testing::JobBuilder("r").Gpus(running_gpus).Requeue(),
            {"n1:0-" + std::to_string(running_gpus - 1)}, At(-2), At(22));
  for (int gpus : {1, 2, 4})
    s.Pending(testing::JobBuilder("p" + std::to_string(gpus)).Gpus(gpus), At(-1));
  Snapshot snap = s.Build();
  snap.explain = false;
  snap.rank_hint = {2, 1, 0};
  snap.pending_not_whole_gpus = not_whole_gpus;
  auto params = Policy::Preset(policy_name);
  EXPECT_TRUE(params.ok());
  auto policy = Policy::Create(*params, BuiltinRegistry());
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return Schedule(snap, kTimeZero, *policy);
}

TEST(ScheduleTest, AQuietPassOnAFullClusterEndsBeforeRanking) {
  const Plan full = QuietPass("multifactor", 8, 0);
  EXPECT_TRUE(full.starts.empty());
  EXPECT_TRUE(full.ranked.empty());
  // The driver does not count: the pass ranks, as it must to end.
  const Plan uncounted = QuietPass("multifactor", 8, -1);
  EXPECT_TRUE(uncounted.starts.empty());
  EXPECT_EQ(uncounted.ranked.size(), 3u);
  // A GPU is free: the pass ranks and starts the 1-GPU job.
  const Plan one_free = QuietPass("multifactor", 7, 0);
  ASSERT_EQ(one_free.starts.size(), 1u);
  EXPECT_EQ(one_free.ranked.size(), 3u);
  // A policy that preempts may start something on a full cluster.
  EXPECT_EQ(QuietPass("las", 8, 0).ranked.size(), 3u);
}

}  // namespace
}  // namespace shoal::sched
