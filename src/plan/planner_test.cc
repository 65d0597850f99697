#include "plan/planner.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "plan/report.h"

namespace shoal::plan {
namespace {

// Llama 3 8B over a trillion tokens on `gpus` GPUs.
TrainingWorkload TrainLlama8b(int gpus) {
  TrainingWorkload t;
  t.model = *FindModelPreset("llama3-8b");
  t.tokens = 1e12;
  t.gpus = gpus;
  t.global_batch_tokens = DefaultBatchTokens(t.model);
  return t;
}

Workload Parse(std::string_view text) {
  auto w = ParseWorkloadToml(text, "w.toml");
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? *w : Workload{};
}

TEST(WorkloadTest, ReadsEveryKind) {
  const Workload w = Parse(R"(
name = "lab"
[constraints]
gpus = ["H100", "b200"]
budget_usd = 2.5e7
site_power_mw = 3
cooling = "air"
pue = 1.25
electricity_usd_per_kwh = 0.07
[constraints.gpu_price]
H100 = 22000

[[training]]
name = "pretrain"
model = "llama3-8b"
tokens = "2T"
days = 20
precision = "fp8"
seq = 4096

[[inference]]
model = "llama3-70b"
tokens_per_s = "20k"
context = 1024
output = 128
tpot_ms = 40
precision = "fp8"

[[general]]
name = "notebooks"
gpus = 16
)");
  EXPECT_EQ(w.name, "lab");
  EXPECT_EQ(w.gpu_models, (std::vector<std::string>{"H100", "b200"}));
  EXPECT_DOUBLE_EQ(w.site.budget_usd, 2.5e7);
  EXPECT_DOUBLE_EQ(w.site.site_power_kw, 3000);
  EXPECT_EQ(w.site.cooling, Cooling::kAir);
  EXPECT_DOUBLE_EQ(w.site.gpu_price_usd.at("H100-SXM-80GB"), 22000);
  ASSERT_EQ(w.training.size(), 1u);
  EXPECT_EQ(w.training[0].model.name, "llama3-8b");
  EXPECT_EQ(w.training[0].model.seq, 4096);
  EXPECT_DOUBLE_EQ(w.training[0].tokens, 2e12);
  EXPECT_EQ(*w.training[0].days, 20);
  EXPECT_EQ(w.training[0].format, NumberFormat::kFp8);
  EXPECT_DOUBLE_EQ(w.training[0].global_batch_tokens, DefaultBatchTokens(w.training[0].model));
  ASSERT_EQ(w.inference.size(), 1u);
  EXPECT_DOUBLE_EQ(w.inference[0].target.output_tokens_per_s, 20000);
  EXPECT_DOUBLE_EQ(w.inference[0].target.weight_bytes, 1);
  ASSERT_EQ(w.general.size(), 1u);
  EXPECT_EQ(w.general[0].gpus, 16);
}

TEST(WorkloadTest, ShapesFromKeysOrAParameterCount) {
  const Workload custom =
      Parse("[[training]]\nlayers = 24\nhidden = 2048\nheads = 16\ntokens = 1e9\ngpus = 8\n");
  EXPECT_EQ(custom.training[0].model.layers, 24);
  EXPECT_EQ(custom.training[0].model.name, "custom");
  const Workload by_params =
      Parse("[[training]]\nparams = \"175B\"\ntokens = \"300B\"\ngpus = 1024\n");
  const ModelShape& m = by_params.training[0].model;
  EXPECT_NEAR(m.Params() / 175e9, 1.0, 0.1) << "GPT-3's shape for GPT-3's size";
  EXPECT_EQ(m.hidden % 128, 0);
}

TEST(WorkloadTest, MistakesPointAtTheLine) {
  struct Case {
    std::string_view text;
    std::string_view want;
  };
  const Case cases[] = {
      {"[[training]]\nmodle = \"llama3-8b\"\n",
       "w.toml:2: training[1]: unknown key 'modle' (did you mean 'model'?)"},
      {"[[training]]\nmodel = \"llama3-8b\"\ntokens = 1e12\n", "give either days"},
      {"[[training]]\nmodel = \"llama3-8b\"\ndays = 3\n", "give tokens"},
      {"[[training]]\nmodel = \"llama9\"\ntokens = 1\ndays = 1\n", "unknown model 'llama9'"},
      {"[[training]]\nmodel = \"llama3-8b\"\ntokens = \"lots\"\ndays = 1\n", "not a count"},
      {"[[training]]\nmodel = \"llama3-8b\"\ntokens = 1\ndays = 1\nprecision = \"fp6\"\n",
       "precision 'fp6'"},
      {"[[inference]]\nmodel = \"llama3-8b\"\n", "tokens_per_s or requests_per_s"},
      {"[constraints]\ncooling = \"oil\"\n[[general]]\ngpus = 4\n", "cooling"},
      {"[constraints]\ngpu_price = { H900 = 1 }\n[[general]]\ngpus = 4\n", "unknown GPU 'H900'"},
      {"name = \"x\"\n", "no [[training]]"},
      {"[[training]\n", "w.toml:1"},
  };
  for (const Case& c : cases) {
    auto w = ParseWorkloadToml(c.text, "w.toml");
    ASSERT_FALSE(w.ok()) << c.text;
    EXPECT_NE(w.status().message().find(c.want), std::string::npos) << w.status().message();
  }
}

TEST(WorkloadTest, Counts) {
  const std::pair<std::string_view, double> cases[] = {
      {"15T", 15e12}, {"4M", 4e6}, {"70B", 70e9}, {"2.5k", 2500}, {"1e9", 1e9}, {" 8 ", 8},
  };
  for (const auto& [text, want] : cases) {
    auto v = ParseCount(text);
    ASSERT_TRUE(v.ok()) << text;
    EXPECT_DOUBLE_EQ(*v, want) << text;
  }
  EXPECT_FALSE(ParseCount("T").ok());
  EXPECT_FALSE(ParseCount("-3M").ok());
}

TEST(PlannerTest, DemandFromATrace) {
  // 4 GPUs for 90 s, then 12 for 10 s: the 90th percentile is 4.
  const std::vector<JobDemand> jobs = {{0, 100, 4}, {90, 10, 8}};
  EXPECT_EQ(GpusForDemand(jobs, 0.9), 4);
  EXPECT_EQ(GpusForDemand(jobs, 0.95), 12);
  EXPECT_EQ(GpusForDemand({}), 0);
}

TEST(PlannerTest, TighterDeadlinesNeedMoreGpusAndFinishInTime) {
  int last_gpus = 0;
  for (double days : {120.0, 60.0, 30.0}) {
    Workload w;
    TrainingWorkload t;
    t.model = *FindModelPreset("llama3-8b");
    t.tokens = 2e12;
    t.days = days;
    t.global_batch_tokens = DefaultBatchTokens(t.model);
    w.training.push_back(t);
    w.gpu_models = {"H100"};
    auto r = PlanWorkload(w);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const Design& d = r->designs[0];
    ASSERT_TRUE(d.feasible);
    EXPECT_LE(d.longest_training_days, days);
    EXPECT_GE(d.training[0].gpus, last_gpus) << days;
    EXPECT_GE(d.cluster.gpus, d.training[0].gpus);
    last_gpus = d.training[0].gpus;
  }
}

TEST(PlannerTest, SideBySideMarksCheapestAndFastest) {
  Workload w;
  w.training.push_back(TrainLlama8b(256));
  w.general.push_back({"notebooks", 16, "given"});
  w.gpu_models = {"A100", "H100", "B200"};
  auto r = PlanWorkload(w);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->designs.size(), 3u);
  int cheapest = 0, fastest = 0;
  for (const Design& d : r->designs) {
    ASSERT_TRUE(d.feasible) << d.gpu_model << ": " << d.problem;
    EXPECT_EQ(d.gpus, 256 + 16);
    cheapest += d.cheapest;
    fastest += d.fastest;
    for (const Design& other : r->designs) {
      if (d.cheapest) {
        EXPECT_LE(d.total_usd, other.total_usd);
      }
      if (d.fastest) {
        EXPECT_LE(d.longest_training_days, other.longest_training_days);
      }
    }
  }
  EXPECT_EQ(cheapest, 1);
  EXPECT_EQ(fastest, 1);
  EXPECT_TRUE(r->designs[static_cast<size_t>(r->recommended)].cheapest);
  // The same GPUs, faster parts: B200 finishes first.
  EXPECT_TRUE(r->designs[2].fastest);
  EXPECT_EQ(PlanText(w, *r, {}).find("designs differ in size"), std::string::npos);

  // Under a deadline each design is the fewest GPUs that meet it: "fastest"
  // then compares clusters of different sizes, and says so.
  Workload deadline;
  TrainingWorkload t = TrainLlama8b(0);
  t.gpus.reset();
  t.days = 30;
  deadline.training.push_back(t);
  deadline.gpu_models = {"A100", "B200"};
  auto sized = PlanWorkload(deadline);
  ASSERT_TRUE(sized.ok()) << sized.status().message();
  ASSERT_NE(sized->designs[0].cluster.gpus, sized->designs[1].cluster.gpus);
  EXPECT_NE(PlanText(deadline, *sized, {}).find("designs differ in size"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(PlanJson(deadline, *sized))["fastest_of_equal_sizes"]);
}

// Serving replicas that fit in a node never talk to another node: such
// nodes get no compute fabric; training nodes do.
TEST(PlannerTest, OnlyNodesThatTalkToEachOtherAreOnTheComputeFabric) {
  Workload serving;
  InferenceWorkload inf;
  inf.model = *FindModelPreset("llama3-70b");
  inf.target.output_tokens_per_s = 20000;
  inf.target.tpot_ms = 50;
  serving.inference.push_back(inf);
  serving.gpu_models = {"H100"};
  auto alone = PlanWorkload(serving);
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  const Design& s = alone->designs.front();
  ASSERT_TRUE(s.feasible) << s.problem;
  ASSERT_LE(s.inference.front().estimate.tp, 8) << "a replica within one DGX H100";
  EXPECT_EQ(s.cluster.fabric_nodes, 0);
  EXPECT_EQ(s.cluster.fabric.Switches(), 0);
  EXPECT_EQ(s.cluster.network_usd, 0);
  EXPECT_NE(PlanText(serving, *alone, {}).find("fabric: none"), std::string::npos);

  Workload both = serving;
  both.training.push_back(TrainLlama8b(256));
  auto mixed = PlanWorkload(both);
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  const Design& m = mixed->designs.front();
  ASSERT_TRUE(m.feasible) << m.problem;
  EXPECT_EQ(m.cluster.fabric_nodes, 256 / 8);
  EXPECT_EQ(m.cluster.nodes - m.cluster.fabric_nodes, s.cluster.nodes);
  EXPECT_GT(m.cluster.network_usd, 0);
}

TEST(PlannerTest, ImpossibleWorkloadsExplainWhatBinds) {
  struct Case {
    std::string_view what;
    Workload w;
    std::string_view want;
  };
  auto training = [](std::string_view model, double tokens, double days) {
    Workload w;
    TrainingWorkload t;
    t.model = *FindModelPreset(model);
    t.tokens = tokens;
    t.days = days;
    t.global_batch_tokens = DefaultBatchTokens(t.model);
    w.training.push_back(t);
    return w;
  };
  Workload fits_nowhere = training("llama3-405b", 1e12, 30);
  fits_nowhere.inference.push_back(
      {"serve", *FindModelPreset("llama3-405b"), InferenceTarget{.output_tokens_per_s = 10}});
  fits_nowhere.gpu_models = {"L4"};
  Workload too_soon = training("llama3-70b", 15e12, 1);
  too_soon.gpu_models = {"H100"};
  Workload too_poor = training("llama3-70b", 15e12, 90);
  too_poor.gpu_models = {"H100"};
  too_poor.site.budget_usd = 10e6;
  Workload no_power = training("llama3-70b", 15e12, 90);
  no_power.gpu_models = {"H100"};
  no_power.site.site_power_kw = 500;
  const Case cases[] = {
      {"fits no GPU", fits_nowhere, "does not fit"},
      {"deadline", too_soon, "out of reach"},
      {"budget", too_poor, "the budget is $10.0M"},
      {"power", no_power, "the site has 500 kW"},
  };
  for (const Case& c : cases) {
    auto r = PlanWorkload(c.w);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), StatusCode::kUnsatisfiable) << c.what;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << c.what << ": " << r.status().message();
  }
  // Unknown GPUs and empty workloads are usage errors.
  Workload unknown = training("llama3-8b", 1e9, 10);
  unknown.gpu_models = {"H900"};
  EXPECT_EQ(PlanWorkload(unknown).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanWorkload(Workload{}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shoal::plan
