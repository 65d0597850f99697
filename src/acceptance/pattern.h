// Deterministic test data, shared by the CUDA tests (which fill device
// buffers with it) and the host checks (which recompute what a correct
// result holds without copying whole buffers back). Header-only so that
// nvcc and g++ compile the same functions.
//
// The values are chosen so that correct arithmetic is exact: GEMM inputs are
// multiples of 1/4 in [-1, 1], which FP8 E4M3, FP16, BF16, TF32, FP32 and FP64
// all hold exactly, so products are multiples of 1/16 and a sum of up to 2^18
// of them is exact in an FP32 accumulator; collective inputs are small
// integers, whose sums over any realistic number of ranks are exact in FP32.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SHOAL_HOST_DEVICE __host__ __device__
#else
#define SHOAL_HOST_DEVICE
#endif

namespace shoal::acceptance {

// SplitMix64's finaliser over (seed, index): neighbouring indices get
// unrelated values, so a transposed or shifted result does not pass by luck.
SHOAL_HOST_DEVICE constexpr uint64_t PatternHash(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A GEMM input: one of -1, -0.75, ..., 0.75, 1.
SHOAL_HOST_DEVICE constexpr float GemmInput(uint64_t seed, uint64_t index) {
  return static_cast<float>(static_cast<int>(PatternHash(seed, index) % 9u) - 4) * 0.25f;
}

// What rank `rank` puts at `index` of its collective send buffer: -4..4.
SHOAL_HOST_DEVICE constexpr float CollectiveInput(int rank, uint64_t index) {
  return static_cast<float>(
      static_cast<int>(PatternHash(0xC011ull + static_cast<uint64_t>(rank), index) % 9u) - 4);
}

// The source array of the memory-bandwidth kernels: -4..4.
SHOAL_HOST_DEVICE constexpr float StreamInput(uint64_t index) {
  return static_cast<float>(static_cast<int>(PatternHash(0x57AEull, index) % 9u) - 4);
}

// The seeds of a GEMM's A and B.
inline constexpr uint64_t kGemmSeedA = 0xA;
inline constexpr uint64_t kGemmSeedB = 0xB;

}  // namespace shoal::acceptance
