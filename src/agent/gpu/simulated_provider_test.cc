#include "agent/gpu/simulated_provider.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "agent/gpu/nvml_api.h"
#include "catalog/gpus.h"
#include "catalog/profiles.h"

namespace shoal::agent {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

// Time moves only when the test says so.
class FakeClock final : public Clock {
 public:
  Time Now() const override { return now_; }
  void Advance(Duration d) { now_ += d; }

 private:
  Time now_ = TimeFromSeconds(1'700'000'000);
};

class SimulatedProviderTest : public ::testing::Test {
 protected:
  std::unique_ptr<SimulatedProvider> Make(const std::string& profile = "dgx-h100",
                                          uint64_t seed = 7) {
    auto provider = SimulatedProvider::Create(profile, "node-a", seed, clock_);
    EXPECT_TRUE(provider.ok()) << provider.status().ToString();
    return provider.ok() ? std::move(provider).value() : nullptr;
  }
  GpuSample SampleOf(SimulatedProvider& p, int index) {
    auto samples = p.Sample();
    EXPECT_TRUE(samples.ok());
    return (*samples)[static_cast<size_t>(index)];
  }

  FakeClock clock_;
};

TEST_F(SimulatedProviderTest, DiscoveryMatchesEveryProfile) {
  for (const catalog::NodeProfile& profile : catalog::Profiles()) {
    SCOPED_TRACE(profile.name);
    auto provider = Make(std::string(profile.name));
    ASSERT_NE(provider, nullptr);
    EXPECT_EQ(provider->kind(), "simulated");
    auto devices = provider->Discover();
    ASSERT_TRUE(devices.ok());
    const Node node = catalog::MakeNode(profile, "node-a");
    ASSERT_EQ(devices->size(), node.gpus.size());
    std::set<std::string> bus_ids;
    for (size_t i = 0; i < devices->size(); ++i) {
      const GpuDevice& d = (*devices)[i];
      const Gpu& g = node.gpus[i];
      EXPECT_EQ(d.index, g.index);
      EXPECT_EQ(d.uuid, g.uuid);
      EXPECT_EQ(d.model, profile.gpu_model);
      EXPECT_EQ(d.memory_mib, profile.gpu_memory_mib);
      EXPECT_EQ(d.nvlink_island, g.nvlink_island);
      EXPECT_EQ(d.numa_node, g.numa_node);
      EXPECT_DOUBLE_EQ(d.power_limit_w, profile.gpu_tdp_w);
      EXPECT_GT(d.temperature_limit_c, 0);
      EXPECT_FALSE(d.mig_enabled);
      bus_ids.insert(d.pci_bus_id);
      // The driver-style name leads back to the model, as NVML's would.
      const catalog::GpuSpec* spec = catalog::FindGpuByDeviceName(d.name, d.memory_mib);
      ASSERT_NE(spec, nullptr) << d.name;
      EXPECT_EQ(spec->model, profile.gpu_model) << d.name;
    }
    EXPECT_EQ(bus_ids.size(), devices->size());
  }
}

TEST_F(SimulatedProviderTest, UnknownProfileListsTheKnownOnes) {
  auto provider = MakeSimulated("dgx-h900", "n", 1, clock_);
  ASSERT_FALSE(provider.ok());
  EXPECT_EQ(provider.status().code(), StatusCode::kNotFound);
  EXPECT_NE(provider.status().message().find("dgx-h100"), std::string::npos);
}

TEST_F(SimulatedProviderTest, IdleGpusLookIdle) {
  auto p = Make();
  clock_.Advance(minutes(5));
  const std::vector<GpuSample> samples = *p->Sample();
  for (const GpuSample& s : samples) {
    EXPECT_EQ(s.util_pct, 0);
    EXPECT_NEAR(static_cast<double>(s.fb_used_mib), 512, 1);
    EXPECT_EQ(s.fb_used_mib + s.fb_free_mib, 80 * 1024);
    EXPECT_NEAR(s.power_w, 0.12 * 700, 5);
    EXPECT_NEAR(s.temperature_c, 33, 1);
    EXPECT_EQ(s.sm_clock_mhz, 345);
    EXPECT_EQ(s.clock_event_reasons, nvmlClocksEventReasonGpuIdle);
    EXPECT_EQ(s.ecc_corrected + s.ecc_uncorrected + s.xid_errors, 0u);
  }
}

TEST_F(SimulatedProviderTest, TelemetryFollowsLoadAndConverges) {
  auto p = Make();
  p->SetLoad(0, 1.0);
  p->SetLoad(1, 0.5);
  // Sampled every 10 s for 10 minutes (15 time constants).
  std::vector<GpuSample> last;
  for (int i = 0; i < 60; ++i) {
    clock_.Advance(seconds(10));
    last = *p->Sample();
  }
  const GpuSample& busy = last[0];
  EXPECT_NEAR(busy.util_pct, 95, 3);
  EXPECT_GT(busy.mem_copy_util_pct, 30);
  EXPECT_NEAR(static_cast<double>(busy.fb_used_mib), 0.9 * 80 * 1024, 100);
  EXPECT_NEAR(busy.power_w, 0.9 * 700, 0.015 * 700 + 0.5);
  EXPECT_LE(busy.power_w, 700);
  EXPECT_NEAR(busy.temperature_c, 70, 1);
  EXPECT_NEAR(busy.sm_clock_mhz, 1980, 0.02 * 1980);
  EXPECT_EQ(busy.clock_event_reasons, 0u);

  const GpuSample& half = last[1];
  EXPECT_NEAR(half.util_pct, 47.5, 3);
  EXPECT_NEAR(half.power_w, 0.51 * 700, 0.015 * 700 + 0.5);
  EXPECT_NEAR(half.temperature_c, 33 + 18.5, 1);
  EXPECT_LT(half.fb_used_mib, busy.fb_used_mib);

  EXPECT_EQ(last[2].util_pct, 0);  // untouched GPUs stay idle

  // Back to idle: utilisation and memory drop at once, temperature lags.
  p->SetLoad(0, 0);
  clock_.Advance(seconds(10));
  const GpuSample cooling = SampleOf(*p, 0);
  EXPECT_EQ(cooling.util_pct, 0);
  EXPECT_NEAR(static_cast<double>(cooling.fb_used_mib), 512, 1);
  EXPECT_GT(cooling.temperature_c, 55);
}

TEST_F(SimulatedProviderTest, APowerCapHoldsTheDrawUntilItIsGivenBack) {
  auto p = Make();
  p->SetLoad(0, 1.0);
  ASSERT_TRUE(p->SetPowerCap(0, 300).ok());
  clock_.Advance(seconds(10));
  EXPECT_LE(SampleOf(*p, 0).power_w, 300);
  EXPECT_GT(SampleOf(*p, 0).power_w, 300 - 0.015 * 700 - 0.5);
  const Status low = p->SetPowerCap(0, 100);
  EXPECT_EQ(low.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(low.message().find("from 175 to 700 W"), std::string::npos) << low.message();
  ASSERT_TRUE(p->SetPowerCap(0, 0).ok());
  clock_.Advance(seconds(10));
  EXPECT_NEAR(SampleOf(*p, 0).power_w, 0.9 * 700, 0.015 * 700 + 0.5);
}

// MIG: a GPU splits into slices that are GPUs of their own (their memory,
// their share of the power), is refused while busy, and joins back.
TEST_F(SimulatedProviderTest, MigSlicesAreGpusOfTheirOwn) {
  auto p = Make();
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->SetMigLayout(2, std::vector<std::string>(7, "1g.10gb")).ok());
  auto devices = p->Discover();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 14u);
  const GpuDevice& slice = (*devices)[2];
  EXPECT_EQ(slice.index, 2);
  EXPECT_EQ(slice.device, 2);
  EXPECT_EQ(slice.model, "H100-SXM-80GB/1g.10gb");
  EXPECT_EQ(slice.name, "NVIDIA H100 80GB HBM3 MIG 1g.10gb");
  EXPECT_EQ(slice.memory_mib, 10 * 1024);
  EXPECT_EQ(slice.mig_gi, 1);
  EXPECT_EQ(slice.mig_index, 0);
  EXPECT_EQ((*devices)[8].mig_index, 6) << "the GPU's seventh MIG device";
  EXPECT_EQ((*devices)[9].mig_index, -1) << "a whole GPU";
  EXPECT_EQ(slice.uuid.rfind("MIG-", 0), 0u);
  EXPECT_NEAR(slice.power_limit_w, 700.0 / 7, 1e-9);
  EXPECT_EQ((*devices)[9].device, 3);
  p->SetLoad(2, 1.0);
  clock_.Advance(minutes(5));
  const GpuSample busy = SampleOf(*p, 2);
  EXPECT_GT(busy.util_pct, 80);
  EXPECT_LE(busy.power_w, 100.0);
  EXPECT_LE(busy.fb_used_mib, 10 * 1024);
  EXPECT_EQ(SampleOf(*p, 3).util_pct, 0) << "its neighbour slice is idle";
  // A busy GPU is not re-partitioned; an idle one is, and joins back whole.
  EXPECT_FALSE(p->SetMigLayout(2, {}).ok());
  p->SetLoad(2, 0);
  EXPECT_FALSE(p->SetMigLayout(2, std::vector<std::string>(8, "1g.10gb")).ok());
  EXPECT_FALSE(p->SetMigLayout(8, {}).ok());
  ASSERT_TRUE(p->SetMigLayout(2, {}).ok());
  devices = p->Discover();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 8u);
  EXPECT_EQ((*devices)[2].model, "H100-SXM-80GB");
  EXPECT_EQ((*devices)[2].device, 2);
}

TEST_F(SimulatedProviderTest, TemperatureLagsWithTheTimeConstant) {
  auto p = Make();
  p->SetLoad(3, 1.0);
  clock_.Advance(seconds(1));
  EXPECT_LT(SampleOf(*p, 3).temperature_c, 35);
  clock_.Advance(SimulatedProvider::kThermalTimeConstant - seconds(1));
  // One time constant: 63 % of the way from 33 to 70 degC.
  EXPECT_NEAR(SampleOf(*p, 3).temperature_c, 33 + 37 * (1 - std::exp(-1.0)), 1);
}

TEST_F(SimulatedProviderTest, EnergyIntegratesPower) {
  auto p = Make();
  clock_.Advance(seconds(100));
  EXPECT_NEAR(SampleOf(*p, 0).energy_j, 0.12 * 700 * 100, 1e-6);
  p->SetLoad(0, 1.0);
  clock_.Advance(seconds(10));
  EXPECT_NEAR(SampleOf(*p, 0).energy_j, 0.12 * 700 * 100 + 0.9 * 700 * 10, 1e-6);
  // A clock that stands still adds nothing.
  EXPECT_NEAR(SampleOf(*p, 0).energy_j, 0.12 * 700 * 100 + 0.9 * 700 * 10, 1e-6);
}

// dcgm-exporter's other counters: NVLink traffic only on GPUs joined by
// NVLink, and only under load; the memory clock of the part; no video work.
TEST_F(SimulatedProviderTest, OtherCountersFollowLoadAndTheParts) {
  auto p = Make("dgx-h100");
  p->SetLoad(0, 1.0);
  clock_.Advance(seconds(10));
  const api::GpuCounters busy = SampleOf(*p, 0).counters;
  const api::GpuCounters idle = SampleOf(*p, 1).counters;
  ASSERT_TRUE(busy.nvlink_kib.has_value());
  // 100 GiB/s each way for 10 s.
  EXPECT_EQ(*busy.nvlink_kib, uint64_t{2} * 100 * 1024 * 1024 * 10);
  EXPECT_EQ(idle.nvlink_kib, uint64_t{0});
  EXPECT_EQ(busy.mem_clock_mhz, 2619);
  EXPECT_EQ(busy.enc_util_pct, 0);
  EXPECT_EQ(busy.row_remap_failed, false);
  ASSERT_TRUE(busy.memory_temp_c.has_value());
  EXPECT_GT(*busy.memory_temp_c, SampleOf(*p, 1).temperature_c);

  auto pcie = Make("pcie-l40s-4");  // no NVLink
  pcie->SetLoad(0, 1.0);
  clock_.Advance(seconds(10));
  EXPECT_FALSE(SampleOf(*pcie, 0).counters.nvlink_kib.has_value());
  auto blackwell = Make("dgx-b200");  // a memory clock not known here: none
  EXPECT_FALSE(SampleOf(*blackwell, 0).counters.mem_clock_mhz.has_value());
}

TEST_F(SimulatedProviderTest, SameSeedSameReadings) {
  auto run = [this](uint64_t seed) {
    FakeClock clock;
    auto p = SimulatedProvider::Create("hgx-h200", "node-b", seed, clock);
    std::vector<double> readings;
    for (int i = 0; i < 20; ++i) {
      (*p)->SetLoad(i % 8, (i % 5) / 4.0);
      clock.Advance(seconds(3));
      const std::vector<GpuSample> samples = *(*p)->Sample();
      for (const GpuSample& s : samples) {
        readings.insert(readings.end(), {s.util_pct, s.power_w, s.temperature_c,
                                         static_cast<double>(s.fb_used_mib), s.sm_clock_mhz});
      }
    }
    return readings;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST_F(SimulatedProviderTest, LoadIsClampedAndBadIndicesIgnored) {
  auto p = Make();
  p->SetLoad(0, 7.0);
  p->SetLoad(1, -1.0);
  p->SetLoad(2, std::nan(""));
  p->SetLoad(8, 1.0);
  p->SetLoad(-1, 1.0);
  clock_.Advance(minutes(10));
  auto samples = *p->Sample();
  EXPECT_NEAR(samples[0].util_pct, 95, 3);
  EXPECT_EQ(samples[1].util_pct, 0);
  EXPECT_EQ(samples[2].util_pct, 0);
}

TEST_F(SimulatedProviderTest, InjectedFaultsAppearInSamples) {
  auto p = Make();
  ASSERT_TRUE(p->InjectXid(3, 79).ok());
  ASSERT_TRUE(p->InjectEccErrors(2, 5, 1).ok());
  ASSERT_TRUE(p->InjectOverheat(1, 95).ok());
  p->SetLoad(1, 1.0);
  clock_.Advance(seconds(1));
  auto samples = *p->Sample();
  EXPECT_EQ(samples[3].xid_errors, 1u);
  EXPECT_EQ(samples[3].last_xid, 79);
  EXPECT_EQ(samples[2].ecc_corrected, 5u);
  EXPECT_EQ(samples[2].ecc_uncorrected, 1u);
  EXPECT_EQ(samples[1].temperature_c, 95);
  EXPECT_NE(samples[1].clock_event_reasons & nvmlClocksEventReasonHwThermalSlowdown, 0u);
  EXPECT_LT(samples[1].sm_clock_mhz, 0.75 * 1980);
  for (int i : {0, 4, 5, 6, 7}) {
    EXPECT_EQ(samples[i].xid_errors + samples[i].ecc_uncorrected, 0u) << i;
    EXPECT_LT(samples[i].temperature_c, 87) << i;
  }
  // Counters are totals; clearing ends the overheat, and the GPU cools off
  // from where it was held towards its busy temperature.
  ASSERT_TRUE(p->InjectXid(3, 48).ok());
  ASSERT_TRUE(p->ClearFaults(1).ok());
  clock_.Advance(minutes(1));
  samples = *p->Sample();
  EXPECT_EQ(samples[3].xid_errors, 2u);
  EXPECT_EQ(samples[3].last_xid, 48);
  EXPECT_LT(samples[1].temperature_c, 87);
  EXPECT_GT(samples[1].temperature_c, 70);
  EXPECT_EQ(samples[1].clock_event_reasons, 0u);

  for (Status s : {p->InjectXid(8, 79), p->InjectEccErrors(-1, 1, 1), p->InjectOverheat(99, 90),
                   p->ClearFaults(8)}) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  }
}

// `shoal agent --sim-faults` / `shoal up --sim-fault`: the text form, and a
// delayed fault that shows from the first sample at or after its time.
TEST_F(SimulatedProviderTest, FaultsParsedFromTextAndScheduled) {
  auto xid = SimFault::Parse("xid:5:79@30s");
  ASSERT_TRUE(xid.ok()) << xid.status().ToString();
  EXPECT_EQ(xid->kind, SimFault::Kind::kXid);
  EXPECT_EQ(xid->gpu, 5);
  EXPECT_EQ(xid->xid, 79);
  EXPECT_EQ(xid->delay, seconds(30));
  auto ecc = SimFault::Parse("ecc:1:14");
  ASSERT_TRUE(ecc.ok());
  EXPECT_EQ(ecc->corrected, 14u);
  EXPECT_EQ(ecc->uncorrected, 0u);
  EXPECT_EQ(ecc->delay, seconds(0));
  EXPECT_EQ(SimFault::Parse("ecc:1:14:2")->uncorrected, 2u);
  EXPECT_EQ(SimFault::Parse("hot:0:93.5")->temperature_c, 93.5);
  for (const char* bad : {"", "xid", "xid:5", "xid:5:0", "xid:-1:79", "xid:5:79:1", "ecc:1:x",
                          "ecc:1:1:1:1", "hot:0:900", "burn:0:1", "xid:5:79@soon", "xid:a:79"}) {
    auto f = SimFault::Parse(bad);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_NE(f.status().message().find("xid:GPU:CODE"), std::string::npos)
        << f.status().ToString();
  }

  auto p = Make();
  ASSERT_TRUE(p->Schedule(*xid).ok());
  ASSERT_TRUE(p->Schedule(*ecc).ok());
  auto samples = *p->Sample();
  EXPECT_EQ(samples[1].ecc_corrected, 14u);  // no delay: at once
  EXPECT_EQ(samples[5].xid_errors, 0u);
  clock_.Advance(seconds(29));
  EXPECT_EQ((*p->Sample())[5].xid_errors, 0u);
  clock_.Advance(seconds(1));
  samples = *p->Sample();
  EXPECT_EQ(samples[5].xid_errors, 1u);
  EXPECT_EQ(samples[5].last_xid, 79);
  clock_.Advance(seconds(30));
  EXPECT_EQ((*p->Sample())[5].xid_errors, 1u);  // once
  EXPECT_EQ(p->Schedule(*SimFault::Parse("xid:8:79")).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal::agent
