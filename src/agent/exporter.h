// The agent's GET /metrics: its node's GPUs as NVIDIA's dcgm-exporter shows
// them, labelled with the jobs whose steps hold them, so that Prometheus
// scrapes one target per node and the controller's /metrics stays small at
// any fleet size. The lines come from the renderer the controller uses for
// its own per-GPU series (api/prometheus.h): one format for both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/gpu/provider.h"
#include "agent/launch/steps.h"

namespace shoal::agent {

// A running step's GPUs on this node, and whose they are.
struct GpuHold {
  uint64_t job = 0;
  std::string user;
  std::string account;
  std::vector<int> gpus;
  int power_cap_w = 0;  // the job's --gpu-power-cap; 0: none
};

GpuHold HoldOf(const StepRequest& step);

// One series per dcgm-exporter field and sampled GPU that the node has;
// empty before the first sample. Pure: no I/O.
std::string RenderNodeMetrics(const std::string& node, const std::vector<GpuDevice>& devices,
                              const std::vector<GpuSample>& samples,
                              const std::vector<GpuHold>& holds);

}  // namespace shoal::agent
