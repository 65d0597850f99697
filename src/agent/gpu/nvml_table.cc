#include "agent/gpu/nvml_table.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <utility>

namespace shoal::agent::nvml {

namespace {

template <typename Fn>
void Resolve(void* library, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(library, symbol));
}

}  // namespace

std::string ResolveAll(void* library, NvmlApi& api) {
#define SHOAL_NVML_RESOLVE(name) Resolve(library, #name, api.name)
  SHOAL_NVML_RESOLVE(nvmlInit_v2);
  SHOAL_NVML_RESOLVE(nvmlShutdown);
  SHOAL_NVML_RESOLVE(nvmlErrorString);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetCount_v2);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetHandleByIndex_v2);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetName);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetUUID);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetMemoryInfo);
  SHOAL_NVML_RESOLVE(nvmlSystemGetDriverVersion);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetUtilizationRates);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetTemperature);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetTemperatureThreshold);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetPowerUsage);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetEnforcedPowerLimit);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetPowerManagementLimitConstraints);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetPowerManagementDefaultLimit);
  SHOAL_NVML_RESOLVE(nvmlDeviceSetPowerManagementLimit);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetPersistenceMode);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetTotalEnergyConsumption);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetClockInfo);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetTotalEccErrors);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetCurrentClocksEventReasons);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetCurrentClocksThrottleReasons);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetPciInfo_v3);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetNumaNodeId);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetNvLinkState);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetNvLinkRemotePciInfo_v2);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetMigMode);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetFieldValues);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetPcieReplayCounter);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetEncoderUtilization);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetDecoderUtilization);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetRemappedRows);
  SHOAL_NVML_RESOLVE(nvmlEventSetCreate);
  SHOAL_NVML_RESOLVE(nvmlDeviceRegisterEvents);
  SHOAL_NVML_RESOLVE(nvmlEventSetWait_v2);
  SHOAL_NVML_RESOLVE(nvmlEventSetFree);
  SHOAL_NVML_RESOLVE(nvmlDeviceSetMigMode);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetMaxMigDeviceCount);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetMigDeviceHandleByIndex);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetGpuInstanceId);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetComputeInstanceId);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetAttributes_v2);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetGpuInstanceProfileInfo);
  SHOAL_NVML_RESOLVE(nvmlDeviceCreateGpuInstance);
  SHOAL_NVML_RESOLVE(nvmlDeviceGetGpuInstances);
  SHOAL_NVML_RESOLVE(nvmlGpuInstanceDestroy);
  SHOAL_NVML_RESOLVE(nvmlGpuInstanceGetComputeInstanceProfileInfo);
  SHOAL_NVML_RESOLVE(nvmlGpuInstanceCreateComputeInstance);
  SHOAL_NVML_RESOLVE(nvmlGpuInstanceGetComputeInstances);
  SHOAL_NVML_RESOLVE(nvmlComputeInstanceDestroy);
#undef SHOAL_NVML_RESOLVE
  const std::array<std::pair<const char*, bool>, 8> required = {{
      {"nvmlInit_v2", api.nvmlInit_v2 != nullptr},
      {"nvmlShutdown", api.nvmlShutdown != nullptr},
      {"nvmlErrorString", api.nvmlErrorString != nullptr},
      {"nvmlDeviceGetCount_v2", api.nvmlDeviceGetCount_v2 != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", api.nvmlDeviceGetHandleByIndex_v2 != nullptr},
      {"nvmlDeviceGetName", api.nvmlDeviceGetName != nullptr},
      {"nvmlDeviceGetUUID", api.nvmlDeviceGetUUID != nullptr},
      {"nvmlDeviceGetMemoryInfo", api.nvmlDeviceGetMemoryInfo != nullptr},
  }};
  for (const auto& [name, found] : required) {
    if (!found) return name;
  }
  return "";
}

Status Failure(const NvmlApi& api, std::string_view call, nvmlReturn_t rc) {
  const char* text = api.nvmlErrorString != nullptr ? api.nvmlErrorString(rc) : nullptr;
  return Status(StatusCode::kUnavailable,
                fmt::format("NVML: {} failed: {} (NVML error {})", call,
                            text != nullptr ? text : "unknown error", static_cast<int>(rc)));
}

}  // namespace shoal::agent::nvml
