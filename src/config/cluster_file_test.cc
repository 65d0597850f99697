#include "config/cluster_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace shoal::config {
namespace {

namespace fs = std::filesystem;

int CountGpus(const Cluster& c, std::string_view model) {
  int n = 0;
  for (const Node& node : c.nodes) {
    for (const Gpu& g : node.gpus)
      n += g.model == model ? 1 : 0;
  }
  return n;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ---------------------------------------------------------------------------
// Shoal's cluster file.

TEST(ClusterTomlTest, ProfilesNamesPlacesAndPartitions) {
  const char* text = R"(
name = "demo"
[network]
nodes_per_leaf = 2
leaves_per_spine = 2
[[partition]]
name = "gpu"
default = true
max_time = "7-00:00:00"
default_time = "1-00:00:00"
[[partition]]
name = "debug"
max_time = 60
priority_tier = 1
allowed_accounts = ["ml"]
[[account]]
name = "ml"
shares = 2
max_gpus = 64
[[nodes]]
count = 5
profile = "dgx-a100"
prefix = "a100-"
labels = ["ib"]
[[nodes]]
count = 2
profile = "pcie-l40s-4"
partitions = ["gpu", "debug"]
place = "spineX/leafX"
memory = "256G"
)";
  auto c = ParseClusterToml(text, "demo.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, "demo");
  ASSERT_EQ(c->nodes.size(), 7u);
  EXPECT_EQ(c->TotalGpus(), 5 * 8 + 2 * 4);
  const char* names[] = {"a100-001", "a100-002",        "a100-003",       "a100-004",
                         "a100-005", "pcie-l40s-4-001", "pcie-l40s-4-002"};
  for (size_t i = 0; i < c->nodes.size(); ++i) {
    const Node& n = c->nodes[i];
    EXPECT_EQ(n.name, names[i]);
    EXPECT_EQ(n.id, NodeId(static_cast<uint32_t>(i + 1)));
  }
  // Unplaced nodes fill leaves in order, two to a leaf, two leaves to a spine.
  EXPECT_EQ(c->nodes[0].place.ToString(), "spine0/leaf0");
  EXPECT_EQ(c->nodes[1].place.ToString(), "spine0/leaf0");
  EXPECT_EQ(c->nodes[2].place.ToString(), "spine0/leaf1");
  EXPECT_EQ(c->nodes[4].place.ToString(), "spine1/leaf2");
  EXPECT_EQ(c->nodes[5].place.ToString(), "spineX/leafX");
  EXPECT_EQ(c->nodes[0].partitions, std::vector<std::string>{"gpu"});
  EXPECT_EQ(c->nodes[0].labels, std::vector<std::string>{"ib"});
  EXPECT_EQ(c->nodes[6].partitions, (std::vector<std::string>{"gpu", "debug"}));
  EXPECT_EQ(c->nodes[6].memory_mib, 256 * 1024) << "a key overrides the profile";
  EXPECT_EQ(c->nodes[6].gpus[3].nvlink_island, 3);

  const Partition* debug = c->FindPartition("debug");
  ASSERT_NE(debug, nullptr);
  EXPECT_EQ(debug->max_time, std::chrono::hours(1)) << "an integer time limit is minutes";
  EXPECT_EQ(debug->priority_tier, 1);
  EXPECT_EQ(debug->allowed_accounts, std::vector<std::string>{"ml"});
  EXPECT_FALSE(debug->is_default);
  ASSERT_NE(c->DefaultPartition(), nullptr);
  EXPECT_EQ(c->DefaultPartition()->name, "gpu");
  EXPECT_EQ(c->DefaultPartition()->max_time, std::chrono::hours(24 * 7));
  ASSERT_EQ(c->accounts.size(), 1u);
  EXPECT_DOUBLE_EQ(c->accounts[0].shares, 2.0);
  EXPECT_EQ(c->accounts[0].max_gpus, 64);
}

TEST(ClusterTomlTest, CustomNodesAndTheImplicitDefaultPartition) {
  const char* text = R"(
[[nodes]]
count = 12
prefix = "v-"
gpus = 8
gpu_model = "V100"
gpu_memory = "32G"
nvlink_island_size = 4
numa_nodes = 2
cpus = 64
memory = 524288
[[nodes]]
name = "login"
cpus = 8
memory = "32G"
)";
  auto c = ParseClusterToml(text, "dir/custom.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, "custom") << "the name defaults to the file's";
  ASSERT_EQ(c->nodes.size(), 13u);
  EXPECT_EQ(c->nodes[0].name, "v-001");
  EXPECT_EQ(c->nodes[11].name, "v-012");
  EXPECT_EQ(c->nodes[12].name, "login");
  EXPECT_EQ(c->nodes[12].GpuCount(), 0);
  const Node& v = c->nodes[0];
  EXPECT_EQ(v.cpu_milli, 64'000);
  EXPECT_EQ(v.memory_mib, 512 * 1024);
  EXPECT_EQ(v.gpus[0].memory_mib, 32 * 1024);
  EXPECT_EQ(v.gpus[5].nvlink_island, 1);
  EXPECT_EQ(v.gpus[5].numa_node, 1);
  ASSERT_EQ(c->partitions.size(), 1u);
  EXPECT_EQ(c->partitions[0].name, "default");
  EXPECT_TRUE(c->partitions[0].is_default);
  for (const Node& n : c->nodes)
    EXPECT_EQ(n.partitions, std::vector<std::string>{"default"});
}

TEST(ClusterTomlTest, ALonePartitionIsTheDefault) {
  auto c =
      ParseClusterToml("[[partition]]\nname = \"p\"\n[[nodes]]\nprofile = \"t4-2\"\n", "p.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->partitions[0].is_default);
  EXPECT_EQ(c->nodes[0].partitions, std::vector<std::string>{"p"});
}

TEST(ClusterTomlTest, PowerBudgetsAndTheIdleModel) {
  auto c = ParseClusterToml(R"(
[[power_budget]]
name = "site"
kw = 40
[[power_budget]]
name = "row1"
kw = 12.5
label = "row=1"
[power]
gpu_idle_fraction = 0.15
node_idle_w = 800
[[nodes]]
profile = "dgx-h100"
labels = ["row=1"]
)",
                            "p.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->power_budgets.size(), 2u);
  EXPECT_EQ(c->power_budgets[0].name, "site");
  EXPECT_EQ(c->power_budgets[0].label, "");
  EXPECT_DOUBLE_EQ(c->power_budgets[0].watts, 40000);
  EXPECT_EQ(c->power_budgets[1].label, "row=1");
  EXPECT_DOUBLE_EQ(c->power_budgets[1].watts, 12500);
  EXPECT_DOUBLE_EQ(c->power.gpu_idle_fraction, 0.15);
  EXPECT_DOUBLE_EQ(c->power.node_idle_w, 800);
  EXPECT_DOUBLE_EQ(c->nodes[0].gpus[0].rated_w, 700);  // the catalogue's H100 SXM TDP
}

// A node group's GPUs split into MIG slices, each a GPU of its own.
TEST(ClusterTomlTest, MigSlicesFromALayout) {
  auto c = ParseClusterToml(R"(
[[nodes]]
profile = "dgx-h100"
count = 2
mig = "3g.40gb+2x2g.20gb"
[[nodes]]
profile = "dgx-h100"
prefix = "whole-"
)",
                            "p.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->nodes[0].GpuCount(), 24);
  EXPECT_EQ(CountGpus(*c, "H100-SXM-80GB/3g.40gb"), 16);
  EXPECT_EQ(CountGpus(*c, "H100-SXM-80GB/2g.20gb"), 32);
  EXPECT_EQ(CountGpus(*c, "H100-SXM-80GB"), 8);
  EXPECT_EQ(c->nodes[0].gpus[23].Device(), 7);
  auto bad = ParseClusterToml("[[nodes]]\nprofile = \"dgx-h100\"\nmig = \"8x1g.10gb\"\n", "b.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("nodes[1].mig: '8x1g.10gb': a count is 1 to 7"),
            std::string::npos)
      << bad.status().message();
}

// Each bad file must be refused with the file, the line and what is wrong.
TEST(ClusterTomlTest, ErrorsNameFileLineAndKey) {
  struct Case {
    std::string_view name;
    std::string text;
    std::string want;  // a substring of the error
  };
  const std::string ok_nodes = "[[nodes]]\nprofile = \"t4-2\"\n";
  const Case cases[] = {
      {"unknown top-level key", "nodez = 1\n" + ok_nodes,
       "bad.toml:1: unknown key 'nodez' (did you mean 'nodes'?)"},
      {"typo in a node key", "[[nodes]]\nprofile = \"t4-2\"\ngpu_modle = \"X\"\n",
       "bad.toml:3: nodes[1]: unknown key 'gpu_modle' (did you mean 'gpu_model'?)"},
      {"unknown profile", "[[nodes]]\nprofile = \"dgx-h1000\"\n",
       "bad.toml:2: nodes[1].profile: unknown profile"},
      {"count of the wrong type", "[[nodes]]\nprofile = \"t4-2\"\ncount = \"16\"\n",
       "bad.toml:3: nodes[1].count: must be an integer"},
      {"count out of range", "[[nodes]]\nprofile = \"t4-2\"\ncount = 0\n",
       "bad.toml:3: nodes[1].count: 0 is out of range"},
      {"bad memory", "[[nodes]]\nprofile = \"t4-2\"\nmemory = \"32X\"\n",
       "bad.toml:3: nodes[1].memory: '32X' has an unknown memory unit"},
      {"bad time limit", "[[partition]]\nname = \"p\"\nmax_time = \"7 days\"\n" + ok_nodes,
       "bad.toml:3: partition[1].max_time:"},
      {"unknown partition",
       "[[partition]]\nname = \"gpu\"\n[[nodes]]\nprofile = \"t4-2\"\npartitions = [\"gpux\"]\n",
       "bad.toml:5: nodes[1].partitions: unknown partition 'gpux' (known: gpu)"},
      {"two defaults",
       "[[partition]]\nname = \"a\"\ndefault = true\n[[partition]]\nname = \"b\"\ndefault = "
       "true\n" +
           ok_nodes,
       "bad.toml:6: partition[2].default: a second default partition"},
      {"no default among several",
       "[[partition]]\nname = \"a\"\n[[partition]]\nname = \"b\"\n" + ok_nodes,
       "bad.toml:1: partition[1]: no partition has default = true"},
      {"table instead of array of tables", "[partition]\nname = \"a\"\n" + ok_nodes,
       "bad.toml:1: partition: write [[partition]]"},
      {"name for many nodes", "[[nodes]]\nprofile = \"t4-2\"\ncount = 2\nname = \"x\"\n",
       "bad.toml:4: nodes[1].name: names one node"},
      {"duplicate node", ok_nodes + "[[nodes]]\nprofile = \"t4-2\"\n",
       "bad.toml:3: nodes[2]: node 't4-2-001' is defined twice"},
      {"syntax error", "name = \"unterminated\n" + ok_nodes, "bad.toml:1:"},
      {"custom node without cpus", "[[nodes]]\nmemory = \"1G\"\n",
       "bad.toml:1: nodes[1]: a node group without a profile needs 'cpus'"},
      {"GPUs without a model",
       "[[nodes]]\ncpus = 1\nmemory = \"1G\"\ngpus = 2\ngpu_memory = \"16G\"\n",
       "bad.toml:1: nodes[1]: a node group with GPUs needs 'gpu_model'"},
      {"unknown account",
       "[[account]]\nname = \"a\"\n[[partition]]\nname = \"p\"\nallowed_accounts = [\"b\"]\n" +
           ok_nodes,
       "bad.toml:5: partition[1].allowed_accounts: unknown account 'b'"},
      {"bad place", "[[nodes]]\nprofile = \"t4-2\"\nplace = \"a/b/c\"\n",
       "bad.toml:3: nodes[1].place:"},
      {"too many GPUs", "[[nodes]]\nprofile = \"t4-2\"\ngpus = 65\n",
       "bad.toml:3: nodes[1].gpus: 65 is out of range"},
      {"no nodes", "name = \"empty\"\n", "bad.toml:"},
      {"labels not a list", "[[nodes]]\nprofile = \"t4-2\"\nlabels = \"ib\"\n",
       "bad.toml:3: nodes[1].labels: must be a list"},
      {"negative shares", "[[account]]\nname = \"a\"\nshares = -1.0\n" + ok_nodes,
       "bad.toml:3: account[1].shares: must be greater than 0"},
      {"power budget without kw", "[[power_budget]]\nname = \"site\"\n" + ok_nodes,
       "bad.toml:1: power_budget[1]: a power budget needs 'kw'"},
      {"power budget of 0 kW", "[[power_budget]]\nname = \"site\"\nkw = 0\n" + ok_nodes,
       "bad.toml:3: power_budget[1].kw: must be more than 0"},
      {"power budget twice",
       "[[power_budget]]\nname = \"a\"\nkw = 1\n[[power_budget]]\nname = \"a\"\nkw = 2\n" +
           ok_nodes,
       "bad.toml:5: power_budget[2].name: power budget 'a' is defined twice"},
      {"idle fraction above 1", "[power]\ngpu_idle_fraction = 1.5\n" + ok_nodes,
       "bad.toml:2: power.gpu_idle_fraction: must be 0 to 1"},
      {"typo in a power key", "[power]\nnode_idle = 5\n" + ok_nodes,
       "bad.toml:2: power: unknown key 'node_idle'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = ParseClusterToml(c.text, "bad.toml");
    ASSERT_FALSE(r.ok()) << "accepted:\n" << c.text;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
  }
}

// ---------------------------------------------------------------------------
// The example cluster files shipped with Shoal.

TEST(ExampleClustersTest, EveryExampleLoads) {
  fs::path dir = fs::path(SHOAL_SOURCE_DIR) / "examples" / "clusters";
  ASSERT_TRUE(fs::is_directory(dir));
  std::map<std::string, Cluster> loaded;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".toml") continue;
    SCOPED_TRACE(e.path().string());
    auto c = ParseClusterToml(ReadFile(e.path()), e.path().string());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    loaded.emplace(e.path().stem().string(), std::move(c).value());
  }
  ASSERT_EQ(loaded.count("itp-16x8-a100"), 1u);
  ASSERT_EQ(loaded.count("h100-64x8"), 1u);
  ASSERT_EQ(loaded.count("mixed"), 1u);
  ASSERT_EQ(loaded.count("small"), 1u);

  const Cluster& itp = loaded.at("itp-16x8-a100");
  EXPECT_EQ(itp.nodes.size(), 16u);
  EXPECT_EQ(itp.TotalGpus(), 128);
  EXPECT_EQ(itp.nodes[7].place.leaf, "leaf0");
  EXPECT_EQ(itp.nodes[8].place.leaf, "leaf1");

  const Cluster& h100 = loaded.at("h100-64x8");
  EXPECT_EQ(h100.nodes.size(), 64u);
  EXPECT_EQ(h100.TotalGpus(), 512);
  EXPECT_EQ(h100.DefaultPartition()->name, "gpu");
  const Partition* debug = h100.FindPartition("debug");
  ASSERT_NE(debug, nullptr);
  EXPECT_EQ(debug->max_time, std::chrono::hours(1));
  EXPECT_EQ(debug->priority_tier, 1);
  int debug_nodes = 0;
  for (const Node& n : h100.nodes) {
    debug_nodes += std::count(n.partitions.begin(), n.partitions.end(), "debug") > 0 ? 1 : 0;
  }
  EXPECT_EQ(debug_nodes, 4);
  EXPECT_EQ(h100.nodes[63].place.leaf, "leaf7");

  const Cluster& mixed = loaded.at("mixed");
  EXPECT_GT(CountGpus(mixed, "H100-SXM-80GB"), 0);
  EXPECT_GT(CountGpus(mixed, "A100-SXM4-80GB"), 0);
  EXPECT_GT(CountGpus(mixed, "L40S-48GB"), 0);

  EXPECT_EQ(loaded.at("small").nodes.size(), 2u);
}

}  // namespace
}  // namespace shoal::config
