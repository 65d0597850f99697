// GPU telemetry during a node test: clocks, power, temperature, clock-event
// ("throttle") reasons, ECC counters and XID errors, sampled while the node
// binary runs and judged over the burn-in window.
//
// Shoal reads NVML in one place (the agent's provider, which loads
// libnvidia-ml.so.1 with dlopen), so this module does not: whoever runs the
// node test hands in a TelemetryHook that reads the GPUs, and the sampler
// calls it on its own thread. Without a hook the burn-in is judged on its
// throughput and result checks alone, and the report says so.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace shoal::acceptance {

// Clock-event reason bits with the values NVML documents for
// nvmlDeviceGetCurrentClocksEventReasons (nvmlClocksEventReason* /
// nvmlClocksThrottleReason*), so that NVML's mask passes through unchanged.
inline constexpr uint64_t kClocksGpuIdle = 0x1;
inline constexpr uint64_t kClocksApplicationsSetting = 0x2;
inline constexpr uint64_t kClocksSwPowerCap = 0x4;
inline constexpr uint64_t kClocksHwSlowdown = 0x8;
inline constexpr uint64_t kClocksSyncBoost = 0x10;
inline constexpr uint64_t kClocksSwThermalSlowdown = 0x20;
inline constexpr uint64_t kClocksHwThermalSlowdown = 0x40;
inline constexpr uint64_t kClocksHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kClocksDisplaySetting = 0x100;

// The reasons that mean the GPU protects itself (hardware slowdown, thermal or
// power brake): any of them under load fails the burn-in. A software power
// cap is how a GPU at full GEMM load normally runs, and is not a fault.
inline constexpr uint64_t kClocksHardwareFaults =
    kClocksHwSlowdown | kClocksHwThermalSlowdown | kClocksHwPowerBrakeSlowdown;

// "sw_power_cap,hw_slowdown"; "none" for 0.
std::string ClockReasonNames(uint64_t bits);

struct TelemetrySample {
  int64_t time_ms = 0;   // Unix time
  std::string gpu_uuid;  // as GpuInfo::uuid
  double sm_clock_mhz = 0;
  double power_w = 0;
  double temperature_c = 0;
  uint64_t clock_reasons = 0;        // kClocks* bits
  uint64_t ecc_corrected_total = 0;  // volatile counts since the driver loaded
  uint64_t ecc_uncorrected_total = 0;
  std::vector<uint32_t> xids;  // XID events seen since the previous sample
};

// Reads every GPU once: one sample per GPU it can read. Called from the
// sampler's thread only, never concurrently with itself.
using TelemetryHook = std::function<std::vector<TelemetrySample>()>;

// One GPU's telemetry over a window.
struct GpuTelemetry {
  std::string gpu_uuid;
  int samples = 0;
  double max_temperature_c = 0;
  double median_sm_clock_mhz = 0;
  double min_sm_clock_mhz = 0;
  double median_power_w = 0;
  double max_power_w = 0;
  uint64_t reasons_seen = 0;       // OR of every sample's reasons
  int hardware_fault_samples = 0;  // samples with a kClocksHardwareFaults bit
  int sw_thermal_samples = 0;
  uint64_t ecc_corrected_delta = 0;
  uint64_t ecc_uncorrected_delta = 0;
  std::vector<uint32_t> xids;
};

// Per GPU (in order of first appearance), the samples with start_ms <=
// time_ms <= end_ms.
std::vector<GpuTelemetry> SummarizeTelemetry(std::span<const TelemetrySample> samples,
                                             int64_t start_ms, int64_t end_ms);

// Calls a hook every `interval_ms` on its own thread from Start to Stop and
// keeps what it returns. Start and Stop are called from one thread; Samples
// after Stop.
class TelemetrySampler {
 public:
  TelemetrySampler(TelemetryHook hook, int interval_ms);
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  void Start();
  void Stop();
  std::vector<TelemetrySample> Samples() const;

 private:
  void Loop();

  TelemetryHook hook_;
  int interval_ms_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<TelemetrySample> samples_;  // guarded by mu_
};

}  // namespace shoal::acceptance
