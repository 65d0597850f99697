#include "acceptance/checks.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <set>

#include "acceptance/pattern.h"

namespace shoal::acceptance {

namespace {

struct GemmTypeInfo {
  GemmType type;
  std::string_view name;
  int min_cc;  // compute capability x 10
  int input_bytes;
  int output_bytes;  // FP8 writes BF16
};

// FP16 tensor cores came with Volta (7.0), TF32 and BF16 with Ampere (8.0),
// FP8 with Ada and Hopper (8.9, 9.0).
constexpr GemmTypeInfo kGemmTypes[] = {
    {GemmType::kFp64, "fp64", 60, 8, 8}, {GemmType::kTf32, "tf32", 80, 4, 4},
    {GemmType::kBf16, "bf16", 80, 2, 2}, {GemmType::kFp16, "fp16", 70, 2, 2},
    {GemmType::kFp8, "fp8", 89, 1, 2},
};

const GemmTypeInfo& Info(GemmType t) {
  return kGemmTypes[static_cast<size_t>(t)];
}

}  // namespace

const std::vector<GemmType>& AllGemmTypes() {
  static const std::vector<GemmType> kAll = [] {
    std::vector<GemmType> all;
    for (const GemmTypeInfo& i : kGemmTypes)
      all.push_back(i.type);
    return all;
  }();
  return kAll;
}

std::string_view GemmTypeName(GemmType t) {
  return Info(t).name;
}

Result<GemmType> ParseGemmType(std::string_view name) {
  for (const GemmTypeInfo& i : kGemmTypes) {
    if (i.name == name) return i.type;
  }
  return InvalidArgument(
      fmt::format("unknown GEMM precision '{}' (fp64, tf32, bf16, fp16, fp8)", name));
}

int MinComputeCapability(GemmType t) {
  return Info(t).min_cc;
}
int InputBytes(GemmType t) {
  return Info(t).input_bytes;
}
int OutputBytes(GemmType t) {
  return Info(t).output_bytes;
}

GemmShape GemmShapeFor(GemmType) {
  return GemmShape{8192, 8192, 8192};
}

GemmReference ReferenceElement(const GemmShape& shape, int64_t row, int64_t col) {
  GemmReference r;
  const auto k_dim = static_cast<uint64_t>(shape.k);
  for (uint64_t k = 0; k < k_dim; ++k) {
    const double a = GemmInput(kGemmSeedA, k + static_cast<uint64_t>(row) * k_dim);
    const double b = GemmInput(kGemmSeedB, k + static_cast<uint64_t>(col) * k_dim);
    r.value += a * b;
    r.abs_sum += std::fabs(a * b);
  }
  return r;
}

GemmTolerance ToleranceFor(GemmType t) {
  // The inputs make FP32 and FP64 accumulation exact (bench/pattern.h), so
  // what is left is the rounding of the output: half a unit in the last place
  // of its type, doubled for slack. FP8 tensor cores on Hopper accumulate with
  // fewer bits than FP32 (DeepSeek-V3 technical report, section 3.3.2, about
  // 14), hence a bound on accumulation error there.
  switch (t) {
    case GemmType::kFp64:
      return {std::ldexp(1.0, -51), std::ldexp(1.0, -50)};
    case GemmType::kTf32:
      return {std::ldexp(1.0, -23), std::ldexp(1.0, -22)};
    case GemmType::kBf16:
      return {std::ldexp(1.0, -8), std::ldexp(1.0, -22)};
    case GemmType::kFp16:
      return {std::ldexp(1.0, -10), std::ldexp(1.0, -22)};
    case GemmType::kFp8:
      return {std::ldexp(1.0, -8), std::ldexp(1.0, -10)};
  }
  return {};
}

std::vector<int64_t> SampleIndices(int64_t size, int count, uint64_t seed) {
  std::vector<int64_t> out;
  if (size <= 0 || count <= 0) return out;
  if (count >= size) {
    for (int64_t i = 0; i < size; ++i)
      out.push_back(i);
    return out;
  }
  std::set<int64_t> seen = {0, size - 1};
  out = {0, size - 1};
  for (uint64_t i = 0; static_cast<int>(out.size()) < count; ++i) {
    const auto idx = static_cast<int64_t>(PatternHash(seed, i) % static_cast<uint64_t>(size));
    if (seen.insert(idx).second) out.push_back(idx);
  }
  out.resize(static_cast<size_t>(count));
  return out;
}

void SampleCheck::Add(double got, double want, double tolerance, std::string_view where) {
  ++outcome_.checked;
  const double err = std::isfinite(got) ? std::fabs(got - want) : INFINITY;
  outcome_.worst_error = std::max(outcome_.worst_error, err);
  if (err <= tolerance) return;
  ++outcome_.failed;
  outcome_.ok = false;
  if (first_failure_.empty())
    first_failure_ = fmt::format("{} is {:g}, should be {:g}", where, got, want);
}

CheckOutcome SampleCheck::Finish() const {
  CheckOutcome out = outcome_;
  if (out.checked == 0) {
    out.ok = false;
    out.detail = fmt::format("{}: nothing was checked", what_);
  } else if (out.ok) {
    out.detail = out.worst_error == 0
                     ? fmt::format("{}: {} samples exact", what_, out.checked)
                     : fmt::format("{}: {} samples within rounding (worst error {:.3g})", what_,
                                   out.checked, out.worst_error);
  } else {
    out.detail = fmt::format("{}: {} of {} samples wrong; {}", what_, out.failed, out.checked,
                             first_failure_);
  }
  return out;
}

CheckOutcome CheckGemmSamples(GemmType t, const GemmShape& shape,
                              std::span<const GemmSample> samples) {
  const GemmTolerance tol = ToleranceFor(t);
  SampleCheck check(fmt::format("{} GEMM {}x{}x{}", GemmTypeName(t), shape.m, shape.n, shape.k));
  for (const GemmSample& s : samples) {
    const GemmReference ref = ReferenceElement(shape, s.row, s.col);
    check.Add(s.value, ref.value, tol.rel_out * std::fabs(ref.value) + tol.rel_acc * ref.abs_sum,
              fmt::format("D[{},{}]", s.row, s.col));
  }
  return check.Finish();
}

CheckOutcome CheckCollectiveSamples(Collective c, int nranks, const CollectiveCounts& counts,
                                    std::span<const CollectiveSample> samples) {
  SampleCheck check(
      fmt::format("{} of {} B over {} ranks", CollectiveName(c), counts.size_bytes, nranks));
  for (const CollectiveSample& s : samples) {
    // Sums of small integers are exact in FP32: any difference is an error.
    check.Add(s.value, ExpectedCollectiveOutput(c, nranks, s.rank, s.index, counts), 0,
              fmt::format("rank {} [{}]", s.rank, s.index));
  }
  return check.Finish();
}

float HalfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa x 2^-24.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

float Bf16BitsToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace shoal::acceptance
