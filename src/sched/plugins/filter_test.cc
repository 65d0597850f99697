// Filter and reserve plugins: built-ins by table, and a custom filter added to a registry.
#include <gtest/gtest.h>

#include "sched/plugins/plugins.h"
#include "sched/policy.h"
#include "sched/schedule.h"
#include "testing/builders.h"

namespace shoal::sched {
namespace {

TEST(FilterTest, BuiltinsByTable) {
  testing::ClusterBuilder c;
  c.AddPartition("gpu", true);
  c.AddPartition("cpu");
  c.Node("h").Gpus(8, "H100").Partitions({"gpu"}).Labels({"ib"});
  c.Node("c").Gpus(0, "none").Partitions({"cpu"});
  auto inv = c.Inventory();
  auto compile = [&](auto&& f) {
    JobSpec s;
    f(s);
    return *CompileRequest(*inv, s);
  };
  Request h100 = compile([](JobSpec& s) {
    s.gpus = 1;
    s.gpu_models = {"h100"};
  });
  Request ib = compile([](JobSpec& s) {
    s.gpus = 1;
    s.constraints = {"ib"};
  });
  Request cpu = compile([](JobSpec& s) {
    s.partition = "cpu";
    s.cpu_milli_per_node = 1000;
  });
  struct Case {
    const char* filter;
    const Request& req;
    const char* node;
    bool admits;
  } cases[] = {
      {"partition", h100, "h", true}, {"partition", h100, "c", false},
      {"partition", cpu, "c", true},  {"labels", ib, "h", true},
      {"labels", ib, "c", false},     {"gpu-model", h100, "c", false},
      {"gpu-model", h100, "h", true}, {"gpu-model", cpu, "c", true},
  };
  Registry reg = BuiltinRegistry();
  for (const Case& k : cases) {
    auto f = reg.MakeFilter(k.filter);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ((*f)->Admits(inv->node(*inv->IndexOfName(k.node)), k.req), k.admits)
        << k.filter << " " << k.node;
  }
  EXPECT_FALSE(reg.MakeFilter("nope").ok());
  EXPECT_EQ(reg.ReserveNames(), (std::vector<std::string>{"backfill", "greedy", "strict"}));
}

// A site's own rule: never place on nodes whose name starts with "old".
class NoOldNodes final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "no-old-nodes"; }
  bool Admits(const InvNode& n, const Request&) const override {
    return n.name.rfind("old", 0) != 0;
  }
};

TEST(FilterTest, ACustomFilterIsAPlugin) {
  testing::ClusterBuilder c;
  c.Node("old1");
  c.Node("new1");
  auto inv = c.Inventory();
  testing::SnapshotBuilder s(inv);
  JobId a = s.Pending(testing::JobBuilder("a").Gpus(8));
  JobId b = s.Pending(testing::JobBuilder("b").Gpus(8));
  Registry reg = BuiltinRegistry();
  reg.AddFilter("no-old-nodes", [] { return std::make_shared<NoOldNodes>(); });
  auto params = Policy::Preset("greedy:filters=partition/labels/gpu-model/no-old-nodes");
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  auto policy = Policy::Create(*params, reg);
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  Plan plan = Schedule(s.Build(), kTimeZero, *policy);
  ASSERT_NE(plan.FindStart(a), nullptr);
  EXPECT_EQ(plan.FindStart(a)->allocation.nodes[0].node, inv->node(*inv->IndexOfName("new1")).id);
  ASSERT_NE(plan.FindPending(b), nullptr) << "old1 is free but filtered out";
  EXPECT_EQ(plan.FindPending(b)->reason, PendingReason::kResources);
  EXPECT_FALSE(Policy::Create(*params, BuiltinRegistry()).ok())
      << "the builtin registry lacks the filter";
}

}  // namespace
}  // namespace shoal::sched
