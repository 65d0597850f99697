// Carrying out a MIG plan through a provider, and simulated GPUs' layouts
// kept across an agent restart.
#include "agent/mig_order.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/gpu/simulated_provider.h"
#include "agent/protocol.h"

namespace shoal::agent {
namespace {

class StillClock final : public Clock {
 public:
  Time Now() const override { return TimeFromSeconds(1'700'000'000); }
};

TEST(MigOrderTest, APlanIsAppliedAndKeptAcrossARestart) {
  StillClock clock;
  auto gpus = SimulatedProvider::Create("dgx-h100", "n1", 1, clock);
  ASSERT_TRUE(gpus.ok());
  auto plan = catalog::PlanMigLayouts(NodeGpus(*(*gpus)->Discover()), "3g.40gb+4g.40gb", {0, 5});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto now = ApplyMigPlan(**gpus, *plan);
  ASSERT_TRUE(now.ok()) << now.status().ToString();
  ASSERT_EQ(now->size(), 10u);
  EXPECT_EQ((*now)[0].mig_profile, "3g.40gb");
  EXPECT_EQ((*now)[1].mig_profile, "4g.40gb");
  EXPECT_EQ((*now)[6].device, 5);
  EXPECT_EQ((*now)[6].mig_profile, "3g.40gb");

  const std::string path = ::testing::TempDir() + "/mig-layout.json";
  ASSERT_TRUE(SaveMigLayouts(path, *now).ok());
  auto again = SimulatedProvider::Create("dgx-h100", "n1", 1, clock);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(RestoreMigLayouts(path, **again).ok());
  auto restored = (*again)->Discover();
  ASSERT_TRUE(restored.ok());
  ASSERT_EQ(restored->size(), now->size());
  for (size_t i = 0; i < now->size(); ++i) {
    EXPECT_EQ((*restored)[i].model, (*now)[i].model) << i;
    EXPECT_EQ((*restored)[i].uuid, (*now)[i].uuid) << "the same UUIDs after a restart";
  }
  // A plan that stops part-way says which GPUs it did.
  catalog::MigLayouts bad = {{1, {"7g.80gb"}}, {2, std::vector<std::string>(8, "1g.10gb")}};
  auto partial = ApplyMigPlan(**again, bad);
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("GPU 2 (GPUs 1 done)"), std::string::npos)
      << partial.status().message();
  // No file: no layout; a damaged one: a clear error.
  EXPECT_TRUE(RestoreMigLayouts(path + ".missing", **again).ok());
  std::ofstream(path) << "[1, 2]";
  EXPECT_FALSE(RestoreMigLayouts(path, **again).ok());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace shoal::agent
