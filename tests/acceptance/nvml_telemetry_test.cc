// Burn-in telemetry from the agent's GPU provider (cli/bench_telemetry.h):
// NVML's readings map onto bench samples field by field, XIDs are counted
// from the provider's totals, and the verdict sees them.
#include <gtest/gtest.h>

#include "acceptance/telemetry.h"
#include "cli/bench_telemetry.h"

namespace shoal::cli {
namespace {

// Two GPUs whose readings the test sets.
class FakeProvider : public agent::GpuProvider {
 public:
  explicit FakeProvider(std::vector<agent::GpuSample>* next) : next_(next) {}
  std::string_view kind() const override { return "fake"; }
  Result<std::vector<agent::GpuDevice>> Discover() override {
    std::vector<agent::GpuDevice> d(2);
    d[0].index = 0;
    d[0].uuid = "GPU-aaaa";
    d[1].index = 1;
    d[1].uuid = "GPU-bbbb";
    return d;
  }
  Result<std::vector<agent::GpuSample>> Sample() override { return *next_; }

 private:
  std::vector<agent::GpuSample>* next_;
};

agent::GpuSample Reading(int index, uint64_t xids, int last_xid) {
  agent::GpuSample s;
  s.index = index;
  s.sm_clock_mhz = 1980;
  s.power_w = 690;
  s.temperature_c = 71;
  s.clock_event_reasons = acceptance::kClocksSwPowerCap;
  s.ecc_corrected = 3;
  s.ecc_uncorrected = 0;
  s.xid_errors = xids;
  s.last_xid = last_xid;
  return s;
}

TEST(NvmlTelemetryTest, FieldsMapOneToOne) {
  const acceptance::TelemetrySample t = ToBenchSample(Reading(0, 0, 0), "GPU-aaaa", 0, 1234);
  EXPECT_EQ(t.time_ms, 1234);
  EXPECT_EQ(t.gpu_uuid, "GPU-aaaa");
  EXPECT_EQ(t.sm_clock_mhz, 1980);
  EXPECT_EQ(t.power_w, 690);
  EXPECT_EQ(t.temperature_c, 71);
  EXPECT_EQ(t.clock_reasons, acceptance::kClocksSwPowerCap);
  EXPECT_EQ(t.ecc_corrected_total, 3u);
  EXPECT_TRUE(t.xids.empty());
  EXPECT_EQ(ToBenchSample(Reading(0, 5, 79), "GPU-aaaa", 100, 0).xids.size(), kMaxXidsPerSample);
}

TEST(NvmlTelemetryTest, XidsAreThoseSinceThePreviousSample) {
  // Two XIDs before the test started are not the test's.
  std::vector<agent::GpuSample> next = {Reading(0, 2, 13), Reading(1, 0, 0)};
  int64_t now = 1000;
  auto hook = ProviderTelemetry(std::make_unique<FakeProvider>(&next), [&] { return now; });
  ASSERT_TRUE(hook.ok()) << hook.status().ToString();
  auto first = (*hook)();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_TRUE(first[0].xids.empty());
  next = {Reading(0, 3, 79), Reading(1, 0, 0)};
  now = 2000;
  auto second = (*hook)();
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].xids, std::vector<uint32_t>{79});
  EXPECT_EQ(second[0].time_ms, 2000);
  EXPECT_EQ(second[1].gpu_uuid, "GPU-bbbb");
  auto third = (*hook)();
  EXPECT_TRUE(third[0].xids.empty()) << "each XID is reported once";

  // The verdict: an XID during the window fails the GPU.
  std::vector<acceptance::TelemetrySample> all = first;
  all.insert(all.end(), second.begin(), second.end());
  const auto summary = acceptance::SummarizeTelemetry(all, 0, 3000);
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(summary[0].xids, std::vector<uint32_t>{79});
  EXPECT_TRUE(summary[1].xids.empty());
}

}  // namespace
}  // namespace shoal::cli
