#include "plan/training.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/strings.h"

namespace shoal::plan {

namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

// A GEMM whose dimensions are not multiples of 8 cannot use the tensor cores
// at full rate (NVIDIA Deep Learning Performance Guide, "Tensor Core
// requirements"); the factor is fitted to vTrain's rows, whose vocabulary is
// not padded (docs/plan.md, "Calibrated constants").
constexpr double kUnalignedGemmFactor = 0.3;
// The GPU-side gap of one kernel (launch, tail); Shoal's assumption.
constexpr double kKernelGapS = 4e-6;
// Megatron's vocabulary-parallel cross-entropy reads and writes the fp32
// logits about six times: upcast, max, exp-sum, loss, and the gradient.
constexpr double kCrossEntropyBytesPerLogit = 24;
// Adam with fp32 master weights reads and writes ~48 bytes per parameter it
// updates: master, two moments and the fp32 gradient read and written, the
// bf16 copy, unscale and norm passes (matches vTrain's per-layer optimizer
// time, docs/plan.md).
constexpr double kOptimizerBytesPerParam = 48;
// Without gradient-accumulation fusion each micro-batch's weight gradient is
// written as a 16-bit tensor and then added to the gradient accumulated over
// the step in a separate pass, which reads the new gradient (2 bytes) and
// reads and writes the accumulated one in its reduction format (2 x 2 bytes
// for fp16 runs, 2 x 4 for fp32 main gradients): Megatron-LM's DDP hook
// `param.main_grad.add_(param.grad.data)` (megatron/model/distributed.py,
// `_make_param_hook`; main gradients fp32 with accumulate_allreduce_grads_in_fp32,
// else the parameters' type), and PyTorch autograd's AccumulateGrad into
// `param.grad` under DeepSpeed, whose pipeline engine reduces only after the
// last micro-batch (runtime/pipe/engine.py, `_exec_reduce_grads`). Megatron-LM
// later fused the addition into the weight-gradient GEMM
// (--gradient-accumulation-fusion, on by default; apex
// fused_weight_gradient_mlp_cuda.wgrad_gemm_accum_fp32, Transformer Engine's
// fuse_wgrad_accumulation in Megatron-Core), which the modern stack has.
constexpr double kAccumulateReadBytes = 2;
// Communication overlapped with compute is not free: NCCL kernels take SMs
// and memory bandwidth from the kernels they run beside. Over GPT and Llama
// training steps on A100, H100, MI250 and MI210, compute overlapped with
// collectives ran 18.9 % slower on average (max 40 %) than alone
// ("Characterizing Compute-Communication Overlap in GPU-Accelerated
// Distributed Deep Learning", arXiv 2507.03114, 2025). So each second of hidden
// communication costs 0.189 s of step time; only the rest is hidden.
constexpr double kOverlapSlowdown = 0.189;
// Host launch and GPU execution of a layer form a two-stage pipeline with
// sync points (every TP all-reduce, the loss): when the two take similar
// time neither hides the other fully, and jitter on either side stalls the
// other. A layer takes the p-norm of the two, (g^k + h^k)^(1/k), which is the
// larger when they differ much and up to 2^(1/k) of it when they are equal;
// k is *calibrated* with the 2021 stack's host figures on vTrain's rows
// (docs/plan.md, "Calibrated constants").
constexpr double kHostGpuExponent = 4;
// CUDA context, NCCL buffers and allocator slack: 2 GiB plus 5 % of the rest
// (Shoal's assumption; PyTorch reserves about this much beyond tensors).
constexpr double kFixedOverheadBytes = 2 * kGib;
constexpr double kFragmentation = 0.05;

const StackTraits kModernTraits{
    .name = "megatron-core",
    .flash_attention = true,
    .overlap_dp = true,
    .host_s_per_layer = 1.0e-3,
    .host_s_per_tp_peer = 0,
    .flat_zero3 = false,
    .fused_grad_accumulation = true,
    .selective_recompute = true,
};
// The host figures are calibrated on vTrain's rows together with
// kHostGpuExponent (docs/plan.md).
const StackTraits kMegatron2021Traits{
    .name = "megatron-2021",
    .flash_attention = false,
    .overlap_dp = false,
    .host_s_per_layer = 2.8e-3,
    .host_s_per_tp_peer = 40e-6,
    .flat_zero3 = true,
    .fused_grad_accumulation = false,
    .selective_recompute = false,
};

// Per-GPU view of one layout, shared by the memory and time estimates.
struct Shape {
  double b = 0;       // sequences per micro-batch
  double s = 0;       // sequence length
  double tokens = 0;  // tokens per micro-batch on one GPU (b x s / cp)
  double h = 0, f = 0, kv = 0, heads = 0, vocab = 0;
  double t = 1;             // TP
  int layers_max = 0;       // layers on the busiest stage
  double stage_params = 0;  // parameters held by the busiest stage, per GPU
  double layer_params = 0;  // per GPU
  bool flash = false;
};

int PaddedVocab(const TrainingJob& job, int tp) {
  const int v = job.model.vocab;
  const int multiple = job.pad_vocab ? 128 * tp : tp;
  return (v + multiple - 1) / multiple * multiple;
}

Shape MakeShape(const TrainingJob& job, const Layout& l) {
  const ModelShape& m = job.model;
  Shape sh;
  sh.b = l.micro_batch;
  sh.s = m.seq;
  sh.tokens = sh.b * sh.s / l.cp;
  sh.h = m.hidden;
  sh.f = m.Ffn();
  sh.kv = static_cast<double>(m.KvHeads()) * m.HeadDim();
  sh.heads = m.heads;
  sh.vocab = PaddedVocab(job, l.tp);
  sh.t = l.tp;
  sh.layers_max = (m.layers + l.pp - 1) / l.pp;
  sh.layer_params = m.LayerParams() / l.tp;
  const double embedding = sh.vocab * sh.h / l.tp;
  // The first stage holds the input embedding, the last the output layer
  // (the same matrix when tied, held twice when the pipeline splits them).
  const double ends = l.pp == 1 ? (m.tied_embeddings ? 1 : 2) * embedding : embedding;
  sh.stage_params = sh.layers_max * sh.layer_params + ends;
  sh.flash = TraitsOf(job.stack).flash_attention;
  return sh;
}

// Bytes of the 16-bit weights and fp32 gradients/optimizer per parameter,
// following Megatron-LM's mixed precision: bf16/fp16 weights (2), fp32 main
// gradients (4), fp32 master weights and two Adam moments (12).
MemoryEstimate Memory(const Layout& l, const Shape& sh, int64_t micro_batches) {
  MemoryEstimate mem;
  const double p = sh.stage_params;
  const double dp = l.dp;
  mem.weights_bytes = 2 * p / (l.zero >= 3 ? dp : 1);
  mem.gradients_bytes = 4 * p / (l.zero >= 2 ? dp : 1);
  mem.optimizer_bytes = 12 * p / (l.zero >= 1 ? dp : 1);
  // ZeRO-3 holds the gathered parameters of the layers in use: two layers
  // (one computing, one prefetched), at most DeepSpeed's default
  // stage3_max_live_parameters of 1e9.
  if (l.zero >= 3) mem.weights_bytes += 2 * std::min(2 * sh.layer_params, 1e9);

  // Activations per layer per micro-batch (Korthikanti et al. 2022, "Reducing
  // activation recomputation", Table 2): s·b·h·(10 + 24/t) + 5·a·s²·b/t bytes,
  // s·b·h·34/t with sequence parallelism; fused attention and selective
  // recompute drop the 5·a·s² term; full recompute keeps only each layer's
  // input (2·s·b·h, over t with sequence parallelism).
  const double sbh = sh.tokens * sh.h;
  const double attention_matrix = 5 * sh.heads * sh.tokens * sh.s * 1.0 / sh.t;
  double per_layer = l.sequence_parallel ? 34 * sbh / sh.t : sbh * (10 + 24 / sh.t);
  if (!sh.flash && l.recompute == Recompute::kNone) per_layer += attention_matrix;
  double working = 0;  // one layer's full activations while it is recomputed
  if (l.recompute == Recompute::kFull) {
    working = per_layer + (sh.flash ? 0 : attention_matrix);
    per_layer = 2 * sbh / (l.sequence_parallel ? sh.t : 1);
  }
  // 1F1B keeps up to pp micro-batches in flight on the first stage;
  // interleaving adds (pp-1)/(pp·v) of that (Narayanan et al. 2021).
  const double in_flight =
      std::min<double>(l.pp, static_cast<double>(micro_batches)) *
      (1 + (l.virtual_stages > 1 ? (l.pp - 1.0) / (l.pp * l.virtual_stages) : 0));
  mem.activations_bytes = per_layer * sh.layers_max * in_flight + working;
  // fp32 logits and their gradient on the last stage.
  const double logits = 8 * sh.tokens * sh.vocab / sh.t;
  const double subtotal = mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes +
                          mem.activations_bytes + logits;
  mem.other_bytes = logits + kFixedOverheadBytes + kFragmentation * subtotal;
  return mem;
}

struct Rates {
  double gemm_flops_s = 0;       // layer GEMMs, in the job's number format
  double bf16_flops_s = 0;       // unfused attention, output layer
  double attention_flops_s = 0;  // fused (flash) attention, per GPU generation (hardware.cc)
  double hbm_bytes_s = 0;
};

Rates RatesOf(const TrainingJob& job, const TrainingSystem& sys) {
  Rates r;
  const double bf16 = sys.gpu->PeakTflops(catalog::Precision::kBf16) > 0
                          ? sys.gpu->PeakTflops(catalog::Precision::kBf16)
                          : sys.gpu->PeakTflops(catalog::Precision::kFp16);
  r.bf16_flops_s = bf16 * 1e12 * sys.achieved.gemm_16;
  r.gemm_flops_s = r.bf16_flops_s;
  r.attention_flops_s = bf16 * 1e12 * sys.achieved.attention;
  if (job.format == NumberFormat::kFp8 && sys.gpu->fp8_tflops > 0) {
    r.gemm_flops_s = sys.gpu->fp8_tflops * 1e12 * sys.achieved.gemm_fp8;
  }
  r.hbm_bytes_s = sys.gpu->memory_bw_gbps * 1e9 * sys.achieved.hbm;
  return r;
}

bool Aligned(double x) {
  return std::fmod(x, 8.0) == 0;
}

// A GEMM of m x k by k x n (times `batch`): compute at the achieved rate plus
// moving its operands through HBM, plus the kernel gap. Adding the two
// instead of taking the larger follows LLMCompass' measured A100 matmuls
// (PrincetonUniversity/LLMCompass ae/figure5/*/real_hardware), which small shapes fall short of
// the roofline's max by about the memory time.
double GemmSeconds(double m, double n, double k, double flops_s, const Rates& r, double batch = 1) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  double rate = flops_s;
  if (!Aligned(m) || !Aligned(n) || !Aligned(k)) rate *= kUnalignedGemmFactor;
  const double flops = 2 * m * n * k * batch;
  const double bytes = 2 * (m * k + k * n + m * n) * batch;
  return flops / rate + bytes / r.hbm_bytes_s + kKernelGapS;
}

double MemorySeconds(double bytes, const Rates& r) {
  return bytes / r.hbm_bytes_s + kKernelGapS;
}

// What shows of `comm_s` of communication that may run under `window_s` of
// compute: the part that does not fit, plus what the part that fits slows
// the compute it shares the GPU with.
double Exposed(double comm_s, double window_s) {
  const double hidden = std::clamp(window_s, 0.0, std::max(0.0, comm_s));
  return std::max(0.0, comm_s) - hidden + kOverlapSlowdown * hidden;
}

}  // namespace

std::string_view RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "none";
}

std::string_view NumberFormatName(NumberFormat f) {
  switch (f) {
    case NumberFormat::kFp16:
      return "fp16";
    case NumberFormat::kBf16:
      return "bf16";
    case NumberFormat::kFp8:
      return "fp8";
  }
  return "bf16";
}

Result<NumberFormat> ParseNumberFormat(std::string_view s) {
  const std::string lower = ToLower(Trim(s));
  if (lower == "bf16") return NumberFormat::kBf16;
  if (lower == "fp16") return NumberFormat::kFp16;
  if (lower == "fp8") return NumberFormat::kFp8;
  return InvalidArgument(fmt::format("precision '{}': use bf16, fp16 or fp8", s));
}

const StackTraits& TraitsOf(Stack stack) {
  return stack == Stack::kModern ? kModernTraits : kMegatron2021Traits;
}

std::string Layout::UnevenStages(int layers) const {
  if (pp <= 1 || layers % pp == 0) return "";
  const int fewer = layers / pp;
  const int more = layers % pp;
  return fmt::format("{} stages of {} layers and {} of {}: no even split of {} layers fits", more,
                     fewer + 1, pp - more, fewer, layers);
}

std::string Layout::ToString() const {
  return fmt::format("TP{} PP{} DP{} CP{} mb{} v{} rc={} zero{}", tp, pp, dp, cp, micro_batch,
                     virtual_stages, RecomputeName(recompute), zero);
}

TrainingSystem MakeTrainingSystem(const catalog::GpuSpec& gpu, const NodeDesign& node,
                                  double oversubscription) {
  TrainingSystem sys;
  sys.gpu = &gpu;
  sys.achieved = AchievedFor(gpu);
  const bool nvlink = gpu.scaleup_bw_gbps > 0 && node.nvlink_domain_gpus > 1;
  sys.comm.scaleup_gbps = nvlink ? gpu.scaleup_bw_gbps : gpu.pcie_bw_gbps;
  sys.comm.scaleup_busbw_frac = sys.achieved.scaleup_busbw;
  sys.comm.scaleup_domain = nvlink ? node.nvlink_domain_gpus : node.gpus;
  sys.comm.gpus_per_node = node.gpus;
  sys.comm.nic_gbytes_per_gpu = node.compute_nics * node.nic_gbps / 8.0 / node.gpus;
  sys.comm.oversubscription = oversubscription;
  return sys;
}

namespace {

// The checks that a layout fits the model, the batch and the system; the
// micro-batches per step when it does.
Result<int64_t> CheckLayout(const TrainingJob& job, const Layout& l, const TrainingSystem& sys) {
  const ModelShape& m = job.model;
  const StackTraits& st = TraitsOf(job.stack);
  const CommSystem& comm = sys.comm;
  if (l.tp < 1 || l.pp < 1 || l.dp < 1 || l.cp < 1 || l.micro_batch < 1 || l.virtual_stages < 1) {
    return InvalidArgument("layout sizes must be positive");
  }
  if (l.tp > comm.scaleup_domain) {
    return Unsatisfiable(
        fmt::format("TP{} exceeds the scale-up domain of {} GPUs", l.tp, comm.scaleup_domain));
  }
  if (m.heads % l.tp != 0) {
    return Unsatisfiable(fmt::format("TP{} does not divide {} heads", l.tp, m.heads));
  }
  if (l.pp > m.layers || l.pp * l.virtual_stages > m.layers) {
    return Unsatisfiable(
        fmt::format("PP{} x v{} exceeds {} layers", l.pp, l.virtual_stages, m.layers));
  }
  if (m.seq % l.cp != 0)
    return Unsatisfiable(fmt::format("CP{} does not divide seq {}", l.cp, m.seq));
  const int64_t per_rank = job.global_batch / l.dp;
  if (per_rank < 1 || job.global_batch % l.dp != 0) {
    return Unsatisfiable(
        fmt::format("global batch {} does not split over DP{}", job.global_batch, l.dp));
  }
  if (per_rank % l.micro_batch != 0) {
    return Unsatisfiable(fmt::format(
        "{} sequences per DP rank do not split into micro-batches of {}", per_rank, l.micro_batch));
  }
  const int64_t micro_batches = per_rank / l.micro_batch;
  if (l.virtual_stages > 1 && (l.pp == 1 || micro_batches % l.pp != 0)) {
    return Unsatisfiable("interleaving needs PP > 1 and micro-batches a multiple of PP");
  }
  if (l.zero >= 3 && (l.tp > 1 || l.pp > 1) && st.flat_zero3) {
    return Unsatisfiable("ZeRO-3 of this stack runs without tensor or pipeline parallelism");
  }
  return micro_batches;
}

// What every part of a step's time estimate reads.
struct StepInputs {
  const TrainingJob& job;
  const Layout& l;
  const StackTraits& st;
  const CommSystem& comm;
  Shape sh;
  Rates r;
  // Gradients are accumulated and reduced in fp32 for bf16/fp8 runs, fp16 for
  // fp16 ones (Megatron-LM's main gradients).
  double grad_bytes = 0;
  // Accumulating weight gradients over micro-batches: a separate pass per
  // micro-batch on the stacks that do not fuse it into the GEMM; with
  // ZeRO-2/3 each rank accumulates only its 1/DP shard. Bytes per parameter.
  double accumulate_bytes = 0;

  double Accumulate(double params) const {
    return accumulate_bytes > 0 ? MemorySeconds(accumulate_bytes * params, r) : 0.0;
  }
};

StepInputs MakeStepInputs(const TrainingJob& job, const Layout& l, const TrainingSystem& sys) {
  StepInputs in{.job = job,
                .l = l,
                .st = TraitsOf(job.stack),
                .comm = sys.comm,
                .sh = MakeShape(job, l),
                .r = RatesOf(job, sys)};
  in.grad_bytes = job.format == NumberFormat::kFp16 ? 2 : 4;
  in.accumulate_bytes = in.st.fused_grad_accumulation
                            ? 0
                            : (kAccumulateReadBytes + 2 * in.grad_bytes) / (l.zero >= 2 ? l.dp : 1);
  return in;
}

// One layer's times for one micro-batch on one GPU.
struct LayerTimes {
  double fwd = 0;        // forward kernels
  double bwd = 0;        // backward kernels, with the gradients' accumulation
  double recompute = 0;  // the forward again, where activations were dropped
  double tp = 0;         // tensor-parallel collectives
  double cp = 0;         // what shows of the context-parallel ring
  double gpu = 0;        // all of the above
  double total = 0;      // the GPU's time and the host's launches together
};

LayerTimes EstimateLayer(const StepInputs& in) {
  const ModelShape& m = in.job.model;
  const Layout& l = in.l;
  const StackTraits& st = in.st;
  const CommSystem& comm = in.comm;
  const Shape& sh = in.sh;
  const Rates& r = in.r;
  const double T = sh.tokens, h = sh.h, t = sh.t;
  LayerTimes lt;
  // Forward GEMMs of one layer on one GPU: QKV, attention output, MLP in and out.
  const double mlp_in = sh.f * (m.gated_mlp ? 2 : 1);
  const double gemm_f = GemmSeconds(T, (h + 2 * sh.kv) / t, h, r.gemm_flops_s, r) +
                        GemmSeconds(T, h, h / t, r.gemm_flops_s, r) +
                        GemmSeconds(T, mlp_in / t, h, r.gemm_flops_s, r) +
                        GemmSeconds(T, h, sh.f / t, r.gemm_flops_s, r);
  // Attention scores and values. Fused kernels skip the masked half of causal
  // attention; the unfused ones compute the full s x s product per head, and
  // write it, soften it and drop it out in memory.
  const double heads_per_gpu = sh.heads / t;
  const double seq_q = sh.s / l.cp;  // queries on this GPU; keys span the whole sequence
  double attn_f = 0;
  double attn_mem_f = 0;
  if (sh.flash) {
    attn_f = 4 * sh.b * seq_q * sh.s * h / t * 0.5 / r.attention_flops_s + kKernelGapS;
  } else {
    const double dh = m.HeadDim();
    attn_f = GemmSeconds(seq_q, sh.s, dh, r.bf16_flops_s, r, sh.b * heads_per_gpu) +
             GemmSeconds(seq_q, dh, sh.s, r.bf16_flops_s, r, sh.b * heads_per_gpu);
    const double elements = sh.b * heads_per_gpu * seq_q * sh.s;
    attn_mem_f = MemorySeconds(4 * elements, r) + (m.dropout ? MemorySeconds(5 * elements, r) : 0);
  }
  // Memory-bound element-wise work: two norms, two residual adds with dropout,
  // the MLP activation; replicated over the TP group without sequence parallelism.
  const double hp = T * h / (l.sequence_parallel ? t : 1);
  const double elementwise_f = 2 * MemorySeconds(8 * hp, r) +
                               2 * MemorySeconds((6 + (m.dropout ? 1 : 0)) * hp, r) +
                               MemorySeconds((m.gated_mlp ? 6 : 4) * T * sh.f / t, r);
  lt.fwd = gemm_f + attn_f + attn_mem_f + elementwise_f;
  lt.bwd = 2 * lt.fwd + in.Accumulate(sh.layer_params);
  if (l.recompute == Recompute::kFull) lt.recompute = lt.fwd;
  if (l.recompute == Recompute::kSelective) lt.recompute = attn_f + attn_mem_f;

  // Tensor-parallel collectives: two all-reduces (or reduce-scatter plus
  // all-gather with sequence parallelism, the same traffic) in the forward,
  // two in the backward, two more when the forward is recomputed.
  const int tp_collectives = 4 + (l.recompute == Recompute::kFull ? 2 : 0);
  const bool tp_in_node = l.tp <= comm.gpus_per_node;
  const double tp_one = CollectiveSeconds(Collective::kAllReduce, T * h * 2, l.tp,
                                          tp_in_node ? l.tp : comm.gpus_per_node, true, comm);
  lt.tp = tp_collectives * tp_one;
  // Context parallelism passes key/value blocks around a ring while attention
  // computes; what attention cannot cover shows, and what it covers slows it.
  if (l.cp > 1) {
    const bool cp_in_node = l.tp * l.cp <= comm.gpus_per_node;
    const double kv_block = 2 * T * sh.kv / t * 2;
    const double ring = (l.cp - 1) * P2pSeconds(kv_block, !cp_in_node, comm);
    lt.cp = 3 * Exposed(ring, attn_f);
  }
  lt.gpu = lt.fwd + lt.bwd + lt.recompute + lt.tp + lt.cp;
  const double host_layer =
      st.host_s_per_layer * (l.recompute == Recompute::kFull ? 4.0 / 3.0 : 1.0) +
      tp_collectives * st.host_s_per_tp_peer * (l.tp - 1);
  lt.total = std::pow(std::pow(lt.gpu, kHostGpuExponent) + std::pow(host_layer, kHostGpuExponent),
                      1 / kHostGpuExponent);
  return lt;
}

// The pipeline's times for one step.
struct PipelineTimes {
  double logits = 0;     // output layer and loss, per micro-batch (last stage)
  double embedding = 0;  // input embedding, per micro-batch (first stage)
  double p2p = 0;        // sends between stages, per micro-batch
  double t_max = 0;      // the slowest stage, per micro-batch
  double total = 0;      // every micro-batch through every stage, bubbles included
};

PipelineTimes EstimatePipeline(const StepInputs& in, const LayerTimes& layer, double mb) {
  const ModelShape& m = in.job.model;
  const Layout& l = in.l;
  const CommSystem& comm = in.comm;
  const Shape& sh = in.sh;
  const Rates& r = in.r;
  const double T = sh.tokens, h = sh.h, t = sh.t;
  PipelineTimes pt;
  // Ends of the pipeline: the embedding lookup and its gradient on the first
  // stage, the output layer and the cross-entropy on the last.
  // Their weight gradients accumulate like the layers' (a tied matrix on a
  // single stage once).
  const double end_accumulate = in.Accumulate(sh.vocab * h / t);
  pt.logits = 3 * GemmSeconds(T, sh.vocab / t, h, r.bf16_flops_s, r) +
              MemorySeconds(kCrossEntropyBytesPerLogit * T * sh.vocab / t, r) +
              (l.pp > 1 || !m.tied_embeddings ? end_accumulate : 0);
  pt.embedding = MemorySeconds(3 * T * h * 2, r) + end_accumulate;
  // Pipeline sends of one micro-batch (activations forward, gradients
  // backward; scattered over the TP group), once per chunk.
  if (l.pp > 1) {
    const bool over_network = l.tp * l.cp * l.dp >= comm.gpus_per_node;
    pt.p2p = 2 * l.virtual_stages * P2pSeconds(T * h * 2 / t, over_network, comm);
  }
  // Stage times per micro-batch; layers spread as evenly as they go.
  std::vector<double> stages(static_cast<size_t>(l.pp));
  for (int i = 0; i < l.pp; ++i) {
    const int layers_here = m.layers / l.pp + (i < m.layers % l.pp ? 1 : 0);
    stages[static_cast<size_t>(i)] = layers_here * layer.total + pt.p2p;
  }
  stages.front() += pt.embedding;
  stages.back() += pt.logits;
  pt.t_max = *std::max_element(stages.begin(), stages.end());
  double t_sum = 0;
  for (double x : stages)
    t_sum += x;
  // 1F1B: every micro-batch passes the slowest stage, and the fill and drain
  // pass each other stage once; interleaving divides the fill by v
  // (Narayanan et al. 2021).
  pt.total = mb * pt.t_max + (t_sum - pt.t_max) / l.virtual_stages;
  return pt;
}

// Data parallelism: gradients reduced (in `grad_bytes`) and, with a sharded
// optimizer, parameters gathered back. The seconds of it that compute does
// not hide.
double DpExposedSeconds(const StepInputs& in, const LayerTimes& layer, double t_max, double mb) {
  const Layout& l = in.l;
  const StackTraits& st = in.st;
  const CommSystem& comm = in.comm;
  const Shape& sh = in.sh;
  const double grad_bytes = in.grad_bytes;
  const double fwd = layer.fwd, bwd = layer.bwd, recompute = layer.recompute;
  const double p = sh.stage_params;
  const int dp_stride = l.tp * l.cp;
  const int dp_per_node = std::clamp(comm.gpus_per_node / std::max(1, dp_stride), 1, l.dp);
  const bool dp_in_scaleup = dp_stride * l.dp <= comm.scaleup_domain;
  auto dp_collective = [&](Collective kind, double bytes) {
    return CollectiveSeconds(kind, bytes, l.dp, dp_per_node, dp_in_scaleup, comm);
  };
  // What of one micro-batch's pass through the busiest stage is forward (the
  // window a parameter gather can hide in) and what backward (the window of
  // gradient reduction).
  const double fwd_share = fwd / (fwd + bwd + recompute);
  if (l.dp > 1 && l.zero >= 3 && st.flat_zero3) {
    // DeepSpeed's ZeRO-3 of 2021: the stage's parameters gathered for the
    // forward and again for the backward, gradients reduced, every
    // micro-batch, over flat rings, waited for.
    return mb * 3 * FlatNetworkCollectiveSeconds(Collective::kAllGather, p * 2, l.dp, comm);
  }
  if (l.dp > 1 && l.zero >= 3) {
    // FSDP / ZeRO-3: every micro-batch gathers each layer's parameters for
    // the forward and again for the backward and reduce-scatters its
    // gradients, one collective per layer (the ends count as layer-sized
    // units; the last layer keeps its parameters from forward to backward).
    // The next layer's gather is prefetched while this one computes; the
    // first gather and the last reduction have nothing to hide behind.
    const double unit = sh.layer_params;
    const double units = p / unit;
    const double gather = dp_collective(Collective::kAllGather, unit * 2);
    const double reduce = dp_collective(Collective::kReduceScatter, unit * grad_bytes);
    const double pass = sh.layers_max * (fwd + bwd + recompute + layer.tp + layer.cp);
    const double per_mb = gather + reduce + Exposed((units - 1) * gather, pass * fwd_share) +
                          Exposed((units - 1) * (gather + reduce), pass * (1 - fwd_share));
    return mb * per_mb;
  }
  if (l.dp > 1 && !st.overlap_dp) {
    // Megatron-LM of 2021: one all-reduce of the whole gradient buffer (or a
    // reduce-scatter and a gather of the updated parameters) after the last
    // backward, waited for.
    return l.zero == 0 ? dp_collective(Collective::kAllReduce, p * grad_bytes)
                       : dp_collective(Collective::kReduceScatter, p * grad_bytes) +
                             dp_collective(Collective::kAllGather, p * 2);
  }
  if (l.dp > 1) {
    // Megatron-Core (--overlap-grad-reduce, --overlap-param-gather): gradients
    // go out in buckets of max(40M, 1M x DP) parameters (its
    // DistributedDataParallel default) as the last micro-batch's backward
    // produces them, and the updated parameters come back bucket by bucket
    // under the next step's first forward. The last bucket reduced and the
    // first gathered wait; the rest hides, at a cost (kOverlapSlowdown).
    const double bucket = std::min(p, std::max(40e6, 1e6 * l.dp));
    const double buckets = p / bucket;
    const double reduce = l.zero == 0
                              ? dp_collective(Collective::kAllReduce, bucket * grad_bytes)
                              : dp_collective(Collective::kReduceScatter, bucket * grad_bytes);
    const double gather = l.zero == 0 ? 0 : dp_collective(Collective::kAllGather, bucket * 2);
    return reduce + gather + Exposed((buckets - 1) * reduce, t_max * (1 - fwd_share)) +
           Exposed((buckets - 1) * gather, t_max * fwd_share);
  }
  return 0;
}

// The peak the MFU is measured against: fp8 where the job and GPU use it,
// else bf16 (fp16 on GPUs without bf16).
double PeakTflopsFor(const TrainingJob& job, const catalog::GpuSpec& gpu) {
  return (job.format == NumberFormat::kFp8 && gpu.fp8_tflops > 0) ? gpu.fp8_tflops
         : gpu.PeakTflops(catalog::Precision::kBf16) > 0
             ? gpu.PeakTflops(catalog::Precision::kBf16)
             : gpu.PeakTflops(catalog::Precision::kFp16);
}

}  // namespace

Result<StepEstimate> EstimateStep(const TrainingJob& job, const Layout& l,
                                  const TrainingSystem& sys) {
  SHOAL_ASSIGN_OR_RETURN(const int64_t micro_batches, CheckLayout(job, l, sys));
  StepEstimate est;
  const StepInputs in = MakeStepInputs(job, l, sys);
  est.micro_batches = micro_batches;
  est.memory = Memory(l, in.sh, micro_batches);
  const double capacity = static_cast<double>(sys.gpu->memory_mib) * 1024 * 1024;
  if (est.memory.Total() > capacity) {
    return Unsatisfiable(fmt::format("needs {:.1f} GiB per GPU, {} has {:.0f} GiB",
                                     est.memory.Total() / kGib, sys.gpu->model, capacity / kGib));
  }

  const double mb = static_cast<double>(micro_batches);
  const LayerTimes layer = EstimateLayer(in);
  const PipelineTimes pipe = EstimatePipeline(in, layer, mb);
  const double dp_exposed = DpExposedSeconds(in, layer, pipe.t_max, mb);
  const double p = in.sh.stage_params;
  const double optimizer =
      MemorySeconds(kOptimizerBytesPerParam * p / (l.zero >= 1 ? l.dp : 1), in.r);

  est.step_s = pipe.total + dp_exposed + optimizer;
  const int busiest_layers = in.sh.layers_max;
  est.compute_s = mb * (busiest_layers * (layer.fwd + layer.bwd + layer.recompute) + pipe.logits +
                        pipe.embedding);
  est.tp_comm_s = mb * busiest_layers * layer.tp;
  est.cp_comm_s = mb * busiest_layers * layer.cp;
  est.host_bound_s = mb * busiest_layers * (layer.total - layer.gpu);
  est.p2p_s = mb * pipe.p2p;
  est.bubble_s = pipe.total - mb * pipe.t_max;
  est.dp_exposed_s = dp_exposed;
  est.optimizer_s = optimizer;
  const double tokens = static_cast<double>(job.global_batch) * job.model.seq;
  est.model_flops = job.model.TrainFlopsPerToken() * tokens;
  est.mfu = est.model_flops / (est.step_s * l.Gpus() * PeakTflopsFor(job, *sys.gpu) * 1e12);
  return est;
}

namespace {

std::vector<int> Candidates(const std::optional<int>& fixed, std::vector<int> options) {
  if (fixed) return {*fixed};
  return options;
}

}  // namespace

Result<LayoutChoice> BestLayout(const TrainingJob& job, int gpus, const TrainingSystem& sys,
                                const LayoutConstraints& c) {
  SHOAL_RETURN_IF_ERROR(job.model.Validate());
  if (gpus < 1) return InvalidArgument("no GPUs");
  const ModelShape& m = job.model;
  const StackTraits& st = TraitsOf(job.stack);
  std::vector<int> tps;
  for (int t = 1; t <= sys.comm.scaleup_domain && t <= 64; t *= 2)
    tps.push_back(t);
  // Pipeline stages that split the layers evenly first (Megatron-LM asks it
  // unless told the first and last stages' sizes): a 32-layer model gets no
  // PP3 while an even layout fits, a 105-layer one its PP35. Only when none
  // fits are uneven stages tried (Layout::UnevenStages says so). A layout a
  // run states is taken as it is.
  std::vector<int> even_pps, uneven_pps;
  for (int p = 1; p <= std::min(m.layers, 128); ++p) {
    if (m.layers % p == 0) even_pps.push_back(p);
  }
  for (int p : {3, 6, 12, 16, 24, 32, 48, 64, 96, 128}) {
    if (p <= m.layers && m.layers % p != 0) uneven_pps.push_back(p);
  }
  std::vector<int> cps = {1};
  if (m.seq >= 16384) cps = {1, 2, 4, 8, 16, 32};
  std::vector<Recompute> recomputes = {Recompute::kNone, Recompute::kFull};
  if (st.selective_recompute) recomputes.insert(recomputes.begin() + 1, Recompute::kSelective);
  if (c.recompute) recomputes = {*c.recompute};
  // The 2021 stack replicated the optimizer unless told otherwise (ZeRO-3
  // rows say so); the modern one shards it and may shard parameters too.
  const std::vector<int> zeros = Candidates(
      c.zero, job.stack == Stack::kModern ? std::vector<int>{1, 3} : std::vector<int>{0});

  auto sequence_parallel = [&](int tp) {
    return tp > 1 && c.sequence_parallel.value_or(job.stack == Stack::kModern);
  };
  std::optional<LayoutChoice> best;
  double least_memory = -1;
  std::string least_memory_layout;
  // Why layouts failed, the most telling first: the batch, then anything else.
  std::string batch_reason;
  std::string last_reason = fmt::format("{} GPUs do not factor into TP x CP x PP x DP here", gpus);
  int fitting = 0;
  // Every layout of one TP x CP x PP x DP split: the fastest that fits is
  // kept, and the most memory-frugal one for the "does not fit" explanation
  // (micro-batch 1, full recompute, most sharding).
  auto try_split = [&](int tp, int cp, int pp, int dp) {
    for (int zero : zeros) {
      if (zero >= 3 && st.flat_zero3 && (tp > 1 || pp > 1)) continue;
      for (int mb : Candidates(c.micro_batch, {1, 2, 4, 8})) {
        for (int v : Candidates(c.virtual_stages, {1, 2, 3, 4, 6, 8})) {
          if (v > 1 && pp == 1) continue;
          // Interleaved chunks hold equal numbers of layers too, unless the
          // stages are a run's own.
          if (v > 1 && !c.pp && !c.virtual_stages && m.layers % (pp * v) != 0) continue;
          for (Recompute rc : recomputes) {
            Layout l{.tp = tp,
                     .pp = pp,
                     .dp = dp,
                     .cp = cp,
                     .micro_batch = mb,
                     .virtual_stages = v,
                     .recompute = rc,
                     .zero = zero,
                     .sequence_parallel = sequence_parallel(tp)};
            auto est = EstimateStep(job, l, sys);
            if (!est.ok()) {
              const std::string& why = est.status().message();
              if (why.find("global batch") != std::string::npos) batch_reason = why;
              last_reason = why;
              continue;
            }
            ++fitting;
            if (!best || est->step_s < best->step.step_s) best = LayoutChoice{l, *est, 0};
          }
        }
      }
    }
    Layout frugal{.tp = tp,
                  .pp = pp,
                  .dp = dp,
                  .cp = cp,
                  .micro_batch = 1,
                  .virtual_stages = 1,
                  .recompute = Recompute::kFull,
                  .zero = zeros.back(),
                  .sequence_parallel = sequence_parallel(tp)};
    const Shape sh = MakeShape(job, frugal);
    const double need = Memory(frugal, sh, std::max<int64_t>(1, job.global_batch / dp)).Total();
    if (least_memory < 0 || need < least_memory) {
      least_memory = need;
      least_memory_layout = frugal.ToString();
    }
  };
  auto search = [&](const std::vector<int>& pps) {
    for (int tp : Candidates(c.tp, tps)) {
      for (int cp : Candidates(c.cp, cps)) {
        for (int pp : pps) {
          if (gpus % (tp * cp * pp) != 0) continue;
          const int dp = gpus / (tp * cp * pp);
          if (!c.dp || *c.dp == dp) try_split(tp, cp, pp, dp);
        }
      }
    }
  };
  search(c.pp ? std::vector<int>{*c.pp} : even_pps);
  if (!best && !c.pp) search(uneven_pps);
  if (!best) {
    const double capacity = static_cast<double>(sys.gpu->memory_mib) * 1024 * 1024;
    if (least_memory > capacity) {
      return Unsatisfiable(fmt::format(
          "{} ({:.0f}B parameters) does not fit on {} x {}: the most frugal layout ({}) needs "
          "{:.1f} GiB per GPU, the GPU has {:.0f} GiB",
          m.name, m.Params() / 1e9, gpus, sys.gpu->model, least_memory_layout, least_memory / kGib,
          capacity / kGib));
    }
    return Unsatisfiable(fmt::format("no layout of {} x {} runs {}: {}", gpus, sys.gpu->model,
                                     m.name, batch_reason.empty() ? last_reason : batch_reason));
  }
  best->candidates = fitting;
  return *best;
}

}  // namespace shoal::plan
