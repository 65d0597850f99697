#include "acceptance/expect.h"

#include <gtest/gtest.h>

#include "acceptance/bench_testing.h"

namespace shoal::acceptance {
namespace {

using testing::Figure;

TEST(ExpectTest, FiguresForAnH200Node) {
  const catalog::GpuSpec h200 = testing::H200Spec();
  ExpectContext ctx;
  ctx.node_gpus = 8;
  struct Row {
    TestKind test;
    std::string metric;
    double expected;
    double min_pass;
  };
  const Row rows[] = {
      // 0.78 x 989 TFLOP/s (mamf-finder reaches 80.3% on H100/H200), pass at 85% of that.
      {TestKind::kGemm, "bf16", 0.78 * 989, 0.85 * 0.78 * 989},
      {TestKind::kGemm, "fp16", 0.78 * 989, 0.85 * 0.78 * 989},
      {TestKind::kGemm, "fp8", 0.72 * 1979, 0.85 * 0.72 * 1979},
      {TestKind::kGemm, "tf32", 0.70 * 494.5, 0.80 * 0.70 * 494.5},
      // FP64 is judged against the tensor-core rate, the faster one.
      {TestKind::kGemm, "fp64", 0.80 * 67, 0.80 * 0.80 * 67},
      {TestKind::kHbm, "copy", 0.85 * 4800, 0.88 * 0.85 * 4800},
      {TestKind::kHbm, "triad", 0.85 * 4800, 0.88 * 0.85 * 4800},
      {TestKind::kPcie, "h2d", 0.85 * 64, 0.85 * 0.85 * 64},
      {TestKind::kPcie, "bidir", 0.65 * 128, 0.80 * 0.65 * 128},
      {TestKind::kP2p, "bw", 0.83 * 450, 0.85 * 0.83 * 450},
      {TestKind::kNccl, "all_reduce", 0.80 * 450, 0.85 * 0.80 * 450},
      {TestKind::kNccl, "all_to_all", 0.70 * 450, 0.80 * 0.70 * 450},
      {TestKind::kBurnIn, "sustained_bf16", 0.78 * 989, 0.80 * 0.78 * 989},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.metric);
    const auto e = Expect(Figure(r.test, r.metric, 0, 1, "x"), h200, ctx);
    ASSERT_TRUE(e.has_value());
    EXPECT_NEAR(e->expected, r.expected, 1e-9);
    EXPECT_NEAR(e->min_pass, r.min_pass, 1e-9);
    EXPECT_FALSE(e->basis.empty());
    EXPECT_FALSE(e->source.empty());
  }
}

// The published figures of healthy H100/H200 nodes (the anchors the
// fractions come from) must pass, or the expectations reject good hardware.
TEST(ExpectTest, PublishedHealthyFiguresPass) {
  const catalog::GpuSpec h200 = testing::H200Spec();
  ExpectContext ctx;
  ctx.node_gpus = 8;
  struct Row {
    TestKind test;
    std::string metric;
    double value;
  };
  const Row rows[] = {
      {TestKind::kGemm, "bf16", 794.5},  // mamf-finder H100 SXM
      {TestKind::kGemm, "fp8", 1453.4},  // mamf-finder H200 SXM
      {TestKind::kPcie, "h2d", 55.43},   // nvbandwidth 8xH200
      {TestKind::kPcie, "d2h", 55.06},
      {TestKind::kP2p, "bw", 376},              // p2pBandwidthLatencyTest 8xH100
      {TestKind::kNccl, "all_reduce", 367.61},  // nccl ring 8xH200, NVLS off
      {TestKind::kNccl, "all_reduce", 482.26},  // NVLS
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.metric + " " + std::to_string(r.value));
    const auto e = Expect(Figure(r.test, r.metric, 0, r.value, "x"), h200, ctx);
    ASSERT_TRUE(e.has_value());
    EXPECT_GE(r.value, e->min_pass);
  }
  // A link trained down to PCIe Gen4 (about half) fails.
  EXPECT_LT(26.0, Expect(Figure(TestKind::kPcie, "h2d", 0, 26, "x"), h200, ctx)->min_pass);
}

TEST(ExpectTest, LinksDecideP2pAndNccl) {
  const catalog::GpuSpec h200 = testing::H200Spec();
  const catalog::GpuSpec pcie = testing::PcieSpec();
  EXPECT_EQ(NodeLink(h200, 8), Link::kNvlink);
  EXPECT_EQ(NodeLink(h200, 16), Link::kPcie);  // more GPUs than one NVLink domain
  EXPECT_EQ(NodeLink(h200, 1), Link::kNone);
  EXPECT_EQ(NodeLink(pcie, 4), Link::kPcie);

  ExpectContext ctx;
  ctx.node_gpus = 4;
  const auto p2p = Expect(Figure(TestKind::kP2p, "bw", 0, 1, "x"), pcie, ctx);
  ASSERT_TRUE(p2p.has_value());
  EXPECT_NEAR(p2p->expected, 0.75 * 32, 1e-9);
  const auto ar = Expect(Figure(TestKind::kNccl, "all_reduce", -1, 1, "x"), pcie, ctx);
  ASSERT_TRUE(ar.has_value());
  EXPECT_NEAR(ar->expected, 0.76 * 32, 1e-9);

  // Peer access is required inside an NVLink domain only.
  ctx.node_gpus = 8;
  const auto access = Expect(Figure(TestKind::kP2p, "access", 0, 0, ""), h200, ctx);
  ASSERT_TRUE(access.has_value());
  EXPECT_EQ(access->min_pass, 1);
  ctx.node_gpus = 4;
  EXPECT_FALSE(Expect(Figure(TestKind::kP2p, "access", 0, 0, ""), pcie, ctx).has_value());
}

TEST(ExpectTest, NothingExpectedWhereNothingIsKnown) {
  const catalog::GpuSpec pcie = testing::PcieSpec();
  ExpectContext ctx;
  ctx.node_gpus = 4;
  EXPECT_FALSE(
      Expect(Figure(TestKind::kGemm, "fp8", 0, 1, "x"), pcie, ctx).has_value());  // no FP8 peak
  EXPECT_FALSE(Expect(Figure(TestKind::kGemm, "int4", 0, 1, "x"), pcie, ctx).has_value());
  EXPECT_FALSE(Expect(Figure(TestKind::kP2p, "latency", 0, 1, "us"), pcie, ctx).has_value());
  EXPECT_FALSE(
      Expect(Figure(TestKind::kBurnIn, "sustained_fp8", 0, 1, "x"), pcie, ctx).has_value());
  // Multi-node NCCL depends on the network: only an operator's floor judges it.
  ctx.multi_node = true;
  EXPECT_FALSE(Expect(Figure(TestKind::kNccl, "all_reduce", -1, 1, "x"), pcie, ctx).has_value());
  ctx.nccl_min_busbw_gbps = 40;
  const auto floor = Expect(Figure(TestKind::kNccl, "all_reduce", -1, 1, "x"), pcie, ctx);
  ASSERT_TRUE(floor.has_value());
  EXPECT_EQ(floor->min_pass, 40);
}

TEST(ExpectTest, TableIsSane) {
  for (const Achievable& a : AchievableTable()) {
    SCOPED_TRACE(std::string(TestName(a.test)) + " " + std::string(a.metric));
    EXPECT_GT(a.fraction, 0.3);
    EXPECT_LE(a.fraction, 1.0);
    EXPECT_GT(a.margin, 0.0);
    EXPECT_LE(a.margin, 0.3);
    EXPECT_FALSE(a.source.empty());
  }
}

}  // namespace
}  // namespace shoal::acceptance
