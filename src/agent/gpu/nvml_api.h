// Our own declarations of the parts of NVML (the NVIDIA Management Library)
// that the agent uses. No nvml.h exists at build time, and the agent must run
// on hosts without a driver, so nothing links against libnvidia-ml: the
// provider dlopens it and looks these functions up by name with dlsym.
//
// Every name, type, constant and signature below is copied from NVIDIA's
// documented C API, "NVML API Reference Guide"
// (https://docs.nvidia.com/deploy/nvml-api/), so the names keep NVML's
// spelling rather than ours: whoever checks them against the reference (or
// against nvml.h on a host that has it) can grep for them. Sections cited
// are those of that guide. The test suite's fake libnvidia-ml.so.1 defines
// these same prototypes, so the compiler checks both sides agree.
//
// The provider never calls these functions directly: it takes their types
// with decltype and calls through pointers from dlsym. A direct call would
// fail to link, which is intended.
#pragma once

// NOLINTBEGIN: C names and macros as NVML spells them.
extern "C" {

// "Return Values" (nvmlReturn_t). Only the codes the agent tells apart are
// named; others pass through as numbers to nvmlErrorString.
typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

// "Device Structs": an opaque handle, valid between nvmlInit and nvmlShutdown.
typedef struct nvmlDevice_st* nvmlDevice_t;

// "Device Structs" / nvmlMemory_t: bytes.
typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

// "Device Structs" / nvmlUtilization_t: percent of time over the past sample
// period that a kernel ran (gpu) or device memory was read or written (memory).
typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

// "Device Enums" / nvmlTemperatureSensors_t.
typedef enum nvmlTemperatureSensors_enum {
  NVML_TEMPERATURE_GPU = 0,
} nvmlTemperatureSensors_t;

// "Device Enums" / nvmlTemperatureThresholds_t.
typedef enum nvmlTemperatureThresholds_enum {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
  NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
  NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
} nvmlTemperatureThresholds_t;

// "Device Enums" / nvmlClockType_t.
typedef enum nvmlClockType_enum {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3,
} nvmlClockType_t;

// "Device Enums" / nvmlMemoryErrorType_t and nvmlEccCounterType_t.
typedef enum nvmlMemoryErrorType_enum {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum {
  NVML_VOLATILE_ECC = 0,   // since the driver loaded
  NVML_AGGREGATE_ECC = 1,  // over the board's life
} nvmlEccCounterType_t;

// "Device Enums" / nvmlEnableState_t.
typedef enum nvmlEnableState_enum {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1,
} nvmlEnableState_t;

// "Device Structs" / nvmlPciInfo_t, as filled by nvmlDeviceGetPciInfo_v3 and
// nvmlDeviceGetNvLinkRemotePciInfo_v2.
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "00000000:1B:00.0"
} nvmlPciInfo_t;

// "Device Queries" / buffer sizes for nvmlDeviceGetName and nvmlDeviceGetUUID.
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
// "System Queries" / the buffer size for nvmlSystemGetDriverVersion.
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

// "NvLink Methods": links are numbered 0 .. NVML_NVLINK_MAX_LINKS-1 (18 from
// Hopper on; older GPUs answer NVML_ERROR_INVALID_ARGUMENT past their last).
#define NVML_NVLINK_MAX_LINKS 18

// "Multi Instance GPU Management" / nvmlDeviceGetMigMode's modes.
#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE 0x1

// MIG: GPU instance profiles (NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0 to
// _1_SLICE_REV2 0x9; the REV1 ones add media engines), compute instance
// profiles (NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0x0 to _1_SLICE_REV1 0x7)
// and the shared-engine profile of a compute instance.
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0xA
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x8
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0

typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st* nvmlComputeInstance_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
  unsigned int id;  // what nvmlDeviceCreateGpuInstance takes
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;  // MiB
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlComputeInstanceProfileInfo_st {
  unsigned int id;  // what nvmlGpuInstanceCreateComputeInstance takes
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

// Of a MIG device: its instance's slices and memory.
typedef struct nvmlDeviceAttributes_st {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;  // MiB
} nvmlDeviceAttributes_t;

// "Event Handling Methods" / "Event Types" and nvmlEventData_t.
typedef struct nvmlEventSet_st* nvmlEventSet_t;
#define nvmlEventTypeXidCriticalError 0x0000000000000008LL
typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID code for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

// "Clocks Event Reasons" (formerly "Clock Throttle Reasons"): bits of
// nvmlDeviceGetCurrentClocksEventReasons. The agent passes the mask on
// unchanged; the names document what the simulated provider sets.
#define nvmlClocksEventReasonGpuIdle 0x0000000000000001ULL
#define nvmlClocksEventReasonSwPowerCap 0x0000000000000004ULL
#define nvmlClocksEventReasonSwThermalSlowdown 0x0000000000000020ULL
#define nvmlClocksEventReasonHwThermalSlowdown 0x0000000000000040ULL

// "Field Value Queries": the field ids the agent asks for.
#define NVML_FI_DEV_MEMORY_TEMP 82
// NVLink data throughput in KiB since the driver loaded; scopeId is a link,
// or UINT_MAX for the sum over all links.
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
typedef enum nvmlValueType_enum {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
} nvmlValueType_t;
typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
} nvmlValue_t;
typedef struct nvmlFieldValue_st {
  unsigned int fieldId;  // set by the caller
  unsigned int scopeId;  // set by the caller where the field has a scope (a link)
  long long timestamp;   // microseconds since 1970
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;  // this field's own result: `value` is good only on NVML_SUCCESS
  nvmlValue_t value;
} nvmlFieldValue_t;

// "Initialization and Cleanup".
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
// "Error reporting".
const char* nvmlErrorString(nvmlReturn_t result);

// "System Queries".
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length);

// "Device Queries".
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp);
nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                               nvmlTemperatureThresholds_t thresholdType,
                                               unsigned int* temp);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power);          // mW
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit);  // mW
nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                          unsigned int* minLimit,
                                                          unsigned int* maxLimit);  // mW
nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                      unsigned int* defaultLimit);        // mW
nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit);  // mW
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t* mode);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                 unsigned long long* energy);  // mJ
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                    unsigned int* clock);  // MHz
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType,
                                         unsigned long long* eccCounts);
// R535 renamed "throttle reasons" to "clocks event reasons"; older drivers
// only have the first name, newer ones keep it as a deprecated alias.
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* clocksEventReasons);
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long* clocksThrottleReasons);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                      nvmlFieldValue_t* values);
nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value);
nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs);
// Rows of HBM remapped after errors (Ampere on); `failureOccurred`: a remap failed.
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                       unsigned int* uncRows, unsigned int* isPending,
                                       unsigned int* failureOccurred);
// Only on platforms where the GPU's memory is itself a NUMA node (Grace
// Hopper); elsewhere NVML_ERROR_NOT_SUPPORTED.
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node);

// "NvLink Methods".
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* isActive);
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t* pci);

// "Multi Instance GPU Management".
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                  unsigned int* pendingMode);
// Needs root; on some GPUs the new mode is pending until the GPU is reset
// (`activationStatus` then says why it is not active yet).
nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t* activationStatus);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count);
// A MIG device (a compute instance, as CUDA sees it) by index 0..max-1;
// NVML_ERROR_NOT_FOUND for an index no instance holds.
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* migDevice);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id);
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t* info);
nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                         nvmlGpuInstance_t* gpuInstance);
// The GPU instances of a profile id; `count` in: room in the array, out: found.
nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t* gpuInstances, unsigned int* count);
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t* info);
nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t* computeInstance);
nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t* computeInstances,
                                                unsigned int* count);
nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance);

// "Event Handling Methods".
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

}  // extern "C"
// NOLINTEND
