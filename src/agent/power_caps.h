// Jobs' --gpu-power-cap on this node's GPUs (docs/power.md): each GPU is held
// to the cap of the job that runs on it, and gets its own limit back when
// no capped job is left there.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "agent/exporter.h"
#include "agent/gpu/provider.h"
#include "agent/launch/steps.h"

namespace shoal::agent {

// The power limit each GPU had before any job capped it, kept in `path`
// (JSON, uuid: watts), so that an agent restarted while a cap holds gives
// the GPU back its own limit rather than the cap, and reports that limit as
// the GPU's rating. Sets each device's power_limit_w from the file; GPUs the
// file does not name yet join it with the limit they show now.
Status KeepOwnPowerLimits(const std::string& path, std::vector<GpuDevice>& devices);

class PowerCaps {
 public:
  // `holds`: the GPUs of the steps running here now. A GPU that several
  // jobs share takes the lowest of their caps; a GPU no capped job holds
  // gets its own limit back (the device's power_limit_w, or the provider's
  // own when unknown). Only a change reaches the provider; a refusal is
  // logged, and that cap not asked for again.
  void Apply(GpuProvider& gpus, const std::vector<GpuDevice>& devices,
             const std::vector<std::pair<StepKey, GpuHold>>& holds);
  // What each device (in `devices` order) is held to now; 0: its own limit.
  const std::vector<int>& applied() const { return applied_; }

 private:
  std::vector<int> applied_;
  std::vector<int> refused_;  // the cap a GPU last refused (-1: none), not asked again
};

}  // namespace shoal::agent
