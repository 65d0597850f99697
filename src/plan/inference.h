// The inference model: memory for weights and KV cache, decode bound by
// memory bandwidth, prefill by compute, and the replicas a throughput target
// needs under a latency target. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "plan/model.h"
#include "plan/training.h"

namespace shoal::plan {

// Bytes per weight value when serving: 2 (bf16/fp16), 1 (fp8), 0.5 (fp4).
Result<double> ParseServingBytes(std::string_view precision);

struct InferenceTarget {
  double output_tokens_per_s = 0;  // aggregate generated tokens per second; or
  double requests_per_s = 0;       // requests per second (each `output` tokens long)
  int context = 2048;              // prompt tokens per request
  int output = 256;                // generated tokens per request
  double tpot_ms = 0;              // time per output token limit; 0: none
  double ttft_ms = 0;              // time to first token limit; 0: none
  double weight_bytes = 2;         // per parameter
  double kv_bytes = 2;             // per cached value
};

struct InferenceEstimate {
  int tp = 1;     // GPUs per replica (tensor parallel)
  int batch = 1;  // concurrent sequences per replica
  int replicas = 0;
  int gpus = 0;
  double decode_step_s = 0;  // one token for the whole batch (= TPOT)
  double prefill_s = 0;      // one request's prompt (= TTFT without queueing)
  double tokens_per_s_per_replica = 0;
  double weights_bytes_per_gpu = 0;
  double kv_bytes_per_gpu = 0;
  bool decode_memory_bound = true;
};

// The cheapest way (fewest GPUs) to meet the target on this system. Fails
// with what binds: the model does not fit, or the latency cannot be met.
Result<InferenceEstimate> SizeInference(const ModelShape& model, const InferenceTarget& target,
                                        const TrainingSystem& sys);

// A service that needs less than a GPU's worth on MIG slices: replicas of
// one profile (one slice each, TP 1), packed onto as few GPUs as their
// compute slices, memory and the profile's count per GPU allow.
struct MigServing {
  std::string profile;  // "1g.10gb"
  int replicas = 0;
  int gpus = 0;               // whole GPUs the slices take
  double gpu_share = 0;       // their compute slices over 7: what other services cannot use
  InferenceEstimate replica;  // one slice's estimate (batch, latency, tokens/s)
};

// The smallest share of GPUs that serves the target on slices of the
// system's GPU, each slice a GPU of its profile's memory and bandwidth
// (eighths) and compute (sevenths). nullopt where the GPU has no MIG, or
// no profile holds the model within the latency.
std::optional<MigServing> SizeInferenceOnMig(const ModelShape& model, const InferenceTarget& target,
                                             const TrainingSystem& sys);

// One configuration, for tests and reports.
InferenceEstimate EstimateInference(const ModelShape& model, const InferenceTarget& target,
                                    const TrainingSystem& sys, int tp, int batch);

}  // namespace shoal::plan
