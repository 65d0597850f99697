// DCGM's profiling fields (DCGM_FI_PROF_*: SM, tensor pipe and DRAM
// activity, PCIe bytes), which only DCGM's profiling module measures, read
// through libdcgm when the host has it (datacenter-gpu-manager), loaded with
// dlopen and run embedded in the agent. Without it the fields are simply
// absent (docs/metrics.md).
//
// There is no DCGM header at build time: the few documented types and
// functions used are declared in dcgm_profiler.cc, as NVML's are.
// Not thread-safe: the agent's telemetry loop only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/gpu_counters.h"

namespace shoal::agent {

class DcgmProfiler {
 public:
  virtual ~DcgmProfiler() = default;
  // The latest profiling values of each GPU, by NVML index, into `counters`
  // (one per GPU, in index order); a value DCGM has not measured stays absent.
  virtual void Read(std::vector<api::GpuCounters*>& counters) = 0;
};

// The profiler over the first of `libraries` that loads, watching the
// profiling fields on every GPU every second; null, with the reason in
// `why`, when none loads or DCGM refuses (no profiling module, a GPU older
// than Volta, a GPU that dcgm-exporter or Nsight already profiles).
std::unique_ptr<DcgmProfiler> OpenDcgmProfiler(const std::vector<std::string>& libraries,
                                               std::string* why);

// Where libdcgm is looked for by default (DCGM 4, then 3).
const std::vector<std::string>& DefaultDcgmLibraries();

}  // namespace shoal::agent
