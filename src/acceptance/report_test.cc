#include "acceptance/report.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "acceptance/bench_testing.h"

namespace shoal::acceptance {
namespace {

using testing::Figure;

const catalog::GpuSpec kH200 = testing::H200Spec();

EvaluateOptions H200Everywhere() {
  EvaluateOptions o;
  o.spec_for = [](const GpuInfo& g) { return g.name == "NVIDIA H200" ? &kH200 : nullptr; };
  return o;
}

const Check* Find(const NodeReport& r, TestKind test, std::string_view metric, int gpu) {
  auto it = std::find_if(r.checks.begin(), r.checks.end(), [&](const Check& c) {
    return c.test == test && c.metric == metric && c.gpu == gpu;
  });
  return it == r.checks.end() ? nullptr : &*it;
}

// Eight healthy H200s: figures a little above the expectations, with a
// spread of a few tenths of a percent.
NodeResults Healthy() {
  NodeResults r = testing::Node(8);
  for (int g = 0; g < 8; ++g) {
    const double wobble = 1 + 0.002 * (g % 3);
    r.measurements.push_back(Figure(TestKind::kGemm, "bf16", g, 780 * wobble, kUnitTflops));
    r.measurements.push_back(Figure(TestKind::kHbm, "copy", g, 4250 * wobble, kUnitGbps));
    r.measurements.push_back(Figure(TestKind::kPcie, "h2d", g, 55 * wobble, kUnitGbps));
  }
  for (int64_t size : {int64_t{1} << 20, int64_t{8} << 30}) {
    Measurement m =
        Figure(TestKind::kNccl, "all_reduce", -1, size > (1 << 20) ? 370 : 20, kUnitGbps);
    m.size_bytes = size;
    m.ranks = 8;
    r.measurements.push_back(m);
  }
  return r;
}

TEST(ReportTest, HealthyNodePasses) {
  const NodeReport r = Evaluate(Healthy(), H200Everywhere());
  EXPECT_TRUE(r.passed) << r.Summary();
  EXPECT_EQ(r.Count(Verdict::kFail), 0);
  EXPECT_EQ(r.Count(Verdict::kFlag), 0);
  EXPECT_EQ(r.Summary(), "passed");
  EXPECT_EQ(r.models, std::vector<std::string>(8, "H200-SXM-141GB"));
  const Check* bf16 = Find(r, TestKind::kGemm, "bf16", 3);
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ(bf16->verdict, Verdict::kPass);
  ASSERT_TRUE(bf16->expectation.has_value());
  EXPECT_NEAR(bf16->expectation->expected, 0.78 * 989, 1e-9);
}

TEST(ReportTest, OnlyTheLargestNcclSizeIsJudged) {
  const NodeReport r = Evaluate(Healthy(), H200Everywhere());
  int nccl_checks = 0;
  for (const Check& c : r.checks) {
    if (c.test != TestKind::kNccl) continue;
    ++nccl_checks;
    EXPECT_EQ(c.size_bytes, int64_t{8} << 30);
    EXPECT_EQ(c.verdict, Verdict::kPass);
  }
  EXPECT_EQ(nccl_checks, 1);
}

TEST(ReportTest, FailuresCarryTheirFigures) {
  struct Row {
    std::string what;
    std::function<void(NodeResults&)> change;
    std::string failure;  // a part of the failure line
  };
  const Row rows[] = {
      {"a slow GPU", [](NodeResults& r) { r.measurements[0 * 3].value = 500; },
       "gpu0 gemm bf16: 500 TFLOP/s, below 656 TFLOP/s"},
      {"a wrong result",
       [](NodeResults& r) {
         r.measurements[3].ok = false;
         r.measurements[3].check =
             "bf16 GEMM 8192x8192x8192: 1 of 64 samples wrong; D[1,2] is 3, should be 4";
       },
       "gpu1 gemm bf16: wrong result: bf16 GEMM"},
      {"a broken test",
       [](NodeResults& r) {
         r.errors.push_back({TestKind::kHbm, 5, "cudaMalloc: out of memory"});
       },
       "gpu5 hbm error: cudaMalloc: out of memory"},
      {"slow NCCL at the largest size", [](NodeResults& r) { r.measurements.back().value = 150; },
       "node nccl all_reduce: 150 GB/s, below 306 GB/s"},
      {"a PCIe link trained down", [](NodeResults& r) { r.measurements[6 * 3 + 2].value = 26; },
       "gpu6 pcie h2d: 26.0 GB/s, below 46.2 GB/s"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    NodeResults raw = Healthy();
    row.change(raw);
    const NodeReport r = Evaluate(raw, H200Everywhere());
    EXPECT_FALSE(r.passed);
    const std::vector<std::string> failures = r.Failures();
    ASSERT_EQ(failures.size(), 1u) << r.Summary();
    EXPECT_NE(failures[0].find(row.failure), std::string::npos) << failures[0];
    EXPECT_NE(r.Summary().find(row.failure), std::string::npos);
  }
}

TEST(ReportTest, OutliersAmongIdenticalGpusAreFlagged) {
  NodeResults raw = Healthy();
  // 8% below its siblings yet above the pass mark (656).
  raw.measurements[4 * 3].value = 700;
  NodeReport r = Evaluate(raw, H200Everywhere());
  EXPECT_TRUE(r.passed);
  const Check* c = Find(r, TestKind::kGemm, "bf16", 4);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->verdict, Verdict::kFlag);
  EXPECT_TRUE(c->outlier);
  EXPECT_NE(c->reason.find("below the median of 8 identical H200-SXM-141GB"), std::string::npos)
      << c->reason;

  EvaluateOptions strict = H200Everywhere();
  strict.outliers_fail = true;
  EXPECT_FALSE(Evaluate(raw, strict).passed);
}

TEST(ReportTest, UnknownGpusAreMeasuredNotJudged) {
  NodeResults raw = Healthy();
  for (GpuInfo& g : raw.gpus)
    g.name = "NVIDIA Hypothetical X1";
  const NodeReport r = Evaluate(raw, H200Everywhere());
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.Count(Verdict::kPass), 0);
  EXPECT_EQ(r.Count(Verdict::kInfo), static_cast<int>(r.checks.size()));
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("not in the catalogue"), std::string::npos);
}

TEST(ReportTest, BurnInMustHoldItsThroughput) {
  NodeResults raw = testing::Node(2);
  raw.burn_in_start_ms = raw.started_ms;
  raw.burn_in_end_ms = raw.started_ms + 60'000;
  Measurement steady = Figure(TestKind::kBurnIn, "sustained_bf16", 0, 760, kUnitTflops);
  steady.series = std::vector<double>(60, 760);
  Measurement sagging = Figure(TestKind::kBurnIn, "sustained_bf16", 1, 760, kUnitTflops);
  sagging.series = std::vector<double>(60, 760);
  for (int i = 40; i < 60; ++i)
    sagging.series[static_cast<size_t>(i)] = 600;
  raw.measurements = {steady, sagging};
  const NodeReport r = Evaluate(raw, H200Everywhere());
  EXPECT_EQ(Find(r, TestKind::kBurnIn, "min_over_median", 0)->verdict, Verdict::kPass);
  const Check* bad = Find(r, TestKind::kBurnIn, "min_over_median", 1);
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->verdict, Verdict::kFail);
  EXPECT_NE(bad->reason.find("fell to 79% of its median"), std::string::npos) << bad->reason;
  // Without telemetry the report says what was not watched.
  EXPECT_NE(r.notes.back().find("not sampled"), std::string::npos);
}

TEST(ReportTest, BurnInTelemetry) {
  NodeResults raw = testing::Node(2);
  raw.burn_in_start_ms = 1000;
  raw.burn_in_end_ms = 61'000;
  raw.measurements = {Figure(TestKind::kBurnIn, "sustained_bf16", 0, 760, kUnitTflops),
                      Figure(TestKind::kBurnIn, "sustained_bf16", 1, 760, kUnitTflops)};
  EvaluateOptions o = H200Everywhere();
  for (int t = 0; t <= 62; ++t) {
    for (int g = 0; g < 2; ++g) {
      TelemetrySample s;
      s.time_ms = t * 1000;
      s.gpu_uuid = raw.gpus[static_cast<size_t>(g)].uuid;
      s.sm_clock_mhz = 1980;
      s.power_w = 690;
      s.temperature_c = 70;
      s.clock_reasons = kClocksSwPowerCap;  // normal at full load
      s.ecc_corrected_total = 10;
      if (g == 1 && t == 30) {
        s.clock_reasons |= kClocksHwThermalSlowdown;
        s.xids = {79};
      }
      if (g == 1 && t >= 40) s.ecc_corrected_total = 12;
      // Outside the window: never counted.
      if (g == 0 && t == 62) s.xids = {48};
      o.samples.push_back(s);
    }
  }
  const NodeReport r = Evaluate(raw, o);
  ASSERT_EQ(r.telemetry.size(), 2u);
  EXPECT_EQ(r.telemetry[0].samples, 61);  // 1 s .. 61 s
  EXPECT_EQ(Find(r, TestKind::kBurnIn, "hw_slowdown_samples", 0)->verdict, Verdict::kInfo);
  EXPECT_EQ(Find(r, TestKind::kBurnIn, "xid_events", 0)->verdict, Verdict::kInfo);
  const Check* slow = Find(r, TestKind::kBurnIn, "hw_slowdown_samples", 1);
  EXPECT_EQ(slow->verdict, Verdict::kFail);
  EXPECT_NE(slow->reason.find("hw_thermal"), std::string::npos) << slow->reason;
  EXPECT_EQ(Find(r, TestKind::kBurnIn, "xid_events", 1)->verdict, Verdict::kFail);
  EXPECT_EQ(Find(r, TestKind::kBurnIn, "ecc_corrected", 1)->verdict, Verdict::kFlag);
  EXPECT_EQ(Find(r, TestKind::kBurnIn, "ecc_corrected", 1)->value, 2);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.Failures().size(), 2u);
}

TEST(ReportTest, JsonRoundTrip) {
  NodeResults raw = Healthy();
  raw.measurements[0].value = 500;
  EvaluateOptions o = H200Everywhere();
  TelemetrySample s;
  s.time_ms = 5;
  s.gpu_uuid = raw.gpus[0].uuid;
  s.xids = {13};
  o.samples = {s};
  const NodeReport r = Evaluate(raw, o);
  const auto back = ParseReport(ReportToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->raw, r.raw);
  EXPECT_EQ(back->passed, r.passed);
  EXPECT_EQ(back->models, r.models);
  EXPECT_EQ(back->notes, r.notes);
  ASSERT_EQ(back->checks.size(), r.checks.size());
  for (size_t i = 0; i < r.checks.size(); ++i) {
    EXPECT_EQ(back->checks[i].verdict, r.checks[i].verdict);
    EXPECT_EQ(back->checks[i].reason, r.checks[i].reason);
    EXPECT_EQ(back->checks[i].expectation.has_value(), r.checks[i].expectation.has_value());
  }
  EXPECT_EQ(back->Failures(), r.Failures());
  ASSERT_EQ(back->samples.size(), 1u);
  EXPECT_EQ(back->samples[0].xids, std::vector<uint32_t>{13});

  // Judging a saved report again gives the same verdicts.
  const auto saved = LoadSavedResults(ReportToJson(r));
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  EvaluateOptions again = H200Everywhere();
  again.samples = saved->samples;
  EXPECT_EQ(Evaluate(saved->raw, again).Failures(), r.Failures());
}

TEST(ReportTest, SavedFiles) {
  const auto raw = LoadSavedResults(ToJson(Healthy()));
  ASSERT_TRUE(raw.ok()) << raw.status().message();
  EXPECT_EQ(raw->raw, Healthy());
  for (std::string_view bad : {"", "{}", "{\"schema\": \"other/1\"}", "not json"}) {
    EXPECT_FALSE(LoadSavedResults(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseReport(ToJson(Healthy())).ok());  // raw results are not a report
}

TEST(ReportTest, TableShowsVerdictsAndReasons) {
  NodeResults raw = Healthy();
  raw.measurements[0].value = 500;
  const NodeReport r = Evaluate(raw, H200Everywhere());
  const std::string text = FormatReport(r);
  EXPECT_NE(text.find("RESULT: FAIL"), std::string::npos) << text;
  EXPECT_NE(text.find("500!"), std::string::npos) << text;
  EXPECT_NE(text.find(r.Failures()[0]), std::string::npos) << text;
  EXPECT_NE(text.find("8 x NVIDIA H200 (H200-SXM-141GB)"), std::string::npos) << text;
  EXPECT_NE(FormatReport(Evaluate(Healthy(), H200Everywhere())).find("RESULT: PASS"),
            std::string::npos);
}

TEST(ReportTest, SummaryIsCut) {
  NodeResults raw = Healthy();
  for (int g = 0; g < 8; ++g)
    raw.measurements[static_cast<size_t>(g * 3)].value = 100;
  const NodeReport r = Evaluate(raw, H200Everywhere());
  EXPECT_EQ(r.Failures().size(), 8u);
  EXPECT_LE(r.Summary(120).size(), 120u);
  EXPECT_EQ(r.Summary(120).substr(117), "...");
}

TEST(ReportTest, ClusterOutliersAcrossNodes) {
  std::vector<NodeReport> nodes;
  for (int n = 0; n < 5; ++n) {
    NodeResults raw = Healthy();
    raw.host = "node" + std::to_string(n);
    // Node 2's NCCL passes its expectation (306) but trails the others.
    if (n == 2) raw.measurements.back().value = 320;
    nodes.push_back(Evaluate(raw, H200Everywhere()));
  }
  std::vector<NodeReport*> ptrs;
  for (NodeReport& r : nodes)
    ptrs.push_back(&r);
  FlagOutlierGpus(ptrs, OutlierOptions{}, false);
  for (int n = 0; n < 5; ++n) {
    const Check* c = Find(nodes[static_cast<size_t>(n)], TestKind::kNccl, "all_reduce", -1);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->verdict, n == 2 ? Verdict::kFlag : Verdict::kPass) << n;
    EXPECT_TRUE(nodes[static_cast<size_t>(n)].passed);
  }
}

}  // namespace
}  // namespace shoal::acceptance
