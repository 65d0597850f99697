#include "sched/gittins.h"

#include <algorithm>
#include <cmath>

namespace shoal::sched {

double GittinsTable::Compute(const std::vector<double>& s, const std::vector<double>& prefix,
                             double a) {
  // Samples above a: s[first..n). Candidate quanta end at each sample value.
  const size_t n = s.size();
  const size_t first = static_cast<size_t>(std::upper_bound(s.begin(), s.end(), a) - s.begin());
  if (first >= n) return 0;
  const double alive = static_cast<double>(n - first);
  double best = 0;
  for (size_t j = first; j < n; ++j) {
    if (j + 1 < n && s[j + 1] == s[j]) continue;  // end the quantum after equal samples
    const double d = s[j] - a;
    const double finished = static_cast<double>(j + 1 - first);
    // Service: the finished pay their own (S - a), the rest pay the whole quantum.
    const double cost = (prefix[j + 1] - prefix[first]) - finished * a + (alive - finished) * d;
    if (cost > 0) best = std::max(best, finished / cost);
  }
  return best;
}

GittinsTable::GittinsTable(const std::vector<double>& sorted) {
  if (sorted.size() < kMinHistory) return;
  std::vector<double> prefix(sorted.size() + 1, 0);
  for (size_t i = 0; i < sorted.size(); ++i)
    prefix[i + 1] = prefix[i] + sorted[i];
  const double top = std::max(1.0, sorted.back());
  // 0, then log-spaced from 1 GPU-second to the largest sample.
  constexpr int kPoints = 256;
  grid_.push_back(0);
  for (int i = 0; i <= kPoints; ++i)
    grid_.push_back(std::pow(top, static_cast<double>(i) / kPoints));
  for (double a : grid_)
    index_.push_back(Compute(sorted, prefix, a));
}

double GittinsTable::Index(double attained) const {
  if (grid_.empty()) return 0;
  auto it = std::upper_bound(grid_.begin(), grid_.end(), attained);
  const size_t i = it == grid_.begin() ? 0 : static_cast<size_t>(it - grid_.begin()) - 1;
  return index_[i];
}

void ServiceHistory::Record(double gpu_s) {
  if (service_.size() < kWindow) {
    service_.push_back(gpu_s);
  } else {
    service_[next_] = gpu_s;
  }
  next_ = (next_ + 1) % kWindow;
  if (++since_rebuild_ < kRebuildEvery && table_ != nullptr) return;
  Rebuild();
}

void ServiceHistory::Rebuild() {
  since_rebuild_ = 0;
  std::vector<double> sorted = service_;
  std::sort(sorted.begin(), sorted.end());
  table_ = std::make_shared<const GittinsTable>(sorted);
}

}  // namespace shoal::sched
