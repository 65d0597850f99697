// Recent GPU telemetry as time series, for the dashboard and `shoal top`:
// one ring buffer per GPU of (time, utilisation, memory used, power,
// temperature) sampled at most every `interval` (10 s) and kept for
// `capacity` samples (2,160: six hours), and one cluster-wide ring of mean
// utilisation and the fraction of GPUs allocated.
//
// The series live in memory only: they are observations, not state, and a
// restart starts them afresh. A GPU's ring costs 16 bytes a sample (about
// 35 KB at six hours), allocated as it fills.
//
// Thread-safe: the control loop records (it sees every heartbeat), HTTP
// handlers read at the same time. One mutex guards everything; a record or a
// read holds it for a copy of the points asked for, never for I/O.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/time.h"

namespace shoal::api {
struct GpuReport;  // api/node_protocol.h
}  // namespace shoal::api

namespace shoal::server {

using api::GpuReport;

class TelemetryStore {
 public:
  struct Point {
    double t = 0;  // Unix seconds
    double util_pct = 0;
    double mem_mib = 0;
    double power_w = 0;
    double temp_c = 0;
  };
  struct ClusterPoint {
    double t = 0;
    double mean_util_pct = 0;
    double allocated_fraction = 0;
  };
  struct GpuSeries {
    int index = 0;
    std::vector<Point> points;
  };

  explicit TelemetryStore(Duration interval = std::chrono::seconds(10), size_t capacity = 2160);

  // One heartbeat's GPUs: a sample per GPU with telemetry, unless the node's
  // last sample is younger than the interval.
  void Record(const std::string& node, Time now, const std::vector<GpuReport>& gpus);
  // A cluster-wide sample, unless the last one is younger than the interval.
  void RecordCluster(Time now, double mean_util_pct, double allocated_fraction);

  // A node's GPUs (by index) with their points at or after `since`;
  // nullopt when the node never reported telemetry.
  std::optional<std::vector<GpuSeries>> NodeSeries(const std::string& node, Time since) const;
  // One GPU's points in [from, to].
  std::vector<Point> GpuPoints(const std::string& node, int index, Time from, Time to) const;
  std::vector<ClusterPoint> ClusterSeries(Time since) const;

  Duration interval() const { return interval_; }
  size_t capacity() const { return capacity_; }

 private:
  // 16 bytes a sample: seconds since the epoch, and scaled integers.
  struct Packed {
    uint32_t t = 0;
    uint16_t util_centi = 0;  // 0.01 %
    uint16_t power_deci = 0;  // 0.1 W
    int16_t temp_deci = 0;    // 0.1 C
    uint16_t unused = 0;
    uint32_t mem_mib = 0;
  };
  struct Ring {
    std::vector<Packed> buf;  // grows to capacity, then wraps at head
    size_t head = 0;          // the oldest sample once full
    void Push(const Packed& p, size_t capacity);
    template <typename F>
    void ForEach(F&& f) const;  // oldest first
  };
  struct NodeRings {
    uint32_t last_t = 0;
    std::vector<Ring> gpus;  // by GPU index
  };
  static Point Unpack(const Packed& p);

  const Duration interval_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::map<std::string, NodeRings> nodes_;
  std::vector<ClusterPoint> cluster_;  // ring of capacity_
  size_t cluster_head_ = 0;
};

}  // namespace shoal::server
