#include "acceptance/telemetry.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "acceptance/stats.h"
#include "core/strings.h"

namespace shoal::acceptance {

std::string ClockReasonNames(uint64_t bits) {
  static constexpr std::pair<uint64_t, const char*> kNames[] = {
      {kClocksGpuIdle, "gpu_idle"},
      {kClocksApplicationsSetting, "applications_clocks"},
      {kClocksSwPowerCap, "sw_power_cap"},
      {kClocksHwSlowdown, "hw_slowdown"},
      {kClocksSyncBoost, "sync_boost"},
      {kClocksSwThermalSlowdown, "sw_thermal"},
      {kClocksHwThermalSlowdown, "hw_thermal"},
      {kClocksHwPowerBrakeSlowdown, "hw_power_brake"},
      {kClocksDisplaySetting, "display_clocks"},
  };
  std::vector<std::string> names;
  uint64_t known = 0;
  for (const auto& [bit, name] : kNames) {
    known |= bit;
    if (bits & bit) names.emplace_back(name);
  }
  if (bits & ~known) names.push_back("other");
  return names.empty() ? "none" : Join(names, ",");
}

std::vector<GpuTelemetry> SummarizeTelemetry(std::span<const TelemetrySample> samples,
                                             int64_t start_ms, int64_t end_ms) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const TelemetrySample*>> by_gpu;
  for (const TelemetrySample& s : samples) {
    if (s.time_ms < start_ms || s.time_ms > end_ms) continue;
    auto [it, added] = by_gpu.try_emplace(s.gpu_uuid);
    if (added) order.push_back(s.gpu_uuid);
    it->second.push_back(&s);
  }
  std::vector<GpuTelemetry> out;
  for (const std::string& uuid : order) {
    std::vector<const TelemetrySample*>& list = by_gpu[uuid];
    std::stable_sort(
        list.begin(), list.end(),
        [](const TelemetrySample* a, const TelemetrySample* b) { return a->time_ms < b->time_ms; });
    GpuTelemetry g;
    g.gpu_uuid = uuid;
    g.samples = static_cast<int>(list.size());
    std::vector<double> clocks, power;
    for (const TelemetrySample* s : list) {
      clocks.push_back(s->sm_clock_mhz);
      power.push_back(s->power_w);
      g.max_temperature_c = std::max(g.max_temperature_c, s->temperature_c);
      g.max_power_w = std::max(g.max_power_w, s->power_w);
      g.reasons_seen |= s->clock_reasons;
      if (s->clock_reasons & kClocksHardwareFaults) ++g.hardware_fault_samples;
      if (s->clock_reasons & kClocksSwThermalSlowdown) ++g.sw_thermal_samples;
      g.xids.insert(g.xids.end(), s->xids.begin(), s->xids.end());
    }
    g.median_sm_clock_mhz = Median(clocks);
    g.min_sm_clock_mhz = *std::min_element(clocks.begin(), clocks.end());
    g.median_power_w = Median(power);
    // Counters only grow while the driver stays loaded; a reset reads as no change.
    const TelemetrySample& first = *list.front();
    const TelemetrySample& last = *list.back();
    if (last.ecc_corrected_total > first.ecc_corrected_total) {
      g.ecc_corrected_delta = last.ecc_corrected_total - first.ecc_corrected_total;
    }
    if (last.ecc_uncorrected_total > first.ecc_uncorrected_total) {
      g.ecc_uncorrected_delta = last.ecc_uncorrected_total - first.ecc_uncorrected_total;
    }
    out.push_back(std::move(g));
  }
  return out;
}

TelemetrySampler::TelemetrySampler(TelemetryHook hook, int interval_ms)
    : hook_(std::move(hook)), interval_ms_(std::max(interval_ms, 10)) {}

TelemetrySampler::~TelemetrySampler() {
  Stop();
}

void TelemetrySampler::Start() {
  if (!hook_ || thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void TelemetrySampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<TelemetrySample> TelemetrySampler::Samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

void TelemetrySampler::Loop() {
  using Clock = std::chrono::steady_clock;
  auto next = Clock::now();
  while (!stop_) {
    std::vector<TelemetrySample> batch = hook_();
    {
      std::lock_guard<std::mutex> lock(mu_);
      samples_.insert(samples_.end(), std::make_move_iterator(batch.begin()),
                      std::make_move_iterator(batch.end()));
    }
    next += std::chrono::milliseconds(interval_ms_);
    // Sleep in short steps so that Stop is prompt.
    while (!stop_ && Clock::now() < next) {
      std::this_thread::sleep_for(
          std::min<Clock::duration>(next - Clock::now(), std::chrono::milliseconds(20)));
    }
  }
}

}  // namespace shoal::acceptance
