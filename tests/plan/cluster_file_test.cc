// A planned cluster must be one that the simulator and `shoal up` can load:
// every design's cluster file goes through the real cluster-file parser.
#include "config/cluster_file.h"

#include <gtest/gtest.h>

#include "plan/report.h"

namespace shoal::plan {
namespace {

TEST(PlannedClusterFileTest, EveryDesignLoadsWithItsGpus) {
  Workload w;
  w.name = "cross-module";
  TrainingWorkload t;
  t.model = *FindModelPreset("llama3-8b");
  t.tokens = 1e12;
  t.gpus = 96;
  t.global_batch_tokens = DefaultBatchTokens(t.model);
  w.training.push_back(t);
  InferenceWorkload inf;
  inf.model = *FindModelPreset("llama3-8b");
  inf.target.output_tokens_per_s = 20000;
  w.inference.push_back(inf);
  w.general.push_back({"notebooks", 6, "given"});
  w.gpu_models = {"H100", "B200", "GB200", "MI300X", "L40S"};
  auto r = PlanWorkload(w);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const Design& d : r->designs) {
    SCOPED_TRACE(d.gpu_model);
    ASSERT_TRUE(d.feasible) << d.problem;
    auto cluster = config::ParseClusterToml(ClusterToml(w, d), "planned.toml");
    ASSERT_TRUE(cluster.ok()) << cluster.status().message();
    int gpus = 0;
    for (const Node& n : cluster->nodes) {
      gpus += n.GpuCount();
      for (const Gpu& g : n.gpus)
        EXPECT_EQ(g.model, d.gpu_model);
    }
    EXPECT_EQ(static_cast<int>(cluster->nodes.size()), d.cluster.nodes);
    EXPECT_EQ(gpus, d.cluster.gpus);
  }
}

}  // namespace
}  // namespace shoal::plan
