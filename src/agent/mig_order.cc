#include "agent/mig_order.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "api/json.h"
#include "core/files.h"
#include "core/strings.h"

namespace shoal::agent {

Result<std::vector<GpuDevice>> ApplyMigPlan(GpuProvider& gpus, const catalog::MigLayouts& plan) {
  std::vector<int> done;
  for (const auto& [device, profiles] : plan) {
    Status s = gpus.SetMigLayout(device, profiles);
    if (!s.ok()) {
      return s.WithContext(
          done.empty() ? fmt::format("GPU {}", device)
                       : fmt::format("GPU {} (GPUs {} done)", device, fmt::join(done, ", ")));
    }
    done.push_back(device);
  }
  return gpus.Discover();
}

Status SaveMigLayouts(const std::string& path, const std::vector<GpuDevice>& devices) {
  api::Json layouts = api::Json::object();
  for (const GpuDevice& d : devices) {
    if (!d.mig_profile.empty()) layouts[std::to_string(d.device)].push_back(d.mig_profile);
  }
  return WriteFileAtomic(path, layouts.dump() + "\n", 0644);
}

Status RestoreMigLayouts(const std::string& path, GpuProvider& gpus) {
  if (!std::filesystem::exists(path)) return Status::Ok();
  SHOAL_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  const api::Json layouts = api::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!layouts.is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", path));
  for (const auto& [device, profiles] : layouts.items()) {
    auto index = ParseInt(device);
    if (!index.ok() || !profiles.is_array())
      return InvalidArgument(fmt::format("{}: \"GPU\": [\"profile\", ...] entries", path));
    std::vector<std::string> names;
    for (const api::Json& p : profiles) {
      if (!p.is_string()) return InvalidArgument(fmt::format("{}: profiles are strings", path));
      names.push_back(p.get<std::string>());
    }
    SHOAL_RETURN_IF_ERROR(gpus.SetMigLayout(static_cast<int>(*index), names).WithContext(path));
  }
  return Status::Ok();
}

}  // namespace shoal::agent
