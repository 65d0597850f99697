#include "agent/power_caps.h"

#include <algorithm>

#include "core/log.h"

namespace shoal::agent {

void PowerCaps::Apply(GpuProvider& gpus, const std::vector<GpuDevice>& devices,
                      const std::vector<std::pair<StepKey, GpuHold>>& holds) {
  std::vector<int> want(devices.size(), 0);
  for (const auto& [key, h] : holds) {
    if (h.power_cap_w <= 0) continue;
    for (int g : h.gpus) {
      for (size_t i = 0; i < devices.size(); ++i) {
        if (devices[i].index != g) continue;
        want[i] = want[i] == 0 ? h.power_cap_w : std::min(want[i], h.power_cap_w);
      }
    }
  }
  applied_.resize(devices.size(), 0);
  refused_.resize(devices.size(), -1);
  for (size_t i = 0; i < devices.size(); ++i) {
    if (want[i] == applied_[i] || want[i] == refused_[i]) continue;
    const Status s = gpus.SetPowerCap(devices[i].index, want[i]);
    refused_[i] = s.ok() ? -1 : want[i];
    if (!s.ok()) {
      log::Warning("gpu.power_cap_refused",
                   {{"gpu", devices[i].index}, {"watts", want[i]}, {"error", s.message()}});
      continue;
    }
    log::Info("gpu.power_cap", {{"gpu", devices[i].index}, {"watts", want[i]}});
    applied_[i] = want[i];
  }
}

}  // namespace shoal::agent
