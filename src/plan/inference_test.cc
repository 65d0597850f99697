#include "plan/inference.h"

#include <gtest/gtest.h>

namespace shoal::plan {
namespace {

TrainingSystem System(std::string_view gpu) {
  const catalog::GpuSpec& g = *catalog::FindGpu(gpu);
  return MakeTrainingSystem(g, NodeDesignFor(g));
}

TEST(InferenceTest, DecodeAtBatchOneReadsTheWeights) {
  const ModelShape m = *FindModelPreset("llama3-70b");
  const TrainingSystem h200 = System("H200");
  InferenceTarget t;
  t.context = 128;
  t.output = 128;
  t.weight_bytes = 1;  // fp8
  const InferenceEstimate e = EstimateInference(m, t, h200, 1, 1);
  EXPECT_TRUE(e.decode_memory_bound);
  const double weights_s = m.Params() / (4800e9 * AchievedFor(*h200.gpu).hbm);
  EXPECT_GT(e.decode_step_s, weights_s);
  EXPECT_LT(e.decode_step_s, 1.2 * weights_s);
  // Batching amortises the weights: throughput grows much faster than step time.
  const InferenceEstimate big = EstimateInference(m, t, h200, 1, 64);
  EXPECT_GT(big.tokens_per_s_per_replica, 20 * e.tokens_per_s_per_replica);
  EXPECT_LT(big.decode_step_s, 3 * e.decode_step_s);
  // Prefill of a long prompt is compute-bound and grows with the prompt.
  InferenceTarget long_prompt = t;
  long_prompt.context = 8192;
  EXPECT_GT(EstimateInference(m, long_prompt, h200, 1, 1).prefill_s, 20 * e.prefill_s);
}

// fp8 weights run their GEMMs at the fp8 peak times the GPU's measured fp8
// fraction (H100: 1402.6 of 1979 TFLOPS), not the bf16 one.
TEST(InferenceTest, Fp8ComputeAtTheMeasuredFp8Fraction) {
  const ModelShape m = *FindModelPreset("llama3-8b");
  const TrainingSystem h100 = System("H100");
  InferenceTarget t;
  t.context = 8192;
  t.output = 1;
  t.weight_bytes = 1;
  const InferenceEstimate e = EstimateInference(m, t, h100, 1, 1);
  const double flops =
      2 * m.Params() * t.context + 2.0 * t.context * t.context * m.hidden * m.layers;
  EXPECT_NEAR(e.prefill_s, flops / (h100.gpu->fp8_tflops * 1e12 * AchievedFor(*h100.gpu).gemm_fp8),
              1e-9 * e.prefill_s);
}

// TensorRT-LLM's published throughput (data/compiled/inference_anchors.csv):
// Llama-3.3-70B FP8 on one H200, 2048 in / 2048 out, 2003 output tokens/s at
// maximum throughput. The model, at its best batch, lands within a factor of
// 1.5 either way; a tighter match would need the engine's scheduler.
TEST(InferenceTest, MaxThroughputNearTensorRtLlm) {
  const ModelShape m = *FindModelPreset("llama3-70b");
  const TrainingSystem h200 = System("H200");
  InferenceTarget t;
  t.context = 2048;
  t.output = 2048;
  t.weight_bytes = 1;
  t.kv_bytes = 1;
  t.output_tokens_per_s = 1e6;
  auto e = SizeInference(m, t, h200);
  ASSERT_TRUE(e.ok()) << e.status().message();
  const double per_gpu = e->tokens_per_s_per_replica / e->tp;
  EXPECT_GT(per_gpu, 2003 / 1.5);
  EXPECT_LT(per_gpu, 2003 * 1.5);
}

TEST(InferenceTest, ReplicasCoverTheTarget) {
  const ModelShape m = *FindModelPreset("llama3-8b");
  InferenceTarget t;
  t.output_tokens_per_s = 50000;
  t.tpot_ms = 30;
  auto e = SizeInference(m, t, System("H100"));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_GE(e->replicas * e->tokens_per_s_per_replica, t.output_tokens_per_s);
  EXPECT_LT((e->replicas - 1) * e->tokens_per_s_per_replica, t.output_tokens_per_s);
  EXPECT_LE(e->decode_step_s * 1e3, t.tpot_ms);
  EXPECT_EQ(e->gpus, e->replicas * e->tp);
  // Requests per second are output tokens per request times that.
  InferenceTarget r = t;
  r.output_tokens_per_s = 0;
  r.requests_per_s = t.output_tokens_per_s / t.output;
  auto by_requests = SizeInference(m, r, System("H100"));
  ASSERT_TRUE(by_requests.ok());
  EXPECT_EQ(by_requests->gpus, e->gpus);
}

TEST(InferenceTest, ImpossibleTargetsSayWhatBinds) {
  InferenceTarget t;
  t.output_tokens_per_s = 1000;
  auto too_big = SizeInference(*FindModelPreset("llama3-405b"), t, System("L4"));
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("does not fit"), std::string::npos)
      << too_big.status().message();
  t.tpot_ms = 0.5;
  auto too_fast = SizeInference(*FindModelPreset("llama3-70b"), t, System("H100"));
  ASSERT_FALSE(too_fast.ok());
  EXPECT_NE(too_fast.status().message().find("latency target"), std::string::npos)
      << too_fast.status().message();
}

// A service that needs a fraction of a GPU runs on MIG slices: the
// smallest share that holds the model within the latency, packed by compute
// slices; a service that needs whole GPUs gains nothing there.
TEST(InferenceTest, SmallServicesPackOntoMigSlices) {
  const ModelShape m = *FindModelPreset("llama3-8b");
  const TrainingSystem h100 = System("H100");
  InferenceTarget t;
  t.output_tokens_per_s = 200;
  t.context = 512;
  t.output = 128;
  t.tpot_ms = 100;
  t.weight_bytes = 1;  // fp8: 8 GB of weights fit a 1g.10gb slice barely; 1g.20gb well
  auto whole = SizeInference(m, t, h100);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->gpus, 1);
  auto mig = SizeInferenceOnMig(m, t, h100);
  ASSERT_TRUE(mig.has_value());
  EXPECT_LT(mig->gpu_share, 1.0) << mig->profile;
  EXPECT_EQ(mig->gpus, 1);
  EXPECT_EQ(mig->replica.tp, 1);
  EXPECT_LE(mig->replica.decode_step_s * 1e3, t.tpot_ms);
  EXPECT_GE(mig->replicas * mig->replica.tokens_per_s_per_replica, t.output_tokens_per_s);
  // The slice is slower than the whole GPU: a seventh of its compute, an
  // eighth (or a quarter) of its bandwidth.
  EXPECT_GT(mig->replica.decode_step_s, whole->decode_step_s);

  // Much more traffic: the slices take as many GPUs as whole ones, or more.
  InferenceTarget busy = t;
  busy.output_tokens_per_s = 200000;
  auto many = SizeInferenceOnMig(m, busy, h100);
  auto many_whole = SizeInference(m, busy, h100);
  ASSERT_TRUE(many.has_value());
  ASSERT_TRUE(many_whole.ok());
  EXPECT_GE(many->gpus, many_whole->gpus / 2) << "packing never beats the hardware by much";
  // No MIG on an L40S; a 70B model fits no slice.
  EXPECT_FALSE(SizeInferenceOnMig(m, t, System("L40S")).has_value());
  EXPECT_FALSE(SizeInferenceOnMig(*FindModelPreset("llama3-70b"), t, h100).has_value());
}

TEST(InferenceTest, ServingPrecisions) {
  for (auto [text, bytes] : {std::pair{"bf16", 2.0}, {"fp8", 1.0}, {"FP4", 0.5}}) {
    auto b = ParseServingBytes(text);
    ASSERT_TRUE(b.ok()) << text;
    EXPECT_EQ(*b, bytes);
  }
  EXPECT_FALSE(ParseServingBytes("fp3").ok());
}

}  // namespace
}  // namespace shoal::plan
