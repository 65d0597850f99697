// The NVML functions Shoal calls, resolved by name from the library that
// dlopen loaded (nvml_api.h says why there is no link-time dependency).
// Shared by the provider and its MIG code (nvml_mig.h).
#pragma once

#include <string>
#include <string_view>

#include "agent/gpu/nvml_api.h"
#include "core/status.h"

namespace shoal::agent::nvml {

// The NVML functions the provider calls, resolved by name when the library
// is opened. Members carry NVML's own names so that each can be checked
// against the reference; a null member is a function this library lacks.
struct NvmlApi {
  decltype(&::nvmlInit_v2) nvmlInit_v2 = nullptr;
  decltype(&::nvmlShutdown) nvmlShutdown = nullptr;
  decltype(&::nvmlErrorString) nvmlErrorString = nullptr;
  decltype(&::nvmlDeviceGetCount_v2) nvmlDeviceGetCount_v2 = nullptr;
  decltype(&::nvmlDeviceGetHandleByIndex_v2) nvmlDeviceGetHandleByIndex_v2 = nullptr;
  decltype(&::nvmlDeviceGetName) nvmlDeviceGetName = nullptr;
  decltype(&::nvmlDeviceGetUUID) nvmlDeviceGetUUID = nullptr;
  decltype(&::nvmlDeviceGetMemoryInfo) nvmlDeviceGetMemoryInfo = nullptr;
  // Optional from here on.
  decltype(&::nvmlSystemGetDriverVersion) nvmlSystemGetDriverVersion = nullptr;
  decltype(&::nvmlDeviceGetUtilizationRates) nvmlDeviceGetUtilizationRates = nullptr;
  decltype(&::nvmlDeviceGetTemperature) nvmlDeviceGetTemperature = nullptr;
  decltype(&::nvmlDeviceGetTemperatureThreshold) nvmlDeviceGetTemperatureThreshold = nullptr;
  decltype(&::nvmlDeviceGetPowerUsage) nvmlDeviceGetPowerUsage = nullptr;
  decltype(&::nvmlDeviceGetEnforcedPowerLimit) nvmlDeviceGetEnforcedPowerLimit = nullptr;
  decltype(&::nvmlDeviceGetPowerManagementLimitConstraints)
      nvmlDeviceGetPowerManagementLimitConstraints = nullptr;
  decltype(&::nvmlDeviceGetPowerManagementDefaultLimit) nvmlDeviceGetPowerManagementDefaultLimit =
      nullptr;
  decltype(&::nvmlDeviceSetPowerManagementLimit) nvmlDeviceSetPowerManagementLimit = nullptr;
  decltype(&::nvmlDeviceGetPersistenceMode) nvmlDeviceGetPersistenceMode = nullptr;
  decltype(&::nvmlDeviceGetTotalEnergyConsumption) nvmlDeviceGetTotalEnergyConsumption = nullptr;
  decltype(&::nvmlDeviceGetClockInfo) nvmlDeviceGetClockInfo = nullptr;
  decltype(&::nvmlDeviceGetTotalEccErrors) nvmlDeviceGetTotalEccErrors = nullptr;
  decltype(&::nvmlDeviceGetCurrentClocksEventReasons) nvmlDeviceGetCurrentClocksEventReasons =
      nullptr;
  decltype(&::nvmlDeviceGetCurrentClocksThrottleReasons) nvmlDeviceGetCurrentClocksThrottleReasons =
      nullptr;
  decltype(&::nvmlDeviceGetPciInfo_v3) nvmlDeviceGetPciInfo_v3 = nullptr;
  decltype(&::nvmlDeviceGetNumaNodeId) nvmlDeviceGetNumaNodeId = nullptr;
  decltype(&::nvmlDeviceGetNvLinkState) nvmlDeviceGetNvLinkState = nullptr;
  decltype(&::nvmlDeviceGetNvLinkRemotePciInfo_v2) nvmlDeviceGetNvLinkRemotePciInfo_v2 = nullptr;
  decltype(&::nvmlDeviceGetMigMode) nvmlDeviceGetMigMode = nullptr;
  decltype(&::nvmlEventSetCreate) nvmlEventSetCreate = nullptr;
  decltype(&::nvmlDeviceRegisterEvents) nvmlDeviceRegisterEvents = nullptr;
  decltype(&::nvmlEventSetWait_v2) nvmlEventSetWait_v2 = nullptr;
  decltype(&::nvmlEventSetFree) nvmlEventSetFree = nullptr;
  decltype(&::nvmlDeviceGetFieldValues) nvmlDeviceGetFieldValues = nullptr;
  decltype(&::nvmlDeviceGetPcieReplayCounter) nvmlDeviceGetPcieReplayCounter = nullptr;
  decltype(&::nvmlDeviceGetEncoderUtilization) nvmlDeviceGetEncoderUtilization = nullptr;
  decltype(&::nvmlDeviceGetDecoderUtilization) nvmlDeviceGetDecoderUtilization = nullptr;
  decltype(&::nvmlDeviceGetRemappedRows) nvmlDeviceGetRemappedRows = nullptr;
  // MIG.
  decltype(&::nvmlDeviceSetMigMode) nvmlDeviceSetMigMode = nullptr;
  decltype(&::nvmlDeviceGetMaxMigDeviceCount) nvmlDeviceGetMaxMigDeviceCount = nullptr;
  decltype(&::nvmlDeviceGetMigDeviceHandleByIndex) nvmlDeviceGetMigDeviceHandleByIndex = nullptr;
  decltype(&::nvmlDeviceGetGpuInstanceId) nvmlDeviceGetGpuInstanceId = nullptr;
  decltype(&::nvmlDeviceGetComputeInstanceId) nvmlDeviceGetComputeInstanceId = nullptr;
  decltype(&::nvmlDeviceGetAttributes_v2) nvmlDeviceGetAttributes_v2 = nullptr;
  decltype(&::nvmlDeviceGetGpuInstanceProfileInfo) nvmlDeviceGetGpuInstanceProfileInfo = nullptr;
  decltype(&::nvmlDeviceCreateGpuInstance) nvmlDeviceCreateGpuInstance = nullptr;
  decltype(&::nvmlDeviceGetGpuInstances) nvmlDeviceGetGpuInstances = nullptr;
  decltype(&::nvmlGpuInstanceDestroy) nvmlGpuInstanceDestroy = nullptr;
  decltype(&::nvmlGpuInstanceGetComputeInstanceProfileInfo)
      nvmlGpuInstanceGetComputeInstanceProfileInfo = nullptr;
  decltype(&::nvmlGpuInstanceCreateComputeInstance) nvmlGpuInstanceCreateComputeInstance = nullptr;
  decltype(&::nvmlGpuInstanceGetComputeInstances) nvmlGpuInstanceGetComputeInstances = nullptr;
  decltype(&::nvmlComputeInstanceDestroy) nvmlComputeInstanceDestroy = nullptr;
};

// Looks every function up in `library` (a dlopen handle); the name of the
// first required one missing, or empty when all required ones are there.
std::string ResolveAll(void* library, NvmlApi& api);

// "NVML: CALL failed: TEXT (NVML error N)", as kUnavailable.
Status Failure(const NvmlApi& api, std::string_view call, nvmlReturn_t rc);

// Calls an optional function: NVML_ERROR_FUNCTION_NOT_FOUND when the library
// lacks it, so that callers treat "missing" and "not supported" alike.
template <typename Fn, typename... Args>
nvmlReturn_t CallOptional(Fn fn, Args... args) {
  if (fn == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
  return fn(args...);
}

}  // namespace shoal::agent::nvml
