// The training model: memory per GPU and step time of a transformer under a
// parallel layout (tensor, pipeline, data, context and sequence parallelism,
// ZeRO/FSDP, activation recompute), and the search for the fastest layout
// that fits. Every formula and constant is documented in docs/plan.md with
// its source. Pure functions of their arguments; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/gpus.h"
#include "core/status.h"
#include "plan/collectives.h"
#include "plan/hardware.h"
#include "plan/model.h"

namespace shoal::plan {

enum class Recompute { kNone, kSelective, kFull };
std::string_view RecomputeName(Recompute r);

// The number format of the layers' matrix multiplies. fp16 and bf16 run at the
// same speed; fp16 runs reduce gradients in fp16, bf16 ones in fp32 (as
// Megatron-LM does), and fp8 runs the transformer layers' GEMMs in fp8.
enum class NumberFormat { kFp16, kBf16, kFp8 };
std::string_view NumberFormatName(NumberFormat f);
Result<NumberFormat> ParseNumberFormat(std::string_view s);

// The training software, which decides what overlaps and how much the host
// costs. `kModern` (Megatron-Core with Transformer Engine, 2024) is what the
// planner assumes; `kMegatron2021` (Megatron-LM / Megatron-DeepSpeed of
// 2021-22) is what the older published runs used.
enum class Stack { kModern, kMegatron2021 };
struct StackTraits {
  std::string_view name;
  bool flash_attention;          // fused attention, no s x s matrix in memory
  bool overlap_dp;               // gradient reduce and parameter gather hidden behind compute
  double host_s_per_layer;       // host time to launch one layer's forward and backward
  double host_s_per_tp_peer;     // host/sync time per TP collective per extra TP rank
  bool flat_zero3;               // ZeRO-3 gathers as flat rings over one NIC each, not overlapped
  bool fused_grad_accumulation;  // weight-gradient GEMMs add into the accumulated gradient;
                                 // else a separate pass per micro-batch adds each new one
  bool selective_recompute;      // recomputes attention alone (Korthikanti et al. 2022, after
                                 // the 2021 stack); else none or all of a layer
};
const StackTraits& TraitsOf(Stack stack);

struct Layout {
  int tp = 1;              // tensor parallel (within the scale-up domain)
  int pp = 1;              // pipeline stages
  int dp = 1;              // data parallel
  int cp = 1;              // context parallel (sequence split across GPUs)
  int micro_batch = 1;     // sequences per micro-batch
  int virtual_stages = 1;  // interleaved pipeline chunks per GPU
  Recompute recompute = Recompute::kNone;
  int zero = 1;                   // 0: replicated optimizer; 1: sharded optimizer (distributed
                                  // optimizer / ZeRO-1); 3: parameters sharded too (ZeRO-3 / FSDP)
  bool sequence_parallel = true;  // norms and dropout sharded over the TP group

  int Gpus() const { return tp * pp * dp * cp; }
  std::string ToString() const;  // "TP8 PP4 DP16 CP1 mb1 v2 rc=selective zero1"
  // Where PP does not divide `layers`, how the stages split them ("2 stages
  // of 11 layers and 1 of 10: ..."); else empty.
  std::string UnevenStages(int layers) const;
};

// What a layout runs on.
struct TrainingSystem {
  const catalog::GpuSpec* gpu = nullptr;
  Achieved achieved;
  CommSystem comm;
};
TrainingSystem MakeTrainingSystem(const catalog::GpuSpec& gpu, const NodeDesign& node,
                                  double oversubscription = 1.0);

struct TrainingJob {
  ModelShape model;
  int64_t global_batch = 0;  // sequences per optimizer step
  NumberFormat format = NumberFormat::kBf16;
  Stack stack = Stack::kModern;
  bool pad_vocab = true;  // pad the vocabulary to a multiple of 128 x TP (Megatron-LM)
};

struct MemoryEstimate {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double other_bytes = 0;  // logits, CUDA context, NCCL buffers, fragmentation
  double Total() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + other_bytes;
  }
};

// Time of one optimizer step, by where it goes. The parts add up to
// `step_s` except what overlaps (then `*_exposed` counts only what shows).
struct StepEstimate {
  double step_s = 0;
  double compute_s = 0;     // GPU kernels of the busiest stage, all micro-batches
  double tp_comm_s = 0;     // tensor-parallel collectives (in the critical path)
  double cp_comm_s = 0;     // context-parallel exchange not hidden by attention
  double bubble_s = 0;      // pipeline fill and drain
  double p2p_s = 0;         // pipeline sends
  double dp_exposed_s = 0;  // data-parallel / ZeRO traffic not hidden
  double optimizer_s = 0;
  double host_bound_s = 0;    // time the host adds to the GPU's (sets the pace, or they stall)
  int64_t micro_batches = 0;  // per pipeline, per step
  double model_flops = 0;     // per step, ModelShape::TrainFlopsPerToken x tokens
  double mfu = 0;             // model_flops / (step x GPUs x peak of the number format)
  MemoryEstimate memory;
};

// Estimates one layout. Fails (kUnsatisfiable) when it does not fit in the
// GPU's memory or cannot run (a TP group beyond the scale-up domain, a batch
// that does not split over the data-parallel ranks, ...), saying why.
Result<StepEstimate> EstimateStep(const TrainingJob& job, const Layout& layout,
                                  const TrainingSystem& sys);

// Knobs of the layout search; unset ones are searched.
struct LayoutConstraints {
  std::optional<int> tp, pp, dp, cp, micro_batch, virtual_stages, zero;
  std::optional<Recompute> recompute;
  // Unset: with TP > 1 on the modern stack (Megatron-Core turns it on with TP).
  std::optional<bool> sequence_parallel;
};

struct LayoutChoice {
  Layout layout;
  StepEstimate step;
  int candidates = 0;  // layouts that fit
};

// The fastest layout for `gpus` GPUs. When none fits, the error says what
// binds (memory: the least any layout needs vs the GPU's memory; or the batch).
Result<LayoutChoice> BestLayout(const TrainingJob& job, int gpus, const TrainingSystem& sys,
                                const LayoutConstraints& constraints = {});

}  // namespace shoal::plan
