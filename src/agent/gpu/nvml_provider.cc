// NvmlProvider: GPUs through NVML, loaded with dlopen (see nvml_api.h for
// why there is no link-time dependency).
//
// Functions every supported driver has (init, count, handles, name, UUID,
// memory) are required: without them there is nothing to report, and the
// provider does not open. Everything else is optional and read defensively:
// a function the library lacks (older or newer driver) or that the GPU does
// not support (ECC on a GeForce, NVLink on a PCIe card) leaves its field 0.

#include "agent/gpu/nvml_provider.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/gpu/nvml_api.h"
#include "agent/gpu/nvml_mig.h"
#include "agent/gpu/nvml_table.h"
#include "catalog/gpus.h"
#include "core/log.h"
#include "core/strings.h"

namespace shoal::agent {

namespace {

using nvml::CallOptional;
using nvml::NvmlApi;

constexpr double kMib = 1024.0 * 1024.0;
// The XID the driver logs when a GPU stops answering ("GPU has fallen off
// the bus", NVIDIA's XID catalogue). NVML reports such a GPU as
// NVML_ERROR_GPU_IS_LOST; the provider reports it as this XID so that the
// agent's health check, which watches XIDs, marks the GPU unhealthy.
constexpr int kXidFallenOffBus = 79;
// Events drained per Sample at most: a GPU in an XID storm must not stall
// telemetry (a limit on every loop).
constexpr int kMaxEventsPerSample = 1024;

Status NvmlUnavailable(std::string message) {
  return Status(StatusCode::kUnavailable, "NVML is not available: " + std::move(message));
}

// What to check when nvmlInit_v2 fails, by its code.
std::string_view InitHint(nvmlReturn_t code) {
  switch (code) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "is the NVIDIA kernel driver loaded? `nvidia-smi` says the same";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "the NVML library and the kernel driver are from different driver versions; "
             "reload the driver or reboot";
    case NVML_ERROR_NO_PERMISSION:
      return "this user may not open /dev/nvidia*";
    default:
      return "`nvidia-smi` should report the same problem";
  }
}

// "00000000:1B:00.0" (NVML) -> "0000:1b:00.0" (Linux sysfs): the kernel
// names PCI devices with a 4-digit domain in lower case.
std::string SysfsBusId(std::string_view nvml_bus_id) {
  std::string id = ToLower(nvml_bus_id);
  const size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) {
    const size_t extra = colon - 4;
    if (id.find_first_not_of('0') >= extra) id.erase(0, extra);
  }
  return id;
}

// The NUMA node of the PCI slot (the CPU node nearest the GPU), or -1.
int SysfsNumaNode(const std::string& sysfs_pci_root, std::string_view nvml_bus_id) {
  if (nvml_bus_id.empty()) return -1;
  std::ifstream in(fmt::format("{}/{}/numa_node", sysfs_pci_root, SysfsBusId(nvml_bus_id)));
  int node = -1;
  if (!(in >> node)) return -1;
  return node;
}

// A PCI location that identifies a GPU at either end of an NVLink.
struct PciKey {
  unsigned int domain = 0;
  unsigned int bus = 0;
  unsigned int device = 0;
  friend bool operator==(const PciKey&, const PciKey&) = default;
};

PciKey KeyOf(const nvmlPciInfo_t& pci) {
  return PciKey{pci.domain, pci.bus, pci.device};
}

// Union-find over GPU indices (plus one slot standing for "the NVSwitch
// fabric"), for NVLink islands.
class Islands {
 public:
  explicit Islands(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), size_t{0}); }
  size_t Find(size_t x) {
    while (parent_[x] != x)
      x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Join(size_t a, size_t b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<size_t> parent_;
};

// Per-GPU state the provider keeps between samples.
struct Device {
  nvmlDevice_t handle = nullptr;
  uint64_t xid_errors = 0;
  int last_xid = 0;
  bool lost = false;              // NVML said NVML_ERROR_GPU_IS_LOST once
  unsigned int own_limit_mw = 0;  // the power limit it was discovered with (a cap restores it)
  int64_t memory_mib = 0;         // as discovered
};

// What the provider reports as one GPU: a whole physical GPU, or a MIG
// device of one.
struct Unit {
  size_t device = 0;           // into devices_
  nvmlDevice_t mig = nullptr;  // the MIG device; null: the whole GPU
  double share = 1;            // of the GPU's power and energy
};

// NVML behind the GpuProvider interface. It owns the dlopen handle, NVML's
// initialisation (nvmlInit_v2 in OpenNvml, nvmlShutdown here) and the XID
// event set. Handles are taken once when opened: a GPU added or removed
// later needs an agent restart, as with the driver itself. Not thread-safe
// (one telemetry thread, as GpuProvider says).
class NvmlProvider final : public GpuProvider {
 public:
  NvmlProvider(void* library, NvmlApi api, NvmlOptions options)
      : library_(library), api_(api), options_(std::move(options)) {}
  ~NvmlProvider() override {
    profiler_.reset();  // DCGM stops before NVML shuts down under it
    if (event_set_ != nullptr) (void)api_.nvmlEventSetFree(event_set_);
    (void)api_.nvmlShutdown();
    dlclose(library_);
  }
  NvmlProvider(const NvmlProvider&) = delete;
  NvmlProvider& operator=(const NvmlProvider&) = delete;

  std::string_view kind() const override { return "nvml"; }

  // Takes the handles and subscribes to XID events; after nvmlInit_v2.
  Status Start() {
    unsigned int count = 0;
    nvmlReturn_t rc = api_.nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS) return Failure("nvmlDeviceGetCount_v2", rc);
    devices_.resize(count);
    for (unsigned int i = 0; i < count; ++i) {
      rc = api_.nvmlDeviceGetHandleByIndex_v2(i, &devices_[i].handle);
      if (rc != NVML_SUCCESS)
        return Failure(fmt::format("nvmlDeviceGetHandleByIndex_v2({})", i), rc);
      units_.push_back({.device = i});  // whole until Discover finds MIG devices
    }
    // Without the event API the XID count stays 0; the other health signals
    // (ECC, temperature) still work.
    const bool events = api_.nvmlEventSetWait_v2 != nullptr && api_.nvmlEventSetFree != nullptr;
    if (count > 0 && events && CallOptional(api_.nvmlEventSetCreate, &event_set_) == NVML_SUCCESS) {
      for (const Device& d : devices_) {
        // A GPU that cannot report XIDs (NVML_ERROR_NOT_SUPPORTED) is simply
        // not watched.
        (void)CallOptional(api_.nvmlDeviceRegisterEvents, d.handle,
                           static_cast<unsigned long long>(nvmlEventTypeXidCriticalError),
                           event_set_);
      }
    }
    if (count > 0 && !options_.dcgm_libraries.empty()) {
      std::string why;
      profiler_ = OpenDcgmProfiler(options_.dcgm_libraries, &why);
      if (profiler_ == nullptr) log::Info("dcgm.profiling_off", {{"why", why}});
    }
    return Status::Ok();
  }

  // The GPUs and the MIG devices of GPUs in MIG mode (a GPU in MIG mode
  // without instances offers nothing to run on).
  Result<std::vector<GpuDevice>> Discover() override {
    SHOAL_ASSIGN_OR_RETURN(const std::vector<GpuDevice> physical, DiscoverPhysical());
    std::vector<GpuDevice> out;
    units_.clear();
    for (size_t i = 0; i < physical.size(); ++i) {
      const GpuDevice& gpu = physical[i];
      if (!gpu.mig_enabled) {
        units_.push_back({.device = i});
        out.push_back(gpu);
        continue;
      }
      auto slices = nvml::ListMigDevices(api_, devices_[i].handle, gpu.memory_mib);
      if (!slices.ok()) {
        log::Warning("gpu.mig_unreadable",
                     {{"gpu", gpu.index}, {"error", slices.status().message()}});
        continue;
      }
      for (const nvml::MigDevice& m : *slices) {
        GpuDevice slice = gpu;
        slice.uuid = m.uuid;
        slice.name = fmt::format("{} MIG {}", gpu.name, m.profile);
        slice.model = fmt::format("{}/{}", gpu.model, m.profile);
        slice.memory_mib = m.memory_mib;
        slice.power_limit_w = gpu.power_limit_w * m.share;
        slice.mig_profile = m.profile;
        slice.mig_gi = m.gi;
        slice.mig_ci = m.ci;
        slice.mig_index = m.index;
        units_.push_back({.device = i, .mig = m.handle, .share = m.share});
        out.push_back(std::move(slice));
      }
    }
    for (size_t u = 0; u < out.size(); ++u)
      out[u].index = static_cast<int>(u);
    return out;
  }

  Status SetMigLayout(int device, const std::vector<std::string>& profiles) override {
    if (device < 0 || static_cast<size_t>(device) >= devices_.size())
      return InvalidArgument(fmt::format("no GPU {}", device));
    const Device& d = devices_[static_cast<size_t>(device)];
    return nvml::ApplyMigLayout(api_, d.handle, d.memory_mib, profiles);
  }

  Result<std::vector<GpuDevice>> DiscoverPhysical() {
    std::vector<GpuDevice> gpus;
    std::vector<PciKey> pci_keys;
    gpus.reserve(devices_.size());
    // The driver's version, for the exporter's DCGM_FI_DRIVER_VERSION label.
    std::array<char, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE> driver{};
    if (CallOptional(api_.nvmlSystemGetDriverVersion, driver.data(),
                     static_cast<unsigned int>(driver.size())) != NVML_SUCCESS)
      driver[0] = '\0';
    for (size_t i = 0; i < devices_.size(); ++i) {
      nvmlDevice_t h = devices_[i].handle;
      GpuDevice gpu;
      gpu.index = static_cast<int>(i);
      gpu.device = static_cast<int>(i);
      gpu.driver_version = driver.data();

      std::array<char, NVML_DEVICE_NAME_V2_BUFFER_SIZE> name{};
      nvmlReturn_t rc = api_.nvmlDeviceGetName(h, name.data(), name.size());
      if (rc != NVML_SUCCESS) return Failure(fmt::format("nvmlDeviceGetName(GPU {})", i), rc);
      gpu.name = name.data();
      std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> uuid{};
      rc = api_.nvmlDeviceGetUUID(h, uuid.data(), uuid.size());
      if (rc != NVML_SUCCESS) return Failure(fmt::format("nvmlDeviceGetUUID(GPU {})", i), rc);
      gpu.uuid = uuid.data();
      nvmlMemory_t memory{};
      rc = api_.nvmlDeviceGetMemoryInfo(h, &memory);
      if (rc != NVML_SUCCESS) return Failure(fmt::format("nvmlDeviceGetMemoryInfo(GPU {})", i), rc);
      gpu.memory_mib = static_cast<int64_t>(memory.total / (1024ULL * 1024ULL));
      devices_[i].memory_mib = gpu.memory_mib;

      const catalog::GpuSpec* spec = catalog::FindGpuByDeviceName(gpu.name, gpu.memory_mib);
      gpu.model = spec != nullptr ? std::string(spec->model) : gpu.name;

      nvmlPciInfo_t pci{};
      if (CallOptional(api_.nvmlDeviceGetPciInfo_v3, h, &pci) == NVML_SUCCESS) {
        gpu.pci_bus_id = pci.busId;
        pci_keys.push_back(KeyOf(pci));
      } else {
        pci_keys.push_back(PciKey{~0u, ~0u, ~0u});  // matches no link's far end
      }
      gpu.numa_node = NumaNode(h, gpu.pci_bus_id);

      unsigned int mig_current = 0;
      unsigned int mig_pending = 0;
      if (CallOptional(api_.nvmlDeviceGetMigMode, h, &mig_current, &mig_pending) == NVML_SUCCESS) {
        gpu.mig_enabled = mig_current == NVML_DEVICE_MIG_ENABLE;
      }
      nvmlEnableState_t persistence = NVML_FEATURE_DISABLED;
      if (CallOptional(api_.nvmlDeviceGetPersistenceMode, h, &persistence) == NVML_SUCCESS)
        gpu.persistence_mode = persistence == NVML_FEATURE_ENABLED ? 1 : 0;
      unsigned int limit_mw = 0;
      if (CallOptional(api_.nvmlDeviceGetEnforcedPowerLimit, h, &limit_mw) == NVML_SUCCESS) {
        gpu.power_limit_w = limit_mw / 1000.0;
        if (devices_[i].own_limit_mw == 0) devices_[i].own_limit_mw = limit_mw;
      }
      unsigned int slowdown_c = 0;
      if (CallOptional(api_.nvmlDeviceGetTemperatureThreshold, h,
                       NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &slowdown_c) == NVML_SUCCESS) {
        gpu.temperature_limit_c = slowdown_c;
      }
      gpus.push_back(std::move(gpu));
    }
    AssignIslands(pci_keys, gpus);
    return gpus;
  }

  // NVML needs root for this (the agent runs as root); the GPU's own range
  // comes from its constraints.
  Status SetPowerCap(int index, double watts) override {
    if (index < 0 || static_cast<size_t>(index) >= units_.size())
      return InvalidArgument(fmt::format("no GPU {}", index));
    const Unit& unit = units_[static_cast<size_t>(index)];
    if (unit.mig != nullptr)
      return FailedPrecondition(fmt::format("GPU {} is a MIG slice of a shared GPU", index));
    Device& d = devices_[unit.device];
    unsigned int target_mw = d.own_limit_mw;
    if (watts == 0 && target_mw == 0) {
      const nvmlReturn_t rc =
          CallOptional(api_.nvmlDeviceGetPowerManagementDefaultLimit, d.handle, &target_mw);
      if (rc != NVML_SUCCESS) return Failure("nvmlDeviceGetPowerManagementDefaultLimit", rc);
    } else if (watts != 0) {
      target_mw = static_cast<unsigned int>(std::llround(watts * 1000));
      unsigned int min_mw = 0;
      unsigned int max_mw = 0;
      if (CallOptional(api_.nvmlDeviceGetPowerManagementLimitConstraints, d.handle, &min_mw,
                       &max_mw) == NVML_SUCCESS &&
          (target_mw < min_mw || target_mw > max_mw)) {
        return InvalidArgument(fmt::format("GPU {} takes a power limit from {} to {} W, not {:.0f}",
                                           index, min_mw / 1000, max_mw / 1000, watts));
      }
    }
    const nvmlReturn_t rc =
        CallOptional(api_.nvmlDeviceSetPowerManagementLimit, d.handle, target_mw);
    if (rc != NVML_SUCCESS) return Failure("nvmlDeviceSetPowerManagementLimit", rc);
    return Status::Ok();
  }

  // Each unit's reading: a MIG device's own memory (and utilisation where
  // the driver gives it per instance), the rest its GPU's, with power and
  // energy in proportion to its compute slices.
  Result<std::vector<GpuSample>> Sample() override {
    SHOAL_ASSIGN_OR_RETURN(const std::vector<GpuSample> physical, SamplePhysical());
    std::vector<GpuSample> out;
    out.reserve(units_.size());
    for (size_t u = 0; u < units_.size(); ++u) {
      const Unit& unit = units_[u];
      GpuSample s = physical[unit.device];
      s.index = static_cast<int>(u);
      if (unit.mig != nullptr) {
        s.power_w *= unit.share;
        s.energy_j *= unit.share;
        s.counters = {};
        s.util_pct = 0;
        s.mem_copy_util_pct = 0;
        nvmlUtilization_t util{};
        if (CallOptional(api_.nvmlDeviceGetUtilizationRates, unit.mig, &util) == NVML_SUCCESS) {
          s.util_pct = util.gpu;
          s.mem_copy_util_pct = util.memory;
        }
        nvmlMemory_t memory{};
        if (api_.nvmlDeviceGetMemoryInfo(unit.mig, &memory) == NVML_SUCCESS) {
          s.fb_used_mib = static_cast<int64_t>(static_cast<double>(memory.used) / kMib);
          s.fb_free_mib = static_cast<int64_t>(static_cast<double>(memory.free) / kMib);
        }
      }
      out.push_back(std::move(s));
    }
    return out;
  }

  Result<std::vector<GpuSample>> SamplePhysical() {
    DrainXidEvents();
    std::vector<GpuSample> samples;
    samples.reserve(devices_.size());
    for (size_t i = 0; i < devices_.size(); ++i) {
      Device& d = devices_[i];
      nvmlDevice_t h = d.handle;
      GpuSample s;
      s.index = static_cast<int>(i);
      // Every reading is optional here: one the GPU cannot give stays 0
      // rather than costing the node its whole report.
      bool gone = false;
      auto ok = [&gone](nvmlReturn_t rc) {
        gone = gone || rc == NVML_ERROR_GPU_IS_LOST;
        return rc == NVML_SUCCESS;
      };
      nvmlUtilization_t util{};
      if (ok(CallOptional(api_.nvmlDeviceGetUtilizationRates, h, &util))) {
        s.util_pct = util.gpu;
        s.mem_copy_util_pct = util.memory;
      }
      nvmlMemory_t memory{};
      if (ok(api_.nvmlDeviceGetMemoryInfo(h, &memory))) {
        s.fb_used_mib = static_cast<int64_t>(static_cast<double>(memory.used) / kMib);
        s.fb_free_mib = static_cast<int64_t>(static_cast<double>(memory.free) / kMib);
      }
      unsigned int value = 0;
      if (ok(CallOptional(api_.nvmlDeviceGetTemperature, h, NVML_TEMPERATURE_GPU, &value))) {
        s.temperature_c = value;
      }
      if (ok(CallOptional(api_.nvmlDeviceGetPowerUsage, h, &value))) s.power_w = value / 1000.0;
      if (ok(CallOptional(api_.nvmlDeviceGetClockInfo, h, NVML_CLOCK_SM, &value))) {
        s.sm_clock_mhz = value;
      }
      unsigned long long counter = 0;
      if (ok(CallOptional(api_.nvmlDeviceGetTotalEnergyConsumption, h, &counter))) {
        s.energy_j = static_cast<double>(counter) / 1000.0;
      }
      if (ok(CallOptional(api_.nvmlDeviceGetTotalEccErrors, h, NVML_MEMORY_ERROR_TYPE_CORRECTED,
                          NVML_VOLATILE_ECC, &counter))) {
        s.ecc_corrected = counter;
      }
      if (ok(CallOptional(api_.nvmlDeviceGetTotalEccErrors, h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                          NVML_VOLATILE_ECC, &counter))) {
        s.ecc_uncorrected = counter;
      }
      nvmlReturn_t rc = CallOptional(api_.nvmlDeviceGetCurrentClocksEventReasons, h, &counter);
      if (rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
        rc = CallOptional(api_.nvmlDeviceGetCurrentClocksThrottleReasons, h, &counter);
      }
      if (ok(rc)) s.clock_event_reasons = counter;
      ReadCounters(h, s.counters, ok);

      if (gone && !d.lost) {
        d.lost = true;
        d.xid_errors++;
        d.last_xid = kXidFallenOffBus;
      }
      s.xid_errors = d.xid_errors;
      s.last_xid = d.last_xid;
      samples.push_back(s);
    }
    if (profiler_ != nullptr) {
      std::vector<api::GpuCounters*> counters;
      for (GpuSample& s : samples)
        counters.push_back(&s.counters);
      profiler_->Read(counters);
    }
    return samples;
  }

 private:
  // The rest of dcgm-exporter's default counters (api::GpuCounters), each
  // only when the GPU gives it.
  template <typename Ok>
  void ReadCounters(nvmlDevice_t h, api::GpuCounters& c, Ok&& ok) {
    unsigned int value = 0, period = 0;
    if (ok(CallOptional(api_.nvmlDeviceGetClockInfo, h, NVML_CLOCK_MEM, &value))) {
      c.mem_clock_mhz = value;
    }
    if (ok(CallOptional(api_.nvmlDeviceGetPcieReplayCounter, h, &value))) c.pcie_replays = value;
    if (ok(CallOptional(api_.nvmlDeviceGetEncoderUtilization, h, &value, &period))) {
      c.enc_util_pct = value;
    }
    if (ok(CallOptional(api_.nvmlDeviceGetDecoderUtilization, h, &value, &period))) {
      c.dec_util_pct = value;
    }
    unsigned int corrected = 0, uncorrected = 0, pending = 0, failed = 0;
    if (ok(CallOptional(api_.nvmlDeviceGetRemappedRows, h, &corrected, &uncorrected, &pending,
                        &failed))) {
      c.remapped_rows_correctable = corrected;
      c.remapped_rows_uncorrectable = uncorrected;
      c.row_remap_failed = failed != 0;
    }
    nvmlFieldValue_t fields[3] = {};
    fields[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
    fields[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
    fields[2].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
    fields[1].scopeId = fields[2].scopeId = std::numeric_limits<unsigned int>::max();  // all links
    if (!ok(CallOptional(api_.nvmlDeviceGetFieldValues, h, 3, fields))) return;
    if (auto v = FieldNumber(fields[0])) c.memory_temp_c = *v;
    auto tx = FieldNumber(fields[1]), rx = FieldNumber(fields[2]);
    if (tx && rx) c.nvlink_kib = static_cast<uint64_t>(*tx + *rx);
  }

  // A field's value as a number, when NVML gave it.
  static std::optional<double> FieldNumber(const nvmlFieldValue_t& f) {
    if (f.nvmlReturn != NVML_SUCCESS) return std::nullopt;
    switch (f.valueType) {
      case NVML_VALUE_TYPE_DOUBLE:
        return f.value.dVal;
      case NVML_VALUE_TYPE_UNSIGNED_INT:
        return f.value.uiVal;
      case NVML_VALUE_TYPE_UNSIGNED_LONG:
        return static_cast<double>(f.value.ulVal);
      case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        return static_cast<double>(f.value.ullVal);
      case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        return static_cast<double>(f.value.sllVal);
      case NVML_VALUE_TYPE_SIGNED_INT:
        return f.value.siVal;
    }
    return std::nullopt;
  }

  Status Failure(std::string_view call, nvmlReturn_t rc) const {
    return nvml::Failure(api_, call, rc);
  }

  // The CPU NUMA node nearest the GPU, which is what CPU placement needs:
  // the PCI slot's node from sysfs first. nvmlDeviceGetNumaNodeId answers
  // only where the GPU's memory is a NUMA node of its own (Grace Hopper), so
  // it is the fallback. 0 when neither knows (one-socket hosts report -1).
  int NumaNode(nvmlDevice_t h, const std::string& bus_id) const {
    int node = SysfsNumaNode(options_.sysfs_pci_root, bus_id);
    if (node >= 0) return node;
    unsigned int nvml_node = 0;
    if (CallOptional(api_.nvmlDeviceGetNumaNodeId, h, &nvml_node) == NVML_SUCCESS) {
      return static_cast<int>(nvml_node);
    }
    return 0;
  }

  // GPUs joined by an active NVLink share an island, directly (the far end
  // is another of our GPUs) or through NVSwitch (the far end is a PCI device
  // that is not one of our GPUs: the switch). All GPUs that reach a switch
  // form one island, as HGX boards wire every GPU to every switch chip.
  // Islands are numbered 0, 1, ... in the order of their lowest GPU index; a
  // GPU without NVLink is an island of its own.
  void AssignIslands(const std::vector<PciKey>& pci_keys, std::vector<GpuDevice>& gpus) const {
    const size_t n = gpus.size();
    const size_t kSwitch = n;
    Islands islands(n + 1);
    for (size_t i = 0; i < n; ++i) {
      nvmlDevice_t h = devices_[i].handle;
      for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
        nvmlEnableState_t active = NVML_FEATURE_DISABLED;
        nvmlReturn_t rc = CallOptional(api_.nvmlDeviceGetNvLinkState, h, link, &active);
        // Past the GPU's last link (INVALID_ARGUMENT), no NVLink at all
        // (NOT_SUPPORTED) or no such function: nothing more to learn.
        if (rc != NVML_SUCCESS) break;
        if (active != NVML_FEATURE_ENABLED) continue;
        nvmlPciInfo_t remote{};
        if (CallOptional(api_.nvmlDeviceGetNvLinkRemotePciInfo_v2, h, link, &remote) !=
            NVML_SUCCESS) {
          continue;  // an active link whose far end is unknown joins nothing
        }
        auto peer = std::find(pci_keys.begin(), pci_keys.end(), KeyOf(remote));
        islands.Join(
            i, peer != pci_keys.end() ? static_cast<size_t>(peer - pci_keys.begin()) : kSwitch);
      }
    }
    std::vector<int> number(n + 1, -1);
    int next = 0;
    for (size_t i = 0; i < n; ++i) {
      int& island = number[islands.Find(i)];
      if (island < 0) island = next++;
      gpus[i].nvlink_island = island;
    }
  }

  void DrainXidEvents() {
    if (event_set_ == nullptr) return;
    for (int i = 0; i < kMaxEventsPerSample; ++i) {
      nvmlEventData_t event{};
      // Timeout 0: take what is queued, never block the telemetry loop.
      if (CallOptional(api_.nvmlEventSetWait_v2, event_set_, &event, 0u) != NVML_SUCCESS) return;
      if ((event.eventType & static_cast<unsigned long long>(nvmlEventTypeXidCriticalError)) == 0) {
        continue;
      }
      for (Device& d : devices_) {
        if (d.handle == event.device) {
          d.xid_errors++;
          d.last_xid = static_cast<int>(event.eventData);
        }
      }
    }
  }

  void* library_;
  NvmlApi api_;
  NvmlOptions options_;
  std::vector<Device> devices_;
  std::vector<Unit> units_;  // what Discover reported, in its order
  nvmlEventSet_t event_set_ = nullptr;
  std::unique_ptr<DcgmProfiler> profiler_;  // null: no DCGM profiling fields
};

}  // namespace

Result<std::unique_ptr<GpuProvider>> OpenNvml(const NvmlOptions& options) {
  // RTLD_LOCAL: NVML's symbols stay out of the global namespace, so a job
  // library loaded later (in a test, the fake) never binds to them by accident.
  void* library = dlopen(options.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    return NvmlUnavailable(fmt::format("{} (is the NVIDIA driver installed?)",
                                       error != nullptr ? error : options.library));
  }
  NvmlApi api;
  const std::string missing = nvml::ResolveAll(library, api);
  if (!missing.empty()) {
    dlclose(library);
    return NvmlUnavailable(
        fmt::format("{} has no {} (is it NVIDIA's libnvidia-ml from a current driver?)",
                    options.library, missing));
  }
  const nvmlReturn_t rc = api.nvmlInit_v2();
  if (rc != NVML_SUCCESS) {
    const char* text = api.nvmlErrorString(rc);
    std::string message =
        fmt::format("nvmlInit_v2 failed: {} (NVML error {}; {})",
                    text != nullptr ? text : "unknown error", static_cast<int>(rc), InitHint(rc));
    dlclose(library);
    return NvmlUnavailable(std::move(message));
  }
  // From here the provider owns the library and the initialisation.
  auto provider = std::make_unique<NvmlProvider>(library, api, options);
  SHOAL_RETURN_IF_ERROR(provider->Start());
  return std::unique_ptr<GpuProvider>(std::move(provider));
}

Result<std::unique_ptr<GpuProvider>> OpenNvml(const std::string& library) {
  NvmlOptions options;
  options.library = library;
  return OpenNvml(options);
}

}  // namespace shoal::agent
