// GET /metrics: the Prometheus text exposition format (0.0.4).
//
// Per GPU, the names, units, HELP/TYPE lines and labels of NVIDIA's
// dcgm-exporter (gpu, UUID, device, modelName, Hostname), so that dashboards
// built for it work unchanged, plus `hostname` and, on allocated GPUs, the
// job (`hpc_job`, dcgm-exporter's label for HPC job mapping: `job` would
// clash with Prometheus' own target label), `user` and `account`. Then
// Shoal's own metrics, prefixed shoal_. docs/metrics.md lists them.
//
// RenderMetrics is a pure function of a view captured on the control loop
// (Controller::Metrics), so it runs on an HTTP thread in
// O(nodes x GPUs + jobs) and holds up nothing.
#pragma once

#include <string>

#include "core/time.h"
#include "server/controller.h"
#include "server/loop.h"

namespace shoal::server {

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string RenderMetrics(const MetricsView& view, const LoopStats& loop, Time now);

}  // namespace shoal::server
