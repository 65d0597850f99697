// Options of the NVML provider beyond the library path, for tests and for
// hosts with an unusual layout. OpenNvml(library) in provider.h is the usual
// entry point; it uses the defaults below.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/gpu/dcgm_profiler.h"
#include "agent/gpu/provider.h"
#include "core/status.h"

namespace shoal::agent {

struct NvmlOptions {
  // A file name (searched as dlopen does) or a path.
  std::string library = "libnvidia-ml.so.1";
  // Where each GPU's PCI device directory is found, for its NUMA node
  // (<root>/<domain:bus:device.function>/numa_node).
  std::string sysfs_pci_root = "/sys/bus/pci/devices";
  // libdcgm for DCGM's profiling fields, the first that loads; none: not
  // looked for (agent/gpu/dcgm_profiler.h).
  std::vector<std::string> dcgm_libraries = DefaultDcgmLibraries();
};

// NVML through dlopen. The provider calls nvmlInit_v2 here and nvmlShutdown
// when destroyed, and unloads the library after that. Errors:
// kUnavailable when the library cannot be loaded, lacks a function every
// driver has, or nvmlInit_v2 fails (no driver, driver/library mismatch);
// the message says which and what to check.
Result<std::unique_ptr<GpuProvider>> OpenNvml(const NvmlOptions& options);

}  // namespace shoal::agent
