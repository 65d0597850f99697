// The readings of a GPU that only its agent's GET /metrics shows: the rest
// of dcgm-exporter's default counters, beyond what heartbeats carry
// (api::GpuTelemetry). Each is absent when the GPU or its driver cannot
// give it, and its series is then left out rather than shown as 0.
#pragma once

#include <cstdint>
#include <optional>

namespace shoal::api {

struct GpuCounters {
  std::optional<double> mem_clock_mhz;   // DCGM_FI_DEV_MEM_CLOCK
  std::optional<double> memory_temp_c;   // DCGM_FI_DEV_MEMORY_TEMP (HBM)
  std::optional<double> enc_util_pct;    // DCGM_FI_DEV_ENC_UTIL
  std::optional<double> dec_util_pct;    // DCGM_FI_DEV_DEC_UTIL
  std::optional<uint64_t> pcie_replays;  // DCGM_FI_DEV_PCIE_REPLAY_COUNTER
  // NVLink data sent and received over all links since the driver loaded,
  // in KiB (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL).
  std::optional<uint64_t> nvlink_kib;
  std::optional<uint64_t> remapped_rows_correctable;    // DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS
  std::optional<uint64_t> remapped_rows_uncorrectable;  // DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS
  std::optional<bool> row_remap_failed;                 // DCGM_FI_DEV_ROW_REMAP_FAILURE
  // DCGM's profiling fields, when libdcgm is installed (agent/gpu/dcgm_profiler.h):
  // ratios 0..1 of the sampling interval, and bytes per second.
  std::optional<double> prof_gr_engine_active;  // DCGM_FI_PROF_GR_ENGINE_ACTIVE
  std::optional<double> prof_sm_active;         // DCGM_FI_PROF_SM_ACTIVE
  std::optional<double> prof_sm_occupancy;      // DCGM_FI_PROF_SM_OCCUPANCY
  std::optional<double> prof_tensor_active;     // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
  std::optional<double> prof_dram_active;       // DCGM_FI_PROF_DRAM_ACTIVE
  std::optional<double> prof_pcie_tx_bytes;     // DCGM_FI_PROF_PCIE_TX_BYTES
  std::optional<double> prof_pcie_rx_bytes;     // DCGM_FI_PROF_PCIE_RX_BYTES
};

}  // namespace shoal::api
