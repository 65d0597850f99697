#include "acceptance/outliers.h"

#include <algorithm>
#include <cmath>

#include "acceptance/stats.h"

namespace shoal::acceptance {

std::vector<bool> FlagOutliers(std::span<const double> values, bool higher_is_better,
                               const OutlierOptions& options) {
  std::vector<bool> flags(values.size(), false);
  if (static_cast<int>(values.size()) < std::max(options.min_group, 2)) return flags;
  const double median = Median(values);
  // 1.4826 x MAD estimates the standard deviation of normally distributed data.
  const double spread = 1.4826 * MedianAbsoluteDeviation(values);
  const double threshold =
      std::max(options.min_relative * std::fabs(median), options.mad_k * spread);
  for (size_t i = 0; i < values.size(); ++i) {
    const double worse_by = higher_is_better ? median - values[i] : values[i] - median;
    flags[i] = worse_by > threshold;
  }
  return flags;
}

}  // namespace shoal::acceptance
