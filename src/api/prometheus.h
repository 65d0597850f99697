// The Prometheus text exposition format (0.0.4), and the per-GPU series of
// NVIDIA's dcgm-exporter, written once for both places that serve them: each
// agent's GET /metrics (its node's GPUs, agent/agent.cc) and, when asked
// (`metrics_per_gpu`), the controller's (every node's, server/metrics.cc).
//
// Per GPU: dcgm-exporter's names, units, HELP/TYPE lines and labels (gpu,
// UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION), so
// that dashboards built for it work unchanged, plus `hostname` and, on
// allocated GPUs, the job (`hpc_job`, dcgm-exporter's label for HPC job
// mapping: `job` would clash with Prometheus' own target label), `user` and
// `account`. docs/metrics.md lists them.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/gpu_counters.h"
#include "api/node_protocol.h"

namespace shoal::api::prometheus {

inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

using Buffer = fmt::memory_buffer;

// name="value", after a comma unless `first`; the value escaped as the format requires.
void Label(Buffer& out, std::string_view name, std::string_view value, bool first = false);
std::string Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> labels);
// A family's # HELP and # TYPE lines.
void Family(Buffer& out, std::string_view name, std::string_view type, std::string_view help);
// One sample: name{labels} value. `labels` is already formatted (may be empty).
void Sample(Buffer& out, std::string_view name, std::string_view labels, double value);

// A job that holds a GPU.
struct GpuJob {
  uint64_t id = 0;
  std::string_view user;
  std::string_view account;
};

// What dcgm-exporter's labels say of one GPU. Empty optional values leave
// their label out (the controller knows no PCI address or driver version).
struct DcgmGpu {
  int index = 0;  // the physical GPU's (the `gpu` and `device` labels)
  std::string_view uuid;
  std::string_view pci_bus_id;  // optional
  std::string_view model;
  std::string_view hostname;        // the node's name
  std::string_view driver_version;  // optional
  // A MIG slice: its profile and GPU instance id (dcgm-exporter's
  // GPU_I_PROFILE and GPU_I_ID labels); empty for a whole GPU.
  std::string_view mig_profile;
  int mig_gi = -1;
  // The jobs on the GPU, in id order; several when jobs share it (the
  // labels are then comma-separated lists); none: no job labels.
  std::span<const GpuJob> jobs;
};

// The labels of one GPU, formatted once for all its series.
std::string DcgmLabels(const DcgmGpu& gpu);

// One GPU's series: its labels and its reading.
struct DcgmLine {
  std::string labels;
  const GpuTelemetry* telemetry = nullptr;
  const GpuCounters* counters = nullptr;  // the agent's own readings; null: none
};

// Every dcgm-exporter field Shoal's agents read, as a family with one
// sample per GPU of `lines`; nothing when `lines` is empty.
void AppendDcgmFields(Buffer& out, std::span<const DcgmLine> lines);

}  // namespace shoal::api::prometheus
