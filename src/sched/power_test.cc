// Power budgets in the scheduling pass (sched/power.h): what a budget lets
// start, why the rest waits and until when, and placement off a full rack.
#include "sched/power.h"

#include <gtest/gtest.h>

#include "sched/schedule.h"
#include "testing/builders.h"

namespace shoal::sched {
namespace {

using std::chrono::hours;

// Two nodes of 8 GPUs rated 700 W, in racks a and b; an idle GPU counts
// 10 % of its rating (70 W), a node 500 W besides its GPUs.
class PowerBudgetTest : public ::testing::Test {
 protected:
  PowerBudgetTest() {
    c_.Node("n1").Labels({"rack=a"}).RatedW(700);
    c_.Node("n2").Labels({"rack=b"}).RatedW(700);
    c_.cluster().power.node_idle_w = 500;
  }

  static constexpr double kIdleW = 2 * (500 + 8 * 70);  // 2,120 W
  static constexpr double kJobW = 8 * (700 - 70);       // an 8-GPU job at rated power adds 5,040 W

  void Budget(const std::string& name, const std::string& label, double watts) {
    c_.cluster().power_budgets.push_back({name, label, watts});
  }

  Plan Run(const char* policy, const std::function<void(testing::SnapshotBuilder&)>& jobs) {
    inv_ = c_.Inventory();
    snap_ = std::make_unique<testing::SnapshotBuilder>(inv_);
    jobs(*snap_);
    auto params = Policy::Preset(policy);
    EXPECT_TRUE(params.ok());
    auto p = Policy::Create(*params, BuiltinRegistry());
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return Schedule(snap_->Build(), kTimeZero, *p);
  }

  std::string NodeOf(const Plan& plan, const std::string& job) const {
    const StartDecision* s = plan.FindStart(snap_->IdOf(job));
    if (s == nullptr || s->allocation.nodes.empty()) return "";
    return inv_->node(*inv_->IndexOf(s->allocation.nodes[0].node)).name;
  }

  testing::ClusterBuilder c_;
  std::shared_ptr<const Inventory> inv_;
  std::unique_ptr<testing::SnapshotBuilder> snap_;
};

TEST_F(PowerBudgetTest, IdleAndPeakDrawFollowTheRatingsAndTheIdleModel) {
  inv_ = c_.Inventory();
  EXPECT_DOUBLE_EQ(IdleClusterPower(*inv_), kIdleW);
  EXPECT_DOUBLE_EQ(PeakClusterPower(*inv_), kIdleW + 2 * kJobW);
}

TEST_F(PowerBudgetTest, ASiteBudgetLetsOneJobStartAndTheOtherWaitsUntilTheFirstEnds) {
  Budget("site", "", kIdleW + kJobW + 100);
  Plan plan = Run("greedy", [](testing::SnapshotBuilder& s) {
    s.Pending(testing::JobBuilder("j1").Gpus(8).Limit(hours(2)));
    s.Pending(testing::JobBuilder("j2").Gpus(8).Limit(hours(1)));
  });
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].job, snap_->IdOf("j1"));
  const PendingDecision* d = plan.FindPending(snap_->IdOf("j2"));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->reason, PendingReason::kPowerBudget);
  EXPECT_NE(d->detail.find("power budget 'site' would reach 12.2 kW of its 7.3 kW"),
            std::string::npos)
      << d->detail;
  EXPECT_EQ(d->estimated_start, kTimeZero + hours(2));  // when j1's time limit frees its power
}

TEST_F(PowerBudgetTest, WithoutABudgetBothStart) {
  Plan plan = Run("greedy", [](testing::SnapshotBuilder& s) {
    s.Pending(testing::JobBuilder("j1").Gpus(8));
    s.Pending(testing::JobBuilder("j2").Gpus(8));
  });
  EXPECT_EQ(plan.starts.size(), 2u);
}

TEST_F(PowerBudgetTest, AJobsExpectedDrawCountsInPlaceOfTheRating) {
  Budget("site", "", kIdleW + kJobW + 100);
  Plan plan = Run("greedy", [](testing::SnapshotBuilder& s) {
    s.info(s.Pending(testing::JobBuilder("j1").Gpus(8))).gpu_power_w = 350;
    s.info(s.Pending(testing::JobBuilder("j2").Gpus(8))).gpu_power_w = 350;
  });
  EXPECT_EQ(plan.starts.size(), 2u);  // 2 x 8 x (350 - 70) = 4,480 W
}

TEST_F(PowerBudgetTest, ARunningJobsDrawIsCountedAndItsEndEstimatesTheStart) {
  Budget("site", "", kIdleW + kJobW + 100);
  Plan plan = Run("greedy", [](testing::SnapshotBuilder& s) {
    s.Running(testing::JobBuilder("r").Gpus(8), {"n1:0-7"}, kTimeZero - hours(1),
              kTimeZero + hours(3));
    s.Pending(testing::JobBuilder("j").Gpus(8));
  });
  EXPECT_TRUE(plan.starts.empty());
  const PendingDecision* d = plan.FindPending(snap_->IdOf("j"));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->reason, PendingReason::kPowerBudget);
  EXPECT_EQ(d->estimated_start, kTimeZero + hours(3));
}

TEST_F(PowerBudgetTest, AJobThatCrossesAFullRacksBudgetIsPlacedInAnotherRack) {
  auto jobs = [](testing::SnapshotBuilder& s) {
    s.Running(testing::JobBuilder("r").Gpus(4), {"n1:0-3"}, kTimeZero, kTimeZero + hours(1));
    s.Pending(testing::JobBuilder("j").Gpus(4));
  };
  EXPECT_EQ(NodeOf(Run("greedy", jobs), "j"), "n1");  // the busier node, without a budget
  // Rack a may add 6 GPUs at rated power; a 4-GPU job runs there already.
  Budget("rack-a", "rack=a", 500 + 8 * 70 + 6 * 630);
  Plan plan = Run("greedy", jobs);
  EXPECT_EQ(NodeOf(plan, "j"), "n2");  // n1 has the room, rack a not the power
}

TEST_F(PowerBudgetTest, AJobThatNoBudgetCouldEverHoldSaysSo) {
  Budget("site", "", kIdleW + 4 * 630);
  Plan plan = Run("greedy",
                  [](testing::SnapshotBuilder& s) { s.Pending(testing::JobBuilder("j").Gpus(8)); });
  const PendingDecision* d = plan.FindPending(snap_->IdOf("j"));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->reason, PendingReason::kPowerBudget);
  EXPECT_EQ(d->estimated_start, kTimeNever);
  EXPECT_NE(d->detail.find("more than the budget allows with its nodes idle"), std::string::npos)
      << d->detail;
}

TEST_F(PowerBudgetTest, CheckPowerFitsRefusesOnlyWhatNoPlacementCouldHold) {
  Budget("rack-a", "rack=a", 500 + 8 * 70 + 4 * 630);
  inv_ = c_.Inventory();
  auto req = [&](int gpus, std::vector<std::string> labels) {
    return *CompileRequest(*inv_, testing::JobBuilder("j").Gpus(gpus).Labels(labels).spec());
  };
  EXPECT_TRUE(CheckPowerFits(*inv_, req(8, {}), 0).ok());  // it may run in rack b
  EXPECT_TRUE(CheckPowerFits(*inv_, req(4, {"rack=a"}), 0).ok());
  const Status s = CheckPowerFits(*inv_, req(8, {"rack=a"}), 0);
  EXPECT_EQ(s.code(), StatusCode::kUnsatisfiable);
  EXPECT_NE(s.message().find("power budget 'rack-a' (3.6 kW) cannot hold it"), std::string::npos)
      << s.message();
  EXPECT_TRUE(CheckPowerFits(*inv_, req(8, {"rack=a"}), 300).ok());  // capped, it fits
}

TEST_F(PowerBudgetTest, StrictOrderBlocksBehindAJobWaitingForPowerAndGreedyLetsASmallerOnePass) {
  Budget("site", "", kIdleW + kJobW + 4 * 630 + 100);
  auto jobs = [](testing::SnapshotBuilder& s) {
    s.Running(testing::JobBuilder("r").Gpus(8), {"n1:0-7"}, kTimeZero, kTimeZero + hours(1));
    s.Pending(testing::JobBuilder("big").Gpus(8));
    s.Pending(testing::JobBuilder("small").Gpus(4));
  };
  Plan fifo = Run("fifo", jobs);
  EXPECT_TRUE(fifo.starts.empty());
  EXPECT_EQ(fifo.FindPending(snap_->IdOf("small"))->reason, PendingReason::kPriority);
  Plan greedy = Run("greedy", jobs);
  ASSERT_EQ(greedy.starts.size(), 1u);
  EXPECT_EQ(greedy.starts[0].job, snap_->IdOf("small"));
  EXPECT_EQ(greedy.FindPending(snap_->IdOf("big"))->reason, PendingReason::kPowerBudget);
}

TEST_F(PowerBudgetTest, BackfillReservesPowerForTheFirstJobWaitingForIt) {
  // r (at 400 W a GPU) leaves room now for both small jobs, but once big
  // (rated) runs in its place at +2h only 140 W are left.
  Budget("site", "", kIdleW + kJobW + 140);
  auto jobs = [](testing::SnapshotBuilder& s) {
    s.info(s.Running(testing::JobBuilder("r").Gpus(8), {"n1:0-7"}, kTimeZero - hours(1),
                     kTimeZero + hours(2)))
        .gpu_power_w = 400;
    s.Pending(testing::JobBuilder("big").Gpus(8).Limit(hours(4)), kTimeZero);
    s.Pending(testing::JobBuilder("short").Gpus(2).Limit(hours(1)), kTimeZero + hours(1));
    s.Pending(testing::JobBuilder("long").Gpus(2).Limit(hours(5)), kTimeZero + hours(2));
  };
  Plan backfill = Run("backfill", jobs);
  ASSERT_EQ(backfill.starts.size(), 1u);
  EXPECT_EQ(backfill.starts[0].job, snap_->IdOf("short"));  // it ends before big can start
  const PendingDecision* big = backfill.FindPending(snap_->IdOf("big"));
  EXPECT_EQ(big->reason, PendingReason::kPowerBudget);
  EXPECT_EQ(big->estimated_start, kTimeZero + hours(2));
  const PendingDecision* long_job = backfill.FindPending(snap_->IdOf("long"));
  EXPECT_EQ(long_job->reason, PendingReason::kPriority);
  EXPECT_EQ(long_job->detail, "it would delay a job that waits for power");
  Plan greedy = Run("greedy", jobs);  // no reservation: both small jobs pass big
  EXPECT_EQ(greedy.starts.size(), 2u);
}

TEST_F(PowerBudgetTest, APreemptingJobMayTakeTheLowerTiersPower) {
  c_ = testing::ClusterBuilder();  // the same nodes, in two partitions of two tiers
  c_.cluster().power.node_idle_w = 500;
  c_.AddPartition("low", true);
  c_.AddPartition("high").priority_tier = 1;
  c_.Node("n1").Labels({"rack=a"}).RatedW(700).Partitions({"low", "high"});
  c_.Node("n2").Labels({"rack=b"}).RatedW(700).Partitions({"low", "high"});
  Budget("site", "", kIdleW + kJobW + 100);
  Plan plan = Run("greedy:preempt=tier", [](testing::SnapshotBuilder& s) {
    JobId low = s.Running(testing::JobBuilder("low").Gpus(8).Partition("low").Requeue(), {"n1:0-7"},
                          kTimeZero - hours(1), kTimeZero + hours(9));
    s.info(low).preemptible = true;
    s.Pending(testing::JobBuilder("high").Gpus(8).Partition("high"));
  });
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].job, snap_->IdOf("high"));
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].victim, snap_->IdOf("low"));
}

TEST_F(PowerBudgetTest, TestOnlyEstimatesWaitForPowerAsWellAsGpus) {
  Budget("site", "", kIdleW + kJobW + 100);
  inv_ = c_.Inventory();
  snap_ = std::make_unique<testing::SnapshotBuilder>(inv_);
  snap_->Running(testing::JobBuilder("r").Gpus(8), {"n1:0-7"}, kTimeZero - hours(1),
                 kTimeZero + hours(3));
  auto policy = Policy::Create(*Policy::Preset("backfill"), BuiltinRegistry());
  ASSERT_TRUE(policy.ok());
  auto req = CompileRequest(*inv_, testing::JobBuilder("j").Gpus(8).spec());
  ASSERT_TRUE(req.ok());
  auto rated = EstimateStart(snap_->Build(), *req, kTimeZero, *policy);
  ASSERT_TRUE(rated.ok()) << rated.status().ToString();
  EXPECT_EQ(rated->start, kTimeZero + hours(3));  // n2 is free now, the power at +3h
  auto capped = EstimateStart(snap_->Build(), *req, kTimeZero, *policy, 80);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->start, kTimeZero);  // 8 x (80 - 70) W fit now
  auto two = CompileRequest(*inv_, testing::JobBuilder("j").Gang(2, 8).spec());
  auto never = EstimateStart(snap_->Build(), *two, kTimeZero, *policy);
  EXPECT_EQ(never.status().code(), StatusCode::kUnsatisfiable);
}

TEST_F(PowerBudgetTest, ASharedGpuCountsItsShareOfTheDraw) {
  inv_ = c_.Inventory();
  PowerLedger ledger(*inv_);
  EXPECT_FALSE(ledger.active());
  Budget("site", "", kIdleW + 630);
  inv_ = c_.Inventory();
  PowerLedger site(*inv_);
  ASSERT_TRUE(site.active());
  Allocation half;
  half.nodes.push_back({inv_->node(0).id, 0b1, 500});
  EXPECT_DOUBLE_EQ(site.Added(half, 0)[0], 315);
  EXPECT_EQ(site.Crossed(half, 0), -1);
  site.Charge(JobId(1), half, 0, 1, kTimeZero + hours(1));
  site.Charge(JobId(2), half, 0, 1, kTimeZero + hours(2));
  EXPECT_DOUBLE_EQ(site.loads_w()[0], kIdleW + 630);
  EXPECT_EQ(site.Crossed(half, 0), 0);
  EXPECT_EQ(site.WhenFits(0, half, 0, kTimeZero), kTimeZero + hours(1));
  site.Charge(JobId(1), half, 0, -1);
  EXPECT_EQ(site.Crossed(half, 0), -1);
}

}  // namespace
}  // namespace shoal::sched
