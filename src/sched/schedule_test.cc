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

}  // namespace
}  // namespace shoal::sched
