// Summary statistics of timed repetitions, and the robust centre and spread
// that outlier flagging uses (a median is not moved by the one slow GPU it is
// meant to find; a mean is).
#pragma once

#include <span>
#include <vector>

namespace shoal::acceptance {

struct Stats {
  int count = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  double median = 0;
  double stddev = 0;  // sample standard deviation; 0 for fewer than two values

  friend bool operator==(const Stats&, const Stats&) = default;
};

// All zeros for no values.
Stats Summarize(std::span<const double> values);

// The middle value (the mean of the two middle ones for an even count); 0 for none.
double Median(std::span<const double> values);

// Median of |x - median|; 0 for none.
double MedianAbsoluteDeviation(std::span<const double> values);

}  // namespace shoal::acceptance
