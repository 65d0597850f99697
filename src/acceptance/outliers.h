// Outliers among identical GPUs: a GPU that passes its expectation but runs
// well below its siblings is worth a look before it fails. Judged against
// the group's median, which the outlier itself cannot drag along.
//
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <vector>

namespace shoal::acceptance {

struct OutlierOptions {
  // A value is an outlier when it is worse than the median by more than
  // max(min_relative x |median|, mad_k x 1.4826 x MAD): the first keeps
  // tight groups (eight GEMM figures within 1%) from flagging noise, the
  // second keeps noisy figures (latencies) from flagging their spread.
  double min_relative = 0.08;
  double mad_k = 4.0;
  int min_group = 3;  // fewer values than this: nothing is flagged
};

// One flag per value; `higher_is_better` says which side is worse.
std::vector<bool> FlagOutliers(std::span<const double> values, bool higher_is_better,
                               const OutlierOptions& options = {});

}  // namespace shoal::acceptance
