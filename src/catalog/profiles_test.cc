#include "catalog/profiles.h"

#include <gtest/gtest.h>

#include <iterator>
#include <regex>
#include <set>

namespace shoal::catalog {
namespace {

constexpr int64_t kGib = 1024;

struct Expected {
  std::string_view name;
  std::string_view gpu_model;
  int gpus;
  int64_t gpu_memory_mib;
  int island_size;
  int numa_nodes;
  int64_t cpu_milli;
  int64_t memory_mib;
};

// The figures the brief and the vendor documents give; a change here is a
// change of the catalog and should be deliberate.
const Expected kExpected[] = {
    {"dgx-h100", "H100-SXM-80GB", 8, 80 * kGib, 8, 2, 224'000, 2048 * kGib},
    {"hgx-h200", "H200-SXM-141GB", 8, 141 * kGib, 8, 2, 224'000, 2048 * kGib},
    {"dgx-a100", "A100-SXM4-80GB", 8, 80 * kGib, 8, 2, 256'000, 2048 * kGib},
    {"dgx-b200", "B200-SXM-180GB", 8, 180 * kGib, 8, 2, 224'000, 2048 * kGib},
    {"pcie-l40s-4", "L40S-48GB", 4, 48 * kGib, 1, 2, 128'000, 1024 * kGib},
    {"pcie-a100-4", "A100-PCIE-80GB", 4, 80 * kGib, 1, 2, 128'000, 1024 * kGib},
    {"v100-8", "V100-SXM2-32GB", 8, 32 * kGib, 4, 2, 80'000, 512 * kGib},
    {"t4-2", "T4-16GB", 2, 16 * kGib, 1, 1, 64'000, 256 * kGib},
    {"a10-1", "A10-24GB", 1, 24 * kGib, 1, 1, 32'000, 128 * kGib},
};

TEST(ProfilesTest, FiguresMatchTheirSources) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const NodeProfile* p = FindProfile(e.name);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->gpu_model, e.gpu_model);
    EXPECT_EQ(p->gpus, e.gpus);
    EXPECT_EQ(p->gpu_memory_mib, e.gpu_memory_mib);
    EXPECT_EQ(p->nvlink_island_size, e.island_size);
    EXPECT_EQ(p->numa_nodes, e.numa_nodes);
    EXPECT_EQ(p->cpu_milli, e.cpu_milli);
    EXPECT_EQ(p->memory_mib, e.memory_mib);
  }
  EXPECT_EQ(Profiles().size(), std::size(kExpected));
}

TEST(ProfilesTest, EveryProfileIsWellFormed) {
  std::set<std::string_view> names;
  for (const NodeProfile& p : Profiles()) {
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(names.insert(p.name).second) << "duplicate name";
    EXPECT_GT(p.gpus, 0);
    EXPECT_LE(p.gpus, kMaxGpusPerNode);
    EXPECT_GT(p.gpu_memory_mib, 0);
    EXPECT_GT(p.gpu_tdp_w, 0);
    EXPECT_GT(p.cpu_milli, 0);
    EXPECT_GT(p.memory_mib, 0);
    EXPECT_EQ(p.gpus % p.nvlink_island_size, 0) << "islands must split the GPUs evenly";
    EXPECT_EQ(p.gpus % p.numa_nodes, 0) << "NUMA nodes must split the GPUs evenly";
    EXPECT_GT(p.source.size(), 40u) << "every figure needs its source";
  }
}

TEST(ProfilesTest, NamesAndLookup) {
  std::vector<std::string> names = ProfileNames();
  ASSERT_EQ(names.size(), Profiles().size());
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(names[i], Profiles()[i].name);
  EXPECT_EQ(FindProfile("no-such-node"), nullptr);
  EXPECT_EQ(FindProfile("DGX-H100"), nullptr) << "names are exact";
}

TEST(MakeNodeTest, IslandsAndNumaNodes) {
  struct Case {
    std::string_view profile;
    std::vector<int> islands;
    std::vector<int> numa;
  };
  const Case cases[] = {
      {"dgx-h100", {0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 1, 1, 1, 1}},
      {"v100-8", {0, 0, 0, 0, 1, 1, 1, 1}, {0, 0, 0, 0, 1, 1, 1, 1}},
      {"pcie-l40s-4", {0, 1, 2, 3}, {0, 0, 1, 1}},
      {"t4-2", {0, 1}, {0, 0}},
      {"a10-1", {0}, {0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.profile);
    const NodeProfile* p = FindProfile(c.profile);
    ASSERT_NE(p, nullptr);
    Node node = MakeNode(*p, "n1");
    ASSERT_EQ(node.GpuCount(), static_cast<int>(c.islands.size()));
    for (int i = 0; i < node.GpuCount(); ++i) {
      const Gpu& g = node.gpus[static_cast<size_t>(i)];
      EXPECT_EQ(g.index, i);
      EXPECT_EQ(g.model, p->gpu_model);
      EXPECT_EQ(g.memory_mib, p->gpu_memory_mib);
      EXPECT_EQ(g.nvlink_island, c.islands[static_cast<size_t>(i)]) << "gpu " << i;
      EXPECT_EQ(g.numa_node, c.numa[static_cast<size_t>(i)]) << "gpu " << i;
      EXPECT_TRUE(g.healthy);
    }
    EXPECT_EQ(node.name, "n1");
    EXPECT_EQ(node.cpu_milli, p->cpu_milli);
    EXPECT_EQ(node.memory_mib, p->memory_mib);
  }
}

TEST(MakeNodeTest, UuidsAreStableUniqueAndWellFormed) {
  const NodeProfile& p = *FindProfile("dgx-h100");
  Node a = MakeNode(p, "gpu-001");
  Node again = MakeNode(p, "gpu-001");
  Node b = MakeNode(p, "gpu-002");
  const std::regex uuid("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  std::set<std::string> seen;
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    EXPECT_TRUE(std::regex_match(a.gpus[i].uuid, uuid)) << a.gpus[i].uuid;
    EXPECT_EQ(a.gpus[i].uuid, again.gpus[i].uuid);
    EXPECT_TRUE(seen.insert(a.gpus[i].uuid).second);
    EXPECT_TRUE(seen.insert(b.gpus[i].uuid).second);
  }
  // Pinned so that a change of the hash, which would rename every simulated
  // GPU, is noticed.
  EXPECT_EQ(a.gpus[0].uuid, "GPU-1c65de07-8b04-bd28-4f15-90cbb4e3daa0");
}

TEST(MakeNodeTest, CustomProfileWithoutIslandSizeIsOneIsland) {
  NodeProfile custom;
  custom.gpu_model = "X";
  custom.gpus = 3;
  custom.nvlink_island_size = 0;
  custom.numa_nodes = 0;
  Node node = MakeNode(custom, "x");
  ASSERT_EQ(node.GpuCount(), 3);
  for (const Gpu& g : node.gpus) {
    EXPECT_EQ(g.nvlink_island, 0);
    EXPECT_EQ(g.numa_node, 0);
  }
  custom.gpus = 0;
  EXPECT_EQ(MakeNode(custom, "cpu").GpuCount(), 0);
}

}  // namespace
}  // namespace shoal::catalog
