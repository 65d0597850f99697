#include "acceptance/outliers.h"

#include <gtest/gtest.h>

namespace shoal::acceptance {
namespace {

TEST(OutliersTest, Table) {
  struct Row {
    std::string_view what;
    std::vector<double> values;
    bool higher_is_better;
    std::vector<bool> want;
  };
  const Row rows[] = {
      {"eight GEMM figures within 1%",
       {770, 772, 768, 771, 769, 773, 770, 771},
       true,
       {false, false, false, false, false, false, false, false}},
      {"one GPU 15% slow",
       {770, 772, 768, 655, 769, 773, 770, 771},
       true,
       {false, false, false, true, false, false, false, false}},
      {"a fast GPU is not an outlier",
       {770, 772, 768, 900, 769},
       true,
       {false, false, false, false, false}},
      {"a slow link among latencies",
       {2.1, 2.0, 2.2, 2.1, 3.5, 2.0},
       false,
       {false, false, false, false, true, false}},
      {"a low latency is fine",
       {2.1, 2.0, 2.2, 2.1, 1.0, 2.0},
       false,
       {false, false, false, false, false, false}},
      {"noisy figures flag only the far one",
       {100, 80, 120, 95, 105, 110, 90, 20},
       true,
       {false, false, false, false, false, false, false, true}},
      {"two values are too few to judge", {100, 50}, true, {false, false}},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    EXPECT_EQ(FlagOutliers(r.values, r.higher_is_better), r.want);
  }
}

TEST(OutliersTest, ThresholdIsConfigurable) {
  const std::vector<double> values = {100, 100, 100, 95};
  EXPECT_EQ(FlagOutliers(values, true), (std::vector<bool>{false, false, false, false}));
  OutlierOptions strict;
  strict.min_relative = 0.02;
  EXPECT_EQ(FlagOutliers(values, true, strict), (std::vector<bool>{false, false, false, true}));
}

}  // namespace
}  // namespace shoal::acceptance
