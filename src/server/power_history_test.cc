// What jobs drew per GPU, learnt from their ends (server/power_history.h).
#include "server/power_history.h"

#include <gtest/gtest.h>

namespace shoal::server {
namespace {

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

}  // namespace
}  // namespace shoal::server
