#include "server/power_history.h"

#include <algorithm>

namespace shoal::server {

std::string PowerHistory::Key(const JobSpec& spec) {
  std::string key = spec.user;
  key += '\n';
  key += spec.name;
  return key;
}

void PowerHistory::Record(const Job& job) {
  if (job.gpu_seconds < kMinGpuSeconds || !(job.efficiency.energy_wh > 0)) return;
  const double watts = job.efficiency.energy_wh * 3600 / job.gpu_seconds;
  std::string key = Key(job.spec);
  auto [it, added] = watts_.try_emplace(key, watts);
  if (!added) {
    it->second = (it->second + watts) / 2;
    return;
  }
  order_.push_back(std::move(key));
  while (watts_.size() > kMaxEntries && oldest_ < order_.size()) {
    watts_.erase(order_[oldest_]);
    order_[oldest_++].clear();
  }
  if (oldest_ > kMaxEntries) {  // drop the evicted keys' slots now and then
    order_.erase(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(oldest_));
    oldest_ = 0;
  }
}

double PowerHistory::Expected(const JobSpec& spec) const {
  const double cap = spec.gpu_power_cap_w;
  auto it = watts_.find(Key(spec));
  if (it == watts_.end()) return cap;
  return cap > 0 ? std::min(it->second, cap) : it->second;
}

void PowerHistory::Seed(const std::vector<Job>& finished) {
  for (auto it = finished.rbegin(); it != finished.rend(); ++it)
    Record(*it);
}

}  // namespace shoal::server
