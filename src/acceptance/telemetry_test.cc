#include "acceptance/telemetry.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace shoal::acceptance {
namespace {

TelemetrySample Sample(int64_t t, std::string uuid, double clock, uint64_t reasons = 0) {
  TelemetrySample s;
  s.time_ms = t;
  s.gpu_uuid = std::move(uuid);
  s.sm_clock_mhz = clock;
  s.power_w = clock / 3;
  s.temperature_c = 60 + static_cast<double>(t) / 1000;
  s.clock_reasons = reasons;
  return s;
}

TEST(TelemetryTest, ReasonNames) {
  EXPECT_EQ(ClockReasonNames(0), "none");
  EXPECT_EQ(ClockReasonNames(kClocksSwPowerCap | kClocksHwSlowdown), "sw_power_cap,hw_slowdown");
  EXPECT_EQ(ClockReasonNames(0x80), "hw_power_brake");  // NVML's documented value
  EXPECT_EQ(ClockReasonNames(uint64_t{1} << 40), "other");
}

TEST(TelemetryTest, SummaryOverAWindow) {
  std::vector<TelemetrySample> samples = {
      Sample(500, "GPU-b", 1000),  // before the window
      Sample(1000, "GPU-a", 1900, kClocksSwPowerCap),
      Sample(1000, "GPU-b", 1950),
      Sample(2000, "GPU-a", 1700, kClocksHwSlowdown),
      Sample(3000, "GPU-a", 1980, kClocksSwThermalSlowdown),
      Sample(4000, "GPU-a", 100),  // after the window
  };
  samples[1].ecc_corrected_total = 5;
  samples[4].ecc_corrected_total = 9;
  samples[4].ecc_uncorrected_total = 1;
  samples[3].xids = {79, 94};
  const auto got = SummarizeTelemetry(samples, 1000, 3000);
  ASSERT_EQ(got.size(), 2u);
  const GpuTelemetry& a = got[0];
  EXPECT_EQ(a.gpu_uuid, "GPU-a");
  EXPECT_EQ(a.samples, 3);
  EXPECT_DOUBLE_EQ(a.median_sm_clock_mhz, 1900);
  EXPECT_DOUBLE_EQ(a.min_sm_clock_mhz, 1700);
  EXPECT_DOUBLE_EQ(a.max_temperature_c, 63);
  EXPECT_EQ(a.reasons_seen, kClocksSwPowerCap | kClocksHwSlowdown | kClocksSwThermalSlowdown);
  EXPECT_EQ(a.hardware_fault_samples, 1);
  EXPECT_EQ(a.sw_thermal_samples, 1);
  EXPECT_EQ(a.ecc_corrected_delta, 4u);
  EXPECT_EQ(a.ecc_uncorrected_delta, 1u);
  EXPECT_EQ(a.xids, (std::vector<uint32_t>{79, 94}));
  EXPECT_EQ(got[1].gpu_uuid, "GPU-b");
  EXPECT_EQ(got[1].samples, 1);
  EXPECT_TRUE(SummarizeTelemetry(samples, 10'000, 20'000).empty());
}

TEST(TelemetryTest, CounterResetIsNoChange) {
  std::vector<TelemetrySample> samples = {Sample(1, "g", 1), Sample(2, "g", 1)};
  samples[0].ecc_uncorrected_total = 7;  // the driver reloaded between samples
  EXPECT_EQ(SummarizeTelemetry(samples, 0, 10)[0].ecc_uncorrected_delta, 0u);
}

TEST(TelemetryTest, SamplerCallsTheHookUntilStopped) {
  std::mutex mu;
  std::condition_variable called;
  int calls = 0;               // guarded by mu
  bool stop_returned = false;  // guarded by mu
  int calls_after_stop = 0;    // guarded by mu
  TelemetrySampler sampler(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        ++calls;
        if (stop_returned) ++calls_after_stop;
        called.notify_all();
        return std::vector<TelemetrySample>{Sample(calls, "g", 1)};
      },
      10);
  sampler.Start();
  {
    // Three calls at 10 ms; the deadline only bounds a broken sampler.
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(called.wait_for(lock, std::chrono::seconds(30), [&] { return calls >= 3; }))
        << calls << " calls";
  }
  sampler.Stop();
  int after_stop = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    stop_returned = true;
    after_stop = calls;
  }
  // Stop joined the thread: every call's samples are kept, and a second Stop
  // (the destructor's) finds nothing left to call the hook.
  EXPECT_EQ(static_cast<int>(sampler.Samples().size()), after_stop);
  sampler.Stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(calls, after_stop);
  EXPECT_EQ(calls_after_stop, 0);
}

TEST(TelemetryTest, SamplerWithoutHookDoesNothing) {
  TelemetrySampler sampler(nullptr, 10);
  sampler.Start();
  sampler.Stop();
  EXPECT_TRUE(sampler.Samples().empty());
}

}  // namespace
}  // namespace shoal::acceptance
