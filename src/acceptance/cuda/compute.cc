// GEMM throughput per precision, and the burn-in: sustained GEMM with result
// checks all the while.
#include <algorithm>
#include <chrono>
#include <vector>

#include "acceptance/cuda/cuda_util.h"
#include "acceptance/cuda/gemm.h"
#include "acceptance/cuda/node_tests.h"

namespace shoal::acceptance::gpu {

namespace {

constexpr int kCheckSamples = 64;

// One precision on one GPU: warm up, then time batches of GEMMs (each batch
// ~50 ms, long enough that event timing is exact) until the plan's time is
// up; the figure is the median batch rate.
Status MeasureGemm(int gpu, GemmType type, const TimingPlan& plan, Recorder& rec) {
  SHOAL_ASSIGN_OR_RETURN(auto runner, GemmRunner::Create(gpu, type, GemmShapeFor(type)));
  SHOAL_ASSIGN_OR_RETURN(const double one_s, runner->Time(1));
  SHOAL_RETURN_IF_ERROR(runner->Enqueue(RepetitionsFor(one_s, plan.warmup_s, 1, 10000)));
  const int per_batch = RepetitionsFor(one_s, 0.05, 1, 1000);
  const int batches =
      std::max(plan.min_reps, RepetitionsFor(one_s * per_batch, plan.measure_s, 1, 1000));
  std::vector<double> rates;
  for (int b = 0; b < batches; ++b) {
    SHOAL_ASSIGN_OR_RETURN(const double s, runner->Time(per_batch));
    rates.push_back(runner->Flops() * per_batch / s / 1e12);
  }
  SHOAL_ASSIGN_OR_RETURN(const CheckOutcome check, runner->Check(kCheckSamples, 0x6E33 + gpu));
  const GemmShape shape = GemmShapeFor(type);
  Measurement m =
      FigureFromSamples(TestKind::kGemm, std::string(GemmTypeName(type)), gpu, rates, kUnitTflops);
  m.params = {{"m", static_cast<double>(shape.m)},
              {"n", static_cast<double>(shape.n)},
              {"k", static_cast<double>(shape.k)},
              {"gemms_per_batch", per_batch}};
  m.ok = check.ok;
  m.check = check.detail;
  Log("gemm {} gpu{}: {:.1f} TFLOP/s{}", m.metric, gpu, m.value,
      check.ok ? "" : " WRONG RESULT: " + check.detail);
  rec.Add(std::move(m));
  return Status::Ok();
}

}  // namespace

Status RunGemm(const NodeOptions& options, Recorder& rec) {
  const TimingPlan plan = TimingFor(TestKind::kGemm, options.quick);
  const std::vector<GpuInfo> gpus = rec.results().gpus;
  ForEachGpu(static_cast<int>(gpus.size()), TestKind::kGemm, rec, [&](int gpu) {
    const int cc =
        gpus[static_cast<size_t>(gpu)].cc_major * 10 + gpus[static_cast<size_t>(gpu)].cc_minor;
    for (GemmType t : AllGemmTypes()) {
      if (cc < MinComputeCapability(t)) {
        rec.Note(
            fmt::format("gpu{}: {} GEMM skipped: compute capability {}.{} has no such tensor cores",
                        gpu, GemmTypeName(t), cc / 10, cc % 10));
        continue;
      }
      Status s = MeasureGemm(gpu, t, plan, rec);
      // One precision failing (no kernel, out of memory) does not hide the others.
      if (!s.ok())
        rec.Error(TestKind::kGemm, gpu, fmt::format("{}: {}", GemmTypeName(t), s.message()));
    }
    return Status::Ok();
  });
  return Status::Ok();
}

Status RunBurnIn(const NodeOptions& options, Recorder& rec) {
  constexpr GemmType kType = GemmType::kBf16;
  const int duration_s = options.BurnInSeconds();
  if (duration_s <= 0) {
    rec.Note("burn-in skipped: 0 seconds asked for");
    return Status::Ok();
  }
  const int gpus = static_cast<int>(rec.results().gpus.size());
  std::vector<int64_t> starts(static_cast<size_t>(gpus), 0), ends(static_cast<size_t>(gpus), 0);
  Log("burn-in: {} s of {} GEMM on {} GPUs", duration_s, GemmTypeName(kType), gpus);
  ForEachGpu(gpus, TestKind::kBurnIn, rec, [&](int gpu) -> Status {
    SHOAL_ASSIGN_OR_RETURN(auto runner, GemmRunner::Create(gpu, kType, GemmShapeFor(kType)));
    SHOAL_ASSIGN_OR_RETURN(const double one_s, runner->Time(1));
    // cuBLASLt kernels are deterministic unless they reduce with atomics: two
    // runs agreeing means a later disagreement is the GPU's fault.
    SHOAL_ASSIGN_OR_RETURN(const uint64_t reference, runner->Checksum());
    SHOAL_RETURN_IF_ERROR(runner->Enqueue(1));
    SHOAL_ASSIGN_OR_RETURN(const uint64_t again, runner->Checksum());
    const bool deterministic = reference == again;
    const int per_interval = RepetitionsFor(one_s, 1.0, 1, 100000);
    std::vector<double> series;
    int mismatches = 0, failed_checks = 0, checks = 0;
    std::string first_problem;
    starts[static_cast<size_t>(gpu)] = NowMs();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(duration_s);
    while (std::chrono::steady_clock::now() < end) {
      SHOAL_ASSIGN_OR_RETURN(const double s, runner->Time(per_interval));
      series.push_back(runner->Flops() * per_interval / s / 1e12);
      if (deterministic) {
        SHOAL_ASSIGN_OR_RETURN(const uint64_t sum, runner->Checksum());
        if (sum != reference) {
          ++mismatches;
          if (first_problem.empty()) {
            first_problem =
                fmt::format("D changed in interval {} (checksum {:016x}, first {:016x})",
                            series.size(), sum, reference);
          }
        }
      }
      // Every tenth interval, and the last: the exact check on a sample.
      if (series.size() % 10 == 1 || std::chrono::steady_clock::now() >= end) {
        SHOAL_ASSIGN_OR_RETURN(const CheckOutcome c,
                               runner->Check(kCheckSamples, 0xB0E + series.size()));
        ++checks;
        if (!c.ok) {
          ++failed_checks;
          if (first_problem.empty()) first_problem = c.detail;
        }
      }
    }
    ends[static_cast<size_t>(gpu)] = NowMs();
    Measurement m =
        FigureFromSamples(TestKind::kBurnIn, fmt::format("sustained_{}", GemmTypeName(kType)), gpu,
                          series, kUnitTflops);
    m.series = series;
    m.params = {{"duration_s", duration_s},
                {"checksum_mismatches", mismatches},
                {"sample_checks", checks},
                {"failed_sample_checks", failed_checks},
                {"deterministic", deterministic ? 1 : 0}};
    m.ok = mismatches == 0 && failed_checks == 0;
    m.check = m.ok ? fmt::format("{} checksums{} and {} sample checks agreed",
                                 deterministic ? series.size() : 0,
                                 deterministic ? "" : " (kernel not deterministic: none compared)",
                                 checks)
                   : fmt::format("{} checksum mismatches, {} failed sample checks; first: {}",
                                 mismatches, failed_checks, first_problem);
    Log("burn-in gpu{}: median {:.1f} TFLOP/s, min {:.1f}{}", gpu, m.stats.median, m.stats.min,
        m.ok ? "" : " WRONG RESULTS: " + m.check);
    rec.Add(std::move(m));
    return Status::Ok();
  });
  NodeResults& r = rec.mutable_results();
  for (int g = 0; g < gpus; ++g) {
    const int64_t s = starts[static_cast<size_t>(g)], e = ends[static_cast<size_t>(g)];
    if (e == 0) continue;
    r.burn_in_start_ms = r.burn_in_start_ms == 0 ? s : std::min(r.burn_in_start_ms, s);
    r.burn_in_end_ms = std::max(r.burn_in_end_ms, e);
  }
  return Status::Ok();
}

}  // namespace shoal::acceptance::gpu
