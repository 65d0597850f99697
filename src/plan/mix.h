// The GPU mixes `shoal plan mix` asks the simulator about: how many GPUs of
// each model a cluster could have, either a fixed number in all or as much
// as a budget buys. Pure; the simulation is the command's (cli/plan_mix_cmd.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace shoal::plan {

struct MixModel {
  std::string model;  // as the trace and the cluster name it
  double price = 0;   // per GPU, in the budget's unit; 0: not priced
};

struct MixLimits {
  int64_t total_gpus = 0;  // > 0: every mix has exactly this many GPUs
  double budget = 0;       // > 0: every mix costs at most this, and buys no further step
  int64_t step = 8;        // each model's count is a multiple of this (a node)
  size_t max_mixes = 200;  // more candidates than this is an error (a coarser step is the fix)
};

struct Mix {
  std::vector<int64_t> gpus;  // by model, as given
  double cost = 0;            // sum of gpus x price
  int64_t TotalGpus() const;
  // "V100 64, P100 0, K80 32"
  std::string Describe(const std::vector<MixModel>& models) const;
};

// Every mix of `models` within `limits`, each with at least one GPU: with
// total_gpus, the compositions of that total into multiples of `step`; with a
// budget, the mixes that cost at most the budget and to which no further
// step of any model fits (smaller ones are never better, only cheaper). One
// of total_gpus and budget must be given; a budget needs every model priced.
Result<std::vector<Mix>> EnumerateMixes(const std::vector<MixModel>& models,
                                        const MixLimits& limits);

}  // namespace shoal::plan
