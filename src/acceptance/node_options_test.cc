#include "acceptance/node_options.h"

#include <gtest/gtest.h>

namespace shoal::acceptance {
namespace {

TEST(NodeOptionsTest, ArgsRoundTrip) {
  NodeOptions o;
  o.quick = true;
  o.tests = {TestKind::kGemm, TestKind::kNccl};
  o.burn_in_s = 30;
  o.nccl_max_bytes = int64_t{1} << 30;
  const auto back = ParseNodeArgs(NodeArgs(o));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->quick, o.quick);
  EXPECT_EQ(back->tests, o.tests);
  EXPECT_EQ(back->burn_in_s, o.burn_in_s);
  EXPECT_EQ(back->nccl_max_bytes, o.nccl_max_bytes);

  const auto defaults = ParseNodeArgs(NodeArgs(NodeOptions{}));
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->tests, AllTests());
  EXPECT_EQ(defaults->BurnInSeconds(), 60);
}

TEST(NodeOptionsTest, BadArgs) {
  struct Row {
    std::vector<std::string> args;
    std::string_view error;
  };
  const Row rows[] = {
      {{"--fast"}, "unknown argument '--fast'"},
      {{"--tests"}, "--tests needs a value"},
      {{"--tests", "gemm,warp"}, "unknown test 'warp'"},
      {{"--burn-in-s", "-3"}, "not a non-negative integer"},
      {{"--burn-in-s", "100000"}, "at most a day"},
      {{"--nccl-max-bytes", "4"}, "at least 8"},
  };
  for (const Row& r : rows) {
    const auto got = ParseNodeArgs(r.args);
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find(r.error), std::string::npos) << got.status().message();
  }
}

TEST(NodeOptionsTest, TestLists) {
  EXPECT_EQ(*ParseTestList("hbm,gemm"), (std::vector<TestKind>{TestKind::kGemm, TestKind::kHbm}));
  EXPECT_EQ(*ParseTestList(" GEMM , gemm ,nccl"),
            (std::vector<TestKind>{TestKind::kGemm, TestKind::kNccl}));
  EXPECT_EQ(*ParseTestList("all"), AllTests());
  EXPECT_FALSE(ParseTestList("").ok());
  EXPECT_FALSE(ParseTestList(",").ok());
  for (TestKind t : AllTests())
    EXPECT_EQ(*ParseTestName(TestName(t)), t);
}

TEST(NodeOptionsTest, Timing) {
  for (TestKind t : AllTests()) {
    const TimingPlan quick = TimingFor(t, true), full = TimingFor(t, false);
    EXPECT_LE(quick.measure_s, full.measure_s);
    EXPECT_GT(quick.measure_s, 0);
    EXPECT_GE(full.min_reps, 1);
  }
  EXPECT_EQ(NodeOptions{.quick = true}.BurnInSeconds(), 10);
  EXPECT_EQ(NodeOptions{.burn_in_s = 0}.BurnInSeconds(), 0);
}

TEST(NodeOptionsTest, Repetitions) {
  EXPECT_EQ(RepetitionsFor(0.01, 1.0, 5, 1000), 100);
  EXPECT_EQ(RepetitionsFor(1.0, 1.0, 5, 1000), 5);      // at least lo
  EXPECT_EQ(RepetitionsFor(1e-9, 1.0, 5, 1000), 1000);  // at most hi
  EXPECT_EQ(RepetitionsFor(0, 1.0, 5, 1000), 1000);
}

TEST(NodeOptionsTest, NcclIterationsDependOnSizeAlone) {
  int last = 1 << 30;
  for (int64_t size = 8; size <= (int64_t{8} << 30); size *= 2) {
    const int n = NcclIterations(size, false);
    EXPECT_LE(n, last) << size;  // never more for a larger message
    EXPECT_GE(NcclIterations(size, true), 2);
    EXPECT_LE(NcclIterations(size, true), n);
    last = n;
  }
  EXPECT_EQ(NcclIterations(1 << 20, false), 20);  // as nccl-tests' default -n 20
}

TEST(NodeOptionsTest, BufferSizes) {
  const int64_t gib = int64_t{1} << 30;
  // Most of an H200's memory over three arrays, 2 MiB aligned.
  const int64_t h200 = HbmArrayBytes(140 * gib, false);
  EXPECT_EQ(h200 % (2 << 20), 0);
  EXPECT_GE(3 * h200, 0.79 * 140 * gib);
  EXPECT_LE(3 * h200, 0.8 * 140 * gib);
  EXPECT_LE(3 * HbmArrayBytes(140 * gib, true), 8 * gib);
  EXPECT_EQ(HbmArrayBytes(0, false), 0);
  EXPECT_GT(PcieBufferBytes(false), PcieBufferBytes(true));
}

}  // namespace
}  // namespace shoal::acceptance
