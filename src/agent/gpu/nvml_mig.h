// MIG through NVML: the slices (MIG devices) of a GPU in MIG mode, and a new
// layout for a GPU. Used by the NVML provider; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/gpu/nvml_api.h"
#include "agent/gpu/nvml_table.h"
#include "core/status.h"

namespace shoal::agent::nvml {

// One MIG device: a compute instance in a GPU instance, as CUDA sees it.
struct MigDevice {
  nvmlDevice_t handle = nullptr;
  std::string uuid;  // "MIG-..."
  int64_t memory_mib = 0;
  int gi = 0;
  int ci = 0;
  int index = 0;        // its nvmlDeviceGetMigDeviceHandleByIndex index
  std::string profile;  // "1g.10gb", "1c.3g.40gb"
  double share = 0;     // its compute slices' share of the GPU's
};

// A profile's name as nvidia-smi gives it, from what NVML says of an
// instance: its GPU instance's and compute instance's slices, and its memory
// against the GPU's whole (rounded to eighths of the GPU, then to whole GB
// of the GPU's size, as NVIDIA's tools name them: 9856 of 81559 MiB is
// "10gb"). Pure.
std::string MigProfileName(unsigned gi_slices, unsigned ci_slices, uint64_t memory_mib,
                           int64_t gpu_memory_mib);

// The MIG devices of `gpu` (in MIG mode), by GPU then compute instance id.
Result<std::vector<MigDevice>> ListMigDevices(const NvmlApi& api, nvmlDevice_t gpu,
                                              int64_t gpu_memory_mib);

// Destroys the GPU's instances and creates one GPU instance, with one
// compute instance over all of it, for each of `profiles` (largest first,
// which the driver's placement rules favour); turns MIG mode on first, or
// off when `profiles` is empty. A mode change that needs a GPU reset is an
// error that says so.
Status ApplyMigLayout(const NvmlApi& api, nvmlDevice_t gpu, int64_t gpu_memory_mib,
                      const std::vector<std::string>& profiles);

}  // namespace shoal::agent::nvml
