#include "acceptance/results.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "acceptance/bench_testing.h"

namespace shoal::acceptance {
namespace {

NodeResults Full() {
  NodeResults r = testing::Node(2);
  r.quick = true;
  r.rank = 1;
  r.world_size = 2;
  r.versions = {{"cuda_driver", "13.0"}, {"nccl", "22809"}};
  Measurement gemm = testing::Figure(TestKind::kGemm, "bf16", 1, 771.25, kUnitTflops);
  gemm.params = {{"m", 8192}, {"n", 8192}, {"k", 8192}};
  gemm.stats = {20, 760.5, 775.0, 770.1, 771.25, 3.5};
  gemm.check = "bf16 GEMM: 64 samples exact";
  Measurement nccl = testing::Figure(TestKind::kNccl, "all_gather", -1, 355.5, kUnitGbps);
  nccl.ranks = 16;
  nccl.size_bytes = int64_t{8} << 30;
  nccl.params = {{"algbw_gbps", 406.3}, {"time_us", 21141.0}};
  Measurement p2p = testing::Figure(TestKind::kP2p, "latency", 0, 2.25, kUnitUs);
  p2p.peer = 1;
  Measurement burn = testing::Figure(TestKind::kBurnIn, "sustained_bf16", 0, 700, kUnitTflops);
  burn.series = {700, 701.5, 699.25};
  burn.ok = false;
  burn.check = "1 checksum mismatch";
  r.measurements = {gemm, nccl, p2p, burn};
  r.errors = {{TestKind::kHbm, 1, "cudaMalloc: out of memory"}};
  r.notes = {"gpu0: fp8 skipped"};
  r.burn_in_start_ms = r.started_ms + 1000;
  r.burn_in_end_ms = r.started_ms + 61000;
  return r;
}

TEST(ResultsTest, JsonRoundTrip) {
  const NodeResults r = Full();
  const auto back = ParseNodeResults(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, r);
  // Compact output parses the same.
  EXPECT_EQ(*ParseNodeResults(ToJson(r, -1)), r);
}

TEST(ResultsTest, MalformedOutputIsAClearError) {
  const std::string good = ToJson(Full());
  auto replace = [&](std::string_view from, std::string_view to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  struct Row {
    std::string what;
    std::string text;
    std::string error;
  };
  const Row rows[] = {
      {"empty", "", "empty"},
      {"whitespace", " \n", "empty"},
      {"cut off half-way", good.substr(0, good.size() / 2), "not valid JSON"},
      {"a CUDA error on stdout", "CUDA error: out of memory\n", "not valid JSON"},
      {"not an object", "[1, 2]", "must be a JSON object"},
      {"another program's JSON", R"({"hello": "world"})", "results.schema is missing"},
      {"a future schema", replace("shoal-bench-node/1", "shoal-bench-node/9"),
       "shoal-bench-node/9"},
      {"a value as text", replace("\"value\": 771.25", "\"value\": \"771\""),
       "measurements[0].value must be a number"},
      {"a measurement without a value", replace("\"value\": 771.25", "\"valeur\": 771.25"),
       "measurements[0].value is missing"},
      {"without the check's outcome", replace("\"ok\": false,", ""),
       "measurements[3].ok is missing"},
      {"an unknown test", replace("\"test\": \"hbm\"", "\"test\": \"tpu\""), "unknown test 'tpu'"},
      {"a figure of a GPU not listed",
       replace("\"gpu\": 1,\n      \"metric\": \"bf16\"",
               "\"gpu\": 7,\n      \"metric\": \"bf16\""),
       "names GPU 7"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    const auto got = ParseNodeResults(r.text);
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find(r.error), std::string::npos) << got.status().message();
  }
}

TEST(ResultsTest, WrongShapesNameTheField) {
  struct Row {
    std::string key;
    nlohmann::json value;
    std::string error;
  };
  const Row rows[] = {
      {"gpus", 5, "results.gpus must be a list"},
      {"measurements", nullptr, "results.measurements is missing"},
      {"errors", "none", "results.errors must be a list"},
      {"host", 3, "results.host must be a string"},
      {"versions", nlohmann::json::array(), "results.versions must be an object of strings"},
  };
  for (const Row& r : rows) {
    nlohmann::json j = nlohmann::json::parse(ToJson(Full()));
    j[r.key] = r.value;
    const auto got = ParseNodeResults(j.dump());
    ASSERT_FALSE(got.ok()) << r.key;
    EXPECT_NE(got.status().message().find(r.error), std::string::npos) << got.status().message();
  }
}

TEST(ResultsTest, UnknownFieldsAreIgnored) {
  // A newer node binary may add fields; an older shoal still reads the rest.
  std::string text = ToJson(Full());
  text.insert(text.find('{') + 1, "\"future_field\": {\"a\": 1},");
  const auto got = ParseNodeResults(text);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, Full());
}

}  // namespace
}  // namespace shoal::acceptance
