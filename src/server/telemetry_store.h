// Recent GPU telemetry as time series, for the dashboard and `shoal top`,
// in two tiers:
//   - fine: one ring buffer per GPU of (time, utilisation, memory used,
//     power, temperature) sampled at most every `interval` (10 s) and kept
//     for `capacity` samples (2,160: six hours);
//   - rollup: the means of each `rollup` step (10 min) of those samples,
//     kept for `rollup_capacity` steps (1,008: seven days).
// The same two tiers hold the cluster-wide mean utilisation and the fraction
// of GPUs allocated. A query is answered from the fine tier when it holds
// the whole range asked (its oldest sample at most one rollup step after the
// range's start, or every sample ever taken), else from the rollup tier,
// whose last point is the mean of the step under way; `step_s` says which.
// Power budgets (docs/power.md) have the fine tier only: each one's
// expected draw and its GPUs' measured draw, for six hours.
//
// The series live in memory only: they are observations, not state, and a
// restart starts them afresh. A GPU's rings cost 16 bytes a sample (about
// 35 KB at six hours and 16 KB at seven days), allocated as they fill.
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
  // A query's answer: the points, and the seconds between two of them
  // (the fine interval, or the rollup step).
  struct NodeSeriesResult {
    int64_t step_s = 0;
    std::vector<GpuSeries> gpus;
  };
  struct ClusterSeriesResult {
    int64_t step_s = 0;
    std::vector<ClusterPoint> points;
  };
  // One power budget at one moment: its cap, the draw the scheduler counts,
  // and what its GPUs measured in their last heartbeats (watts).
  struct PowerBudgetNow {
    std::string name;
    double cap_w = 0;
    double expected_w = 0;
    double gpu_measured_w = 0;
  };
  struct PowerPoint {
    double t = 0;
    double expected_w = 0;
    double gpu_w = 0;
  };
  struct PowerSeries {
    std::string name;
    double cap_w = 0;  // the newest sample's
    std::vector<PowerPoint> points;
  };
  // The range of a query, both ends included.
  struct Range {
    Time from;
    Time to = Time::max();
  };

  explicit TelemetryStore(Duration interval = std::chrono::seconds(10), size_t capacity = 2160,
                          Duration rollup = std::chrono::minutes(10),
                          size_t rollup_capacity = 1008);

  // One heartbeat's GPUs: a sample per GPU with telemetry, unless the node's
  // last sample is younger than the interval.
  void Record(const std::string& node, Time now, const std::vector<GpuReport>& gpus);
  // A cluster-wide sample, unless the last one is younger than the interval.
  void RecordCluster(Time now, double mean_util_pct, double allocated_fraction);
  // Every power budget's sample, unless the last one is younger than the interval.
  void RecordPower(Time now, const std::vector<PowerBudgetNow>& budgets);

  // A node's GPUs (by index) with their points in `range`; nullopt when the
  // node never reported telemetry.
  std::optional<NodeSeriesResult> NodeSeries(const std::string& node, Range range) const;
  // One GPU's points in `range`.
  std::vector<Point> GpuPoints(const std::string& node, int index, Range range) const;
  ClusterSeriesResult ClusterSeries(Range range) const;
  // Each power budget's points in `range` (fine tier only), by name.
  std::vector<PowerSeries> PowerBudgetSeries(Range range) const;

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
  template <typename T>
  struct Ring {
    std::vector<T> buf;  // grows to capacity, then wraps at head
    size_t head = 0;     // the oldest sample once full
    void Push(const T& p, size_t capacity);
    const T& Oldest() const { return buf[head]; }
    const T& Newest() const { return buf[(head + buf.size() - 1) % buf.size()]; }
    template <typename F>
    void ForEach(F&& f) const;  // oldest first
  };
  // The sums of one rollup step's samples, until a sample of a later step
  // closes it.
  template <size_t N>
  struct StepMean {
    uint32_t step = 0;  // t / rollup seconds
    uint32_t n = 0;
    double sum[N] = {};
    // Takes a sample of step `s`. When it opens a later step, the closed
    // step's number and means come back first (true).
    bool Add(uint32_t s, const double (&v)[N], uint32_t* closed, double (&means)[N]) {
      const bool closes = n > 0 && s != step;
      if (closes) {
        *closed = step;
        Means(means);
        n = 0;
        for (double& x : sum)
          x = 0;
      }
      step = s;
      ++n;
      for (size_t i = 0; i < N; ++i)
        sum[i] += v[i];
      return closes;
    }
    void Means(double (&out)[N]) const {
      for (size_t i = 0; i < N; ++i)
        out[i] = sum[i] / n;
    }
  };
  struct GpuRings {
    Ring<Packed> fine, rollup;
    StepMean<4> mean;
  };
  struct NodeRings {
    uint32_t last_t = 0;
    std::vector<GpuRings> gpus;  // by GPU index
  };
  static Packed Pack(uint32_t t, const double (&v)[4]);  // util %, memory MiB, W, C
  static Point Unpack(const Packed& p);
  // Whether `range` goes back further than a fine ring can answer.
  template <typename T>
  bool NeedsRollup(const Ring<T>& fine, const Range& range) const {
    return fine.buf.size() >= capacity_ && fine.Oldest().t > ToSeconds(range.from) + rollup_s_;
  }
  int64_t StepSeconds(bool rollup) const { return rollup ? rollup_s_ : interval_s_; }
  void AddToRollup(GpuRings& g, const Packed& p);
  std::vector<Point> Points(const GpuRings& g, const Range& range, bool rollup) const;

  const Duration interval_;
  const uint32_t interval_s_;  // whole seconds, at least 1
  const size_t capacity_;
  const uint32_t rollup_s_;
  const size_t rollup_capacity_;
  mutable std::mutex mu_;
  std::map<std::string, NodeRings> nodes_;
  Ring<ClusterPoint> cluster_, cluster_rollup_;
  StepMean<2> cluster_mean_;
  struct PowerRing {
    double cap_w = 0;
    Ring<PowerPoint> points;
  };
  std::map<std::string, PowerRing> power_;  // by budget name
  double power_last_t_ = -1;
};

}  // namespace shoal::server
