// Each score plugin's choice on small, hand-built states.
#include <gtest/gtest.h>

#include "sched/fragmentation.h"
#include "sched/placement.h"
#include "sched/plugins/plugins.h"
#include "sched/policy.h"
#include "sched/working_state.h"
#include "testing/builders.h"

namespace shoal::sched {
namespace {

using testing::ClusterBuilder;

// Places `req` with the named score plugin on a state where node i has
// `used[i]` GPUs of 8 taken, and returns the chosen node's name.
std::string Choose(const std::string& plugin, const std::vector<int>& used, int gpus,
                   int milli = 1000) {
  ClusterBuilder c;
  for (size_t i = 0; i < used.size(); ++i)
    c.Node("n" + std::to_string(i + 1));
  auto inv = c.Inventory();
  WorkingState state(*inv, {});
  for (size_t i = 0; i < used.size(); ++i) {
    NodeAllocation a;
    a.node = inv->node(static_cast<NodeIndex>(i)).id;
    a.gpu_mask = (uint64_t{1} << used[i]) - 1;
    state.Allocate(static_cast<NodeIndex>(i), a);
  }
  JobSpec spec;
  spec.nodes = 1;
  spec.gpus_per_node = gpus;
  spec.gpu_milli = milli;
  auto req = CompileRequest(*inv, spec);
  EXPECT_TRUE(req.ok());
  auto score = BuiltinRegistry().MakeScore(plugin);
  EXPECT_TRUE(score.ok());
  Snapshot snap;
  snap.inventory = inv;
  PolicyParams params;
  // The workload to keep room for: as many 8-GPU tasks as 1-GPU ones.
  params.workload.resize(2);
  params.workload[0].demand.gpus = 8;
  params.workload[0].weight = 0.5;
  params.workload[1].demand.gpus = 1;
  params.workload[1].weight = 0.5;
  auto pass = (*score)->BeginPass(snap, params);
  Rng rng(1);
  EligibilityCache elig(*inv);
  PassStats stats;
  PlaceContext ctx{**score, pass.get(), rng, params, elig, stats};
  auto alloc = Place(state, *req, ctx);
  if (!alloc) return "none";
  return inv->node(*inv->IndexOf(alloc->nodes[0].node)).name;
}

TEST(ScoreTest, ChoicesByTable) {
  struct Case {
    const char* plugin;
    std::vector<int> used;
    int gpus;
    const char* node;
  } cases[] = {
      {"first-fit", {0, 6, 4}, 2, "n1"},                                    // the first that fits
      {"first-fit", {7, 6, 4}, 2, "n2"}, {"best-fit", {0, 6, 4}, 2, "n2"},  // leaves 0 free on n2
      {"best-fit", {0, 5, 4}, 4, "n3"},  // n3 leaves 0, n1 leaves 4; n2 cannot
      {"topology", {0, 6, 4}, 2, "n2"},  {"topology", {8, 8, 8}, 1, "none"},
      {"fgd", {0, 7, 0}, 1, "n2"},  // filling n2 keeps two whole nodes for 8-GPU tasks
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Choose(c.plugin, c.used, c.gpus), c.node) << c.plugin;
  }
}

TEST(ScoreTest, RandomIsSeededAndSpreads) {
  std::map<std::string, int> seen;
  for (int i = 0; i < 20; ++i)
    seen[Choose("random", {0, 0, 0, 0}, 1)]++;
  EXPECT_EQ(seen.size(), 1u) << "the same seed gives the same choice";
}

TEST(FragmentationTest, ByHand) {
  // Two kinds of task, equally common: whole GPUs and half GPUs.
  std::vector<TypicalDemand> w(2);
  w[0].demand.gpus = 1;
  w[0].weight = 0.5;
  w[1].demand.gpus = 1;
  w[1].demand.gpu_milli = 500;
  w[1].weight = 0.5;
  // GPU rooms 1000 and 300: the 300 is fragmented for both kinds.
  std::vector<GpuRoom> a = {{0, 1000}, {0, 300}};
  EXPECT_DOUBLE_EQ(NodeFragmentation(a, 10, 10, w), 300);
  // Rooms 600 and 300: whole-GPU tasks cannot use either (all 900 are
  // fragments for them); half tasks can use the 600.
  std::vector<GpuRoom> b = {{0, 600}, {0, 300}};
  EXPECT_DOUBLE_EQ(NodeFragmentation(b, 10, 10, w), 0.5 * 900 + 0.5 * 300);
  // Without CPUs nothing fits: all free capacity is fragmented.
  w[0].demand.cpu_milli = 100;
  w[1].demand.cpu_milli = 100;
  EXPECT_DOUBLE_EQ(NodeFragmentation(a, 0, 10, w), 1300);
  // A task of another model cannot use these GPUs.
  w[0].demand.cpu_milli = w[1].demand.cpu_milli = 0;
  w[0].demand.model_mask = 2;
  w[1].demand.model_mask = 2;
  EXPECT_DOUBLE_EQ(NodeFragmentation(a, 10, 10, w), 1300);
}

TEST(FragmentationTest, WorkloadKeepsTheCommonKinds) {
  JobSpec one;
  one.gpus = 1;
  JobSpec eight;
  eight.nodes = 1;
  eight.gpus_per_node = 8;
  ClusterBuilder c;
  c.Node("n1");
  auto inv = c.Inventory();
  Request r1 = *CompileRequest(*inv, one);
  Request r8 = *CompileRequest(*inv, eight);
  std::vector<const Request*> reqs(19, &r1);
  reqs.push_back(&r8);
  auto w = WorkloadOf(reqs, 8, 0.95);
  ASSERT_EQ(w.size(), 1u) << "the 8-GPU kind is the rare 5 % that is cut";
  EXPECT_EQ(w[0].demand.gpus, 1);
  EXPECT_DOUBLE_EQ(w[0].weight, 1.0);
  auto all = WorkloadOf(reqs, 8, 1.0);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_DOUBLE_EQ(all[0].weight, 0.95);
}

}  // namespace
}  // namespace shoal::sched
