#include "plan/fabric.h"

#include <gtest/gtest.h>

namespace shoal::plan {
namespace {

// NVIDIA DGX SuperPOD B200 reference architecture, "Larger DGX SuperPOD
// component counts" (docs.nvidia.com/dgx-superpod/reference-architecture-
// scalable-infrastructure-b200): 32 nodes of 8 GPUs per scalable unit, one
// 400G NIC per GPU, radix-64 InfiniBand switches, non-blocking.
struct SuperPodRow {
  int sus, nodes, gpus, leaf, spine, core, node_leaf, leaf_spine, spine_core;
};
constexpr SuperPodRow kSuperPod[] = {
    {2, 64, 512, 16, 8, 0, 512, 512, 0},
    {4, 128, 1024, 32, 16, 0, 1024, 1024, 0},
    {8, 256, 2048, 64, 32, 0, 2048, 2048, 0},
    {16, 512, 4096, 128, 128, 64, 4096, 4096, 4096},
    {32, 1024, 8192, 256, 256, 128, 8192, 8192, 8192},
    {64, 2048, 16384, 512, 512, 256, 16384, 16384, 16384},
};

TEST(FabricTest, MatchesDgxSuperPodTables) {
  for (const SuperPodRow& row : kSuperPod) {
    SCOPED_TRACE(::testing::Message() << row.sus << " SUs");
    FabricRequest req;
    req.nodes = row.nodes;
    req.rails = 8;
    req.switch_ports = 64;
    auto f = DesignFatTree(req);
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(f->scalable_units, row.sus);
    EXPECT_EQ(f->nics, row.gpus);
    EXPECT_EQ(f->leaves, row.leaf);
    EXPECT_EQ(f->spines, row.spine);
    EXPECT_EQ(f->cores, row.core);
    EXPECT_EQ(f->node_leaf_cables, row.node_leaf);
    EXPECT_EQ(f->leaf_spine_cables, row.leaf_spine);
    EXPECT_EQ(f->spine_core_cables, row.spine_core);
    EXPECT_EQ(f->tiers, row.core > 0 ? 3 : 2);
    EXPECT_EQ(f->transceivers, 2 * (row.node_leaf + row.leaf_spine + row.spine_core));
    EXPECT_EQ(f->link_ends, f->transceivers) << "one link per module unless asked";
  }
}

// DGX B200's twin-port OSFP cages serve its eight NICs in pairs, and a
// QM9700's 32 cages its 64 ports: one module for every two link ends, as
// the hardware has them (the cables are as many).
TEST(FabricTest, TwinPortOpticsCarryTwoLinksEach) {
  auto f = DesignFatTree({.nodes = 128, .nics_per_optic = 2, .links_per_switch_optic = 2});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->Cables(), 2048);
  EXPECT_EQ(f->link_ends, 4096);
  EXPECT_EQ(f->transceivers, 1024 / 2 + (1024 + 2 * 1024) / 2);  // nodes' cages, switches' cages
}

TEST(FabricTest, OneScalableUnitAndOneSwitch) {
  // One SU: 8 rail leaves and 4 spines (DGX SuperPOD's building block).
  auto su = DesignFatTree({.nodes = 32});
  ASSERT_TRUE(su.ok());
  EXPECT_EQ(su->leaves, 8);
  EXPECT_EQ(su->spines, 4);
  EXPECT_EQ(su->nodes_per_su, 32);
  // A few nodes whose NICs fit on one switch need no rails and no spine.
  auto small = DesignFatTree({.nodes = 4, .rails = 8});
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->tiers, 1);
  EXPECT_EQ(small->leaves, 1);
  EXPECT_EQ(small->spines, 0);
  EXPECT_EQ(small->node_leaf_cables, 32);
}

TEST(FabricTest, OversubscriptionTradesUplinksForNodes) {
  auto full = DesignFatTree({.nodes = 256});
  auto half = DesignFatTree({.nodes = 256, .oversubscription = 2});
  ASSERT_TRUE(full.ok() && half.ok());
  EXPECT_GT(half->leaf_down, full->leaf_down);
  EXPECT_LT(half->leaf_up, full->leaf_up);
  EXPECT_LT(half->leaves, full->leaves);
  EXPECT_LT(half->spines, full->spines);
  EXPECT_DOUBLE_EQ(half->bisection_gbps * 2, full->bisection_gbps);
}

TEST(FabricTest, PartialScalableUnitsRoundUp) {
  // 33 nodes need a second SU's leaves.
  auto f = DesignFatTree({.nodes = 33});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->scalable_units, 2);
  EXPECT_EQ(f->leaves, 16);
  EXPECT_EQ(f->node_leaf_cables, 33 * 8);
}

TEST(FabricTest, RejectsWhatItCannotBuild) {
  struct Case {
    FabricRequest req;
    std::string_view why;
  };
  const Case cases[] = {
      {{.nodes = 0}, "nodes"},
      {{.nodes = 8, .rails = 0}, "nodes"},
      {{.nodes = 8, .oversubscription = 0.5}, "oversubscription"},
      {{.nodes = 10000, .rails = 8}, "three-tier"},  // 80,000 NICs > 64^3/4
  };
  for (const Case& c : cases) {
    auto f = DesignFatTree(c.req);
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.status().message().find(c.why), std::string::npos) << f.status().message();
  }
}

}  // namespace
}  // namespace shoal::plan
