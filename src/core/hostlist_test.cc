#include "core/hostlist.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

std::vector<std::string> Names(std::string_view csv) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= csv.size()) {
    const size_t comma = std::min(csv.find(',', start), csv.size());
    out.emplace_back(csv.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// Each row is what Slurm 22.05's `scontrol show hostlist` printed for the
// same names (a real Slurm 22.05 on loopback, 2026-12-01).
TEST(HostList, CompressesAsSlurmDoes) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"node1,node2,node3,node5", "node[1-3,5]"},
      {"gpu01,gpu02,gpu10", "gpu[01-02,10]"},
      {"a,b,node7", "a,b,node7"},
      {"n9,n10,n11", "n[9-11]"},
      {"rack1-n1,rack1-n2,rack2-n1", "rack1-n[1-2],rack2-n1"},
      {"x1y2,x1y3", "x1y[2-3]"},
      {"node001,node1", "node[001,1]"},
      {"n2,n1,n3,n1", "n[2,1,3,1]"},
      {"n1,m1,n2", "n1,m1,n2"},
      {"n1,n3,m1,n2", "n[1,3],m1,n2"},
      {"n09,n10", "n[09-10]"},
      {"n9,n010", "n[9,010]"},
      {"host", "host"},
      {"n1-2", "n1-2"},
  };
  for (const auto& [in, want] : cases)
    EXPECT_EQ(CompressHostList(Names(in)), want) << in;
  EXPECT_EQ(CompressHostList({}), "");
}

TEST(HostList, ExpandsWhatItCompresses) {
  const std::vector<std::string> names = {"gpu01", "gpu02", "gpu03", "login", "n9",
                                          "n10",   "n1",    "x-1",   "x-2"};
  auto back = ExpandHostList(CompressHostList(names));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, names);
}

TEST(HostList, ExpandsAsScontrolShowHostnames) {
  auto r = ExpandHostList("node[1-3,07-08],gpu-a,rack[1-2]-n[1-2]");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, Names("node1,node2,node3,node07,node08,gpu-a,rack1-n1,rack1-n2,rack2-n1,rack2-n2"));
  r = ExpandHostList("n[8-11]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, Names("n8,n9,n10,n11"));
}

TEST(HostList, MalformedListsAreErrorsThatSayWhere) {
  for (const char* bad : {"n[1-", "n1]", "n[a-b]", "n[3-1]", "n[]", "n[1-2", "n[1,,2]"}) {
    auto r = ExpandHostList(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  auto huge = ExpandHostList("n[1-999999999]", 1000);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("more than 1000"), std::string::npos);
  auto product = ExpandHostList("a[1-100]b[1-100]", 1000);
  EXPECT_FALSE(product.ok());
}

}  // namespace
}  // namespace shoal
