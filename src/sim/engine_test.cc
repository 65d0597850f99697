// The simulator on small hand-made traces whose outcomes can be worked out by hand.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include "catalog/mig.h"
#include "sched/placement.h"
#include "sched/working_state.h"
#include "sim/inputs.h"
#include "sim/report.h"
#include "sim/sim_testing.h"

namespace shoal::sim {
namespace {

// --mig-shares: GPU-sharing jobs take the smallest slice that covers their
// share, or a whole GPU; then they run there, one job per slice.
TEST(SimReplayTest, SharesRunOnMigSlices) {
  Cluster c = OneNode(2, "H100-SXM-80GB");
  catalog::MigLayouts layouts = {{0, {"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"}}};
  auto split = catalog::PartitionGpus(c.nodes[0].gpus, layouts);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  c.nodes[0].gpus = *split;  // 4 slices of GPU 0, GPU 1 whole
  trace::Trace t;
  for (auto [name, milli] :
       {std::pair{"tiny", 100}, {"small", 150}, {"third", 400}, {"most", 900}, {"whole", 1000}}) {
    t.jobs.push_back(Job(name, 0, 100, 1));
    t.jobs.back().gpu_milli = milli;
  }
  trace::Trace plain;
  EXPECT_FALSE(MapSharesToMigSlices(plain, OneNode()).ok()) << "no slices: an error";
  ASSERT_TRUE(MapSharesToMigSlices(t, c).ok());
  EXPECT_EQ(t.jobs[0].gpu_models, std::vector<std::string>{"H100-SXM-80GB/1g.10gb"});
  EXPECT_EQ(t.jobs[0].gpu_milli, kMilliPerGpu);
  EXPECT_EQ(t.jobs[1].gpu_models, std::vector<std::string>{"H100-SXM-80GB/2g.20gb"})
      << "0.15 is more than a seventh";
  EXPECT_EQ(t.jobs[2].gpu_models, std::vector<std::string>{"H100-SXM-80GB/3g.40gb"});
  EXPECT_TRUE(t.jobs[3].gpu_models.empty()) << "no slice covers 0.9: a whole GPU";
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("1 on H100-SXM-80GB/1g.10gb"), std::string::npos) << t.notes[0];
  EXPECT_NE(t.notes[0].find("1 on whole GPUs"), std::string::npos) << t.notes[0];
  const SimResult r = RunSim(c, t, "fifo");
  EXPECT_EQ(Find(r, "tiny").first_start, TimeFromSeconds(0));
  EXPECT_EQ(Find(r, "small").first_start, TimeFromSeconds(0));
  EXPECT_EQ(Find(r, "third").first_start, TimeFromSeconds(0));
  // "most" and "whole" both want GPU 1: one waits for the other.
  EXPECT_EQ(std::max(Find(r, "most").first_start, Find(r, "whole").first_start),
            TimeFromSeconds(100));
}

TEST(SimReplayTest, FifoByHand) {
  trace::Trace t;
  t.jobs = {Job("a", 0, 100, 8), Job("b", 10, 100, 8), Job("c", 20, 50, 4)};
  SimResult r = RunSim(OneNode(), t, "fifo");
  EXPECT_EQ(ToSeconds(Find(r, "a").end), 100);
  EXPECT_EQ(ToSeconds(Find(r, "b").first_start), 100);
  EXPECT_EQ(ToSeconds(Find(r, "b").end), 200);
  EXPECT_EQ(ToSeconds(Find(r, "c").first_start), 200);  // strict FIFO: waits behind b
  Summary s = Summarize(r);
  EXPECT_EQ(s.completed, 3);
  EXPECT_DOUBLE_EQ(s.jct_s.mean, (100.0 + 190 + 230) / 3);
  EXPECT_DOUBLE_EQ(s.makespan_s, 250);
}

TEST(SimReplayTest, BackfillUsesTimeLimits) {
  // a holds 4 GPUs for 1000 s; b (8 GPUs) must wait for it; c (4 GPUs, 100 s)
  // ends before a does, so it backfills; with strict FIFO it would wait.
  trace::Trace t;
  t.jobs = {Job("a", 0, 1000, 4), Job("b", 10, 100, 8), Job("c", 20, 100, 4)};
  SimOptions exact;
  exact.limits.kind = LimitModel::kExact;
  SimResult bf = RunSim(OneNode(), t, "backfill", exact);
  EXPECT_EQ(ToSeconds(Find(bf, "c").first_start), 20);
  EXPECT_EQ(ToSeconds(Find(bf, "b").first_start), 1000);
  EXPECT_EQ(bf.backfilled, 1);
  SimResult fifo = RunSim(OneNode(), t, "fifo", exact);
  EXPECT_EQ(ToSeconds(Find(fifo, "c").first_start), 1100);
}

TEST(SimReplayTest, LongJobDoesNotDelayReservation) {
  // c would fit next to a but runs past a's end, when b is due: it must wait.
  trace::Trace t;
  t.jobs = {Job("a", 0, 1000, 4), Job("b", 10, 100, 8), Job("c", 20, 5000, 4)};
  SimOptions exact;
  exact.limits.kind = LimitModel::kExact;
  SimResult bf = RunSim(OneNode(), t, "backfill", exact);
  EXPECT_EQ(ToSeconds(Find(bf, "b").first_start), 1000);  // when a ends, not at its limit (1020 s)
  EXPECT_GE(ToSeconds(Find(bf, "c").first_start), ToSeconds(Find(bf, "b").end));
}

TEST(SimReplayTest, LasPreemptsAndChargesRestart) {
  // long holds the node; short arrives and, with less attained service, preempts it.
  trace::Trace t;
  t.jobs = {Job("long", 0, 20000, 8), Job("short", 7200, 600, 8)};
  SimOptions opts;
  opts.restart_cost = std::chrono::seconds(30);
  SimResult r = RunSim(OneNode(), t, "las", opts);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(ToSeconds(Find(r, "short").first_start), 7200);
  EXPECT_EQ(ToSeconds(Find(r, "short").end), 7800);
  // long ran 7200 s, then the rest (12800 s) plus the 30 s restart cost after short.
  EXPECT_EQ(ToSeconds(Find(r, "long").end), 7800 + 30 + 12800);
  EXPECT_EQ(Find(r, "long").restarts, 1);
  // long started at once, then waited in the queue while short ran: that is
  // waiting too, and the report's queueing counts it.
  EXPECT_EQ(ToSeconds(Find(r, "long").first_start), 0);
  EXPECT_EQ(ToSeconds(Find(r, "long").waited), 600);
  EXPECT_EQ(ToSeconds(Find(r, "short").waited), 0);
  EXPECT_DOUBLE_EQ(Summarize(r).queue_s.mean, 300);  // (600 + 0) / 2
}

TEST(SimReplayTest, DemotedJobIsPreemptedBetweenEvents) {
  // waiting arrives while long is still in LAS queue 0 (under 3,600 GPU-s): it
  // cannot preempt at arrival, but can once long crosses the boundary at t=450.
  trace::Trace t;
  t.jobs = {Job("long", 0, 20000, 8), Job("waiting", 100, 100, 8)};
  SimResult r = RunSim(OneNode(), t, "las");
  EXPECT_NEAR(ToSeconds(Find(r, "waiting").first_start), 450, 0.01);
}

TEST(SimReplayTest, HeterogeneousDurationsUseTheSlowestModel) {
  trace::Trace t;
  trace::TraceJob j = Job("j", 0, 100, 1);
  j.duration_by_model = {{"K80", DurationFromSeconds(400)}, {"V100", DurationFromSeconds(100)}};
  t.jobs = {j};
  SimResult r = RunSim(OneNode(8, "K80"), t, "greedy");
  // The time limit covers the slowest model (x2 by default), so the job is not killed.
  EXPECT_EQ(ToSeconds(Find(r, "j").end), 400);
  EXPECT_EQ(Find(r, "j").state, JobState::kCompleted);
}

// A K80 node listed first and a V100 node: agnostic backfill puts the first
// job on the K80 (400 s); the speed-aware policy puts it on the V100 (100 s),
// and the second job, that barely gains there, on the K80 it then has free.
TEST(SimReplayTest, SpeedAwarePolicyRunsEachJobWhereItEndsSoonest) {
  Cluster c = OneNode(1, "K80");
  Cluster v = OneNode(1, "V100");
  v.nodes[0].id = NodeId(2);
  v.nodes[0].name = "n2";
  c.nodes.push_back(v.nodes[0]);
  trace::TraceJob gains = Job("gains", 0, 100, 1);
  gains.duration_by_model = {{"K80", DurationFromSeconds(400)}, {"V100", DurationFromSeconds(100)}};
  trace::TraceJob barely = Job("barely", 1, 100, 1);
  barely.duration_by_model = {{"K80", DurationFromSeconds(110)},
                              {"V100", DurationFromSeconds(100)}};
  trace::Trace t;
  t.jobs = {gains, barely};
  SimResult agnostic = RunSim(c, t, "backfill");
  EXPECT_EQ(ToSeconds(Find(agnostic, "gains").end), 400);
  SimResult aware = RunSim(c, t, "speed");
  EXPECT_EQ(ToSeconds(Find(aware, "gains").end), 100);
  EXPECT_EQ(ToSeconds(Find(aware, "barely").end), 111);
  EXPECT_LT(Summarize(aware).jct_s.mean, Summarize(agnostic).jct_s.mean);
}

TEST(SimReplayTest, PartitionDefaultLimitKillsLongJobs) {
  Cluster c = OneNode();
  Partition p;
  p.name = "short";
  p.is_default = true;
  p.default_time = std::chrono::hours(1);
  c.partitions.push_back(p);
  trace::Trace t;
  t.jobs = {Job("ok", 0, 1800, 1), Job("long", 0, 7200, 1)};
  SimOptions opts;
  opts.limits.kind = LimitModel::kPartitionDefault;
  SimResult r = RunSim(c, t, "backfill", opts);
  EXPECT_EQ(Find(r, "ok").state, JobState::kCompleted);
  EXPECT_EQ(Find(r, "long").state, JobState::kTimeout);
  EXPECT_EQ(ToSeconds(Find(r, "long").end), 3600);
}

TEST(SimReplayTest, SameSeedSameResult) {
  trace::Trace t;
  for (int i = 0; i < 200; ++i)
    t.jobs.push_back(Job("j" + std::to_string(i), i * 7, 50 + (i * 37) % 400, 1 + i % 4));
  SimResult a = RunSim(OneNode(), t, "random:seed=3");
  SimResult b = RunSim(OneNode(), t, "random:seed=3");
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i)
    EXPECT_EQ(a.jobs[i].end, b.jobs[i].end);
}

// Passes that end once nothing more can start (and explain nothing) give
// the same replay as passes that explain every pending job, on a queue that
// stays hundreds deep, with gangs, GPU shares and CPU-only jobs; and with
// whole-GPU jobs only, where passes on a full cluster end before ranking.
TEST(SimReplayTest, QuietPassesReplayAsExplainedOnes) {
  Cluster c = Nodes(3);
  for (bool whole_gpus_only : {false, true}) {
    const trace::Trace t = MixedQueue(600, whole_gpus_only);
    for (const char* policy : {"fifo", "backfill", "multifactor", "las", "gittins", "greedy"}) {
      const std::string what = std::string(policy) + (whole_gpus_only ? ", whole GPUs" : "");
      SimOptions explained;
      explained.explain_every = 1;
      SimResult a = RunSim(c, t, policy, explained);
      SimResult b = RunSim(c, t, policy);
      ASSERT_EQ(a.jobs.size(), b.jobs.size()) << what;
      double waited = 0;
      for (size_t i = 0; i < a.jobs.size(); ++i) {
        EXPECT_EQ(a.jobs[i].first_start, b.jobs[i].first_start) << what << " " << a.jobs[i].name;
        EXPECT_EQ(a.jobs[i].end, b.jobs[i].end) << what << " " << a.jobs[i].name;
        EXPECT_EQ(a.jobs[i].restarts, b.jobs[i].restarts) << what << " " << a.jobs[i].name;
        waited += ToSeconds(a.jobs[i].waited);
      }
      EXPECT_EQ(a.preemptions, b.preemptions) << what;
      EXPECT_GT(waited / static_cast<double>(a.jobs.size()), 3600) << what << ": the queue is deep";
    }
  }
}

TEST(SimReplayTest, RejectsJobsThatCanNeverRun) {
  trace::Trace t;
  t.jobs = {Job("huge", 0, 10, 64)};
  auto params = sched::Policy::Preset("fifo");
  auto r = Simulate(OneNode(), t, *params, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("huge"), std::string::npos);
}

// A score plugin with a bug: it always hands out GPU 0.
class BrokenScore final : public sched::ScorePlugin {
 public:
  std::string_view Name() const override { return "broken"; }
  sched::CandidateScan Scan() const override { return sched::CandidateScan::kFirstFit; }
  sched::NodeChoice Evaluate(const sched::WorkingState&, sched::NodeIndex, const sched::NodeDemand&,
                             sched::ScorePass*, Rng&) const override {
    return {1, 0};
  }
};

TEST(SimInvariantsTest, ABrokenPluginIsCaughtWithTheSeed) {
  trace::Trace t;
  t.jobs = {Job("a", 0, 100, 1), Job("b", 0, 100, 1)};
  sched::Registry reg = sched::BuiltinRegistry();
  reg.AddScore("broken", [] { return std::make_shared<BrokenScore>(); });
  auto params = sched::Policy::Preset("greedy:score=broken");
  SimOptions opts;
  opts.registry = &reg;
  opts.seed = 77;
  auto r = Simulate(OneNode(), t, *params, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("given twice"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("--seed 77"), std::string::npos) << r.status().message();
}

TEST(SimFillTest, SharesFillTheClusterInSeedOrder) {
  trace::Trace t;
  for (int i = 0; i < 40; ++i) {
    trace::TraceJob j;
    j.name = "p" + std::to_string(i);
    j.gpus_per_node = 1;
    j.nodes = 1;
    j.gpu_milli = i % 2 == 0 ? 500 : 1000;
    j.cpu_milli = 1000;
    t.jobs.push_back(j);
  }
  SimOptions opts;
  opts.mode = Mode::kFill;
  opts.seed = 5;
  SimResult r = RunSim(OneNode(), t, "fgd", opts);
  ASSERT_FALSE(r.fill.empty());
  double last_arrived = 0;
  for (const FillPoint& p : r.fill) {
    EXPECT_GE(p.arrived, last_arrived);
    EXPECT_LE(p.allocated, std::min(1.0, p.arrived) + 1e-9);
    last_arrived = p.arrived;
  }
  EXPECT_LE(r.fill.back().arrived, 1.3 + 1e-9);
  EXPECT_GT(r.fill.back().arrived, 1.0);
  Summary s = Summarize(r);
  EXPECT_GT(s.allocation_at_full, 0.5);
  SimResult again = RunSim(OneNode(), t, "fgd", opts);
  ASSERT_EQ(again.fill.size(), r.fill.size());
  for (size_t i = 0; i < r.fill.size(); ++i)
    EXPECT_DOUBLE_EQ(again.fill[i].allocated, r.fill[i].allocated);
}

TEST(ReportTest, DescribeUsesNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i)
    v.push_back(i);
  Stat s = Describe(v);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.median, 50.5);
  EXPECT_DOUBLE_EQ(s.p99, 99);
  EXPECT_EQ(Describe({}).count, 0);
}

TEST(ReportTest, RendersEveryFormat) {
  trace::Trace t;
  t.jobs = {Job("a", 0, 100, 8), Job("b", 10, 100, 8)};
  t.jobs[0].account = "x";
  t.jobs[1].account = "y";
  std::vector<SimResult> rs = {RunSim(OneNode(), t, "fifo"), RunSim(OneNode(), t, "backfill")};
  ReportContext ctx{"one", "inline", 8, 1, "x2", 1};
  const std::string table = RenderTable(ctx, rs);
  EXPECT_NE(table.find("JCT mean"), std::string::npos);
  EXPECT_NE(table.find("backfill"), std::string::npos);
  EXPECT_NE(table.find("fairness"), std::string::npos);
  const std::string json = RenderJson(ctx, rs);
  EXPECT_NE(json.find("\"jct_s\""), std::string::npos);
  const std::string csv = RenderCsv(ctx, rs);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(Sparkline({0, 1}, 2), " █");
}

// Fill mode's dropped tasks: tasks and GPUs side by side, each labelled.
TEST(ReportTest, FillModeLabelsTasksAndGpus) {
  SimResult r;
  r.policy = "fgd";
  r.mode = Mode::kFill;
  r.fill = {
      {.arrived = 1.0, .allocated = 0.9, .fragmented = 0.1, .arrived_tasks = 5, .failed_tasks = 3}};
  r.dropped_at_full = {{"1 GPU", 2, 2.0}, {"8 GPUs", 1, 8.0}};
  const std::string table = RenderTable(ReportContext{"one", "inline", 8, 1, "", 1}, {r});
  EXPECT_NE(table.find("dropped by 100%: tasks/GPUs"), std::string::npos) << table;
  EXPECT_NE(table.find("3 / 10"), std::string::npos) << table;
  EXPECT_NE(table.find("1 / 8"), std::string::npos) << table;
  EXPECT_NE(table.find("2 / 2"), std::string::npos) << table;
}

}  // namespace
}  // namespace shoal::sim
