// A job's speed on each GPU model of the cluster, for speed-aware policies
// (sched/speed.h; PolicyParams::speed_aware), from the first of:
//  1. declared: JobSpec::gpu_speeds (--gpu-speed h100=1,a100=0.55), each
//     entry on the models its name matches (GpuModelMatches); a model it
//     names none of gets 0, so the job does not run there;
//  2. learned from the job's own earlier runs (same user, same job name):
//     the rate of progress each run reported on the model it ran on
//     ($SHOAL_PROGRESS_FILE, LearnedSpeeds). A model no run was seen on is
//     estimated from a learned one by the ratio of their catalogue peaks
//     (below), else taken as the mean of the learned rates;
//  3. else estimated from the catalogue: each model's peak dense BF16
//     TFLOP/s (the precision most training runs in), which overstates the
//     gain of a newer GPU for a job bound by memory or communication.
// Null where no choice is to be made (the cluster has one model) or nothing
// is known (a model the catalogue lacks, with nothing declared or learned).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/job.h"
#include "sched/inventory.h"
#include "state/store.h"

namespace shoal::server {

// What jobs' runs reported of their progress, by user, job name and GPU
// model: a run's mean rate (JobEfficiency::progress_rate), kept as a moving
// mean over the runs (each new run weighs half). A run counts once it
// carried kMinSamples figures; a user's job names are learned up to
// kMaxNamesPerUser, further names are not (the table stays bounded whatever
// a user submits). Not thread-safe: the control loop's.
class LearnedSpeeds {
 public:
  static constexpr uint64_t kMinSamples = 3;
  static constexpr size_t kMaxNamesPerUser = 1000;

  void Load(const std::vector<state::LearnedSpeed>& stored);
  // A run of `user`'s job `name` on `model` that reported `efficiency`: the
  // record to store, or nullopt when nothing was learned from it.
  std::optional<state::LearnedSpeed> Learn(const std::string& user, const std::string& name,
                                           const std::string& model,
                                           const JobEfficiency& efficiency, Time now);
  // The rates learned for `user`'s job `name`, by model.
  std::map<std::string, const state::LearnedSpeed*> Of(const std::string& user,
                                                       const std::string& name) const;
  // Forgets what was learned of `user`'s job `name`; returns how many
  // models' rates that was.
  int Forget(const std::string& user, const std::string& name);
  // Every record, in (user, name, model) order; only `user`'s unless empty.
  std::vector<const state::LearnedSpeed*> List(const std::string& user) const;
  // Grows with every change: speeds made from the table before are stale.
  uint64_t version() const { return version_; }
  size_t size() const { return table_.size(); }

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // user, name, model
  using Table = std::map<Key, state::LearnedSpeed>;
  // The first record of `user`'s job `name` (its models follow it), and
  // whether a record is one of them.
  Table::const_iterator FirstOf(const std::string& user, const std::string& name) const {
    return table_.lower_bound({user, name, ""});
  }
  bool IsOf(Table::const_iterator it, const std::string& user, const std::string& name) const {
    return it != table_.end() && std::get<0>(it->first) == user && std::get<1>(it->first) == name;
  }
  // The job names learned for `user`.
  size_t NamesOf(const std::string& user) const;

  Table table_;
  uint64_t version_ = 0;
};

struct ModelSpeeds {
  std::shared_ptr<const std::vector<double>> speed;  // by inventory model; null: none
  std::string source;  // "declared", "learned from N runs", "catalogue (peak BF16)"
};

ModelSpeeds SpeedsOf(const JobSpec& spec, const sched::Inventory& inv,
                     const LearnedSpeeds* learned = nullptr);

}  // namespace shoal::server
