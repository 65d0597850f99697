#include "sched/speed.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace shoal::sched {

double SpeedWork(const std::vector<double>& speed, uint64_t mask, Duration limit) {
  double slowest = std::numeric_limits<double>::infinity();
  for (size_t m = 0; m < speed.size() && m < 64; ++m) {
    if ((mask >> m & 1) != 0 && speed[m] > 0) slowest = std::min(slowest, speed[m]);
  }
  return slowest == std::numeric_limits<double>::infinity() ? 0 : ToSeconds(limit) * slowest;
}

Duration RunTimeOn(const std::vector<double>& speed, int model, double work) {
  return DurationFromSeconds(work / speed[static_cast<size_t>(model)]);
}

int AllocationModel(const Inventory& inv, const Allocation& a) {
  for (const NodeAllocation& na : a.nodes) {
    auto n = inv.IndexOf(na.node);
    if (!n || na.gpu_mask == 0) continue;
    return inv.node(*n).gpu_model[static_cast<size_t>(std::countr_zero(na.gpu_mask))];
  }
  return -1;
}

ModelTimeline::ModelTimeline(const Inventory& inv, Time now)
    : now_(now), models_(inv.models().size()) {
  for (const InvNode& n : inv.nodes()) {
    for (uint8_t m : n.gpu_model)
      ++models_[m].total;
  }
}

void ModelTimeline::AddRelease(int model, Time end, int gpus) {
  if (model < 0 || static_cast<size_t>(model) >= models_.size() || gpus <= 0) return;
  // Kept in time order as they come: a pass queues a job after each FreeAt.
  std::vector<std::pair<Time, int>>& releases = models_[static_cast<size_t>(model)].releases;
  const std::pair<Time, int> release(std::max(end, now_), gpus);
  releases.insert(std::upper_bound(releases.begin(), releases.end(), release), release);
}

void ModelTimeline::Queue(int model, int gpus, Time end) {
  if (model < 0 || static_cast<size_t>(model) >= models_.size()) return;
  models_[static_cast<size_t>(model)].queued += gpus;
  AddRelease(model, end, gpus);
}

Time ModelTimeline::FreeAt(int model, int gpus) const {
  if (model < 0 || static_cast<size_t>(model) >= models_.size()) return kTimeNever;
  const PerModel& pm = models_[static_cast<size_t>(model)];
  if (gpus > pm.total) return kTimeNever;
  const int need = pm.queued + gpus;
  int freed = 0;
  for (const auto& [at, n] : pm.releases) {
    freed += n;
    if (freed >= need) return at;
  }
  return kTimeNever;
}

}  // namespace shoal::sched
