#include "sched/gittins.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

// The service of 16 jobs of 1 GPU-second and 16 of 100.
std::vector<double> ShortAndLongJobs() {
  std::vector<double> s(16, 1.0);
  s.insert(s.end(), 16, 100.0);
  return s;
}

TEST(GittinsTest, SortRanksShortLookingJobsFirst) {
  testing::ClusterBuilder c;
  c.Node("n1");
  auto inv = c.Inventory();
  testing::SnapshotBuilder b(inv);
  JobId fresh = b.Pending(testing::JobBuilder("fresh").Gpus(1));
  JobId ran = b.Pending(testing::JobBuilder("ran").Gpus(1));
  b.info(ran).attained_gpu_s = 2;  // past the short jobs' size: it is a long one
  b.snapshot().service_index = std::make_shared<const GittinsTable>(ShortAndLongJobs());
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

// A running job's pass wakes where its value's integer part (what class
// preemption compares) changes: from queue 1 (index 0.5) once it has run
// past the short jobs' 1 GPU-second, then where 1 / (100 - a) halves.
TEST(GittinsTest, ARunningJobWakesItsDriversWhereItsClassChanges) {
  testing::ClusterBuilder c;
  c.Node("n1");
  testing::SnapshotBuilder b(c.Inventory());
  const JobId job = b.Pending(testing::JobBuilder("j").Gpus(1));
  b.snapshot().service_index = std::make_shared<const GittinsTable>(ShortAndLongJobs());
  const Snapshot& snap = b.Build();
  PolicyParams params;
  SortContext ctx{snap, kTimeZero, params, 0, 0, 8};
  auto gittins = plugins::MakeGittinsSort();
  ASSERT_TRUE(gittins->ChangesAsItRuns());
  constexpr double kAny = -std::numeric_limits<double>::infinity();
  auto class_at = [&](double attained) {
    b.info(job).attained_gpu_s = attained;
    return std::floor(gittins->Value(ctx, b.info(job)));
  };
  const double first = gittins->NextChangeAt(snap, params, 0, kAny);
  EXPECT_DOUBLE_EQ(first, 1.0);
  EXPECT_EQ(class_at(0.999), 1.0);
  EXPECT_EQ(class_at(first), 6.0) << "log2(99)";
  const double second = gittins->NextChangeAt(snap, params, first, kAny);
  EXPECT_GT(second, 36.0 - 2) << "1 / (100 - a) reaches 1/64 near a = 36";
  EXPECT_LT(second, 36.0 + 2);
  EXPECT_EQ(class_at(second - 1e-6), 6.0);
  EXPECT_EQ(class_at(second), 5.0);
  // Only a change to a class above 6 (a waiting job's): the index only rises
  // towards the long jobs' 100 GPU-seconds, then past every sample it is 0
  // (class 64, last of all).
  const double above_six = gittins->NextChangeAt(snap, params, 0, 6);
  EXPECT_EQ(class_at(above_six), 64.0);
  EXPECT_GE(above_six, 100.0);
  // Without history: LAS's thresholds.
  b.snapshot().service_index.reset();
  EXPECT_DOUBLE_EQ(gittins->NextChangeAt(b.Build(), params, 0, kAny), 3600.0);
}

}  // namespace
}  // namespace shoal::sched
