// Table-driven tests of the sort plugins' values.
#include <gtest/gtest.h>

#include <cmath>

#include "sched/plugins/plugins.h"
#include "sched/policy.h"
#include "testing/builders.h"

namespace shoal::sched {
namespace {

using std::chrono::hours;
using testing::ClusterBuilder;
using testing::JobBuilder;
using testing::SnapshotBuilder;

struct Fixture {
  Fixture() {
    c.Node("n1");
    inv = c.Inventory();
  }
  ClusterBuilder c;
  std::shared_ptr<const Inventory> inv;
};

TEST(MultifactorTest, FactorsByTable) {
  Fixture f;
  SnapshotBuilder s(f.inv);
  s.AddAccount("a", 1, 0);
  s.AddAccount("b", 3, 3600 * 100);
  const Time now = kTimeZero + hours(24 * 7);
  PolicyParams p;
  p.weight_age = 1000;
  p.weight_fairshare = 0;
  p.weight_size = 0;
  p.weight_qos = 0;
  struct Case {
    const char* what;
    Time submit;
    double age_points;
  } cases[] = {
      {"brand new", now, 0},
      {"half the max age", now - hours(12 * 7), 500},
      {"at the max age", now - hours(24 * 7), 1000},
      {"older than the max age (capped)", kTimeZero - hours(100), 1000},
  };
  for (const Case& c : cases) {
    JobId id = s.Pending(JobBuilder(c.what).Gpus(1), c.submit);
    const Snapshot& snap = s.Build();
    SortContext ctx{snap, now, p, 0, 0, f.inv->total_gpus()};
    EXPECT_NEAR(plugins::MultifactorPriority(ctx, s.info(id)), c.age_points, 1e-6) << c.what;
  }
}

TEST(MultifactorTest, FairShareIsTwoToTheMinusUsageOverShares) {
  Fixture f;
  SnapshotBuilder s(f.inv);
  s.AddAccount("light", 1, 0);
  s.AddAccount("heavy", 1, 300);
  s.AddAccount("big", 2, 100);
  JobId light = s.Pending(JobBuilder("l").Gpus(1).Account("light"));
  JobId heavy = s.Pending(JobBuilder("h").Gpus(1).Account("heavy"));
  JobId big = s.Pending(JobBuilder("b").Gpus(1).Account("big"));
  const Snapshot& snap = s.Build();
  PolicyParams p;
  p.weight_age = p.weight_size = p.weight_qos = 0;
  p.weight_fairshare = 1;
  SortContext ctx{snap, kTimeZero, p, 400, 4, f.inv->total_gpus()};
  EXPECT_DOUBLE_EQ(plugins::MultifactorPriority(ctx, s.info(light)), 1.0);
  EXPECT_DOUBLE_EQ(plugins::MultifactorPriority(ctx, s.info(heavy)),
                   std::pow(2.0, -(300.0 / 400) / 0.25));
  EXPECT_DOUBLE_EQ(plugins::MultifactorPriority(ctx, s.info(big)),
                   std::pow(2.0, -(100.0 / 400) / 0.5));
}

TEST(MultifactorTest, SizeFavoursLargeUnlessAsked) {
  Fixture f;
  SnapshotBuilder s(f.inv);
  JobId one = s.Pending(JobBuilder("one").Gpus(1));
  JobId eight = s.Pending(JobBuilder("eight").Gpus(8));
  const Snapshot& snap = s.Build();
  PolicyParams p;
  p.weight_age = p.weight_fairshare = p.weight_qos = 0;
  p.weight_size = 800;
  SortContext ctx{snap, kTimeZero, p, 0, 0, 8};
  EXPECT_DOUBLE_EQ(plugins::MultifactorPriority(ctx, s.info(one)), 100);
  EXPECT_DOUBLE_EQ(plugins::MultifactorPriority(ctx, s.info(eight)), 800);
  p.favor_small = true;
  EXPECT_DOUBLE_EQ(plugins::MultifactorPriority(ctx, s.info(one)), 700);
  s.info(one).admin_priority = 123456;
  EXPECT_DOUBLE_EQ(plugins::MultifactorPriority(ctx, s.info(one)), 123456)
      << "an admin's priority replaces the formula";
}

TEST(LasTest, QueuesByAttainedService) {
  Fixture f;
  SnapshotBuilder s(f.inv);
  PolicyParams p;  // boundaries 3,600 and 36,000 GPU-seconds
  struct Case {
    double attained;
    int queue;
  } cases[] = {{0, 0}, {3599, 0}, {3600, 1}, {35999, 1}, {36000, 2}, {1e9, 2}};
  for (const Case& c : cases) {
    JobId id = s.Pending(JobBuilder("j").Gpus(2));
    s.info(id).attained_gpu_s = c.attained;
    const Snapshot& snap = s.Build();
    SortContext ctx{snap, kTimeZero, p, 0, 0, 8};
    EXPECT_EQ(plugins::LasQueue(ctx, s.info(id)), c.queue) << c.attained;
  }
}

TEST(LasTest, StarvationKnobPromotes) {
  Fixture f;
  SnapshotBuilder s(f.inv);
  PolicyParams p;
  p.las_starvation_knob = 2;
  JobId id = s.Pending(JobBuilder("j").Gpus(2));
  JobInfo& j = s.info(id);
  j.attained_gpu_s = 2 * 5000;  // ran 5,000 s on 2 GPUs: queue 1
  j.queued_since = kTimeZero;
  const Snapshot& snap = s.Build();
  SortContext waited_less{snap, kTimeZero + std::chrono::seconds(9999), p, 0, 0, 8};
  SortContext waited_more{snap, kTimeZero + std::chrono::seconds(10000), p, 0, 0, 8};
  EXPECT_EQ(plugins::LasQueue(waited_less, j), 1);
  EXPECT_EQ(plugins::LasQueue(waited_more, j), 0);
}

TEST(OracleTest, RemainingServiceAndSimulationOnly) {
  Fixture f;
  SnapshotBuilder s(f.inv);
  JobId id = s.Pending(JobBuilder("j").Gpus(4));
  s.info(id).oracle_remaining_s = 100;
  const Snapshot& snap = s.Build();
  PolicyParams p;
  SortContext ctx{snap, kTimeZero, p, 0, 0, 8};
  auto oracle = plugins::MakeOracleSort();
  EXPECT_DOUBLE_EQ(oracle->Value(ctx, s.info(id)), 400);
  s.info(id).oracle_remaining_s = -1;
  EXPECT_TRUE(std::isinf(oracle->Value(ctx, s.info(id))));
  auto params = Policy::Preset("oracle");
  ASSERT_TRUE(params.ok());
  auto live = Policy::Create(*params, BuiltinRegistry(), {.simulation = false});
  EXPECT_FALSE(live.ok()) << "the oracle must never be offered for a real cluster";
  EXPECT_TRUE(Policy::Create(*params, BuiltinRegistry(), {.simulation = true}).ok());
}

TEST(PreemptTest, RulesByTable) {
  JobInfo j;
  struct Case {
    const char* plugin;
    JobRank preemptor;
    JobRank victim;
    bool allowed;
  } cases[] = {
      {"class", {0, 0}, {0, 1}, true},   {"class", {0, 1}, {0, 1}, false},
      {"class", {0, 1}, {0, 0}, false},  {"class", {1, 5}, {0, 0}, true},
      {"class", {0, 0}, {1, 9}, false},  {"srtf", {0, 10}, {0, 10.5}, true},
      {"srtf", {0, 10}, {0, 10}, false}, {"tier", {1, 99}, {0, 0}, true},
      {"tier", {0, 0}, {0, 99}, false},
  };
  Registry reg = BuiltinRegistry();
  for (const Case& c : cases) {
    auto plugin = reg.MakePreempt(c.plugin);
    ASSERT_TRUE(plugin.ok());
    EXPECT_EQ((*plugin)->MayPreempt(Snapshot{}, j, c.preemptor, j, c.victim), c.allowed)
        << c.plugin << " " << c.preemptor.tier << "/" << c.preemptor.value << " vs "
        << c.victim.tier << "/" << c.victim.value;
  }
}

TEST(PolicyTest, PresetsAndOverrides) {
  for (const std::string& name : Policy::PresetNames(true)) {
    auto p = Policy::Preset(name);
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_TRUE(Policy::Create(*p, BuiltinRegistry(), {.simulation = true}).ok()) << name;
  }
  auto p = Policy::Preset("backfill:score=fgd:seed=9:las-thresholds=10/20");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->score, "fgd");
  EXPECT_EQ(p->seed, 9u);
  EXPECT_EQ(p->las_thresholds_gpu_s, (std::vector<double>{10, 20}));
  EXPECT_FALSE(Policy::Preset("nope").ok());
  EXPECT_FALSE(Policy::Preset("fifo:colour=blue").ok());
  EXPECT_FALSE(Policy::Preset("fifo:seed").ok());
  auto bad = Policy::Preset("fifo:score=telepathy");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(Policy::Create(*bad, BuiltinRegistry()).ok());
  auto desc = Policy::Preset("las:las-thresholds=20/10");
  EXPECT_FALSE(Policy::Create(*desc, BuiltinRegistry()).ok()) << "thresholds must increase";
}

}  // namespace
}  // namespace shoal::sched
