#include "plan/model.h"

#include <gtest/gtest.h>

namespace shoal::plan {
namespace {

// Parameter counts the model cards and papers give.
TEST(ModelTest, PresetsHaveTheirPublishedSizes) {
  struct Case {
    std::string_view name;
    double params_b;
  };
  const Case cases[] = {
      {"llama3-8b", 8.03},   {"llama3-70b", 70.6},     {"llama3-405b", 405.9}, {"llama2-7b", 6.74},
      {"llama2-70b", 69.0},  {"gpt3-175b", 174.6},     {"gpt3-13b", 12.9},     {"mt-nlg-530b", 530},
      {"megatron-1t", 1008}, {"chinchilla-70b", 64.7},
  };
  for (const Case& c : cases) {
    auto m = FindModelPreset(c.name);
    ASSERT_TRUE(m.ok()) << c.name;
    EXPECT_NEAR(m->Params() / 1e9, c.params_b, 0.02 * c.params_b) << c.name;
    EXPECT_TRUE(m->Validate().ok()) << c.name;
    EXPECT_FALSE(m->source.empty());
  }
  EXPECT_EQ(ModelPresetNames().size(), std::size(cases));
}

TEST(ModelTest, FlopsPerTokenIsSixNPlusAttention) {
  const ModelShape m = *FindModelPreset("gpt3-175b");
  // Megatron-LM: 72·B·s·l·h²·(1 + s/6h + V/12lh) per B sequences of s tokens.
  const double h = m.hidden, l = m.layers, s = m.seq, v = m.vocab;
  const double megatron = 72 * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h)) / s;
  EXPECT_NEAR(m.TrainFlopsPerToken() / megatron, 1.0, 1e-9);
  EXPECT_GT(m.TrainFlopsPerToken(), 6 * m.Params());
}

TEST(ModelTest, GroupedQueryAttentionShrinksTheCache) {
  const ModelShape llama = *FindModelPreset("llama3-70b");
  // 80 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 320 KiB per token.
  EXPECT_DOUBLE_EQ(llama.KvBytesPerToken(2), 2.0 * 80 * 8 * 128 * 2);
  ModelShape mha = llama;
  mha.kv_heads = 0;
  EXPECT_DOUBLE_EQ(mha.KvBytesPerToken(2) / llama.KvBytesPerToken(2), 8.0);
}

TEST(ModelTest, RejectsBadShapes) {
  struct Case {
    ModelShape m;
    std::string_view why;
  };
  ModelShape ok = *FindModelPreset("llama3-8b");
  ModelShape no_layers = ok;
  no_layers.layers = 0;
  ModelShape odd_heads = ok;
  odd_heads.heads = 30;
  ModelShape odd_kv = ok;
  odd_kv.kv_heads = 5;
  for (const Case& c : {Case{no_layers, "positive"}, Case{odd_heads, "multiple of heads"},
                        Case{odd_kv, "kv_heads"}}) {
    Status s = c.m.Validate();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.why), std::string::npos) << s.message();
  }
  auto unknown = FindModelPreset("gpt-5");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("llama3-70b"), std::string::npos)
      << "lists the presets";
}

}  // namespace
}  // namespace shoal::plan
