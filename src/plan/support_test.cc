#include "plan/support.h"

#include <gtest/gtest.h>

#include <cmath>

#include "plan/cluster.h"

namespace shoal::plan {
namespace {

Fabric InfiniBand(int nodes) {
  FabricRequest fr;
  fr.nodes = nodes;
  return *DesignFatTree(fr);
}

// The DGX SuperPOD H100 reference design's size (127 nodes, 4 SUs): its 5
// management servers, a UFM pair for the compute fabric, every node on two
// converged switches, and an out-of-band port for everything that has one.
TEST(SupportTest, ASuperPodSizedClusterGetsItsManagementAndNetworks) {
  const Fabric compute = InfiniBand(127);
  auto s = DesignSupport({}, 127, 32, compute);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const SupportParts& p = DefaultSupportParts();
  EXPECT_EQ(s->management_servers, 5);
  EXPECT_EQ(s->ufm_appliances, 2);
  EXPECT_EQ(s->storage_units, 1);
  EXPECT_EQ(s->storage_bound, "nothing asked");
  // 127 nodes, 4 for the appliance's 8 ports, 5 servers: 136 on two rails.
  EXPECT_EQ(s->converged.nics, 2 * (127 + 4 + 5));
  EXPECT_DOUBLE_EQ(s->converged.oversubscription, p.converged_oversubscription);
  const int switches = compute.Switches() + s->converged.Switches();
  const int ports = 127 + 1 + 5 + 2 + switches + (32 + s->racks) * p.pdus_per_rack;
  EXPECT_EQ(s->oob_switches, static_cast<int>(std::ceil(ports / 48.0)));
  EXPECT_EQ(s->oob_ports, ports + s->oob_switches);
  EXPECT_GT(s->kw, 0);
  EXPECT_DOUBLE_EQ(s->Usd(), s->storage_usd + s->network_usd + s->servers_usd);
  // More nodes, more management servers: one per further 128.
  EXPECT_EQ(DesignSupport({}, 1024, 256, InfiniBand(1024))->management_servers, 12);
}

// Without a compute fabric (inference replicas that fit in a node) there is
// no UFM, but the converged network still has its two switches.
TEST(SupportTest, NoComputeFabricNoUfmButTwoConvergedSwitches) {
  auto s = DesignSupport({.capacity_tb = 0.14}, 9, 5, Fabric{});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->ufm_appliances, 0);
  EXPECT_EQ(s->converged.Switches(), 2);
  EXPECT_EQ(s->storage_bound, "capacity");
}

// Storage takes as many appliances as its most demanding need.
TEST(SupportTest, StorageIsSizedByItsMostDemandingNeed) {
  const Fabric compute = InfiniBand(64);
  auto write = DesignSupport({.read_gbytes_s = 100, .write_gbytes_s = 200}, 64, 16, compute);
  EXPECT_EQ(write->storage_units, 4);  // 200 / 65
  EXPECT_EQ(write->storage_bound, "write");
  EXPECT_DOUBLE_EQ(write->storage_write_gbytes_s, 4 * 65.0);
  auto read = DesignSupport({.read_gbytes_s = 500, .write_gbytes_s = 10}, 64, 16, compute);
  EXPECT_EQ(read->storage_units, 6);  // 500 / 90
  EXPECT_EQ(read->storage_bound, "read");
  auto capacity = DesignSupport({.capacity_tb = 2600}, 64, 16, compute);
  EXPECT_EQ(capacity->storage_units, 6);  // 2,600 / 500
  EXPECT_EQ(capacity->storage_bound, "capacity");
  EXPECT_DOUBLE_EQ(capacity->storage_usd, 6 * DefaultSupportParts().storage_price_usd);
}

// A checkpoint's storage is as fast as pays for itself: a small, short run
// takes one appliance; a 405B model on 16,384 GPUs for months, whose every
// failure costs hours of the whole cluster, no fewer, and never one whose
// price the GPU time it saves does not cover.
TEST(SupportTest, CheckpointStoragePaysForItselfInGpuTimeNotLost) {
  const double per_unit = DefaultSupportParts().storage_write_gbytes_s;
  const double small_bytes = kCheckpointBytesPerParam * 8e9;
  const CheckpointStorage small = ChooseCheckpointStorage(small_bytes, 64, 50, 10, 1.0);
  EXPECT_DOUBLE_EQ(small.write_gbytes_s, per_unit);
  const double big_bytes = kCheckpointBytesPerParam * 405e9;
  const CheckpointStorage big = ChooseCheckpointStorage(big_bytes, 16384, 50, 120, 1.0);
  EXPECT_GE(big.write_gbytes_s, per_unit);
  // The choice costs no more than one appliance more or fewer would.
  auto cost = [&](double write) {
    const CheckpointPlan c = PlanCheckpoints(405e9, 16384, write, 50, write * 90 / 65);
    const double lost = c.overhead / (1 - c.overhead) * 120 * 24 * 16384 * 1.0;
    return write / per_unit * DefaultSupportParts().storage_price_usd + lost;
  };
  EXPECT_LE(cost(big.write_gbytes_s), cost(big.write_gbytes_s + per_unit));
  if (big.write_gbytes_s > per_unit) {
    EXPECT_LE(cost(big.write_gbytes_s), cost(big.write_gbytes_s - per_unit));
  }
  // GPU time worth far more buys faster storage.
  EXPECT_GT(ChooseCheckpointStorage(big_bytes, 16384, 50, 120, 100.0).write_gbytes_s,
            big.write_gbytes_s);
}

}  // namespace
}  // namespace shoal::plan
