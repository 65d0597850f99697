// The simulator on the public traces shipped in data/traces:
// orderings that the literature and our benchmarks agree on, so a regression
// in the scheduler shows up as a test failure, not only as a worse figure.
#include <gtest/gtest.h>

#include "sim/engine.h"
#include "sim/report.h"
#include "trace/clusters.h"
#include "trace/trace.h"

namespace shoal::sim {
namespace {

std::string ShippedTrace(const std::string& rel) {
  return std::string(SHOAL_DATA_DIR) + "/traces/" + rel;
}

double Figure(const Cluster& c, const trace::Trace& t, const std::string& policy, SimOptions opts) {
  auto params = sched::Policy::Preset(policy);
  auto r = Simulate(c, t, *params, opts);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return 0;
  Summary s = Summarize(*r);
  return opts.mode == Mode::kFill ? s.allocation_at_full : s.jct_s.mean;
}

TEST(PublicTracesTest, OpenbFillOrdersFgdOverBestFitOverRandom) {
  auto t = trace::LoadTrace(ShippedTrace("alibaba-gpu-v2023-openb/openb_pod_list_default.csv"));
  ASSERT_TRUE(t.ok() && t->cluster) << (t.ok() ? "no nodes" : t.status().ToString());
  SimOptions opts;
  opts.mode = Mode::kFill;
  opts.seed = 42;
  const double fgd = Figure(*t->cluster, *t, "fgd", opts);
  const double best_fit = Figure(*t->cluster, *t, "best-fit", opts);
  const double random = Figure(*t->cluster, *t, "random", opts);
  // Published (Weng et al., ATC'23): FGD 95.2 %, best-fit 92.9 %, random 86.3 %.
  EXPECT_GT(fgd, best_fit + 0.01);
  EXPECT_GT(best_fit, random + 0.04);
  EXPECT_GT(fgd, 0.94);
}

TEST(PublicTracesTest, ItpOracleBeatsLasBeatsFifo) {
  auto t = trace::LoadTrace(ShippedTrace("microsoft-itp-2021/raw/cluster02.csv"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto c =
      trace::LoadCluster(std::string(SHOAL_SOURCE_DIR) + "/examples/clusters/itp-16x8-a100.toml");
  ASSERT_TRUE(c.ok());
  SimOptions opts;
  const double fifo = Figure(*c, *t, "fifo", opts);
  const double backfill = Figure(*c, *t, "backfill", opts);
  const double las = Figure(*c, *t, "las", opts);
  const double gittins = Figure(*c, *t, "gittins", opts);
  const double oracle = Figure(*c, *t, "oracle", opts);
  EXPECT_LT(backfill, fifo);
  EXPECT_LT(las, backfill);
  EXPECT_LT(gittins, las);
  EXPECT_LT(oracle, gittins);
  EXPECT_LT(gittins, 1.5 * oracle);
}

}  // namespace
}  // namespace shoal::sim
