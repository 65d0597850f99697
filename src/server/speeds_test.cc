// Speed-aware policies on a server: where a job's speeds come from
// (server/speeds.h) and what the controller does with them.
#include "server/speeds.h"

#include <gtest/gtest.h>

#include <map>

#include "server/controller_testing.h"

namespace shoal::server {
namespace {

using testing::kAdmin;
using testing::kAlice;
using testing::kNodeAgent;
using testing::MakeNode;
using testing::Spec;

class SpeedsTest : public testing::ControllerFixture {};

// The speed policy on a server with A100s (registered first) and H100s: a job
// that declares nothing runs where the catalogue's BF16 peak is higher; one
// that declares its speeds runs where it is faster by them, and never on a
// model it does not name.
TEST_F(SpeedsTest, SpeedPolicyPlacesByDeclaredOrCatalogueSpeeds) {
  ControllerConfig cfg = Config();
  cfg.policy = "speed";
  Controller c(cfg);
  Node a1 = MakeNode("a1", 2);
  for (Gpu& g : a1.gpus)
    g.model = "A100-SXM4-80GB";
  ASSERT_TRUE(c.RegisterNode(kNodeAgent, a1, At(0)).ok());
  ASSERT_TRUE(c.RegisterNode(kNodeAgent, MakeNode("h1", 2), At(0)).ok());
  auto submit = [&](std::vector<std::pair<std::string, double>> speeds) {
    JobSpec spec = Spec(1);
    spec.gpu_speeds = std::move(speeds);
    auto r = c.Submit(kAlice, std::move(spec), At(0));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? JobId((*r)["jobs"][0].get<uint64_t>()) : JobId(0);
  };
  const JobId estimated = submit({});
  const JobId prefers_a100 = submit({{"h100", 1}, {"a100", 2}});
  const JobId h100_only = submit({{"h100", 1}});
  const JobId waits = submit({{"h100", 1}});
  c.SchedulePass(At(1));
  std::map<uint64_t, std::string> on;
  for (const LaunchOrder& l : c.TakeOutbox().launches)
    on[l.job.value()] = l.node;
  EXPECT_EQ(on[estimated.value()], "h1");
  EXPECT_EQ(on[prefers_a100.value()], "a1");
  EXPECT_EQ(on[h100_only.value()], "h1");
  EXPECT_FALSE(on.contains(waits.value())) << "an A100 is free, but it named only h100";
  // A running job's note says why that model.
  auto started = c.ShowJob(kAdmin, estimated);
  ASSERT_TRUE(started.ok());
  EXPECT_NE(started->value("reason_detail", "").find("on H100-SXM-80GB: expected to end in"),
            std::string::npos)
      << started->dump();
  EXPECT_NE(started->value("reason_detail", "").find("on A100-SXM4-80GB"), std::string::npos);
  auto shown = c.ShowJob(kAdmin, waits);
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ((*shown)["state"], "pending");
  EXPECT_EQ((*shown)["spec"]["gpu_speeds"]["h100"], 1.0);
}

}  // namespace
}  // namespace shoal::server
