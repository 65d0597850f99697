// How busy each running step keeps the GPUs it holds, for simulated GPUs
// (GpuProvider::SetLoad): the CPU its processes used since the last
// reading, in cores, up to 1. A process that feeds a GPU keeps a core busy;
// a `sleep` keeps none. The agent's loop asks at every beat; a step's CPU
// time (Steps::CpuSeconds: a file or two read) is read at most every
// quarter second. Not thread-safe: the loop's own.
#pragma once

#include <map>

#include "agent/launch/steps.h"
#include "core/time.h"

namespace shoal::agent {

class StepLoads {
 public:
  // 0 at a step's first reading; 1 while its CPU time cannot be read.
  double Of(const Steps& steps, const StepKey& key, Time now);
  // A step that ended.
  void Forget(const StepKey& key) { readings_.erase(key); }

 private:
  struct Reading {
    Time at{};
    double seconds = 0;
    double load = 0;
  };
  std::map<StepKey, Reading> readings_;
};

}  // namespace shoal::agent
