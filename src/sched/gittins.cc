#include "sched/gittins.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  for (double a : grid_) {
    index_.push_back(Compute(sorted, prefix, a));
    class_.push_back(static_cast<int>(std::floor(GittinsValue(index_.back()))));
  }
  const size_t n = grid_.size();
  run_end_.assign(n, n);
  for (size_t i = n - 1; i-- > 0;)
    run_end_[i] = class_[i + 1] != class_[i] ? i + 1 : run_end_[i + 1];
  classes_ = class_;
  std::sort(classes_.begin(), classes_.end());
  classes_.erase(std::unique(classes_.begin(), classes_.end()), classes_.end());
  for (int c : classes_) {
    std::vector<size_t> next(n + 1, n);
    for (size_t i = n; i-- > 0;)
      next[i] = class_[i] >= c ? i : next[i + 1];
    next_at_least_.push_back(std::move(next));
  }
}

double GittinsValue(double index) {
  if (index <= 0) return 64.0;
  return std::clamp(-std::log2(index), -63.0, 63.0);
}

size_t GittinsTable::PointAt(double attained) const {
  auto it = std::upper_bound(grid_.begin(), grid_.end(), attained);
  return it == grid_.begin() ? 0 : static_cast<size_t>(it - grid_.begin()) - 1;
}

double GittinsTable::NextClassChange(double attained, double above) const {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  if (grid_.empty()) return kNever;
  const size_t at = PointAt(attained);
  size_t next = 0;
  if (above < class_[at]) {
    next = run_end_[at];
  } else {
    // The first class that occurs above `above`, and the first point of it or higher.
    auto c = std::upper_bound(classes_.begin(), classes_.end(), above);
    if (c == classes_.end()) return kNever;
    next = next_at_least_[static_cast<size_t>(c - classes_.begin())][at + 1];
  }
  return next < grid_.size() ? grid_[next] : kNever;
}

double GittinsTable::Index(double attained) const {
  if (grid_.empty()) return 0;
  return index_[PointAt(attained)];
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
