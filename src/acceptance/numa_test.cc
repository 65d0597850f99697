#include "acceptance/numa.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace shoal::acceptance {
namespace {

TEST(NumaTest, PciBusIds) {
  struct Row {
    std::string_view in, out;
  };
  const Row rows[] = {
      {"00000000:19:00.0", "0000:19:00.0"},  // NVML
      {"0000:19:00.0", "0000:19:00.0"},      // CUDA
      {"0000:B5:00.0", "0000:b5:00.0"},
      {"1:3:4.1", "0001:03:04.1"},
      {" 0000:19:00.0\n", "0000:19:00.0"},
      {"19:00.0", ""},
      {"0000:19:00", ""},
      {"0000:zz:00.0", ""},
      {"100000000:19:00.0", ""},
      {"", ""},
  };
  for (const Row& r : rows)
    EXPECT_EQ(NormalizePciBusId(r.in), r.out) << r.in;
}

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("shoal-numa-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    Write("bus/pci/devices/0000:19:00.0/numa_node", "1\n");
    Write("bus/pci/devices/0000:1a:00.0/numa_node", "-1\n");
    Write("devices/system/node/node1/cpulist", "56-59,112\n");
    Write("devices/system/node/node2/cpulist", "\n");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    const auto path = root_ / rel;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::filesystem::path root_;
};

TEST_F(FakeSysfs, NumaNodeOfAGpu) {
  EXPECT_EQ(ReadNumaNode("00000000:19:00.0", root_), 1);
  EXPECT_EQ(ReadNumaNode("0000:1a:00.0", root_), -1);  // single-node hosts say -1
  EXPECT_EQ(ReadNumaNode("0000:99:00.0", root_), -1);  // no such device
  EXPECT_EQ(ReadNumaNode("garbage", root_), -1);
}

TEST_F(FakeSysfs, CpusOfANode) {
  const auto cpus = ReadNumaCpus(1, root_);
  ASSERT_TRUE(cpus.ok()) << cpus.status().message();
  EXPECT_EQ(*cpus, (std::vector<int>{56, 57, 58, 59, 112}));
  EXPECT_FALSE(ReadNumaCpus(2, root_).ok());  // no CPUs
  EXPECT_FALSE(ReadNumaCpus(3, root_).ok());  // no node
  EXPECT_FALSE(ReadNumaCpus(-1, root_).ok());
}

TEST(NumaTest, PinningToTheCurrentCpusWorks) {
  const auto cpus = ThreadCpus();
  ASSERT_TRUE(cpus.ok()) << cpus.status().message();
  ASSERT_FALSE(cpus->empty());
  EXPECT_TRUE(PinThreadToCpus({cpus->front()}).ok());
  EXPECT_EQ(*ThreadCpus(), std::vector<int>{cpus->front()});
  EXPECT_TRUE(PinThreadToCpus(*cpus).ok());
  EXPECT_EQ(*ThreadCpus(), *cpus);
  EXPECT_FALSE(PinThreadToCpus({}).ok());
}

}  // namespace
}  // namespace shoal::acceptance
