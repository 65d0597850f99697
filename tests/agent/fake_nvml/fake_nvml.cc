// A fake libnvidia-ml.so.1 for the NVML provider's tests: every function of
// src/agent/gpu/nvml_api.h (whose prototypes it includes, so the compiler
// checks that both sides agree) over a small state the test controls (see
// fake_nvml.h). It behaves as NVML documents where the provider depends on
// it: calls before nvmlInit_v2 fail with NVML_ERROR_UNINITIALIZED, a short
// buffer with NVML_ERROR_INSUFFICIENT_SIZE, a link past the GPU's last with
// NVML_ERROR_INVALID_ARGUMENT, an empty event set with NVML_ERROR_TIMEOUT.

#include "fake_nvml.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "agent/gpu/nvml_api.h"

namespace {

FakeNvmlState g_state;
std::map<std::string, unsigned int> g_calls;

// One event set: which GPUs registered for XID events.
struct EventSet {
  bool registered[FAKE_NVML_MAX_GPUS] = {};
};

void Count(const char* function) {
  g_calls[function]++;
}

// A MIG device's slot, when `device` is one (the handles point at slots).
FakeNvmlMig* Mig(nvmlDevice_t device) {
  auto* m = reinterpret_cast<FakeNvmlMig*>(device);
  for (unsigned int i = 0; i < g_state.device_count && i < FAKE_NVML_MAX_GPUS; ++i) {
    for (FakeNvmlMig& slot : g_state.gpus[i].mig) {
      if (m == &slot && slot.used && slot.has_ci) return m;
    }
  }
  return nullptr;
}

FakeNvmlGpu* Gpu(nvmlDevice_t device) {
  auto* gpu = reinterpret_cast<FakeNvmlGpu*>(device);
  for (unsigned int i = 0; i < g_state.device_count && i < FAKE_NVML_MAX_GPUS; ++i) {
    if (gpu == &g_state.gpus[i]) return gpu;
  }
  return nullptr;
}

unsigned int IndexOf(const FakeNvmlGpu* gpu) {
  return static_cast<unsigned int>(gpu - g_state.gpus);
}

// The checks every device query starts with; NVML_SUCCESS to go on.
nvmlReturn_t CheckDevice(nvmlDevice_t device, FakeNvmlGpu** gpu, bool optional) {
  if (g_state.init_depth <= 0) return NVML_ERROR_UNINITIALIZED;
  *gpu = Gpu(device);
  if (*gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if ((*gpu)->lost) return NVML_ERROR_GPU_IS_LOST;
  if (optional && g_state.optional_fail != 0)
    return static_cast<nvmlReturn_t>(g_state.optional_fail);
  return NVML_SUCCESS;
}

nvmlReturn_t CopyString(const char* value, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (std::strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, value, std::strlen(value) + 1);
  return NVML_SUCCESS;
}

// The checks of the NvLink queries: the device's, then the link number's.
nvmlReturn_t CheckLink(nvmlDevice_t device, unsigned int link, FakeNvmlGpu** gpu) {
  if (nvmlReturn_t rc = CheckDevice(device, gpu, true); rc != NVML_SUCCESS) return rc;
  if ((*gpu)->links == 0) return NVML_ERROR_NOT_SUPPORTED;
  if (link >= (*gpu)->links || link >= FAKE_NVML_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

// A query that copies one field of the GPU: the shape of most of NVML.
template <typename T>
nvmlReturn_t ReadField(const char* function, nvmlDevice_t device, T* out, T FakeNvmlGpu::*field) {
  Count(function);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  *out = g->*field;
  return NVML_SUCCESS;
}

void FillPci(unsigned int domain, unsigned int bus, unsigned int device, nvmlPciInfo_t* pci) {
  *pci = nvmlPciInfo_t{};
  pci->domain = domain;
  pci->bus = bus;
  pci->device = device;
  pci->pciDeviceId = 0x233010DE;  // H100 SXM5 (device 0x2330, vendor NVIDIA)
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", domain & 0xffff, bus,
                device);
  std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", domain, bus, device);
}

// The PCI bus numbers of a DGX H100's eight GPUs.
constexpr unsigned int kDgxBuses[8] = {0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF};

}  // namespace

extern "C" {

FakeNvmlState* fake_nvml_state(void) {
  return &g_state;
}

void fake_nvml_count(const char* function) {
  Count(function);
}

unsigned int fake_nvml_calls(const char* function) {
  auto it = g_calls.find(function);
  return it == g_calls.end() ? 0 : it->second;
}

void fake_nvml_reset(void) {
  const int init_depth = g_state.init_depth;
  const int event_sets_open = g_state.event_sets_open;
  g_state = FakeNvmlState{};
  g_state.init_depth = init_depth;  // what the loaded copy has really seen
  g_state.event_sets_open = event_sets_open;
  g_calls.clear();
  g_state.device_count = 8;
  std::snprintf(g_state.driver_version, sizeof g_state.driver_version, "550.54.15");
  g_state.cuda_driver_version = 12040;  // CUDA 12.4, as driver 550 supports
  for (unsigned int i = 0; i < 8; ++i) {
    FakeNvmlGpu& g = g_state.gpus[i];
    std::snprintf(g.name, sizeof g.name, "NVIDIA H100 80GB HBM3");
    std::snprintf(g.uuid, sizeof g.uuid, "GPU-00000000-0000-0000-0000-00000000000%u", i);
    g.pci_bus = kDgxBuses[i];
    g.memory_total_bytes = 81559ULL << 20;
    g.memory_used_bytes = 4ULL << 20;
    g.temperature_c = 31;
    g.slowdown_c = 87;
    g.power_mw = 70'000;
    g.power_limit_mw = 700'000;
    g.power_min_mw = 200'000;
    g.power_max_mw = 700'000;
    g.power_default_mw = 700'000;
    g.energy_mj = 1'000'000;
    g.sm_clock_mhz = 345;
    g.ecc_supported = 1;
    g.clock_event_reasons = 0x1;  // idle
    g.links = FAKE_NVML_MAX_LINKS;
    for (int& link : g.nvlink)
      link = FAKE_NVML_NVSWITCH;
    g.mig_mode = NVML_DEVICE_MIG_DISABLE;
    g.mig_capable = 1;
    g.mig_next_gi = 1;
    g.persistence_mode = 1;
    g.numa_node = -1;
    g.mem_clock_mhz = 2619;
    g.memory_temp_c = 35;
  }
}

nvmlReturn_t nvmlInit_v2(void) {
  Count(__func__);
  if (g_state.init_result != NVML_SUCCESS) return static_cast<nvmlReturn_t>(g_state.init_result);
  g_state.init_depth++;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  Count(__func__);
  if (g_state.init_depth <= 0) return NVML_ERROR_UNINITIALIZED;
  g_state.init_depth--;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  Count(__func__);
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  Count(__func__);
  if (g_state.init_depth <= 0) return NVML_ERROR_UNINITIALIZED;
  if (g_state.optional_fail != 0) return static_cast<nvmlReturn_t>(g_state.optional_fail);
  return CopyString(g_state.driver_version, version, length);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  Count(__func__);
  if (g_state.init_depth <= 0) return NVML_ERROR_UNINITIALIZED;
  *deviceCount = g_state.device_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  Count(__func__);
  if (g_state.init_depth <= 0) return NVML_ERROR_UNINITIALIZED;
  if (index >= g_state.device_count || index >= FAKE_NVML_MAX_GPUS) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *device = reinterpret_cast<nvmlDevice_t>(&g_state.gpus[index]);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, false); rc != NVML_SUCCESS) return rc;
  return CopyString(g->name, name, length);
}

#ifndef SHOAL_FAKE_NVML_BROKEN
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  Count(__func__);
  if (const FakeNvmlMig* m = Mig(device)) return CopyString(m->uuid, uuid, length);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, false); rc != NVML_SUCCESS) return rc;
  return CopyString(g->uuid, uuid, length);
}
#endif

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  Count(__func__);
  if (const FakeNvmlMig* m = Mig(device)) {
    memory->total = m->memory_mib << 20;
    memory->used = m->used_mib << 20;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
  }
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, false); rc != NVML_SUCCESS) return rc;
  memory->total = g->memory_total_bytes;
  memory->used = g->memory_used_bytes;
  memory->free = g->memory_total_bytes - g->memory_used_bytes;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  Count(__func__);
  if (const FakeNvmlMig* m = Mig(device)) {
    if (m->util_pct == 0) return NVML_ERROR_NOT_SUPPORTED;
    utilization->gpu = m->util_pct;
    utilization->memory = 0;
    return NVML_SUCCESS;
  }
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  utilization->gpu = g->util_gpu_pct;
  utilization->memory = g->util_memory_pct;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = g->temperature_c;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                               nvmlTemperatureThresholds_t thresholdType,
                                               unsigned int* temp) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  switch (thresholdType) {
    case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
      *temp = g->slowdown_c;
      return NVML_SUCCESS;
    case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN:
      *temp = g->slowdown_c + 5;
      return NVML_SUCCESS;
    default:
      return NVML_ERROR_NOT_SUPPORTED;
  }
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return ReadField(__func__, device, power, &FakeNvmlGpu::power_mw);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  return ReadField(__func__, device, limit, &FakeNvmlGpu::power_limit_mw);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                          unsigned int* min_limit,
                                                          unsigned int* max_limit) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  *min_limit = g->power_min_mw;
  *max_limit = g->power_max_mw;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int* limit) {
  return ReadField(__func__, device, limit, &FakeNvmlGpu::power_default_mw);
}

nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, false); rc != NVML_SUCCESS) return rc;
  if (limit < g->power_min_mw || limit > g->power_max_mw) return NVML_ERROR_INVALID_ARGUMENT;
  g->power_limit_mw = limit;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t* mode) {
  int on = 0;
  const nvmlReturn_t rc = ReadField(__func__, device, &on, &FakeNvmlGpu::persistence_mode);
  if (rc == NVML_SUCCESS) *mode = on != 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return rc;
}

#ifndef SHOAL_FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) {
  return ReadField(__func__, device, energy, &FakeNvmlGpu::energy_mj);
}
#endif

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                    unsigned int* clock) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  if (type == NVML_CLOCK_MEM) {
    *clock = g->mem_clock_mhz;
    return NVML_SUCCESS;
  }
  if (type != NVML_CLOCK_SM && type != NVML_CLOCK_GRAPHICS) return NVML_ERROR_NOT_SUPPORTED;
  *clock = g->sm_clock_mhz;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  return ReadField(__func__, device, value, &FakeNvmlGpu::pcie_replays);
}

nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs) {
  *samplingPeriodUs = 167'000;
  return ReadField(__func__, device, utilization, &FakeNvmlGpu::enc_util_pct);
}

nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs) {
  *samplingPeriodUs = 167'000;
  return ReadField(__func__, device, utilization, &FakeNvmlGpu::dec_util_pct);
}

#ifndef SHOAL_FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                       unsigned int* uncRows, unsigned int* isPending,
                                       unsigned int* failureOccurred) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  *corrRows = g->remapped_correctable;
  *uncRows = g->remapped_uncorrectable;
  *isPending = 0;
  *failureOccurred = g->remap_failure;
  return NVML_SUCCESS;
}

// Memory temperature and NVLink throughput over all links; any other field
// or scope is NVML_ERROR_NOT_SUPPORTED in its own result.
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                      nvmlFieldValue_t* values) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& f = values[i];
    f.nvmlReturn = NVML_SUCCESS;
    const bool all_links = f.scopeId == 0xFFFFFFFFu;
    if (f.fieldId == NVML_FI_DEV_MEMORY_TEMP) {
      f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      f.value.uiVal = g->memory_temp_c;
    } else if (f.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX && all_links && g->links > 0) {
      f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
      f.value.ullVal = g->nvlink_tx_kib;
    } else if (f.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX && all_links && g->links > 0) {
      f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
      f.value.ullVal = g->nvlink_rx_kib;
    } else {
      f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
  }
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType,
                                         unsigned long long* eccCounts) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  if (!g->ecc_supported) return NVML_ERROR_NOT_SUPPORTED;
  // The fake keeps volatile counts only; the aggregate is reported as twice
  // them, so that a provider reading the wrong counter is caught.
  const unsigned long long scale = counterType == NVML_VOLATILE_ECC ? 1 : 2;
  *eccCounts = scale * (errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ? g->ecc_corrected
                                                                      : g->ecc_uncorrected);
  return NVML_SUCCESS;
}

#ifndef SHOAL_FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* clocksEventReasons) {
  return ReadField(__func__, device, clocksEventReasons, &FakeNvmlGpu::clock_event_reasons);
}
#endif

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long* clocksThrottleReasons) {
  return ReadField(__func__, device, clocksThrottleReasons, &FakeNvmlGpu::clock_event_reasons);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  FillPci(g->pci_domain, g->pci_bus, g->pci_device, pci);
  return NVML_SUCCESS;
}

#ifndef SHOAL_FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  if (g->numa_node < 0) return NVML_ERROR_NOT_SUPPORTED;
  *node = static_cast<unsigned int>(g->numa_node);
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* isActive) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckLink(device, link, &g); rc != NVML_SUCCESS) return rc;
  *isActive = g->nvlink[link] == FAKE_NVML_NO_LINK ? NVML_FEATURE_DISABLED : NVML_FEATURE_ENABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckLink(device, link, &g); rc != NVML_SUCCESS) return rc;
  const int peer = g->nvlink[link];
  if (peer == FAKE_NVML_NO_LINK) return NVML_ERROR_NOT_FOUND;
  if (peer == FAKE_NVML_NVSWITCH) {
    // Four switch chips, as on an HGX H100 board; links spread over them.
    FillPci(0, 0x05 + link % 4, 0, pci);
    return NVML_SUCCESS;
  }
  if (peer < 0 || static_cast<unsigned int>(peer) >= g_state.device_count) {
    return NVML_ERROR_UNKNOWN;
  }
  const FakeNvmlGpu& p = g_state.gpus[peer];
  FillPci(p.pci_domain, p.pci_bus, p.pci_device, pci);
  return NVML_SUCCESS;
}

#ifndef SHOAL_FAKE_NVML_OLD
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                  unsigned int* pendingMode) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  *currentMode = g->mig_mode;
  *pendingMode = g->mig_mode;
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  Count(__func__);
  if (g_state.init_depth <= 0) return NVML_ERROR_UNINITIALIZED;
  *set = reinterpret_cast<nvmlEventSet_t>(std::make_unique<EventSet>().release());
  g_state.event_sets_open++;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set) {
  Count(__func__);
  FakeNvmlGpu* g = nullptr;
  if (nvmlReturn_t rc = CheckDevice(device, &g, true); rc != NVML_SUCCESS) return rc;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if ((eventTypes & nvmlEventTypeXidCriticalError) == 0) return NVML_ERROR_NOT_SUPPORTED;
  reinterpret_cast<EventSet*>(set)->registered[IndexOf(g)] = true;
  return NVML_SUCCESS;
}

#ifndef SHOAL_FAKE_NVML_OLD
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms) {
  Count(__func__);
  (void)timeoutms;  // the fake never blocks: either an event is queued or not
  if (g_state.init_depth <= 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto* s = reinterpret_cast<const EventSet*>(set);
  for (unsigned int i = 0; i < g_state.xid_count; ++i) {
    const FakeNvmlXid xid = g_state.xids[i];
    if (xid.gpu >= FAKE_NVML_MAX_GPUS || !s->registered[xid.gpu]) continue;
    std::memmove(&g_state.xids[i], &g_state.xids[i + 1], (g_state.xid_count - i - 1) * sizeof xid);
    g_state.xid_count--;
    *data = nvmlEventData_t{};
    data->device = reinterpret_cast<nvmlDevice_t>(&g_state.gpus[xid.gpu]);
    data->eventType = nvmlEventTypeXidCriticalError;
    data->eventData = xid.xid;
    data->gpuInstanceId = 0xFFFFFFFF;
    data->computeInstanceId = 0xFFFFFFFF;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_TIMEOUT;
}
#endif

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  Count(__func__);
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::unique_ptr<EventSet> owned(reinterpret_cast<EventSet*>(set));
  g_state.event_sets_open--;
  return NVML_SUCCESS;
}

// libcuda's cuDriverGetVersion: the newest CUDA the driver supports.
int cuDriverGetVersion(int* version) {
  if (version == nullptr) return 1;  // CUDA_ERROR_INVALID_VALUE
  *version = fake_nvml_state()->cuda_driver_version;
  return 0;
}

}  // extern "C"

namespace {
// A fresh copy starts as a DGX H100, so that the fake is useful outside the
// tests too (shoal-gpu-probe --library ..., scripts/nvml-compare.sh's own check).
const bool g_started = (fake_nvml_reset(), true);
}  // namespace
