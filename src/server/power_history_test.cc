// What jobs drew per GPU, learnt from their ends (server/power_history.h).
#include "server/power_history.h"

#include <gtest/gtest.h>

#include "server/controller_testing.h"

namespace shoal::server {
namespace {

using testing::kAdmin;
using testing::kAlice;
using testing::kNodeAgent;
using testing::MakeNode;
using testing::Spec;

Job Ended(const std::string& user, const std::string& name, double gpu_s, double energy_wh) {
  Job j;
  j.spec.user = user;
  j.spec.name = name;
  j.gpu_seconds = gpu_s;
  j.efficiency.energy_wh = energy_wh;
  return j;
}

TEST(PowerHistoryTest, ARunsMeanDrawIsItsEnergyOverItsGpuSeconds) {
  PowerHistory h;
  JobSpec train;
  train.user = "ada";
  train.name = "train";
  EXPECT_EQ(h.Expected(train), 0);                     // nothing known: the rated power
  h.Record(Ended("ada", "train", 8 * 3600, 8 * 400));  // 8 GPUs for an hour at 400 W
  EXPECT_DOUBLE_EQ(h.Expected(train), 400);
  h.Record(Ended("ada", "train", 3600, 200));  // the newest run weighs half
  EXPECT_DOUBLE_EQ(h.Expected(train), 300);
  JobSpec other = train;
  other.user = "bob";  // another user's job of the same name is not the same kind
  EXPECT_EQ(h.Expected(other), 0);
}

TEST(PowerHistoryTest, ACapBoundsTheEstimateAndStandsInForMissingHistory) {
  PowerHistory h;
  h.Record(Ended("ada", "train", 3600, 500));
  JobSpec capped;
  capped.user = "ada";
  capped.name = "train";
  capped.gpu_power_cap_w = 350;
  EXPECT_DOUBLE_EQ(h.Expected(capped), 350);
  capped.name = "new";
  EXPECT_DOUBLE_EQ(h.Expected(capped), 350);
}

TEST(PowerHistoryTest, ShortRunsAndRunsWithoutEnergySayNothing) {
  PowerHistory h;
  h.Record(Ended("ada", "quick", PowerHistory::kMinGpuSeconds / 2, 10));
  h.Record(Ended("ada", "blind", 3600, 0));
  EXPECT_EQ(h.size(), 0u);
}

TEST(PowerHistoryTest, KeepsABoundedNumberOfKindsAndForgetsTheOldestFirst) {
  PowerHistory h;
  for (size_t i = 0; i < PowerHistory::kMaxEntries + 10; ++i)
    h.Record(Ended("u", "job" + std::to_string(i), 3600, 300));
  EXPECT_EQ(h.size(), PowerHistory::kMaxEntries);
  JobSpec first;
  first.user = "u";
  first.name = "job0";
  EXPECT_EQ(h.Expected(first), 0);
  first.name = "job" + std::to_string(PowerHistory::kMaxEntries + 9);
  EXPECT_DOUBLE_EQ(h.Expected(first), 300);
}

// The controller with a site budget of one node idle plus one 4-GPU job at
// rated power (700 W GPUs, 70 W idle): a second such job waits for power, a
// job whose kind drew 100 W a GPU before fits, and the budget's count shows
// it. Seeded as the server seeds it from the store at start.
class ControllerPowerTest : public testing::ControllerFixture {};

TEST_F(ControllerPowerTest, ABudgetHoldsJobsBackAndKnowsWhatTheirKindDraws) {
  ControllerConfig cfg = Config();
  cfg.power_budgets.push_back({"site", "", 8 * 70 + 4 * 630 + 200});
  Controller c(cfg);
  ASSERT_TRUE(c.UsesPowerHistory());
  c.SeedPowerHistory({Ended("alice", "train", 4 * 3600, 4 * 100)});
  Node n = MakeNode("n1", 8);
  for (Gpu& g : n.gpus)
    g.rated_w = 700;
  ASSERT_TRUE(c.RegisterNode(kNodeAgent, n, At(0)).ok());
  auto submit = [&](const std::string& name) {
    JobSpec s = Spec(4);
    s.name = name;
    auto r = c.Submit(kAlice, s, At(0));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return JobId((*r)["jobs"][0].get<uint64_t>());
  };
  const JobId first = submit("eval");
  const JobId second = submit("eval");
  const JobId known = submit("train");
  c.SchedulePass(At(1));
  EXPECT_EQ((*c.ShowJob(kAdmin, first))["state"], "running");
  const api::Json waits = *c.ShowJob(kAdmin, second);
  EXPECT_EQ(waits["reason"], "power_budget");
  EXPECT_EQ(waits["expected_gpu_power_w"], 0);  // no history: the rated power
  const api::Json fits = *c.ShowJob(kAdmin, known);
  EXPECT_EQ(fits["state"], "running") << fits.dump();  // it adds 4 x (100 - 70) W
  EXPECT_EQ(fits["expected_gpu_power_w"], 100);
  const MetricsView v = c.Metrics();
  ASSERT_EQ(v.power_budgets.size(), 1u);
  EXPECT_DOUBLE_EQ(v.power_budgets[0].expected_w, 8 * 70 + 4 * 630 + 4 * 30);
  EXPECT_FALSE(c_.ShowJob(kAdmin, Submit(kAlice, Spec(1)))->contains("expected_gpu_power_w"));
}

}  // namespace
}  // namespace shoal::server
