// EstimateStart (sbatch --test-only): the earliest start given the running
// jobs' expected ends, other pending jobs aside.
#include <gtest/gtest.h>

#include "sched/schedule.h"
#include "testing/builders.h"

namespace shoal::sched {
namespace {

class EstimateStartTest : public ::testing::Test {
 protected:
  EstimateStartTest() {
    c_.Node("n1");
    c_.Node("n2");
    inv_ = c_.Inventory();
    snap_ = std::make_unique<testing::SnapshotBuilder>(inv_);
    // n1 is full until +1h; half of n2 until +2h.
    snap_->Running(testing::JobBuilder("r1").Gpus(8), {"n1:0-7"}, At(-1), At(1));
    snap_->Running(testing::JobBuilder("r2").Gpus(4), {"n2:0-3"}, At(-1), At(2));
    auto params = Policy::Preset("backfill");
    EXPECT_TRUE(params.ok());
    auto policy = Policy::Create(*params, BuiltinRegistry());
    EXPECT_TRUE(policy.ok()) << policy.status().ToString();
    policy_ = std::make_unique<Policy>(std::move(policy).value());
  }

  static Time At(int hours) { return kTimeZero + std::chrono::hours(hours); }

  Result<StartEstimate> Estimate(const testing::JobBuilder& job, Time not_before = kTimeZero) {
    auto req = CompileRequest(*inv_, job.spec());
    if (!req.ok()) return req.status();
    return EstimateStart(snap_->Build(), *req, not_before, *policy_);
  }

  std::string NodeName(const NodeAllocation& na) const {
    return inv_->node(*inv_->IndexOf(na.node)).name;
  }

  testing::ClusterBuilder c_;
  std::shared_ptr<const Inventory> inv_;
  std::unique_ptr<testing::SnapshotBuilder> snap_;
  std::unique_ptr<Policy> policy_;
};

TEST_F(EstimateStartTest, NowWhenItFitsWhatIsFree) {
  auto e = Estimate(testing::JobBuilder("j").Gpus(4));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->start, kTimeZero);
  ASSERT_EQ(e->allocation.nodes.size(), 1u);
  EXPECT_EQ(NodeName(e->allocation.nodes[0]), "n2");
  EXPECT_EQ(e->allocation.TotalGpus(), 4);
}

TEST_F(EstimateStartTest, AtTheFirstExpectedEndThatFreesEnough) {
  auto whole = Estimate(testing::JobBuilder("j").Gpus(8));
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->start, At(1));
  EXPECT_EQ(NodeName(whole->allocation.nodes[0]), "n1");
  auto gang = Estimate(testing::JobBuilder("j").Gang(2, 8));
  ASSERT_TRUE(gang.ok()) << gang.status().ToString();
  EXPECT_EQ(gang->start, At(2));
  EXPECT_EQ(gang->allocation.nodes.size(), 2u);
}

TEST_F(EstimateStartTest, NotBeforeItsBeginTime) {
  auto later = Estimate(testing::JobBuilder("j").Gpus(8), kTimeZero + std::chrono::minutes(90));
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ(later->start, kTimeZero + std::chrono::minutes(90));
  auto small = Estimate(testing::JobBuilder("j").Gpus(2), At(3));
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->start, At(3));
}

TEST_F(EstimateStartTest, NeverWhenTheNodesItNeedsAreDown) {
  snap_->SetNode("n1", NodeState::kDown);
  auto gang = Estimate(testing::JobBuilder("j").Gang(2, 8));
  ASSERT_FALSE(gang.ok());
  EXPECT_EQ(gang.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(gang.status().message().find("even when every running job has ended"),
            std::string::npos)
      << gang.status().message();
  auto big = Estimate(testing::JobBuilder("j").Gang(3, 8));
  EXPECT_FALSE(big.ok()) << "three nodes of a two-node cluster";
}

}  // namespace
}  // namespace shoal::sched
