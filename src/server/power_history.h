// What each kind of job draws per GPU, learnt from the jobs that ended: the
// power budgets' estimate for a job of the same user and name (docs/power.md).
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/job.h"

namespace shoal::server {

class PowerHistory {
 public:
  // Jobs shorter than this in GPU-seconds say too little about their draw.
  static constexpr double kMinGpuSeconds = 60;
  // The (user, name) pairs kept; past it, the oldest entry goes.
  static constexpr size_t kMaxEntries = 50000;

  // A finished job: its GPUs' mean draw (energy over GPU-seconds) joins its
  // (user, name)'s figure as a running mean that weighs the newest run half.
  void Record(const Job& job);
  // What each of the job's GPUs is expected to draw, in watts: its history,
  // held to its power cap; the cap alone without history; 0 (the GPUs' rated
  // power) with neither.
  double Expected(const JobSpec& spec) const;
  // The store's last finished jobs, newest first, at start.
  void Seed(const std::vector<Job>& finished);
  size_t size() const { return watts_.size(); }

 private:
  static std::string Key(const JobSpec& spec);

  std::unordered_map<std::string, double> watts_;
  std::vector<std::string> order_;  // keys in the order they first came, for eviction
  size_t oldest_ = 0;
};

}  // namespace shoal::server
