#include "catalog/mig.h"

#include <gtest/gtest.h>

#include "catalog/profiles.h"

namespace shoal::catalog {
namespace {

using Profiles = std::vector<std::string>;

TEST(MigTest, ModelsWithAndWithoutMig) {
  EXPECT_EQ(MigProfilesOf("H100-SXM-80GB").size(), 6u);
  EXPECT_EQ(MigProfilesOf("h100").front().name, "1g.10gb");
  EXPECT_EQ(MigProfilesOf("A100-SXM4-40GB").front().name, "1g.5gb");
  EXPECT_EQ(MigProfilesOf("H200-SXM-141GB").back().name, "7g.141gb");
  EXPECT_TRUE(MigProfilesOf("L40S-48GB").empty());
  EXPECT_TRUE(MigProfilesOf("no-such-gpu").empty());
}

TEST(MigTest, LayoutsThatFit) {
  EXPECT_EQ(*ParseMigLayout("7x1g.10gb", "H100-SXM-80GB"), Profiles(7, "1g.10gb"));
  EXPECT_EQ(*ParseMigLayout("3g.40gb+2x2g.20gb", "H100-SXM-80GB"),
            (Profiles{"3g.40gb", "2g.20gb", "2g.20gb"}));
  EXPECT_EQ(*ParseMigLayout(" 4G.40GB + 3g.40gb ", "h100"), (Profiles{"4g.40gb", "3g.40gb"}));
  EXPECT_EQ(*ParseMigLayout("7g.80gb", "A100-SXM4-80GB"), Profiles{"7g.80gb"});
  EXPECT_TRUE(ParseMigLayout("none", "H100-SXM-80GB")->empty());
  EXPECT_TRUE(ParseMigLayout("off", "L40S-48GB")->empty());
}

TEST(MigTest, LayoutsThatDoNotFitSayWhy) {
  auto expect = [](std::string_view layout, std::string_view model, std::string_view why) {
    auto r = ParseMigLayout(layout, model);
    ASSERT_FALSE(r.ok()) << layout;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  expect("8x1g.10gb", "H100-SXM-80GB", "1 to 7");
  expect("2x4g.40gb", "H100-SXM-80GB", "at most 1 instances of 4g.40gb");
  expect("3g.40gb+3g.40gb+1g.10gb", "H100-SXM-80GB", "9 eighths of the memory");
  expect("4g.40gb+2g.20gb+2g.20gb", "H100-SXM-80GB", "8 compute slices");
  expect("1g.5gb", "H100-SXM-80GB", "no MIG profile '1g.5gb' (it has: 1g.10gb,");
  expect("1g.10gb", "L40S-48GB", "has no MIG");
  expect("", "H100-SXM-80GB", "no MIG profile ''");
  expect("x1g.10gb", "H100-SXM-80GB", "a count is 1 to 7");
}

TEST(MigTest, LayoutTextRoundTrips) {
  for (std::string_view text : {"7x1g.10gb", "3g.40gb+2x2g.20gb", "7g.80gb", "none"}) {
    EXPECT_EQ(MigLayoutText(*ParseMigLayout(text, "H100-SXM-80GB")), text);
  }
  EXPECT_EQ(BaseModel("H100-SXM-80GB/1g.10gb"), "H100-SXM-80GB");
  EXPECT_EQ(BaseModel("H100-SXM-80GB"), "H100-SXM-80GB");
}

TEST(MigTest, PartitionSplitsTheNamedGpusIntoSlices) {
  const Node node = MakeNode(*FindProfile("dgx-h100"), "gpu01");
  auto gpus = PartitionGpus(node.gpus, {{0, Profiles(7, "1g.10gb")}, {2, {"4g.40gb", "3g.40gb"}}});
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  ASSERT_EQ(gpus->size(), 7u + 1 + 2 + 5);
  for (size_t i = 0; i < gpus->size(); ++i)
    EXPECT_EQ((*gpus)[i].index, static_cast<int>(i));
  const Gpu& first = (*gpus)[0];
  EXPECT_EQ(first.model, "H100-SXM-80GB/1g.10gb");
  EXPECT_EQ(first.mig_profile, "1g.10gb");
  EXPECT_EQ(first.device, 0);
  EXPECT_EQ(first.mig_gi, 1);
  EXPECT_EQ(first.memory_mib, 10 * 1024);
  EXPECT_NEAR(first.rated_w, 700.0 / 7, 1e-9);
  EXPECT_EQ(first.uuid.rfind("MIG-", 0), 0u);
  EXPECT_NE(first.uuid, (*gpus)[1].uuid);
  EXPECT_EQ((*gpus)[6].mig_gi, 7);
  // GPU 1 stays whole, keeping its driver index; GPU 2's slices follow it.
  EXPECT_EQ((*gpus)[7].model, "H100-SXM-80GB");
  EXPECT_FALSE((*gpus)[7].IsMigSlice());
  EXPECT_EQ((*gpus)[7].device, 1);
  EXPECT_EQ((*gpus)[8].model, "H100-SXM-80GB/4g.40gb");
  EXPECT_EQ((*gpus)[8].device, 2);
  EXPECT_EQ((*gpus)[9].mig_gi, 2);
  EXPECT_EQ((*gpus)[14].device, 7);
  // The same node gives the same UUIDs every time.
  EXPECT_EQ(PartitionGpus(node.gpus, {{0, Profiles(7, "1g.10gb")}})->front().uuid, first.uuid);
  EXPECT_FALSE(PartitionGpus(node.gpus, {{0, Profiles(8, "1g.10gb")}}).ok());
  EXPECT_FALSE(PartitionGpus(*gpus, {}).ok());  // slices are not split again
}

}  // namespace
}  // namespace shoal::catalog
