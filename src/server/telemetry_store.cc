#include "server/telemetry_store.h"

#include <algorithm>
#include <cmath>

#include "server/controller.h"

namespace shoal::server {

namespace {

template <typename T>
T Clamp(double v, double lo, double hi) {
  if (!(v >= lo)) v = lo;  // also NaN
  if (v > hi) v = hi;
  return static_cast<T>(std::lround(v));
}

uint32_t Seconds(Time t) {
  return Clamp<uint32_t>(std::floor(ToSeconds(t)), 0, 4294967295.0);
}

}  // namespace

TelemetryStore::TelemetryStore(Duration interval, size_t capacity)
    : interval_(interval), capacity_(std::max<size_t>(1, capacity)) {}

void TelemetryStore::Ring::Push(const Packed& p, size_t capacity) {
  if (buf.size() < capacity) {
    buf.push_back(p);
    return;
  }
  buf[head] = p;
  head = (head + 1) % buf.size();
}

template <typename F>
void TelemetryStore::Ring::ForEach(F&& f) const {
  for (size_t k = 0; k < buf.size(); ++k)
    f(buf[(head + k) % buf.size()]);
}

TelemetryStore::Point TelemetryStore::Unpack(const Packed& p) {
  return {static_cast<double>(p.t), p.util_centi / 100.0, static_cast<double>(p.mem_mib),
          p.power_deci / 10.0, p.temp_deci / 10.0};
}

void TelemetryStore::Record(const std::string& node, Time now, const std::vector<GpuReport>& gpus) {
  const uint32_t t = Seconds(now);
  const auto step = static_cast<uint32_t>(std::max<int64_t>(1, ToSeconds(interval_)));
  std::lock_guard<std::mutex> lock(mu_);
  NodeRings& n = nodes_[node];
  if (n.last_t != 0 && t < n.last_t + step) return;
  bool any = false;
  for (const GpuReport& g : gpus) {
    if (!g.telemetry.present || g.index < 0 || g.index >= 64) continue;
    if (n.gpus.size() <= static_cast<size_t>(g.index))
      n.gpus.resize(static_cast<size_t>(g.index) + 1);
    const GpuTelemetry& tm = g.telemetry;
    Packed p;
    p.t = t;
    p.util_centi = Clamp<uint16_t>(tm.util_pct * 100, 0, 10000);
    p.power_deci = Clamp<uint16_t>(tm.power_w * 10, 0, 65535);
    p.temp_deci = Clamp<int16_t>(tm.temperature_c * 10, -32768, 32767);
    p.mem_mib = Clamp<uint32_t>(static_cast<double>(tm.fb_used_mib), 0, 4294967295.0);
    n.gpus[static_cast<size_t>(g.index)].Push(p, capacity_);
    any = true;
  }
  if (any) n.last_t = t;
}

void TelemetryStore::RecordCluster(Time now, double mean_util_pct, double allocated_fraction) {
  const double t = std::floor(ToSeconds(now));
  std::lock_guard<std::mutex> lock(mu_);
  if (!cluster_.empty()) {
    const ClusterPoint& last = cluster_[(cluster_head_ + cluster_.size() - 1) % cluster_.size()];
    if (t < last.t + ToSeconds(interval_)) return;
  }
  const ClusterPoint p{t, mean_util_pct, allocated_fraction};
  if (cluster_.size() < capacity_) {
    cluster_.push_back(p);
  } else {
    cluster_[cluster_head_] = p;
    cluster_head_ = (cluster_head_ + 1) % cluster_.size();
  }
}

std::optional<std::vector<TelemetryStore::GpuSeries>> TelemetryStore::NodeSeries(
    const std::string& node, Time since) const {
  const double from = ToSeconds(since);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return std::nullopt;
  std::vector<GpuSeries> out;
  for (size_t i = 0; i < it->second.gpus.size(); ++i) {
    GpuSeries s;
    s.index = static_cast<int>(i);
    it->second.gpus[i].ForEach([&](const Packed& p) {
      if (p.t >= from) s.points.push_back(Unpack(p));
    });
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<TelemetryStore::Point> TelemetryStore::GpuPoints(const std::string& node, int index,
                                                             Time from, Time to) const {
  const double lo = std::floor(ToSeconds(from)), hi = ToSeconds(to);
  std::vector<Point> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end() || index < 0 || static_cast<size_t>(index) >= it->second.gpus.size())
    return out;
  it->second.gpus[static_cast<size_t>(index)].ForEach([&](const Packed& p) {
    if (p.t >= lo && p.t <= hi) out.push_back(Unpack(p));
  });
  return out;
}

std::vector<TelemetryStore::ClusterPoint> TelemetryStore::ClusterSeries(Time since) const {
  const double from = ToSeconds(since);
  std::vector<ClusterPoint> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t k = 0; k < cluster_.size(); ++k) {
    const ClusterPoint& p = cluster_[(cluster_head_ + k) % cluster_.size()];
    if (p.t >= from) out.push_back(p);
  }
  return out;
}

}  // namespace shoal::server
