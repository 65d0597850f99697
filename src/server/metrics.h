// The controller's GET /metrics: the Prometheus text exposition format (0.0.4).
//
// Shoal's own metrics, prefixed shoal_: the queue, scheduling passes,
// accounts, cluster aggregates (nodes and GPUs by state, GPU telemetry by
// model) and a few lines per node (its state, heartbeat age and GPUs). Its
// size grows with nodes and jobs, not with GPUs x fields: per-GPU series come
// from each agent's own /metrics (one Prometheus target per node). With
// `per_gpu` the controller adds them for every GPU too (dcgm-exporter's
// names, api/prometheus.h), for a small cluster that scrapes only the
// controller. docs/metrics.md lists them.
//
// RenderMetrics is a pure function of a view captured on the control loop
// (Controller::Metrics), so it runs on an HTTP thread in O(nodes + jobs)
// (O(nodes x GPUs + jobs) with per_gpu) and holds up nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "api/prometheus.h"
#include "core/time.h"
#include "server/controller.h"
#include "server/loop.h"

namespace shoal::server {

inline constexpr const char* kMetricsContentType = api::prometheus::kContentType;

// The API listener's connections now (net::HttpServer).
struct ListenerCounts {
  int open = 0;          // admitted and not closed
  int idle = 0;          // of them, waiting between requests without a thread
  uint64_t refused = 0;  // refused for a limit since the start
};

struct MetricsOptions {
  bool per_gpu = false;  // every GPU's dcgm-exporter series too
  // shoal_http_connections and shoal_http_connections_refused_total, when given.
  std::optional<ListenerCounts> listener{};
};

std::string RenderMetrics(const MetricsView& view, const LoopStats& loop, Time now,
                          MetricsOptions options = {});

}  // namespace shoal::server
