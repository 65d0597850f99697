#include "agent/power_caps.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "api/json.h"
#include "core/files.h"
#include "core/log.h"

namespace shoal::agent {

Status KeepOwnPowerLimits(const std::string& path, std::vector<GpuDevice>& devices) {
  api::Json kept = api::Json::object();
  if (std::filesystem::exists(path)) {
    SHOAL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    kept = api::Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!kept.is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", path));
  }
  bool added = false;
  for (GpuDevice& d : devices) {
    if (d.uuid.empty()) continue;
    auto it = kept.find(d.uuid);
    if (it != kept.end() && it->is_number() && it->get<double>() > 0) {
      d.power_limit_w = it->get<double>();
    } else if (d.power_limit_w > 0) {
      kept[d.uuid] = d.power_limit_w;
      added = true;
    }
  }
  if (!added) return Status::Ok();
  return WriteFileAtomic(path, kept.dump() + "\n", 0644);
}

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
    // A slice's GPU draws for every slice: its limit is not one job's to set.
    const Status s =
        devices[i].mig_profile.empty()
            ? gpus.SetPowerCap(devices[i].index, want[i] > 0 ? want[i] : devices[i].power_limit_w)
            : FailedPrecondition(fmt::format(
                  "GPU {} is a MIG slice: a power cap would hold its whole GPU", devices[i].index));
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
