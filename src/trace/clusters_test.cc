#include "trace/clusters.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace shoal::trace {
namespace {

namespace fs = std::filesystem;

// Writes `text` to a fresh file under the test's temporary directory.
std::string WriteFile(const std::string& name, const std::string& text) {
  fs::path dir = fs::path(testing::TempDir()) / "shoal_clusters_test";
  fs::create_directories(dir);
  fs::path path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// A public trace shipped in data/traces (data/README.md).
std::string ShippedTrace(const std::string& relative) {
  return (fs::path(SHOAL_DATA_DIR) / "traces" / relative).string();
}

int CountGpus(const Cluster& c, std::string_view model) {
  int n = 0;
  for (const Node& node : c.nodes) {
    for (const Gpu& g : node.gpus)
      n += g.model == model ? 1 : 0;
  }
  return n;
}

// ---------------------------------------------------------------------------
// Node lists and cluster specs.

TEST(LoadClusterTest, NodeListsOfEveryKind) {
  struct Case {
    std::string_view name;
    std::string file;
    std::string text;
    int nodes;
    int gpus;
  };
  const Case cases[] = {
      {"openb", "nodes.csv",
       "sn,cpu_milli,memory_mib,gpu,model\r\nn0,32000,262144,0,\r\nn1,96000,786432,8,"
       "V100M32\r\n\r\n\n",
       2, 8},
      {"pai", "machines.csv",
       "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\nm0,CPU,96,512,0\nm1,T4,64,512,2\n", 2, 2},
      {"spot", "spot.csv",
       "gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,1,128,0\nH800,8,192,1\n", 2, 9},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterLoadOptions options;
    options.nodes_per_leaf = 1;
    auto cluster = LoadCluster(WriteFile(c.file, c.text), options);
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    EXPECT_EQ(static_cast<int>(cluster->nodes.size()), c.nodes);
    EXPECT_EQ(cluster->TotalGpus(), c.gpus);
    EXPECT_EQ(cluster->nodes[1].place.ToString(), "spine0/leaf1");
    EXPECT_EQ(cluster->nodes[1].partitions, std::vector<std::string>{"default"});
    EXPECT_EQ(cluster->nodes[1].id, NodeId(2));
    for (const Gpu& g : cluster->nodes[1].gpus)
      EXPECT_EQ(g.nvlink_island, 0);
  }
  auto pai = LoadCluster(WriteFile("machines.csv", cases[1].text));
  ASSERT_TRUE(pai.ok());
  EXPECT_EQ(pai->nodes[1].cpu_milli, 64'000);
  EXPECT_EQ(pai->nodes[1].memory_mib, 512 * 1024);
  EXPECT_EQ(pai->nodes[1].gpus[0].model, "T4");
  EXPECT_EQ(pai->nodes[1].gpus[0].memory_mib, 16 * 1024);
  auto spot = LoadCluster(WriteFile("spot.csv", cases[2].text));
  ASSERT_TRUE(spot.ok());
  EXPECT_EQ(spot->nodes[1].name, "spot-1");
  EXPECT_EQ(spot->nodes[1].memory_mib, 0) << "the spot list has no memory column";
}

TEST(LoadClusterTest, GavelSpec) {
  ClusterLoadOptions options;
  options.gavel_gpus_per_node = 4;
  auto c = LoadCluster(WriteFile("spec.json", R"({"philly": ["10:4:0"]})"), options);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, "philly");
  ASSERT_EQ(c->nodes.size(), 4u);  // 4 + 4 + 2 V100, 4 P100
  EXPECT_EQ(c->nodes[0].name, "v100-001");
  EXPECT_EQ(c->nodes[2].GpuCount(), 2);
  EXPECT_EQ(c->nodes[3].name, "p100-001");
  EXPECT_EQ(CountGpus(*c, "V100"), 10);
  EXPECT_EQ(CountGpus(*c, "P100"), 4);
}

TEST(LoadClusterTest, ErrorsNameFileAndLine) {
  struct Case {
    std::string_view name;
    std::string file;
    std::string text;
    std::string want;  // after the path
  };
  const Case cases[] = {
      {"wrong column count", "a.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,2,0\n",
       ":2: expected 5 columns"},
      {"not a number", "b.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,2,0,\nn1,x,2,0,\n",
       ":3: cpu_milli: 'x' is not an integer"},
      {"negative", "c.csv", "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\nm0,T4,-4,512,2\n",
       ":2: cap_cpu: -4 is negative"},
      {"GPUs without a model", "d.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,1,2,4,\n",
       ":2: a node with GPUs has no model"},
      {"unknown header", "e.csv", "host,gpus\nh,1\n", ":1: unknown cluster file"},
      {"bad gavel spec", "f.json", R"({"philly": ["10:4"]})",
       ": '10:4' is not a V100:P100:K80 GPU count"},
      {"gavel json syntax", "g.json", "{\"philly\": [", ": not valid JSON"},
      {"several gavel specs", "h.json", R"({"a": ["1:0:0"], "b": ["1:0:0"]})",
       ": a Gavel cluster spec is an object with one entry"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = WriteFile(c.file, c.text);
    auto r = LoadCluster(path);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(path + c.want), std::string::npos) << r.status().message();
  }
  auto missing = LoadCluster("/nonexistent/cluster.toml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(LoadClusterTest, PublicNodeLists) {
  struct Case {
    std::string path;
    int nodes;
    int gpus;
  };
  // Counts from data/traces/README.md.
  const Case cases[] = {
      {"alibaba-gpu-v2023-openb/openb_node_list_all_node.csv", 1523, 6212},
      {"alibaba-pai-v2020/pai_machine_spec.csv", 1897, 6742},
      {"alibaba-spot-gpu-v2026/node_info_df.csv", 4278, 10412},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    auto cluster = LoadCluster(ShippedTrace(c.path));
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    EXPECT_EQ(static_cast<int>(cluster->nodes.size()), c.nodes);
    EXPECT_EQ(cluster->TotalGpus(), c.gpus);
  }
  auto openb = LoadCluster(ShippedTrace(cases[0].path));
  ASSERT_TRUE(openb.ok());
  EXPECT_EQ(CountGpus(*openb, "G2"), 4392);
  EXPECT_EQ(CountGpus(*openb, "T4"), 842);
  EXPECT_EQ(CountGpus(*openb, "V100M32"), 204);
  auto spot = LoadCluster(ShippedTrace(cases[2].path));
  ASSERT_TRUE(spot.ok());
  int a10_nodes = 0;
  for (const Node& n : spot->nodes)
    a10_nodes += !n.gpus.empty() && n.gpus[0].model == "A10" ? 1 : 0;
  EXPECT_EQ(a10_nodes, 2494);
}

TEST(LoadClusterTest, PublicGavelSpecs) {
  auto homogeneous = LoadCluster(ShippedTrace("gavel-philly-msr/cluster_specs.json"));
  ASSERT_TRUE(homogeneous.ok()) << homogeneous.status().ToString();
  EXPECT_EQ(homogeneous->TotalGpus(), 500);
  EXPECT_EQ(homogeneous->nodes.size(), 63u);  // 62 x 8 + 1 x 4
  auto heterogeneous =
      LoadCluster(ShippedTrace("gavel-philly-msr/cluster_specs_heterogeneous.json"));
  ASSERT_TRUE(heterogeneous.ok()) << heterogeneous.status().ToString();
  for (std::string_view model : {"V100", "P100", "K80"})
    EXPECT_EQ(CountGpus(*heterogeneous, model), 300);
}

TEST(LoadClusterTest, ReadsShoalClusterFiles) {
  auto c = LoadCluster(std::string(SHOAL_SOURCE_DIR) + "/examples/clusters/itp-16x8-a100.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->TotalGpus(), 128);
  auto bad = LoadCluster(WriteFile("bad.toml", "[[nodes]]\nprofile = \"t4-2\"\ncont = 2\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.toml:3: nodes[1]: unknown key 'cont'"),
            std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace shoal::trace
