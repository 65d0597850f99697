#include "acceptance/checks.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <set>

#include "acceptance/pattern.h"

namespace shoal::acceptance {
namespace {

// Rounds to a float format with `mantissa_bits` explicit bits (bf16: 7,
// fp16: 10), to nearest: what a GPU writing that type does.
double RoundTo(double v, int mantissa_bits) {
  if (v == 0) return 0;
  int e = 0;
  std::frexp(v, &e);
  const double quantum = std::ldexp(1.0, e - 1 - mantissa_bits);
  return std::nearbyint(v / quantum) * quantum;
}

TEST(ChecksTest, GemmInputsAreExactInEveryType) {
  std::set<float> seen;
  for (uint64_t i = 0; i < 10000; ++i) {
    const float v = GemmInput(kGemmSeedA, i);
    seen.insert(v);
    // Multiples of 1/4 in [-1, 1]: two significant bits at most, which FP8
    // E4M3 (3 mantissa bits, smallest normal 2^-6) holds exactly.
    EXPECT_EQ(v * 4, std::nearbyint(v * 4));
    EXPECT_LE(std::fabs(v), 1.0f);
  }
  EXPECT_EQ(seen.size(), 9u);  // all of -1, -0.75, ..., 1 occur
}

TEST(ChecksTest, ReferenceElementIsTheProductOfTheLayout) {
  const GemmShape shape{5, 4, 7};
  for (int64_t i = 0; i < shape.m; ++i) {
    for (int64_t j = 0; j < shape.n; ++j) {
      double want = 0, abs_sum = 0;
      for (int64_t k = 0; k < shape.k; ++k) {
        // A stored k x m, B stored k x n, both column-major; D = A^T B.
        const double a = GemmInput(kGemmSeedA, static_cast<uint64_t>(k + i * shape.k));
        const double b = GemmInput(kGemmSeedB, static_cast<uint64_t>(k + j * shape.k));
        want += a * b;
        abs_sum += std::fabs(a * b);
      }
      const GemmReference got = ReferenceElement(shape, i, j);
      EXPECT_EQ(got.value, want);
      EXPECT_EQ(got.abs_sum, abs_sum);
    }
  }
}

TEST(ChecksTest, CorrectResultsPassInEveryPrecision) {
  const GemmShape shape{64, 64, 8192};
  struct Row {
    GemmType type;
    int mantissa_bits;  // of the output type
  };
  const Row rows[] = {{GemmType::kFp64, 52},
                      {GemmType::kTf32, 23},
                      {GemmType::kBf16, 7},
                      {GemmType::kFp16, 10},
                      {GemmType::kFp8, 7}};
  for (const Row& r : rows) {
    SCOPED_TRACE(GemmTypeName(r.type));
    std::vector<GemmSample> samples;
    for (int64_t i = 0; i < 16; ++i) {
      const int64_t row = i * 4, col = 63 - i * 3;
      samples.push_back(
          {row, col, RoundTo(ReferenceElement(shape, row, col).value, r.mantissa_bits)});
    }
    const CheckOutcome out = CheckGemmSamples(r.type, shape, samples);
    EXPECT_TRUE(out.ok) << out.detail;
    EXPECT_EQ(out.checked, 16);
  }
}

TEST(ChecksTest, WrongResultsFail) {
  const GemmShape shape{64, 64, 4096};
  const double right = ReferenceElement(shape, 3, 5).value;
  struct Row {
    std::string_view what;
    GemmType type;
    double got;
  };
  const Row rows[] = {
      {"off by one", GemmType::kBf16, right + 1},
      {"sign flipped", GemmType::kFp16, right == 0 ? 1 : -right},
      {"NaN", GemmType::kFp64, NAN},
      {"infinite", GemmType::kTf32, INFINITY},
      {"a missing k-block (512 terms)", GemmType::kBf16,
       right - ReferenceElement({64, 64, 512}, 3, 5).value + 7},
      {"far off in FP8", GemmType::kFp8, right + 40},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    const GemmSample bad{3, 5, r.got};
    const CheckOutcome out = CheckGemmSamples(r.type, shape, {&bad, 1});
    EXPECT_FALSE(out.ok);
    EXPECT_EQ(out.failed, 1);
    EXPECT_NE(out.detail.find("D[3,5]"), std::string::npos) << out.detail;
  }
}

TEST(ChecksTest, NothingCheckedIsAFailure) {
  SampleCheck check("empty");
  EXPECT_FALSE(check.Finish().ok);
}

TEST(ChecksTest, SampleCheckReportsFirstFailureAndCounts) {
  SampleCheck check("thing");
  check.Add(1, 1, 0, "a");
  check.Add(2, 3, 0.5, "b");
  check.Add(5, 5.1, 0.2, "c");
  check.Add(9, 0, 1, "d");
  const CheckOutcome out = check.Finish();
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.checked, 4);
  EXPECT_EQ(out.failed, 2);
  EXPECT_DOUBLE_EQ(out.worst_error, 9);
  EXPECT_NE(out.detail.find("b is 2, should be 3"), std::string::npos) << out.detail;
}

TEST(ChecksTest, SampleIndices) {
  const auto idx = SampleIndices(1000, 64, 7);
  ASSERT_EQ(idx.size(), 64u);
  EXPECT_EQ(idx.front(), 0);
  EXPECT_EQ(idx[1], 999);
  EXPECT_EQ(std::set<int64_t>(idx.begin(), idx.end()).size(), 64u);
  for (int64_t i : idx) {
    EXPECT_GE(i, 0);
    EXPECT_LT(i, 1000);
  }
  EXPECT_EQ(SampleIndices(1000, 64, 7), idx);  // deterministic
  EXPECT_NE(SampleIndices(1000, 64, 8), idx);
  EXPECT_EQ(SampleIndices(3, 10, 1), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(SampleIndices(10, 1, 1), (std::vector<int64_t>{0}));
  EXPECT_TRUE(SampleIndices(0, 5, 1).empty());
}

TEST(ChecksTest, CollectiveSamples) {
  const CollectiveCounts k = CountsFor(Collective::kReduceScatter, 4096, 4, 4);
  std::vector<CollectiveSample> good;
  for (int r = 0; r < 4; ++r) {
    for (int64_t i : {int64_t{0}, k.recv_count - 1}) {
      good.push_back({r, i, ExpectedCollectiveOutput(Collective::kReduceScatter, 4, r, i, k)});
    }
  }
  EXPECT_TRUE(CheckCollectiveSamples(Collective::kReduceScatter, 4, k, good).ok);
  std::vector<CollectiveSample> bad = good;
  bad[5].value += 1;
  const CheckOutcome out = CheckCollectiveSamples(Collective::kReduceScatter, 4, k, bad);
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.detail.find("rank 2"), std::string::npos) << out.detail;
}

TEST(ChecksTest, HalfAndBf16Bits) {
  struct Row {
    uint16_t bits;
    float half;
  };
  const Row halves[] = {{0x3C00, 1.0f},     {0xC000, -2.0f},    {0x7BFF, 65504.0f},
                        {0x0001, 0x1p-24f}, {0x0400, 0x1p-14f}, {0x3555, 0.333251953125f},
                        {0x0000, 0.0f},     {0xB400, -0.25f}};
  for (const Row& r : halves)
    EXPECT_EQ(HalfBitsToFloat(r.bits), r.half) << std::hex << r.bits;
  EXPECT_TRUE(std::isinf(HalfBitsToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(0x7E00)));
  EXPECT_EQ(Bf16BitsToFloat(0x3F80), 1.0f);
  EXPECT_EQ(Bf16BitsToFloat(0xC0A0), -5.0f);
  EXPECT_EQ(Bf16BitsToFloat(0x4780), 65536.0f);
}

TEST(ChecksTest, GemmTypes) {
  for (GemmType t : AllGemmTypes()) {
    SCOPED_TRACE(GemmTypeName(t));
    EXPECT_EQ(*ParseGemmType(GemmTypeName(t)), t);
    EXPECT_GT(InputBytes(t), 0);
    EXPECT_GE(OutputBytes(t), InputBytes(t) == 1 ? 2 : InputBytes(t));
    const GemmShape s = GemmShapeFor(t);
    // Multiples of 16, as FP8 and tensor-core kernels want.
    EXPECT_EQ(s.m % 16 + s.n % 16 + s.k % 16, 0);
  }
  EXPECT_EQ(MinComputeCapability(GemmType::kFp8), 89);
  EXPECT_FALSE(ParseGemmType("int4").ok());
  EXPECT_DOUBLE_EQ(GemmShape({8192, 8192, 8192}).Flops(), 2.0 * 8192 * 8192 * 8192);
}

}  // namespace
}  // namespace shoal::acceptance
