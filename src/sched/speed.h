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
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/job.h"
#include "core/time.h"
#include "sched/inventory.h"
#include "sched/snapshot.h"

namespace shoal::sched {

// Work in "seconds on a model of speed 1" of a job with these speeds and this
// time limit, accepting the models in `mask`; 0 when it accepts no model it
// has a speed for.
double SpeedWork(const std::vector<double>& speed, uint64_t mask, Duration limit);

// Its run time on model m (speed[m] > 0).
Duration RunTimeOn(const std::vector<double>& speed, int model, double work);

// The model of the first GPU of an allocation; -1 for one without GPUs.
int AllocationModel(const Inventory& inv, const Allocation& a);

// How long job j should run on `model`: its time limit, or for a job of
// known speed its run time there.
Duration ExpectedRunTime(const JobInfo& j, int model);

// Bit m set for each model the job runs on (speed above 0).
uint64_t RunnableModels(const std::vector<double>& speed);

// Speeds by the inventory's models (`models`) from speeds by name: each model
// takes the first entry whose name matches it (GpuModelMatches), 0 when none does.
std::shared_ptr<const std::vector<double>> SpeedsByName(
    const std::vector<std::string>& models,
    const std::vector<std::pair<std::string, double>>& named);

class ModelTimeline {
 public:
  ModelTimeline(const Inventory& inv, Time now);

  // Running work of `gpus` GPUs of `model` that ends at `end`.
  void AddRelease(int model, Time end, int gpus);
  // A running job: its GPUs come free at its start plus its expected run
  // time there (ExpectedRunTime), or at its expected end for one of unknown speed.
  void AddRunning(const Inventory& inv, const JobInfo& r);
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

// One model a job could run on, as the speed-aware walk weighs it.
struct ModelOption {
  int model = -1;
  Time finish = kTimeNever;       // when it would end there
  std::optional<Allocation> now;  // where it fits now, if it does
};

struct ModelChoice {
  std::vector<ModelOption> options;
  int best = -1;       // in options: the model to run on, or to wait for; -1: none
  int best_now = -1;   // the one that fits now and ends soonest; -1: none fits now
  int runner_up = -1;  // the other model that ends soonest: why `best`
};

// For each model the job accepts (`req`'s mask, speed above 0): when it would
// start (now if `fits` places it there now, else when `timeline` frees room)
// and end. `best` ends it soonest; with `slack`, of the models within that
// fraction of the soonest run, the one it runs slowest on (the faster are
// left to jobs that gain more there). `fits(m)`: its placement on model m now.
ModelChoice ChooseModel(const std::vector<double>& speed, const Request& req, Time now,
                        double slack, const ModelTimeline& timeline,
                        const std::function<std::optional<Allocation>(int model)>& fits);

}  // namespace shoal::sched
