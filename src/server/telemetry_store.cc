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

TelemetryStore::TelemetryStore(Duration interval, size_t capacity, Duration rollup,
                               size_t rollup_capacity)
    : interval_(interval),
      interval_s_(static_cast<uint32_t>(std::max<int64_t>(1, ToSeconds(interval)))),
      capacity_(std::max<size_t>(1, capacity)),
      rollup_s_(static_cast<uint32_t>(std::max<int64_t>(1, ToSeconds(rollup)))),
      rollup_capacity_(std::max<size_t>(1, rollup_capacity)) {}

template <typename T>
void TelemetryStore::Ring<T>::Push(const T& p, size_t capacity) {
  if (buf.size() < capacity) {
    buf.push_back(p);
    return;
  }
  buf[head] = p;
  head = (head + 1) % buf.size();
}

template <typename T>
template <typename F>
void TelemetryStore::Ring<T>::ForEach(F&& f) const {
  for (size_t k = 0; k < buf.size(); ++k)
    f(buf[(head + k) % buf.size()]);
}

TelemetryStore::Point TelemetryStore::Unpack(const Packed& p) {
  return {static_cast<double>(p.t), p.util_centi / 100.0, static_cast<double>(p.mem_mib),
          p.power_deci / 10.0, p.temp_deci / 10.0};
}

TelemetryStore::Packed TelemetryStore::Pack(uint32_t t, const double (&v)[4]) {
  Packed p;
  p.t = t;
  p.util_centi = Clamp<uint16_t>(v[0] * 100, 0, 10000);
  p.mem_mib = Clamp<uint32_t>(v[1], 0, 4294967295.0);
  p.power_deci = Clamp<uint16_t>(v[2] * 10, 0, 65535);
  p.temp_deci = Clamp<int16_t>(v[3] * 10, -32768, 32767);
  return p;
}

void TelemetryStore::AddToRollup(GpuRings& g, const Packed& p) {
  const Point x = Unpack(p);
  const double v[4] = {x.util_pct, x.mem_mib, x.power_w, x.temp_c};
  uint32_t closed = 0;
  double means[4];
  if (g.mean.Add(p.t / rollup_s_, v, &closed, means))
    g.rollup.Push(Pack(closed * rollup_s_, means), rollup_capacity_);
}

void TelemetryStore::Record(const std::string& node, Time now, const std::vector<GpuReport>& gpus) {
  const uint32_t t = Seconds(now);
  std::lock_guard<std::mutex> lock(mu_);
  NodeRings& n = nodes_[node];
  if (n.last_t != 0 && t < n.last_t + interval_s_) return;
  bool any = false;
  for (const GpuReport& g : gpus) {
    if (!g.telemetry.present || g.index < 0 || g.index >= 64) continue;
    if (n.gpus.size() <= static_cast<size_t>(g.index))
      n.gpus.resize(static_cast<size_t>(g.index) + 1);
    const GpuTelemetry& tm = g.telemetry;
    const Packed p =
        Pack(t, {tm.util_pct, static_cast<double>(tm.fb_used_mib), tm.power_w, tm.temperature_c});
    GpuRings& rings = n.gpus[static_cast<size_t>(g.index)];
    rings.fine.Push(p, capacity_);
    AddToRollup(rings, p);
    any = true;
  }
  if (any) n.last_t = t;
}

void TelemetryStore::RecordCluster(Time now, double mean_util_pct, double allocated_fraction) {
  const double t = std::floor(ToSeconds(now));
  std::lock_guard<std::mutex> lock(mu_);
  if (!cluster_.buf.empty() && t < cluster_.Newest().t + ToSeconds(interval_)) return;
  cluster_.Push({t, mean_util_pct, allocated_fraction}, capacity_);
  const double v[2] = {mean_util_pct, allocated_fraction};
  uint32_t closed = 0;
  double means[2];
  if (cluster_mean_.Add(Seconds(now) / rollup_s_, v, &closed, means)) {
    cluster_rollup_.Push({static_cast<double>(closed) * rollup_s_, means[0], means[1]},
                         rollup_capacity_);
  }
}

std::vector<TelemetryStore::Point> TelemetryStore::Points(const GpuRings& g, const Range& range,
                                                          bool rollup) const {
  const double lo = std::floor(ToSeconds(range.from)), hi = ToSeconds(range.to);
  std::vector<Point> out;
  auto take = [&](const Point& p) {
    if (p.t >= lo && p.t <= hi) out.push_back(p);
  };
  if (!rollup) {
    g.fine.ForEach([&](const Packed& p) { take(Unpack(p)); });
    return out;
  }
  g.rollup.ForEach([&](const Packed& p) { take(Unpack(p)); });
  if (g.mean.n > 0) {  // the step under way
    double m[4];
    g.mean.Means(m);
    take({static_cast<double>(g.mean.step) * rollup_s_, m[0], std::round(m[1]), m[2], m[3]});
  }
  return out;
}

std::optional<TelemetryStore::NodeSeriesResult> TelemetryStore::NodeSeries(const std::string& node,
                                                                           Range range) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return std::nullopt;
  // One tier for the whole node, chosen by its first GPU with samples.
  bool rollup = false;
  for (const GpuRings& g : it->second.gpus) {
    if (g.fine.buf.empty()) continue;
    rollup = NeedsRollup(g.fine, range);
    break;
  }
  NodeSeriesResult out;
  out.step_s = StepSeconds(rollup);
  for (size_t i = 0; i < it->second.gpus.size(); ++i)
    out.gpus.push_back({static_cast<int>(i), Points(it->second.gpus[i], range, rollup)});
  return out;
}

std::vector<TelemetryStore::Point> TelemetryStore::GpuPoints(const std::string& node, int index,
                                                             Range range) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end() || index < 0 || static_cast<size_t>(index) >= it->second.gpus.size())
    return {};
  const GpuRings& g = it->second.gpus[static_cast<size_t>(index)];
  return Points(g, range, NeedsRollup(g.fine, range));
}

TelemetryStore::ClusterSeriesResult TelemetryStore::ClusterSeries(Range range) const {
  const double lo = ToSeconds(range.from), hi = ToSeconds(range.to);
  std::lock_guard<std::mutex> lock(mu_);
  const bool rollup = NeedsRollup(cluster_, range);
  ClusterSeriesResult out;
  out.step_s = StepSeconds(rollup);
  auto take = [&](const ClusterPoint& p) {
    if (p.t >= lo && p.t <= hi) out.points.push_back(p);
  };
  if (!rollup) {
    cluster_.ForEach(take);
    return out;
  }
  cluster_rollup_.ForEach(take);
  if (cluster_mean_.n > 0) {
    double means[2];
    cluster_mean_.Means(means);
    take({static_cast<double>(cluster_mean_.step) * rollup_s_, means[0], means[1]});
  }
  return out;
}

void TelemetryStore::RecordPower(Time now, const std::vector<PowerBudgetNow>& budgets) {
  const double t = std::floor(ToSeconds(now));
  std::lock_guard<std::mutex> lock(mu_);
  if (power_last_t_ >= 0 && t < power_last_t_ + ToSeconds(interval_)) return;
  power_last_t_ = t;
  for (const PowerBudgetNow& b : budgets) {
    PowerRing& ring = power_[b.name];
    ring.cap_w = b.cap_w;
    ring.points.Push({t, b.expected_w, b.gpu_measured_w}, capacity_);
  }
}

std::vector<TelemetryStore::PowerSeries> TelemetryStore::PowerBudgetSeries(Range range) const {
  const double lo = ToSeconds(range.from), hi = ToSeconds(range.to);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PowerSeries> out;
  for (const auto& [name, ring] : power_) {
    PowerSeries& s = out.emplace_back(PowerSeries{name, ring.cap_w, {}});
    ring.points.ForEach([&](const PowerPoint& p) {
      if (p.t >= lo && p.t <= hi) s.points.push_back(p);
    });
  }
  return out;
}

}  // namespace shoal::server
