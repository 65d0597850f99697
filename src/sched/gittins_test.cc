#include "sched/gittins.h"

#include <gtest/gtest.h>

#include "sched/plugins/plugins.h"
#include "sched/policy.h"
#include "testing/builders.h"

namespace shoal::sched {
namespace {

std::vector<double> Prefix(const std::vector<double>& s) {
  std::vector<double> p(s.size() + 1, 0);
  for (size_t i = 0; i < s.size(); ++i)
    p[i + 1] = p[i] + s[i];
  return p;
}

TEST(GittinsTest, ByHand) {
  // Half the jobs need 1 GPU-second, half 100.
  std::vector<double> s(16, 1.0);
  s.insert(s.end(), 16, 100.0);
  const std::vector<double> p = Prefix(s);
  // At 0: a quantum of 1 finishes half for an expected cost of 1 (index 0.5),
  // better than running to 100 (1 / 50.5).
  EXPECT_DOUBLE_EQ(GittinsTable::Compute(s, p, 0), 0.5);
  // Past 1, every job left needs 99 more.
  EXPECT_DOUBLE_EQ(GittinsTable::Compute(s, p, 1), 1.0 / 99);
  EXPECT_DOUBLE_EQ(GittinsTable::Compute(s, p, 100), 0.0) << "beyond every sample";
  // Equal sizes: the index grows as the job nears its end.
  std::vector<double> eq(32, 10.0);
  const std::vector<double> pe = Prefix(eq);
  EXPECT_DOUBLE_EQ(GittinsTable::Compute(eq, pe, 0), 0.1);
  EXPECT_DOUBLE_EQ(GittinsTable::Compute(eq, pe, 5), 0.2);
}

TEST(GittinsTest, ServiceHistoryKeepsAWindowAndRebuildsNowAndThen) {
  ServiceHistory h;
  EXPECT_EQ(h.table(), nullptr);
  h.Record(10);
  ASSERT_NE(h.table(), nullptr);  // built at the first completion: too little history yet
  EXPECT_TRUE(h.table()->empty());
  for (size_t i = 1; i < ServiceHistory::kRebuildEvery; ++i)
    h.Record(10);
  EXPECT_TRUE(h.table()->empty()) << "not rebuilt before " << ServiceHistory::kRebuildEvery;
  h.Record(10);
  ASSERT_FALSE(h.table()->empty());
  EXPECT_DOUBLE_EQ(h.table()->Index(0), 0.1);  // every job needed 10 GPU-seconds
  // The window keeps the last kWindow: after that many of 1000, 10 is gone.
  for (size_t i = 0; i < ServiceHistory::kWindow; ++i)
    h.Record(1000);
  EXPECT_EQ(h.size(), ServiceHistory::kWindow);
  h.Rebuild();
  EXPECT_DOUBLE_EQ(h.table()->Index(0), 0.001);
}

TEST(GittinsTest, TableNeedsHistoryAndLooksUp) {
  EXPECT_TRUE(GittinsTable(std::vector<double>(31, 1.0)).empty());
  std::vector<double> s(16, 1.0);
  s.insert(s.end(), 16, 100.0);
  GittinsTable t(s);
  ASSERT_FALSE(t.empty());
  EXPECT_DOUBLE_EQ(t.Index(0), 0.5);
  EXPECT_NEAR(t.Index(50), 1.0 / 50, 1e-9 + 1.0 / 50 * 0.1)
      << "between grid points: the point below";
}

TEST(GittinsTest, SortRanksShortLookingJobsFirst) {
  testing::ClusterBuilder c;
  c.Node("n1");
  auto inv = c.Inventory();
  testing::SnapshotBuilder b(inv);
  JobId fresh = b.Pending(testing::JobBuilder("fresh").Gpus(1));
  JobId ran = b.Pending(testing::JobBuilder("ran").Gpus(1));
  b.info(ran).attained_gpu_s = 2;  // past the short jobs' size: it is a long one
  std::vector<double> s(16, 1.0);
  s.insert(s.end(), 16, 100.0);
  b.snapshot().service_index = std::make_shared<const GittinsTable>(s);
  const Snapshot& snap = b.Build();
  PolicyParams params;
  SortContext ctx{snap, kTimeZero, params, 0, 0, 8};
  auto gittins = plugins::MakeGittinsSort();
  EXPECT_LT(gittins->Value(ctx, b.info(fresh)), gittins->Value(ctx, b.info(ran)));
  EXPECT_DOUBLE_EQ(gittins->Value(ctx, b.info(fresh)), 1.0) << "-log2(0.5)";
  b.snapshot().service_index.reset();
  EXPECT_DOUBLE_EQ(gittins->Value(ctx, b.info(fresh)), 64.0)
      << "no history: LAS queue 0, after any ranked job";
}

}  // namespace
}  // namespace shoal::sched
