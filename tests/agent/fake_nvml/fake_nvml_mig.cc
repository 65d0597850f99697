// The fake's MIG calls (see fake_nvml.h): an H100 80GB's GPU instance
// profiles, instances created and destroyed in the state's slots, and the
// MIG devices they make, as NVML documents them. Placement is reduced to
// what fits: slices add up to at most 7 and each profile to its count.
#include <cstdio>

#include "agent/gpu/nvml_api.h"
#include "fake_nvml.h"

#ifndef SHOAL_FAKE_NVML_OLD

namespace {

// An H100 80GB's GPU instance profiles by NVML's profile index (0x0 1 slice
// ... 0x4 7 slices, 0x9 1 slice with twice the memory), with the profile
// ids and memory the driver reports; index 5-8 are not offered.
struct GiProfile {
  unsigned int index, id, slices, count;
  unsigned long long memory_mib;
};
constexpr GiProfile kProfiles[] = {
    {0x0, 19, 1, 7, 9856}, {0x1, 14, 2, 3, 19968}, {0x2, 9, 3, 2, 40192},
    {0x3, 5, 4, 1, 40192}, {0x4, 0, 7, 1, 80896},  {0x9, 15, 1, 4, 19968},
};
// Compute instance profiles: index -> slices (the id is the index).
constexpr unsigned int kCiSlices[] = {1, 2, 3, 4, 7};

FakeNvmlGpu* GpuOf(void* handle, nvmlReturn_t* rc) {
  FakeNvmlState* st = fake_nvml_state();
  *rc = NVML_SUCCESS;
  if (st->init_depth <= 0) {
    *rc = NVML_ERROR_UNINITIALIZED;
    return nullptr;
  }
  for (unsigned int i = 0; i < st->device_count && i < FAKE_NVML_MAX_GPUS; ++i) {
    if (handle == &st->gpus[i]) {
      if (!st->gpus[i].mig_capable) *rc = NVML_ERROR_NOT_SUPPORTED;
      return &st->gpus[i];
    }
  }
  *rc = NVML_ERROR_INVALID_ARGUMENT;
  return nullptr;
}

// A slot (a GPU instance, compute instance or MIG device handle), and its GPU.
FakeNvmlMig* SlotOf(void* handle, FakeNvmlGpu** gpu = nullptr) {
  FakeNvmlState* st = fake_nvml_state();
  for (unsigned int i = 0; i < st->device_count && i < FAKE_NVML_MAX_GPUS; ++i) {
    for (FakeNvmlMig& m : st->gpus[i].mig) {
      if (handle != &m || !m.used) continue;
      if (gpu != nullptr) *gpu = &st->gpus[i];
      return &m;
    }
  }
  return nullptr;
}

const GiProfile* ProfileById(unsigned int id) {
  for (const GiProfile& p : kProfiles) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t* activationStatus) {
  fake_nvml_count(__func__);
  nvmlReturn_t rc;
  FakeNvmlGpu* g = GpuOf(device, &rc);
  if (g == nullptr || rc != NVML_SUCCESS) return rc;
  if (mode != NVML_DEVICE_MIG_ENABLE && mode != NVML_DEVICE_MIG_DISABLE)
    return NVML_ERROR_INVALID_ARGUMENT;
  for (const FakeNvmlMig& m : g->mig) {
    if (m.used) return NVML_ERROR_IN_USE;  // instances must go first
  }
  *activationStatus = g->mig_needs_reset ? NVML_ERROR_IN_USE : NVML_SUCCESS;
  if (!g->mig_needs_reset) g->mig_mode = mode;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  fake_nvml_count(__func__);
  nvmlReturn_t rc;
  if (GpuOf(device, &rc) == nullptr || rc != NVML_SUCCESS) return rc;
  *count = FAKE_NVML_MAX_MIG;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* migDevice) {
  fake_nvml_count(__func__);
  nvmlReturn_t rc;
  FakeNvmlGpu* g = GpuOf(device, &rc);
  if (g == nullptr || rc != NVML_SUCCESS) return rc;
  if (g->mig_mode != NVML_DEVICE_MIG_ENABLE || index >= FAKE_NVML_MAX_MIG)
    return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int seen = 0;
  for (FakeNvmlMig& m : g->mig) {
    if (!m.used || !m.has_ci) continue;
    if (seen++ == index) {
      *migDevice = reinterpret_cast<nvmlDevice_t>(&m);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  fake_nvml_count(__func__);
  const FakeNvmlMig* m = SlotOf(device);
  if (m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *id = m->gi;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  fake_nvml_count(__func__);
  if (SlotOf(device) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *id = 0;  // one compute instance per GPU instance
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes) {
  fake_nvml_count(__func__);
  const FakeNvmlMig* m = SlotOf(device);
  if (m == nullptr) return NVML_ERROR_NOT_SUPPORTED;  // a whole GPU's attributes: not faked
  *attributes = nvmlDeviceAttributes_t{};
  attributes->multiprocessorCount = 16 * m->slices;
  attributes->gpuInstanceSliceCount = m->slices;
  attributes->computeInstanceSliceCount = m->slices;
  attributes->memorySizeMB = m->memory_mib;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t* info) {
  fake_nvml_count(__func__);
  nvmlReturn_t rc;
  if (GpuOf(device, &rc) == nullptr || rc != NVML_SUCCESS) return rc;
  for (const GiProfile& p : kProfiles) {
    if (p.index != profile) continue;
    *info = nvmlGpuInstanceProfileInfo_t{};
    info->id = p.id;
    info->sliceCount = p.slices;
    info->instanceCount = p.count;
    info->memorySizeMB = p.memory_mib;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                         nvmlGpuInstance_t* gpuInstance) {
  fake_nvml_count(__func__);
  nvmlReturn_t rc;
  FakeNvmlGpu* g = GpuOf(device, &rc);
  if (g == nullptr || rc != NVML_SUCCESS) return rc;
  if (g->mig_mode != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  const GiProfile* p = ProfileById(profileId);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int slices = 0, same = 0;
  FakeNvmlMig* free_slot = nullptr;
  for (FakeNvmlMig& m : g->mig) {
    if (!m.used) {
      if (free_slot == nullptr) free_slot = &m;
      continue;
    }
    slices += m.slices;
    if (m.memory_mib == p->memory_mib && m.slices == p->slices) ++same;
  }
  if (free_slot == nullptr || slices + p->slices > 7 || same >= p->count)
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  *free_slot = FakeNvmlMig{};
  free_slot->used = 1;
  free_slot->gi = g->mig_next_gi++;
  free_slot->slices = p->slices;
  free_slot->memory_mib = p->memory_mib;
  free_slot->used_mib = 13;
  std::snprintf(free_slot->uuid, sizeof free_slot->uuid, "MIG-%08x-0000-4000-8000-%012x",
                static_cast<unsigned int>(g - fake_nvml_state()->gpus), free_slot->gi);
  *gpuInstance = reinterpret_cast<nvmlGpuInstance_t>(free_slot);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t* gpuInstances, unsigned int* count) {
  fake_nvml_count(__func__);
  nvmlReturn_t rc;
  FakeNvmlGpu* g = GpuOf(device, &rc);
  if (g == nullptr || rc != NVML_SUCCESS) return rc;
  const GiProfile* p = ProfileById(profileId);
  if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = 0;
  for (FakeNvmlMig& m : g->mig) {
    if (!m.used || m.slices != p->slices || m.memory_mib != p->memory_mib) continue;
    if (n >= *count) return NVML_ERROR_INSUFFICIENT_SIZE;
    gpuInstances[n++] = reinterpret_cast<nvmlGpuInstance_t>(&m);
  }
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  fake_nvml_count(__func__);
  FakeNvmlMig* m = SlotOf(gpuInstance);
  if (m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (m->has_ci) return NVML_ERROR_IN_USE;
  *m = FakeNvmlMig{};
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t* info) {
  fake_nvml_count(__func__);
  const FakeNvmlMig* m = SlotOf(gpuInstance);
  if (m == nullptr || engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (profile >= sizeof kCiSlices / sizeof kCiSlices[0] || kCiSlices[profile] > m->slices)
    return NVML_ERROR_NOT_SUPPORTED;
  *info = nvmlComputeInstanceProfileInfo_t{};
  info->id = profile;
  info->sliceCount = kCiSlices[profile];
  info->instanceCount = m->slices / kCiSlices[profile];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t* computeInstance) {
  fake_nvml_count(__func__);
  FakeNvmlMig* m = SlotOf(gpuInstance);
  if (m == nullptr || profileId >= sizeof kCiSlices / sizeof kCiSlices[0])
    return NVML_ERROR_INVALID_ARGUMENT;
  // The fake holds one compute instance per GPU instance, over all of it.
  if (m->has_ci || kCiSlices[profileId] != m->slices) return NVML_ERROR_NOT_SUPPORTED;
  m->has_ci = 1;
  *computeInstance = reinterpret_cast<nvmlComputeInstance_t>(m);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t* computeInstances,
                                                unsigned int* count) {
  fake_nvml_count(__func__);
  FakeNvmlMig* m = SlotOf(gpuInstance);
  if (m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = 0;
  if (m->has_ci && profileId < sizeof kCiSlices / sizeof kCiSlices[0] &&
      kCiSlices[profileId] == m->slices) {
    if (*count < 1) return NVML_ERROR_INSUFFICIENT_SIZE;
    computeInstances[n++] = reinterpret_cast<nvmlComputeInstance_t>(m);
  }
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  fake_nvml_count(__func__);
  FakeNvmlMig* m = SlotOf(computeInstance);
  if (m == nullptr || !m->has_ci) return NVML_ERROR_INVALID_ARGUMENT;
  m->has_ci = 0;
  return NVML_SUCCESS;
}

}  // extern "C"

#endif  // SHOAL_FAKE_NVML_OLD
