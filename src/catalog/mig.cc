#include "catalog/mig.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "catalog/gpus.h"
#include "catalog/profiles.h"
#include "core/strings.h"

namespace shoal::catalog {

namespace {

// One family's profiles: the GPUs of a row of the MIG User Guide's tables
// share them (an 80 GB A100 and an 80 GB H100 offer the same six).
struct MigFamily {
  std::vector<std::string_view> models;
  std::vector<MigProfile> profiles;
};

const std::vector<MigFamily>& Families() {
  static const std::vector<MigFamily> families = {
      {{"A100-SXM4-40GB", "A100-PCIE-40GB"},
       {{"1g.5gb", 1, 1, 7},
        {"1g.10gb", 1, 2, 4},
        {"2g.10gb", 2, 2, 3},
        {"3g.20gb", 3, 4, 2},
        {"4g.20gb", 4, 4, 1},
        {"7g.40gb", 7, 8, 1}}},
      {{"A100-SXM4-80GB", "A100-PCIE-80GB", "H100-SXM-80GB", "H100-PCIE-80GB"},
       {{"1g.10gb", 1, 1, 7},
        {"1g.20gb", 1, 2, 4},
        {"2g.20gb", 2, 2, 3},
        {"3g.40gb", 3, 4, 2},
        {"4g.40gb", 4, 4, 1},
        {"7g.80gb", 7, 8, 1}}},
      {{"H100-NVL-94GB"},
       {{"1g.12gb", 1, 1, 7},
        {"1g.24gb", 1, 2, 4},
        {"2g.24gb", 2, 2, 3},
        {"3g.47gb", 3, 4, 2},
        {"4g.47gb", 4, 4, 1},
        {"7g.94gb", 7, 8, 1}}},
      {{"H200-SXM-141GB", "H200-NVL-141GB"},
       {{"1g.18gb", 1, 1, 7},
        {"1g.35gb", 1, 2, 4},
        {"2g.35gb", 2, 2, 3},
        {"3g.71gb", 3, 4, 2},
        {"4g.71gb", 4, 4, 1},
        {"7g.141gb", 7, 8, 1}}},
      {{"B200-SXM-180GB"},
       {{"1g.23gb", 1, 1, 7},
        {"1g.45gb", 1, 2, 4},
        {"2g.45gb", 2, 2, 3},
        {"3g.90gb", 3, 4, 2},
        {"4g.90gb", 4, 4, 1},
        {"7g.180gb", 7, 8, 1}}},
  };
  return families;
}

const MigProfile* FindProfile(const std::vector<MigProfile>& profiles, std::string_view name) {
  for (const MigProfile& p : profiles) {
    if (EqualsIgnoreCase(p.name, name)) return &p;
  }
  return nullptr;
}

std::string ProfileNames(const std::vector<MigProfile>& profiles) {
  std::vector<std::string> names;
  for (const MigProfile& p : profiles)
    names.emplace_back(p.name);
  return Join(names, ", ");
}

// Whether the profiles fit one GPU; the reason when they do not.
Status CheckFits(const std::vector<std::string>& chosen, const std::vector<MigProfile>& profiles,
                 std::string_view gpu_model) {
  int compute = 0, memory = 0;
  std::map<std::string_view, int> counts;
  for (const std::string& name : chosen) {
    const MigProfile* p = FindProfile(profiles, name);
    compute += p->compute_slices;
    memory += p->memory_eighths;
    if (++counts[p->name] > p->max_count) {
      return InvalidArgument(
          fmt::format("a {} holds at most {} instances of {}", gpu_model, p->max_count, p->name));
    }
  }
  if (compute > kMigComputeSlices) {
    return InvalidArgument(fmt::format("{} needs {} compute slices; a {} has {}",
                                       MigLayoutText(chosen), compute, gpu_model,
                                       kMigComputeSlices));
  }
  if (memory > kMigMemoryEighths) {
    return InvalidArgument(fmt::format("{} needs {} eighths of the memory; a {} has {}",
                                       MigLayoutText(chosen), memory, gpu_model,
                                       kMigMemoryEighths));
  }
  return Status::Ok();
}

}  // namespace

std::vector<MigProfile> MigProfilesOf(std::string_view gpu_model) {
  const GpuSpec* spec = FindGpu(gpu_model);
  if (spec == nullptr) return {};
  for (const MigFamily& f : Families()) {
    if (std::find(f.models.begin(), f.models.end(), spec->model) != f.models.end())
      return f.profiles;
  }
  return {};
}

Result<std::vector<std::string>> ParseMigLayout(std::string_view text, std::string_view gpu_model) {
  const std::string layout = ToLower(Trim(text));
  if (layout == "none" || layout == "off") return std::vector<std::string>{};
  const std::vector<MigProfile> profiles = MigProfilesOf(gpu_model);
  if (profiles.empty()) return InvalidArgument(fmt::format("a {} has no MIG", gpu_model));
  std::vector<std::string> chosen;
  for (std::string_view part : Split(layout, '+')) {
    part = Trim(part);
    int count = 1;
    if (const size_t x = part.find('x'); x != std::string_view::npos) {
      auto n = ParseInt(part.substr(0, x));
      if (!n.ok() || *n < 1 || *n > kMigComputeSlices) {
        return InvalidArgument(fmt::format("'{}': a count is 1 to {} before an 'x' (7x1g.10gb)",
                                           part, kMigComputeSlices));
      }
      count = static_cast<int>(*n);
      part = part.substr(x + 1);
    }
    const MigProfile* p = FindProfile(profiles, part);
    if (p == nullptr) {
      return InvalidArgument(fmt::format("a {} has no MIG profile '{}' (it has: {})", gpu_model,
                                         part, ProfileNames(profiles)));
    }
    chosen.insert(chosen.end(), static_cast<size_t>(count), std::string(p->name));
  }
  if (chosen.empty()) return InvalidArgument("a MIG layout names at least one profile, or none");
  SHOAL_RETURN_IF_ERROR(CheckFits(chosen, profiles, gpu_model));
  return chosen;
}

std::string MigLayoutText(const std::vector<std::string>& profiles) {
  if (profiles.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < profiles.size();) {
    size_t run = 1;
    while (i + run < profiles.size() && profiles[i + run] == profiles[i])
      ++run;
    if (!out.empty()) out += '+';
    out += run == 1 ? profiles[i] : fmt::format("{}x{}", run, profiles[i]);
    i += run;
  }
  return out;
}

std::string_view BaseModel(std::string_view model) {
  return model.substr(0, model.find('/'));
}

Result<std::vector<Gpu>> PartitionGpus(const std::vector<Gpu>& gpus, const MigLayouts& layouts) {
  std::vector<Gpu> out;
  for (const Gpu& gpu : gpus) {
    if (gpu.IsMigSlice())
      return InvalidArgument(fmt::format("GPU {} is a MIG slice already", gpu.index));
    auto layout = std::find_if(layouts.begin(), layouts.end(),
                               [&](const auto& l) { return l.first == gpu.Device(); });
    if (layout == layouts.end() || layout->second.empty()) {
      out.push_back(gpu);
      out.back().device = gpu.Device();
      continue;
    }
    // The same checks as an admin's layout text gets.
    SHOAL_ASSIGN_OR_RETURN(const std::vector<std::string> names,
                           ParseMigLayout(MigLayoutText(layout->second), gpu.model));
    const std::vector<MigProfile> profiles = MigProfilesOf(gpu.model);
    int gi = 0;
    for (const std::string& name : names) {
      const MigProfile* p = FindProfile(profiles, name);
      Gpu slice = gpu;
      slice.device = gpu.Device();
      slice.mig_profile = std::string(p->name);
      slice.mig_gi = ++gi;
      slice.mig_ci = 0;
      slice.model = fmt::format("{}/{}", gpu.model, p->name);
      slice.uuid = DerivedUuid("MIG", fmt::format("{}/gi{}", gpu.uuid, gi));
      slice.memory_mib = gpu.memory_mib * p->memory_eighths / kMigMemoryEighths;
      slice.rated_w = gpu.rated_w * p->compute_slices / kMigComputeSlices;
      out.push_back(std::move(slice));
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    out[i].index = static_cast<int>(i);
  return out;
}

Result<MigLayouts> PlanMigLayouts(const std::vector<Gpu>& gpus, std::string_view layout,
                                  std::vector<int> devices) {
  // The physical GPUs: driver index -> model without a profile.
  std::map<int, std::string> physical;
  for (const Gpu& g : gpus)
    physical.emplace(g.Device(), std::string(BaseModel(g.model)));
  if (devices.empty()) {
    for (const auto& [device, model] : physical)
      devices.push_back(device);
  }
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  MigLayouts plan;
  for (int device : devices) {
    auto gpu = physical.find(device);
    if (gpu == physical.end())
      return InvalidArgument(fmt::format("the node has no GPU {}", device));
    auto profiles = ParseMigLayout(layout, gpu->second);
    if (!profiles.ok()) return profiles.status().WithContext(fmt::format("GPU {}", device));
    plan.emplace_back(device, std::move(*profiles));
  }
  if (plan.empty()) return InvalidArgument("the node has no GPU to partition");
  return plan;
}

}  // namespace shoal::catalog
