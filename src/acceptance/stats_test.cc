#include "acceptance/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace shoal::acceptance {
namespace {

TEST(StatsTest, Summaries) {
  struct Row {
    std::vector<double> values;
    Stats want;
  };
  const Row rows[] = {
      {{}, {}},
      {{5}, {1, 5, 5, 5, 5, 0}},
      {{3, 1, 2}, {3, 1, 3, 2, 2, 1}},
      {{4, 1, 3, 2}, {4, 1, 4, 2.5, 2.5, std::sqrt(5.0 / 3)}},
      {{10, 10, 10, 40}, {4, 10, 40, 17.5, 10, 15}},
  };
  for (const Row& r : rows) {
    const Stats s = Summarize(r.values);
    EXPECT_EQ(s.count, r.want.count);
    EXPECT_DOUBLE_EQ(s.min, r.want.min);
    EXPECT_DOUBLE_EQ(s.max, r.want.max);
    EXPECT_DOUBLE_EQ(s.mean, r.want.mean);
    EXPECT_DOUBLE_EQ(s.median, r.want.median);
    EXPECT_NEAR(s.stddev, r.want.stddev, 1e-12);
  }
}

TEST(StatsTest, MedianAbsoluteDeviation) {
  EXPECT_DOUBLE_EQ(MedianAbsoluteDeviation(std::vector<double>{1, 1, 2, 2, 4, 6, 9}), 1);
  EXPECT_DOUBLE_EQ(MedianAbsoluteDeviation(std::vector<double>{7, 7, 7}), 0);
  EXPECT_DOUBLE_EQ(MedianAbsoluteDeviation(std::vector<double>{}), 0);
  // One wild value moves neither the median nor the MAD much.
  EXPECT_DOUBLE_EQ(Median(std::vector<double>{10, 11, 12, 1000}), 11.5);
}

}  // namespace
}  // namespace shoal::acceptance
