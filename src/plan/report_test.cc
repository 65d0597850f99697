#include "plan/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace shoal::plan {
namespace {

PlanResult Plan(Workload& w) {
  TrainingWorkload t;
  t.name = "pretrain";
  t.model = *FindModelPreset("llama3-8b");
  t.tokens = 1e12;
  t.gpus = 64;
  t.global_batch_tokens = DefaultBatchTokens(t.model);
  w.name = "report test";
  w.training.push_back(t);
  w.general.push_back({"notebooks", 12, "given"});
  w.gpu_models = {"H100", "MI300X"};
  auto r = PlanWorkload(w);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

TEST(ReportTest, TextShowsTheDesignsSideBySide) {
  Workload w;
  const PlanResult r = Plan(w);
  const std::string text = PlanText(w, r);
  for (std::string_view want :
       {"H100-SXM-80GB", "MI300X-192GB", "cheapest", "fastest", "capex", "BTU/h", "leaf", "PSUs",
        "failures per day", "training 'pretrain'"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want;
  }
}

TEST(ReportTest, JsonHasEveryDesignAndTheRecommendation) {
  Workload w;
  const PlanResult r = Plan(w);
  const auto j = nlohmann::json::parse(PlanJson(w, r));
  ASSERT_EQ(j["designs"].size(), 2u);
  EXPECT_EQ(j["recommended"], r.designs[static_cast<size_t>(r.recommended)].gpu_model);
  for (const auto& d : j["designs"]) {
    EXPECT_TRUE(d["feasible"].get<bool>());
    EXPECT_EQ(d["training"][0]["layout"]["tp"].get<int>() *
                  d["training"][0]["layout"]["pp"].get<int>() *
                  d["training"][0]["layout"]["dp"].get<int>() *
                  d["training"][0]["layout"]["cp"].get<int>(),
              64);
    EXPECT_GT(d["cost_usd"]["capex"].get<double>(), 0);
    EXPECT_GT(d["fabric"]["nics"].get<int>(), 0);
  }
}

TEST(ReportTest, ClusterFileGroupsNodesByWorkload) {
  Workload w;
  const PlanResult r = Plan(w);
  const Design& h100 = r.designs[0];
  const std::string toml = ClusterToml(w, h100);
  EXPECT_NE(toml.find("profile = \"dgx-h100\""), std::string::npos);
  EXPECT_NE(toml.find("count = 8\n"), std::string::npos) << "64 training GPUs are 8 nodes";
  EXPECT_NE(toml.find("labels = [\"general\"]"), std::string::npos);
  const Design& mi300x = r.designs[1];
  const std::string described = ClusterToml(w, mi300x);
  EXPECT_NE(described.find("gpu_model = \"MI300X-192GB\""), std::string::npos)
      << "no profile: nodes are described";
  EXPECT_NE(described.find("gpu_memory"), std::string::npos);
}

// A small service on MIG slices: the text says so, and the cluster file
// splits its nodes' GPUs for `shoal sim`, which reads it back.
TEST(ReportTest, SmallServicesShowAndExportTheirMigSlices) {
  Workload w;
  InferenceWorkload serve;
  serve.name = "chat";
  serve.model = *FindModelPreset("llama3-8b");
  serve.target.output_tokens_per_s = 300;
  serve.target.tpot_ms = 60;
  serve.target.weight_bytes = 1;
  serve.target.kv_bytes = 1;
  w.name = "mig";
  w.inference.push_back(serve);
  w.gpu_models = {"H100"};
  auto r = PlanWorkload(w);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Design& d = r->designs[0];
  ASSERT_TRUE(d.inference[0].mig.has_value());
  EXPECT_EQ(d.inference[0].Gpus(), 1);
  const std::string text = PlanText(w, *r);
  EXPECT_NE(text.find("on MIG: "), std::string::npos) << text;
  const std::string toml = ClusterToml(w, d);
  EXPECT_NE(toml.find("mig = \""), std::string::npos) << toml;
  const auto j = nlohmann::json::parse(PlanJson(w, *r));
  EXPECT_LT(j["designs"][0]["inference"][0]["mig"]["gpu_share"].get<double>(), 1.0);
}

TEST(ReportTest, ValidationReportStatesTheTargets) {
  ValidationReport report;
  auto row = [](std::string group, std::string label, double error) {
    ValidationRow r;
    r.group = std::move(group);
    r.label = std::move(label);
    r.gpus = 8;
    r.layout = "TP8";
    r.measured_s = 1;
    r.predicted_s = 1 + error;
    r.error = error;
    return r;
  };
  report.rows.push_back(row("A", "run 1", 0.3));
  report.rows.push_back(row("vTrain", "run 2", -0.05));
  ValidationRow skipped = row("B", "run 3", 0);
  skipped.skipped = true;
  skipped.skip_reason = "no GPU";
  report.rows.push_back(skipped);
  report.Summarise();
  const std::string text = ValidationText(report, false);
  EXPECT_NE(text.find("+30.0%"), std::string::npos);
  EXPECT_EQ(text.find("run 2"), std::string::npos) << "vTrain rows within 25% are summarised only";
  EXPECT_NE(text.find("no GPU"), std::string::npos);
  EXPECT_NE(text.find("NOT met"), std::string::npos);
  const auto j = nlohmann::json::parse(ValidationJson(report));
  EXPECT_FALSE(j["targets_met"].get<bool>());
  EXPECT_EQ(j["all"]["rows"], 2);
  EXPECT_DOUBLE_EQ(j["all"]["mae"].get<double>(), (0.3 + 0.05) / 2);
}

}  // namespace
}  // namespace shoal::plan
