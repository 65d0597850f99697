#include "agent/gpu/nvml_mig.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

namespace shoal::agent::nvml {

namespace {

// Instances of one profile a GPU can hold at most (7 on every MIG GPU).
constexpr unsigned kMaxInstances = 8;

// A GPU instance profile the driver offers: its id and name.
struct GiProfile {
  unsigned id = 0;
  unsigned slices = 0;
  std::string name;
};

std::vector<GiProfile> GpuInstanceProfiles(const NvmlApi& api, nvmlDevice_t gpu,
                                           int64_t gpu_memory_mib) {
  std::vector<GiProfile> out;
  for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
    // The media-engine variants ("1g.10gb+me") are not asked for by name here.
    if (p == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 || p == NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1)
      continue;
    nvmlGpuInstanceProfileInfo_t info{};
    if (CallOptional(api.nvmlDeviceGetGpuInstanceProfileInfo, gpu, p, &info) != NVML_SUCCESS)
      continue;
    out.push_back(
        {info.id, info.sliceCount,
         MigProfileName(info.sliceCount, info.sliceCount, info.memorySizeMB, gpu_memory_mib)});
  }
  return out;
}

// The compute instance profile id that spans all of a GPU instance.
std::optional<unsigned> WholeComputeProfile(const NvmlApi& api, nvmlGpuInstance_t gi,
                                            unsigned slices) {
  for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlComputeInstanceProfileInfo_t info{};
    if (CallOptional(api.nvmlGpuInstanceGetComputeInstanceProfileInfo, gi, p,
                     static_cast<unsigned>(NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED),
                     &info) == NVML_SUCCESS &&
        info.sliceCount == slices) {
      return info.id;
    }
  }
  return std::nullopt;
}

Status DestroyInstances(const NvmlApi& api, nvmlDevice_t gpu) {
  for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlGpuInstanceProfileInfo_t info{};
    if (CallOptional(api.nvmlDeviceGetGpuInstanceProfileInfo, gpu, p, &info) != NVML_SUCCESS)
      continue;
    std::array<nvmlGpuInstance_t, kMaxInstances> gis{};
    unsigned count = static_cast<unsigned>(gis.size());
    if (CallOptional(api.nvmlDeviceGetGpuInstances, gpu, info.id, gis.data(), &count) !=
        NVML_SUCCESS)
      continue;
    for (unsigned g = 0; g < count && g < gis.size(); ++g) {
      for (unsigned c = 0; c < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++c) {
        nvmlComputeInstanceProfileInfo_t ci_info{};
        if (CallOptional(api.nvmlGpuInstanceGetComputeInstanceProfileInfo, gis[g], c,
                         static_cast<unsigned>(NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED),
                         &ci_info) != NVML_SUCCESS)
          continue;
        std::array<nvmlComputeInstance_t, kMaxInstances> cis{};
        unsigned n = static_cast<unsigned>(cis.size());
        if (CallOptional(api.nvmlGpuInstanceGetComputeInstances, gis[g], ci_info.id, cis.data(),
                         &n) != NVML_SUCCESS)
          continue;
        for (unsigned k = 0; k < n && k < cis.size(); ++k) {
          const nvmlReturn_t rc = CallOptional(api.nvmlComputeInstanceDestroy, cis[k]);
          if (rc != NVML_SUCCESS) return Failure(api, "nvmlComputeInstanceDestroy", rc);
        }
      }
      const nvmlReturn_t rc = CallOptional(api.nvmlGpuInstanceDestroy, gis[g]);
      if (rc == NVML_ERROR_IN_USE) {
        return FailedPrecondition("a process still uses a MIG instance of this GPU");
      }
      if (rc != NVML_SUCCESS) return Failure(api, "nvmlGpuInstanceDestroy", rc);
    }
  }
  return Status::Ok();
}

Status SetMode(const NvmlApi& api, nvmlDevice_t gpu, unsigned mode) {
  unsigned current = 0, pending = 0;
  nvmlReturn_t rc = CallOptional(api.nvmlDeviceGetMigMode, gpu, &current, &pending);
  if (rc != NVML_SUCCESS) return Failure(api, "nvmlDeviceGetMigMode", rc);
  if (current == mode) return Status::Ok();
  nvmlReturn_t activation = NVML_SUCCESS;
  rc = CallOptional(api.nvmlDeviceSetMigMode, gpu, mode, &activation);
  if (rc != NVML_SUCCESS) return Failure(api, "nvmlDeviceSetMigMode", rc);
  if (activation != NVML_SUCCESS) {
    return FailedPrecondition(fmt::format(
        "MIG mode {} is pending until the GPU is reset (nvidia-smi -r; the driver says: {})",
        mode == NVML_DEVICE_MIG_ENABLE ? "on" : "off", Failure(api, "", activation).message()));
  }
  return Status::Ok();
}

}  // namespace

std::string MigProfileName(unsigned gi_slices, unsigned ci_slices, uint64_t memory_mib,
                           int64_t gpu_memory_mib) {
  const double eighths =
      gpu_memory_mib > 0
          ? std::ceil(static_cast<double>(memory_mib) * 8 / static_cast<double>(gpu_memory_mib) -
                      1e-9)
          : 8;
  const double gpu_gb = std::ceil(static_cast<double>(gpu_memory_mib) / 1024);
  const long gb = std::lround(eighths / 8 * gpu_gb);
  if (ci_slices != gi_slices) return fmt::format("{}c.{}g.{}gb", ci_slices, gi_slices, gb);
  return fmt::format("{}g.{}gb", gi_slices, gb);
}

Result<std::vector<MigDevice>> ListMigDevices(const NvmlApi& api, nvmlDevice_t gpu,
                                              int64_t gpu_memory_mib) {
  unsigned max = 0;
  nvmlReturn_t rc = CallOptional(api.nvmlDeviceGetMaxMigDeviceCount, gpu, &max);
  if (rc != NVML_SUCCESS) return Failure(api, "nvmlDeviceGetMaxMigDeviceCount", rc);
  std::vector<MigDevice> out;
  for (unsigned i = 0; i < max; ++i) {
    MigDevice m;
    m.index = static_cast<int>(i);
    rc = CallOptional(api.nvmlDeviceGetMigDeviceHandleByIndex, gpu, i, &m.handle);
    if (rc == NVML_ERROR_NOT_FOUND) continue;
    if (rc != NVML_SUCCESS) return Failure(api, "nvmlDeviceGetMigDeviceHandleByIndex", rc);
    std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> uuid{};
    rc = api.nvmlDeviceGetUUID(m.handle, uuid.data(), uuid.size());
    if (rc != NVML_SUCCESS) return Failure(api, "nvmlDeviceGetUUID(MIG device)", rc);
    m.uuid = uuid.data();
    unsigned gi = 0, ci = 0;
    nvmlDeviceAttributes_t attributes{};
    if ((rc = CallOptional(api.nvmlDeviceGetGpuInstanceId, m.handle, &gi)) != NVML_SUCCESS ||
        (rc = CallOptional(api.nvmlDeviceGetComputeInstanceId, m.handle, &ci)) != NVML_SUCCESS ||
        (rc = CallOptional(api.nvmlDeviceGetAttributes_v2, m.handle, &attributes)) !=
            NVML_SUCCESS) {
      return Failure(api, "reading a MIG device's instance", rc);
    }
    m.gi = static_cast<int>(gi);
    m.ci = static_cast<int>(ci);
    m.memory_mib = static_cast<int64_t>(attributes.memorySizeMB);
    m.profile =
        MigProfileName(attributes.gpuInstanceSliceCount, attributes.computeInstanceSliceCount,
                       attributes.memorySizeMB, gpu_memory_mib);
    m.share = max > 0 ? static_cast<double>(attributes.computeInstanceSliceCount) / max : 0;
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const MigDevice& a, const MigDevice& b) {
    return std::pair(a.gi, a.ci) < std::pair(b.gi, b.ci);
  });
  return out;
}

Status ApplyMigLayout(const NvmlApi& api, nvmlDevice_t gpu, int64_t gpu_memory_mib,
                      const std::vector<std::string>& profiles) {
  unsigned current = 0, pending = 0;
  const bool mig_on =
      CallOptional(api.nvmlDeviceGetMigMode, gpu, &current, &pending) == NVML_SUCCESS &&
      current == NVML_DEVICE_MIG_ENABLE;
  if (mig_on) SHOAL_RETURN_IF_ERROR(DestroyInstances(api, gpu));
  if (profiles.empty()) return mig_on ? SetMode(api, gpu, NVML_DEVICE_MIG_DISABLE) : Status::Ok();
  SHOAL_RETURN_IF_ERROR(SetMode(api, gpu, NVML_DEVICE_MIG_ENABLE));
  const std::vector<GiProfile> offered = GpuInstanceProfiles(api, gpu, gpu_memory_mib);
  std::vector<const GiProfile*> wanted;
  for (const std::string& name : profiles) {
    auto p = std::find_if(offered.begin(), offered.end(),
                          [&](const GiProfile& o) { return o.name == name; });
    if (p == offered.end()) {
      return InvalidArgument(
          fmt::format("the driver offers no MIG profile '{}' on this GPU", name));
    }
    wanted.push_back(&*p);
  }
  std::stable_sort(wanted.begin(), wanted.end(),
                   [](const GiProfile* a, const GiProfile* b) { return a->slices > b->slices; });
  for (const GiProfile* p : wanted) {
    nvmlGpuInstance_t gi = nullptr;
    nvmlReturn_t rc = CallOptional(api.nvmlDeviceCreateGpuInstance, gpu, p->id, &gi);
    if (rc != NVML_SUCCESS)
      return Failure(api, fmt::format("nvmlDeviceCreateGpuInstance({})", p->name), rc);
    const std::optional<unsigned> ci_profile = WholeComputeProfile(api, gi, p->slices);
    if (!ci_profile) {
      return Unavailable(
          fmt::format("the driver offers no compute instance over all of {}", p->name));
    }
    nvmlComputeInstance_t ci = nullptr;
    rc = CallOptional(api.nvmlGpuInstanceCreateComputeInstance, gi, *ci_profile, &ci);
    if (rc != NVML_SUCCESS)
      return Failure(api, fmt::format("nvmlGpuInstanceCreateComputeInstance({})", p->name), rc);
  }
  return Status::Ok();
}

}  // namespace shoal::agent::nvml
