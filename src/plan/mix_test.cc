#include "plan/mix.h"

#include <gtest/gtest.h>

namespace shoal::plan {
namespace {

std::vector<std::vector<int64_t>> Counts(const std::vector<Mix>& mixes) {
  std::vector<std::vector<int64_t>> out;
  for (const Mix& m : mixes)
    out.push_back(m.gpus);
  return out;
}

TEST(MixTest, AFixedTotalIsEveryCompositionInSteps) {
  const std::vector<MixModel> models = {{"V100", 0}, {"K80", 0}};
  auto mixes = EnumerateMixes(models, {.total_gpus = 16, .step = 8});
  ASSERT_TRUE(mixes.ok()) << mixes.status().ToString();
  EXPECT_EQ(Counts(*mixes), (std::vector<std::vector<int64_t>>{{0, 16}, {8, 8}, {16, 0}}));
  EXPECT_EQ((*mixes)[1].Describe(models), "V100 8, K80 8");
}

// With a budget, only the mixes to which no further step fits: 10 buys one
// step of V100 (6) and one of K80 (2) with 2 left, which buys one more K80.
TEST(MixTest, ABudgetGivesTheMixesItFillsAndTheirCost) {
  const std::vector<MixModel> models = {{"V100", 6.0 / 8}, {"K80", 2.0 / 8}};
  auto mixes = EnumerateMixes(models, {.budget = 10, .step = 8});
  ASSERT_TRUE(mixes.ok()) << mixes.status().ToString();
  EXPECT_EQ(Counts(*mixes), (std::vector<std::vector<int64_t>>{{0, 40}, {8, 16}}));
  EXPECT_DOUBLE_EQ((*mixes)[1].cost, 10);
  for (const Mix& m : *mixes)
    EXPECT_LE(m.cost, 10);
}

TEST(MixTest, RefusesWhatCannotBeAnswered) {
  const std::vector<MixModel> priced = {{"V100", 1}, {"K80", 1}};
  EXPECT_FALSE(EnumerateMixes({}, {.total_gpus = 8}).ok());
  EXPECT_FALSE(EnumerateMixes(priced, {.total_gpus = 8, .budget = 8}).ok()) << "both";
  EXPECT_FALSE(EnumerateMixes(priced, {}).ok()) << "neither";
  EXPECT_FALSE(EnumerateMixes(priced, {.total_gpus = 12, .step = 8}).ok()) << "not in steps";
  EXPECT_FALSE(EnumerateMixes({{"V100", 0}}, {.budget = 100}).ok()) << "a budget needs prices";
  EXPECT_FALSE(EnumerateMixes(priced, {.budget = 4, .step = 8}).ok()) << "not one step";
  auto many = EnumerateMixes(priced, {.total_gpus = 800, .step = 1, .max_mixes = 200});
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("coarser step"), std::string::npos);
}

}  // namespace
}  // namespace shoal::plan
