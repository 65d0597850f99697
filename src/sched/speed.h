// Heterogeneity-aware scheduling (PolicyParams::speed_aware): a job that knows
// how fast it runs on each GPU model (JobInfo::model_speed) starts on the model
// expected to finish it soonest, or waits for that model when waiting and then
// running there ends sooner than running now on a slower one.
//
// Run time on a model: a job's time limit is taken to hold on the slowest
// model it accepts, so its work is limit x that model's speed and its run time
// on model m is work / speed[m]. Only ratios of speeds matter.
//
// When a model comes free: ModelTimeline keeps, for one pass, the GPUs of each
// model that running work frees and when (its start plus its run time there,
// or its time limit for a job of unknown speed), and the GPUs that jobs
// earlier in the pass decided to wait for; a newcomer is served after them.
// Nodes are not packed in this estimate: it counts GPUs of a model, which is
// what a choice between models needs.
#pragma once

#include <cstdint>
#include <vector>

#include "core/job.h"
#include "core/time.h"
#include "sched/inventory.h"

namespace shoal::sched {

// Work in "seconds on a model of speed 1" of a job with these speeds and this
// time limit, accepting the models in `mask`; 0 when it accepts no model it
// has a speed for.
double SpeedWork(const std::vector<double>& speed, uint64_t mask, Duration limit);

// Its run time on model m (speed[m] > 0).
Duration RunTimeOn(const std::vector<double>& speed, int model, double work);

// The model of the first GPU of an allocation; -1 for one without GPUs.
int AllocationModel(const Inventory& inv, const Allocation& a);

class ModelTimeline {
 public:
  ModelTimeline(const Inventory& inv, Time now);

  // Running work of `gpus` GPUs of `model` that ends at `end`.
  void AddRelease(int model, Time end, int gpus);
  // A job waits for `gpus` GPUs of `model`, expected to run there from
  // `start` to `end`: they go to it before a newcomer, and come back at `end`.
  void Queue(int model, int gpus, Time end);
  // When `gpus` GPUs of `model` should come free for a job that does not fit
  // now, after those queued; kTimeNever when the model has too few GPUs.
  Time FreeAt(int model, int gpus) const;

 private:
  struct PerModel {
    int total = 0;                               // GPUs of the model in the inventory
    int queued = 0;                              // GPUs waited for this pass
    std::vector<std::pair<Time, int>> releases;  // in time order
  };
  Time now_;
  std::vector<PerModel> models_;
};

}  // namespace shoal::sched
