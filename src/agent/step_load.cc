#include "agent/step_load.h"

#include <algorithm>
#include <chrono>

namespace shoal::agent {

double StepLoads::Of(const Steps& steps, const StepKey& key, Time now) {
  // Readings at least a quarter second apart: the extra beats of step events
  // come closer than that, and a tick's CPU time is coarse.
  constexpr Duration kEvery = std::chrono::milliseconds(250);
  auto it = readings_.find(key);
  if (it != readings_.end() && now - it->second.at < kEvery) return it->second.load;
  const std::optional<double> cpu = steps.CpuSeconds(key);
  if (!cpu) return 1.0;
  if (it == readings_.end()) {
    readings_.emplace(key, Reading{now, *cpu, 0.0});
    return 0.0;
  }
  Reading& last = it->second;
  const double dt = std::chrono::duration<double>(now - last.at).count();
  last = {now, *cpu, std::clamp((*cpu - last.seconds) / dt, 0.0, 1.0)};
  return last.load;
}

}  // namespace shoal::agent
