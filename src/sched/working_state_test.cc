#include "sched/working_state.h"

#include <gtest/gtest.h>

#include "testing/builders.h"

namespace shoal::sched {
namespace {

TEST(WorkingStateTest, IndexFollowsAllocations) {
  testing::ClusterBuilder c;
  c.Node("a").Leaf("s/l1");
  c.Node("b").Leaf("s/l1");
  c.Node("down").Leaf("s/l2");
  auto inv = c.Inventory();
  std::vector<NodeStatus> status(3);
  status[2].state = NodeState::kDown;
  WorkingState s(*inv, status);
  EXPECT_EQ(s.AtLeast(8).Count(), 2u) << "down nodes are not usable";
  EXPECT_EQ(s.LeafFreeGpus(0), 16);
  EXPECT_EQ(s.LeafNodesWithAtLeast(0, 8), 2);
  NodeAllocation na;
  na.node = inv->node(0).id;
  na.gpu_mask = 0b111;
  na.cpu_milli = 1000;
  s.Allocate(0, na);
  EXPECT_EQ(s.FreeWhole(0), 5);
  EXPECT_FALSE(s.AtLeast(6).Test(0));
  EXPECT_TRUE(s.AtLeast(5).Test(0));
  EXPECT_EQ(s.LeafFreeGpus(0), 13);
  EXPECT_EQ(s.LeafNodesWithAtLeast(0, 6), 1);
  EXPECT_EQ(s.CpuFree(0), 63000);
  s.Release(0, na);
  EXPECT_EQ(s.FreeWhole(0), 8);
  EXPECT_EQ(s.LeafNodesWithAtLeast(0, 8), 2);
  EXPECT_TRUE(s.Idle(0));
}

TEST(WorkingStateTest, SharesAndCanAllocate) {
  testing::ClusterBuilder c;
  c.Node("a").Gpus(2, "T4");
  auto inv = c.Inventory();
  WorkingState s(*inv, {});
  Allocation half{{NodeAllocation{inv->node(0).id, 0b01, 600, 0, 0, false}}};
  ASSERT_TRUE(s.Allocate(half));
  EXPECT_EQ(s.FreeWhole(0), 1);
  NodeDemand d;
  d.gpus = 1;
  d.gpu_milli = 400;
  EXPECT_EQ(s.FitGpus(0, d), 0b11u);
  d.gpu_milli = 500;
  EXPECT_EQ(s.FitGpus(0, d), 0b10u);
  Allocation too_much{{NodeAllocation{inv->node(0).id, 0b01, 500, 0, 0, false}}};
  EXPECT_FALSE(s.CanAllocate(too_much).ok());
  Allocation unknown{{NodeAllocation{NodeId(99), 0b01, 100, 0, 0, false}}};
  EXPECT_FALSE(s.CanAllocate(unknown).ok());
  EXPECT_FALSE(s.Allocate(unknown));
}

TEST(WorkingStateTest, MinIsTheTighterOfTwo) {
  testing::ClusterBuilder c;
  c.Node("a");
  auto inv = c.Inventory();
  WorkingState now(*inv, {}), later(*inv, {});
  now.Allocate(0, NodeAllocation{inv->node(0).id, 0b0011, 1000, 2000, 0, false});
  later.Allocate(0, NodeAllocation{inv->node(0).id, 0b1100, 1000, 5000, 0, false});
  WorkingState both = WorkingState::Min(now, later);
  // One GPU model: the GPUs are interchangeable, so six are free in both,
  // counted on the GPUs free now.
  EXPECT_EQ(both.FreeWholeMask(0), 0b11111100u);
  EXPECT_EQ(both.CpuFree(0), 64000 - 5000);
  // Work placed on them goes into `later` on other GPUs where its own are taken.
  const NodeAllocation four{inv->node(0).id, 0b111100, 1000, 0, 0, false};
  ASSERT_TRUE(later.AllocateAlike(Allocation{{four}}));
  EXPECT_EQ(later.FreeWholeMask(0), 0b11000000u) << "GPUs 0 and 1 took what 2 and 3 could not";
  EXPECT_FALSE(later.AllocateAlike(Allocation{{four}})) << "only two are left";
  EXPECT_EQ(later.FreeWholeMask(0), 0b11000000u) << "nothing changed";
}

// GPUs of different models are not interchangeable: the free GPUs of both
// are those free in each.
TEST(WorkingStateTest, MinOfMixedModelsIsPerGpu) {
  Cluster cl;
  Node& node = cl.nodes.emplace_back();
  node.id = NodeId(1);
  node.name = "a";
  node.cpu_milli = 64000;
  node.memory_mib = 512 * 1024;
  for (int i = 0; i < 4; ++i) {
    Gpu& g = node.gpus.emplace_back();
    g.index = i;
    g.model = i < 2 ? "A100" : "H100";
  }
  auto inv = Inventory::Build(cl);
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  WorkingState now(**inv, {}), later(**inv, {});
  now.Allocate(0, NodeAllocation{(*inv)->node(0).id, 0b0001, 1000, 0, 0, false});
  later.Allocate(0, NodeAllocation{(*inv)->node(0).id, 0b0100, 1000, 0, 0, false});
  EXPECT_EQ(WorkingState::Min(now, later).FreeWholeMask(0), 0b1010u);
}

}  // namespace
}  // namespace shoal::sched
