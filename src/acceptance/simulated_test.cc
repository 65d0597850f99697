#include "acceptance/simulated.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "acceptance/bench_testing.h"
#include "acceptance/report.h"

namespace shoal::acceptance {
namespace {

const catalog::GpuSpec kH200 = testing::H200Spec();

EvaluateOptions Judged() {
  EvaluateOptions o;
  o.spec_for = [](const GpuInfo&) { return &kH200; };
  return o;
}

TEST(SimulatedTest, ExpectationsPassAndSaySoInANote) {
  SimulatedOptions o;
  o.gpus = 8;
  const NodeResults raw = SimulatedResults(kH200, o);
  ASSERT_FALSE(raw.notes.empty());
  EXPECT_NE(raw.notes[0].find(kSimulatedNote), std::string::npos);
  EXPECT_TRUE(
      std::all_of(raw.measurements.begin(), raw.measurements.end(),
                  [](const Measurement& m) { return m.check == "simulated: not measured"; }));
  const NodeReport r = Evaluate(raw, Judged());
  EXPECT_TRUE(r.passed) << r.Summary();
  EXPECT_GT(r.checks.size(), 50u);
}

TEST(SimulatedTest, AFaultFailsThatGpusTest) {
  auto faults = ParseSimulatedFaults("gpu3:gemm");
  ASSERT_TRUE(faults.ok());
  SimulatedOptions o;
  o.gpus = 8;
  o.faults = *faults;
  const NodeReport r = Evaluate(SimulatedResults(kH200, o), Judged());
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.Summary().find("gpu3 gemm bf16"), std::string::npos) << r.Summary();
  EXPECT_EQ(r.Summary().find("gpu2"), std::string::npos) << r.Summary();
  EXPECT_FALSE(ParseSimulatedFaults("3:gemm").ok());
  EXPECT_FALSE(ParseSimulatedFaults("gpu3:disk").ok());
}

TEST(SimulatedTest, MultiNodeRunsNcclOnlyAtTheFloor) {
  SimulatedOptions o;
  o.gpus = 8;
  o.world_size = 2;
  o.nccl_min_busbw_gbps = 300;
  const NodeResults raw = SimulatedResults(kH200, o);
  ASSERT_FALSE(raw.measurements.empty());
  for (const Measurement& m : raw.measurements) {
    EXPECT_EQ(m.test, TestKind::kNccl);
    EXPECT_EQ(m.ranks, 16);
    EXPECT_EQ(m.value, 300);
  }
  EvaluateOptions opts = Judged();
  opts.nccl_min_busbw_gbps = 300;
  EXPECT_TRUE(Evaluate(raw, opts).passed);
}

}  // namespace
}  // namespace shoal::acceptance
