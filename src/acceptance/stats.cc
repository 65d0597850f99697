#include "acceptance/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace shoal::acceptance {

Stats Summarize(std::span<const double> values) {
  Stats s;
  if (values.empty()) return s;
  s.count = static_cast<int>(values.size());
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min = *lo;
  s.max = *hi;
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.median = Median(values);
  if (values.size() > 1) {
    double sq = 0;
    for (double v : values)
      sq += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(values.size() - 1));
  }
  return s;
}

double Median(std::span<const double> values) {
  if (values.empty()) return 0;
  std::vector<double> v(values.begin(), values.end());
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double MedianAbsoluteDeviation(std::span<const double> values) {
  const double m = Median(values);
  std::vector<double> dev;
  dev.reserve(values.size());
  for (double v : values)
    dev.push_back(std::fabs(v - m));
  return Median(dev);
}

}  // namespace shoal::acceptance
