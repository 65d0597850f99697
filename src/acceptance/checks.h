// Result checks: a GPU that computes fast but wrong fails. The CUDA tests
// copy a sample of each result back; these functions recompute what the
// sample must hold from the deterministic inputs (bench/pattern.h) and say
// whether it does, within a tolerance that only rounding can explain.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "acceptance/collectives.h"
#include "core/status.h"

namespace shoal::acceptance {

// The GEMM precisions the node test runs, as cuBLASLt computes them.
enum class GemmType { kFp64, kTf32, kBf16, kFp16, kFp8 };

const std::vector<GemmType>& AllGemmTypes();
std::string_view GemmTypeName(GemmType t);  // "fp64", "tf32", "bf16", "fp16", "fp8"
Result<GemmType> ParseGemmType(std::string_view name);
// The compute capability (major * 10 + minor) the type needs: FP8 needs 8.9
// (Ada, Hopper and later); TF32 and BF16 tensor cores 8.0.
int MinComputeCapability(GemmType t);
int InputBytes(GemmType t);
// FP8 writes BF16, as training frameworks use it; the others their own type.
int OutputBytes(GemmType t);

struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  double Flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

// The size each precision runs at: large enough for cuBLASLt to reach its
// peak on H100/H200-class GPUs (8192^3, where stas00's mamf-finder scans find
// near-peak shapes), small enough to fit any data-centre GPU.
GemmShape GemmShapeFor(GemmType t);

// Layout of every GEMM here: D (m x n) = A^T (m x k) * B (k x n), column-major,
// A stored k x m and B stored k x n ("TN", the layout cuBLASLt's FP8 kernels
// require). A(k, i) is GemmInput(kGemmSeedA, k + i * K), B(k, j) is
// GemmInput(kGemmSeedB, k + j * K).
struct GemmReference {
  double value = 0;    // the exact result
  double abs_sum = 0;  // sum of |a * b| over k, which bounds accumulation error
};
GemmReference ReferenceElement(const GemmShape& shape, int64_t row, int64_t col);

// Bounds on the error rounding may cause: relative to |result| (the output
// type's rounding) and to the sum of |a * b| (the accumulator's).
struct GemmTolerance {
  double rel_out = 0;
  double rel_acc = 0;
};
GemmTolerance ToleranceFor(GemmType t);

// `count` distinct indices in [0, size), the first and last among them.
std::vector<int64_t> SampleIndices(int64_t size, int count, uint64_t seed);

// What a check found.
struct CheckOutcome {
  bool ok = true;
  int checked = 0;
  int failed = 0;
  double worst_error = 0;  // largest |got - want|
  std::string detail;      // for the report: "64 samples exact" or the first wrong one
};

// Collects comparisons of got against want and summarises them.
class SampleCheck {
 public:
  explicit SampleCheck(std::string what) : what_(std::move(what)) {}
  // `where` names the element for the report ("D[12,7]", "rank 3 [1024]").
  void Add(double got, double want, double tolerance, std::string_view where);
  CheckOutcome Finish() const;

 private:
  std::string what_;
  CheckOutcome outcome_;
  std::string first_failure_;
};

struct GemmSample {
  int64_t row = 0;
  int64_t col = 0;
  double value = 0;  // as read from D
};
CheckOutcome CheckGemmSamples(GemmType t, const GemmShape& shape,
                              std::span<const GemmSample> samples);

struct CollectiveSample {
  int rank = 0;
  int64_t index = 0;  // into the rank's receive buffer
  double value = 0;
};
CheckOutcome CheckCollectiveSamples(Collective c, int nranks, const CollectiveCounts& counts,
                                    std::span<const CollectiveSample> samples);

// IEEE half and bfloat16 bits as float, for reading GEMM outputs on the host.
float HalfBitsToFloat(uint16_t bits);
float Bf16BitsToFloat(uint16_t bits);

}  // namespace shoal::acceptance
