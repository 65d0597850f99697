#include "sched/speed.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <tuple>

#include "core/cluster.h"

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

Duration ExpectedRunTime(const JobInfo& j, int model) {
  if (!j.model_speed || model < 0 || static_cast<size_t>(model) >= j.model_speed->size() ||
      (*j.model_speed)[static_cast<size_t>(model)] <= 0) {
    return j.request.time_limit;
  }
  return RunTimeOn(*j.model_speed, model,
                   SpeedWork(*j.model_speed, j.request.model_mask, j.request.time_limit));
}

uint64_t RunnableModels(const std::vector<double>& speed) {
  uint64_t runs = 0;
  for (size_t m = 0; m < speed.size() && m < 64; ++m) {
    if (speed[m] > 0) runs |= uint64_t{1} << m;
  }
  return runs;
}

std::shared_ptr<const std::vector<double>> SpeedsByName(
    const std::vector<std::string>& models,
    const std::vector<std::pair<std::string, double>>& named) {
  auto speed = std::make_shared<std::vector<double>>(models.size(), 0.0);
  for (size_t m = 0; m < models.size(); ++m) {
    for (const auto& [name, s] : named) {
      if (GpuModelMatches(name, models[m])) {
        (*speed)[m] = s;
        break;
      }
    }
  }
  return speed;
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

void ModelTimeline::AddRunning(const Inventory& inv, const JobInfo& r) {
  if (r.allocation == nullptr) return;
  const int model = AllocationModel(inv, *r.allocation);
  AddRelease(model, r.model_speed ? r.start + ExpectedRunTime(r, model) : r.expected_end,
             r.allocation->TotalGpus());
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

ModelChoice ChooseModel(const std::vector<double>& speed, const Request& req, Time now,
                        double slack, const ModelTimeline& timeline,
                        const std::function<std::optional<Allocation>(int model)>& fits) {
  ModelChoice c;
  const double work = SpeedWork(speed, req.model_mask, req.time_limit);
  if (work <= 0) return c;
  Time soonest = kTimeNever;
  for (size_t m = 0; m < speed.size() && m < 64; ++m) {
    if (speed[m] <= 0 || (req.model_mask >> m & 1) == 0) continue;
    ModelOption o{static_cast<int>(m), kTimeNever, fits(static_cast<int>(m))};
    const Time start = o.now ? now : timeline.FreeAt(o.model, req.total_gpus);
    if (start == kTimeNever) continue;
    o.finish = start + RunTimeOn(speed, o.model, work);
    soonest = std::min(soonest, o.finish);
    c.options.push_back(std::move(o));
  }
  if (c.options.empty()) return c;
  const Time good_enough =
      std::max(soonest, now + DurationFromSeconds(ToSeconds(soonest - now) * (1 + slack)));
  const auto rank = [&](const ModelOption& x) {
    return std::tuple(speed[static_cast<size_t>(x.model)], !x.now, x.finish);
  };
  for (int i = 0; i < static_cast<int>(c.options.size()); ++i) {
    const ModelOption& o = c.options[static_cast<size_t>(i)];
    if (o.now && (c.best_now < 0 || o.finish < c.options[static_cast<size_t>(c.best_now)].finish))
      c.best_now = i;
    if (o.finish <= good_enough &&
        (c.best < 0 || rank(o) < rank(c.options[static_cast<size_t>(c.best)])))
      c.best = i;
  }
  for (int i = 0; i < static_cast<int>(c.options.size()); ++i) {
    if (i != c.best && (c.runner_up < 0 || c.options[static_cast<size_t>(i)].finish <
                                               c.options[static_cast<size_t>(c.runner_up)].finish))
      c.runner_up = i;
  }
  return c;
}

}  // namespace shoal::sched
