#include "plan/cluster.h"

#include <gtest/gtest.h>

#include <cmath>

namespace shoal::plan {
namespace {

const catalog::GpuSpec& Gpu(std::string_view name) {
  return *catalog::FindGpu(name);
}

TEST(ClusterTest, NodesRacksAndPower) {
  SiteConstraints site;
  auto d = DesignCluster(Gpu("H100"), 1000, site);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->nodes, 125);
  EXPECT_EQ(d->gpus, 1000);
  // A 10.2 kW DGX H100, racked as NVIDIA's reference architecture does:
  // four to a ~41 kW rack, past what air alone takes off a rack, which the
  // design says.
  EXPECT_EQ(d->nodes_per_rack, 4);
  EXPECT_EQ(d->racks, 32);
  EXPECT_NE(d->rack_why.find("reference architecture"), std::string::npos) << d->rack_why;
  EXPECT_EQ(d->cooling, Cooling::kAir);
  EXPECT_TRUE(d->rear_door);
  EXPECT_EQ(RackCoolingName(*d), "air-cooled nodes, rear-door heat exchangers");
  EXPECT_NE(d->cooling_why.find("40.8 kW per rack is past the 40 kW"), std::string::npos)
      << d->cooling_why;
  EXPECT_DOUBLE_EQ(d->gpu_kw, 1000 * 0.7);
  EXPECT_NEAR(d->it_kw, 125 * 10.2 + d->network_kw + d->support_kw, 1e-9);
  EXPECT_GT(d->support_kw, 0);
  EXPECT_NEAR(d->facility_kw, d->it_kw * site.pue, 1e-9);
  EXPECT_NEAR(d->total_btu_h, d->it_kw * 3412.142, 1);
  // Supplies: ceil(10.2 / 3.3) = 4 carry the node, plus the spares asked for.
  EXPECT_EQ(d->psus_needed_per_node, 4);
  EXPECT_EQ(d->psus_per_node, 4 + site.psu_redundancy);
  EXPECT_GT(d->network_usd, 0);
  EXPECT_NEAR(d->capex_usd, d->gpus_usd + d->servers_usd + d->network_usd + d->support.Usd(), 1e-6);
  EXPECT_EQ(d->support.storage_units, 1);  // asked for nothing: the least there is
  EXPECT_NEAR(d->failures_per_day, 1000 * kFailuresPerGpuDay, 1e-12);
  // A rack power the site gives is filled: three in 40 kW, within air.
  site.rack_power_kw = 40;
  auto given = DesignCluster(Gpu("H100"), 1000, site);
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->nodes_per_rack, 3);
  EXPECT_NE(given->rack_why.find("40 kW per rack (given)"), std::string::npos) << given->rack_why;
  EXPECT_NE(given->cooling_why.find("within air cooling"), std::string::npos);
  EXPECT_FALSE(given->rear_door);
  EXPECT_EQ(RackCoolingName(*given), "air");
  site.rack_power_kw = 52;
  EXPECT_EQ(DesignCluster(Gpu("H100"), 1000, site)->nodes_per_rack, 5);
}

// Liquid only for a chassis that has it: a site that offers liquid does not
// make a rack of air-cooled DGX H100s a 132 kW liquid rack.
TEST(ClusterTest, LiquidOnlyForChassisThatHaveIt) {
  SiteConstraints liquid;
  liquid.cooling = Cooling::kLiquid;
  auto h100 = DesignCluster(Gpu("H100"), 1000, liquid);
  ASSERT_TRUE(h100.ok()) << h100.status().message();
  EXPECT_EQ(h100->cooling, Cooling::kAir);
  EXPECT_EQ(h100->nodes_per_rack, 4);
  EXPECT_NE(h100->cooling_why.find("has no liquid-cooled version"), std::string::npos)
      << h100->cooling_why;
  auto gb200 = DesignCluster(Gpu("GB200"), 144, liquid);
  ASSERT_TRUE(gb200.ok()) << gb200.status().message();
  EXPECT_EQ(gb200->cooling, Cooling::kLiquid);
  EXPECT_NE(gb200->cooling_why.find("CDU"), std::string::npos) << gb200->cooling_why;
}

TEST(ClusterTest, Nvl72ComesInWholeLiquidCooledRacks) {
  auto d = DesignCluster(Gpu("GB200"), 100, {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->gpus, 144);
  EXPECT_EQ(d->racks, 2);
  EXPECT_EQ(d->cooling, Cooling::kLiquid);
  SiteConstraints air;
  air.cooling = Cooling::kAir;
  auto no = DesignCluster(Gpu("GB200"), 100, air);
  ASSERT_FALSE(no.ok());
  EXPECT_NE(no.status().message().find("liquid"), std::string::npos);
}

TEST(ClusterTest, LimitsThatBindSaySo) {
  struct Case {
    SiteConstraints site;
    std::string_view why;
  };
  SiteConstraints budget;
  budget.budget_usd = 1e6;
  SiteConstraints power;
  power.site_power_kw = 100;
  SiteConstraints rack;
  rack.rack_power_kw = 8;
  for (const Case& c :
       {Case{budget, "budget"}, Case{power, "the site has"}, Case{rack, "more than a rack"}}) {
    auto d = DesignCluster(Gpu("H100"), 256, c.site);
    ASSERT_FALSE(d.ok()) << c.why;
    EXPECT_EQ(d.status().code(), StatusCode::kUnsatisfiable);
    EXPECT_NE(d.status().message().find(c.why), std::string::npos) << d.status().message();
  }
  // Without the checks the same design is returned with its figures.
  EXPECT_TRUE(DesignCluster(Gpu("H100"), 256, budget, false).ok());
}

TEST(ClusterTest, GivenPricesOverrideTheCatalogue) {
  SiteConstraints site;
  site.gpu_price_usd["H100-SXM-80GB"] = 20000;
  auto d = DesignCluster(Gpu("H100"), 8, site);
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(d->gpus_usd, 8 * 20000.0);
  EXPECT_EQ(d->gpu_price_source, "given in the workload");
  auto listed = DesignCluster(Gpu("H100"), 8, {});
  EXPECT_DOUBLE_EQ(listed->gpu_price_usd, Gpu("H100").price_usd);
}

TEST(ClusterTest, CheckpointIntervalIsYoungsOptimum) {
  // Slow host copies: the stall sets the interval.
  const CheckpointPlan c = PlanCheckpoints(70e9, 1024, 1000, 0.01);
  const double mtbf_s = 86400 / (kFailuresPerGpuDay * 1024);
  EXPECT_DOUBLE_EQ(c.checkpoint_bytes, 16 * 70e9);
  EXPECT_NEAR(c.write_s, 16 * 70e9 / 1000e9, 1e-9);
  EXPECT_NEAR(c.stall_s, kCheckpointFixedStallS + 16 * 70e9 / 1024 / 0.01e9, 1e-6);
  EXPECT_EQ(c.restart_s, kRestartS) << "no read bandwidth given: the load is not counted";
  EXPECT_NEAR(c.interval_s, std::sqrt(2 * c.stall_s * mtbf_s), 1e-6);
  // Around the optimum, other intervals lose more.
  auto lost = [&](double interval) {
    return c.stall_s / interval + (interval / 2 + c.restart_s) / mtbf_s;
  };
  EXPECT_NEAR(c.overhead, lost(c.interval_s), 1e-12);
  EXPECT_LT(c.overhead, lost(c.interval_s * 1.5));
  EXPECT_LT(c.overhead, lost(c.interval_s / 1.5));
  // Slow storage: it sets the pace, one checkpoint per write.
  const CheckpointPlan slow = PlanCheckpoints(70e9, 1024, 0.5, 50);
  EXPECT_DOUBLE_EQ(slow.interval_s, slow.write_s);
  // More GPUs fail more often and lose more.
  EXPECT_GT(PlanCheckpoints(70e9, 16384, 0.5, 50).overhead, slow.overhead);
  // Reading the checkpoint back after a failure is part of the restart.
  EXPECT_NEAR(PlanCheckpoints(70e9, 1024, 10, 50, 20).restart_s, kRestartS + 16 * 70e9 / 20e9,
              1e-9);
}

}  // namespace
}  // namespace shoal::plan
