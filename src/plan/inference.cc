#include "plan/inference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "catalog/mig.h"
#include "core/strings.h"

namespace shoal::plan {

namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
// Serving engines capture a decode step in a CUDA graph: ~8 kernels a layer
// at ~2 us each (Shoal's assumption).
constexpr double kKernelsPerLayer = 8;
constexpr double kGraphKernelS = 2e-6;
// Beside weights and KV cache: activations, CUDA graphs, NCCL buffers;
// engines such as vLLM reserve ~10 % (gpu_memory_utilization 0.9).
constexpr double kReservedFraction = 0.10;

double PeakFlops(const catalog::GpuSpec& gpu, double weight_bytes) {
  // fp8/fp4 weights run the GEMMs in that format where the GPU has it.
  if (weight_bytes <= 0.5 && gpu.fp4_tflops > 0) return gpu.fp4_tflops * 1e12;
  if (weight_bytes <= 1 && gpu.fp8_tflops > 0) return gpu.fp8_tflops * 1e12;
  const double bf16 = gpu.PeakTflops(catalog::Precision::kBf16);
  return (bf16 > 0 ? bf16 : gpu.PeakTflops(catalog::Precision::kFp16)) * 1e12;
}

}  // namespace

Result<double> ParseServingBytes(std::string_view precision) {
  const std::string p = ToLower(Trim(precision));
  if (p == "bf16" || p == "fp16") return 2.0;
  if (p == "fp8" || p == "int8") return 1.0;
  if (p == "fp4" || p == "int4") return 0.5;
  return InvalidArgument(fmt::format("precision '{}': use bf16, fp16, fp8 or fp4", precision));
}

InferenceEstimate EstimateInference(const ModelShape& m, const InferenceTarget& target,
                                    const TrainingSystem& sys, int tp, int batch) {
  InferenceEstimate e;
  e.tp = tp;
  e.batch = batch;
  const catalog::GpuSpec& gpu = *sys.gpu;
  const double params = m.Params();
  e.weights_bytes_per_gpu = params * target.weight_bytes / tp;
  // On average a sequence in decode holds its prompt and half its output.
  const double kv_per_token = m.KvBytesPerToken(target.kv_bytes) / tp;
  const double mean_tokens = target.context + target.output / 2.0;
  e.kv_bytes_per_gpu = kv_per_token * (target.context + target.output) * batch;
  const double hbm = gpu.memory_bw_gbps * 1e9 * sys.achieved.hbm;
  // GEMMs in fp8 (or fp4) reach the GPU's measured fp8 fraction of that peak
  // (hardware.cc), not the bf16 one; fp4 has no measurement and takes fp8's.
  const bool low_precision =
      target.weight_bytes <= 1 && PeakFlops(gpu, target.weight_bytes) > PeakFlops(gpu, 2);
  const double flops = PeakFlops(gpu, target.weight_bytes) *
                       (low_precision ? sys.achieved.gemm_fp8 : sys.achieved.gemm_16);
  // Decode: every step reads all weights and every sequence's cache, and
  // computes 2 FLOPs per weight per sequence plus attention over the cache.
  const double decode_bytes = e.weights_bytes_per_gpu + kv_per_token * mean_tokens * batch;
  const double decode_flops =
      2 * params / tp * batch + 4.0 * batch * mean_tokens * m.hidden * m.layers / tp;
  const double memory_s = decode_bytes / hbm;
  const double compute_s = decode_flops / flops;
  e.decode_memory_bound = memory_s >= compute_s;
  // Two all-reduces a layer of the batch's hidden states, latency-bound.
  const double allreduce = CollectiveSeconds(Collective::kAllReduce, batch * m.hidden * 2.0, tp,
                                             std::min(tp, sys.comm.gpus_per_node), true, sys.comm);
  e.decode_step_s = std::max(memory_s, compute_s) + 2 * m.layers * allreduce +
                    m.layers * kKernelsPerLayer * kGraphKernelS;
  // Prefill: the prompt's tokens through every weight, plus causal attention.
  const double prefill_flops = 2 * params / tp * target.context +
                               2.0 * target.context * target.context * m.hidden * m.layers / tp;
  const double prefill_allreduce =
      CollectiveSeconds(Collective::kAllReduce, target.context * m.hidden * 2.0, tp,
                        std::min(tp, sys.comm.gpus_per_node), true, sys.comm);
  e.prefill_s = std::max(prefill_flops / flops, e.weights_bytes_per_gpu / hbm) +
                2 * m.layers * prefill_allreduce;
  // Continuous batching: `batch` requests finish every `output` decode steps,
  // and each request's prefill takes its turn on the GPUs.
  const double cycle = target.output * e.decode_step_s + batch * e.prefill_s;
  e.tokens_per_s_per_replica = batch * target.output / cycle;
  return e;
}

Result<InferenceEstimate> SizeInference(const ModelShape& m, const InferenceTarget& target,
                                        const TrainingSystem& sys) {
  SHOAL_RETURN_IF_ERROR(m.Validate());
  if (target.output < 1 || target.context < 0)
    return InvalidArgument("inference: output must be >= 1");
  double want = target.output_tokens_per_s;
  if (want <= 0) want = target.requests_per_s * target.output;
  if (want <= 0) return InvalidArgument("inference: give tokens_per_s or requests_per_s");
  const catalog::GpuSpec& gpu = *sys.gpu;
  const double capacity =
      static_cast<double>(gpu.memory_mib) * 1024 * 1024 * (1 - kReservedFraction);
  std::optional<InferenceEstimate> best;
  double best_per_gpu = 0;
  double fastest_tpot = -1;
  int fastest_tp = 0;
  bool any_fits = false;
  for (int tp = 1; tp <= sys.comm.scaleup_domain && tp <= 64; tp *= 2) {
    if (m.heads % tp != 0) continue;
    for (int batch = 1; batch <= 4096; batch *= 2) {
      InferenceEstimate e = EstimateInference(m, target, sys, tp, batch);
      if (e.weights_bytes_per_gpu + e.kv_bytes_per_gpu > capacity) break;
      any_fits = true;
      if (fastest_tpot < 0 || e.decode_step_s < fastest_tpot) {
        fastest_tpot = e.decode_step_s;
        fastest_tp = tp;
      }
      if (target.tpot_ms > 0 && e.decode_step_s * 1e3 > target.tpot_ms) break;
      if (target.ttft_ms > 0 && e.prefill_s * 1e3 > target.ttft_ms) break;
      const double per_gpu = e.tokens_per_s_per_replica / tp;
      if (!best || per_gpu > best_per_gpu) {
        best = e;
        best_per_gpu = per_gpu;
      }
    }
  }
  if (!any_fits) {
    return Unsatisfiable(fmt::format(
        "{} does not fit on {} for serving: {:.0f} GiB of weights, {:.0f} GiB usable per GPU even "
        "split over {} GPUs of one NVLink domain",
        m.name, gpu.model, m.Params() * target.weight_bytes / kGib, capacity / kGib,
        sys.comm.scaleup_domain));
  }
  if (!best) {
    return Unsatisfiable(fmt::format(
        "the latency target cannot be met on {}: the fastest per-token time is {:.1f} ms (TP{}, "
        "batch 1){}",
        gpu.model, fastest_tpot * 1e3, fastest_tp,
        target.ttft_ms > 0 ? fmt::format(", against {} ms per token and {} ms to the first token",
                                         target.tpot_ms, target.ttft_ms)
                           : fmt::format(", against {} ms", target.tpot_ms)));
  }
  best->replicas = static_cast<int>(std::ceil(want / best->tokens_per_s_per_replica));
  best->gpus = best->replicas * best->tp;
  return *best;
}

std::optional<MigServing> SizeInferenceOnMig(const ModelShape& m, const InferenceTarget& target,
                                             const TrainingSystem& sys) {
  std::optional<MigServing> best;
  for (const catalog::MigProfile& p : catalog::MigProfilesOf(sys.gpu->model)) {
    if (p.compute_slices >= catalog::kMigComputeSlices) continue;  // the whole GPU
    // The slice as a GPU of its own: its eighths of the memory and its
    // bandwidth, its sevenths of the compute.
    catalog::GpuSpec slice = *sys.gpu;
    const double memory = static_cast<double>(p.memory_eighths) / catalog::kMigMemoryEighths;
    const double compute = static_cast<double>(p.compute_slices) / catalog::kMigComputeSlices;
    slice.memory_mib = static_cast<int64_t>(static_cast<double>(slice.memory_mib) * memory);
    slice.memory_bw_gbps *= memory;
    for (double* tflops : {&slice.fp64_tflops, &slice.fp64_tensor_tflops, &slice.fp32_tflops,
                           &slice.tf32_tflops, &slice.bf16_tflops, &slice.fp16_tflops,
                           &slice.fp8_tflops, &slice.fp4_tflops, &slice.int8_tops}) {
      *tflops *= compute;
    }
    TrainingSystem on_slice = sys;
    on_slice.gpu = &slice;
    on_slice.comm.scaleup_domain = 1;  // a slice has no NVLink of its own: TP 1
    auto e = SizeInference(m, target, on_slice);
    if (!e.ok()) continue;
    MigServing s;
    s.profile = std::string(p.name);
    s.replicas = e->replicas;
    s.replica = *e;
    s.replica.gpus = 0;
    s.gpus = std::max({(s.replicas * p.compute_slices + catalog::kMigComputeSlices - 1) /
                           catalog::kMigComputeSlices,
                       (s.replicas * p.memory_eighths + catalog::kMigMemoryEighths - 1) /
                           catalog::kMigMemoryEighths,
                       (s.replicas + p.max_count - 1) / p.max_count});
    s.gpu_share = static_cast<double>(s.replicas * p.compute_slices) / catalog::kMigComputeSlices;
    if (!best || s.gpu_share < best->gpu_share) best = s;
  }
  return best;
}

}  // namespace shoal::plan
