// Where a node's GPUs come from: NVML on a real host, node profiles in a
// simulation. The agent asks a provider once what GPUs there are, then for
// telemetry at a fixed interval.
//
// A provider is used by one thread at a time (the agent's telemetry loop);
// implementations need not be thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/gpu_counters.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal::agent {

// One GPU as discovered: a whole GPU, or a MIG slice of one (a GPU
// instance, scheduled as a GPU of its own).
struct GpuDevice {
  int index = 0;      // its place among the node's GPUs and slices: 0, 1, 2, ...
  int device = 0;     // the physical GPU's driver index (what /dev/nvidiaN and NVML count)
  std::string uuid;   // "GPU-5f2c...", "MIG-..." for a slice
  std::string name;   // as the driver says: "NVIDIA H100 80GB HBM3"
  std::string model;  // the catalogue's name ("H100-SXM-80GB"), else `name`
  int64_t memory_mib = 0;
  int nvlink_island = 0;  // GPUs joined by NVLink/NVSwitch share an island number
  int numa_node = 0;
  std::string pci_bus_id;    // "00000000:1B:00.0"
  bool mig_enabled = false;  // the physical GPU is in MIG mode
  // A MIG slice: its profile ("1g.10gb"; the model then ends in
  // "/1g.10gb") and its GPU and compute instance ids; empty: a whole GPU.
  std::string mig_profile;
  int mig_gi = -1;
  int mig_ci = -1;
  // A slice's index among its GPU's MIG devices (NVML's
  // nvmlDeviceGetMigDeviceHandleByIndex; the NVIDIA container toolkit names
  // its CDI device "<device>:<mig_index>").
  int mig_index = -1;
  double power_limit_w = 0;
  double temperature_limit_c = 0;  // slowdown threshold; 0: unknown
  std::string driver_version;      // "550.54.15"; empty: unknown
  int persistence_mode = -1;       // 1 on, 0 off (the driver unloads between uses), -1 unknown
};

// One reading of one GPU. Counters (ECC, XID, energy) are totals since the
// provider was opened or the driver loaded; the agent reports differences.
struct GpuSample {
  int index = 0;
  double util_pct = 0;           // SM busy, like DCGM_FI_DEV_GPU_UTIL
  double mem_copy_util_pct = 0;  // memory controller busy, like DCGM_FI_DEV_MEM_COPY_UTIL
  int64_t fb_used_mib = 0;
  int64_t fb_free_mib = 0;
  double power_w = 0;
  double temperature_c = 0;
  double sm_clock_mhz = 0;
  double energy_j = 0;         // total energy
  uint64_t ecc_corrected = 0;  // volatile totals
  uint64_t ecc_uncorrected = 0;
  uint64_t xid_errors = 0;           // XID events seen
  int last_xid = 0;                  // the most recent XID code; 0: none
  uint64_t clock_event_reasons = 0;  // NVML's throttle/clock-event bit mask
  api::GpuCounters counters;         // for this node's /metrics only, each when known
};

class GpuProvider {
 public:
  virtual ~GpuProvider() = default;
  virtual std::string_view kind() const = 0;  // "nvml", "simulated"
  virtual Result<std::vector<GpuDevice>> Discover() = 0;
  virtual Result<std::vector<GpuSample>> Sample() = 0;
  // What runs on a GPU now, from 0 (idle) to 1 (a job keeps it busy). Real
  // GPUs ignore it; simulated ones shape their telemetry after it.
  virtual void SetLoad(int index, double load) {
    (void)index;
    (void)load;
  }
  // Holds a GPU to `watts` (a job's --gpu-power-cap), within the range the
  // GPU allows; 0 gives it back the limit it was discovered with. An error
  // says why the GPU refused.
  virtual Status SetPowerCap(int index, double watts) {
    (void)index;
    (void)watts;
    return FailedPrecondition("this GPU provider cannot cap power");
  }
  // Splits the physical GPU `device` (driver index) into MIG slices of
  // `profiles` ("1g.10gb", ...; catalog/mig.h checked them against its
  // model), destroying the slices it had; an empty list turns MIG off. No
  // job may run on it. Discover then reports the new GPUs and slices.
  virtual Status SetMigLayout(int device, const std::vector<std::string>& profiles) {
    (void)device;
    (void)profiles;
    return FailedPrecondition("this GPU provider cannot partition GPUs");
  }
};

// NVML through dlopen (there is no nvml.h at build time). `library` is a
// file name or path; the error says plainly when the library or the driver
// is missing.
Result<std::unique_ptr<GpuProvider>> OpenNvml(const std::string& library = "libnvidia-ml.so.1");

// GPUs of a node profile ("dgx-h100", see catalog/profiles.h) whose
// telemetry follows their load: utilisation, memory, power and temperature
// move towards what the load implies, with some noise from `seed`. Time comes
// from `clock`, which must outlive the provider.
Result<std::unique_ptr<GpuProvider>> MakeSimulated(const std::string& profile,
                                                   const std::string& node_name, uint64_t seed,
                                                   const Clock& clock);

}  // namespace shoal::agent
