// The few CUDA kernels the node tests need beyond cuBLASLt and NCCL: filling
// buffers with the deterministic test data (bench/pattern.h), the copy and
// triad memory kernels, a checksum, and a pointer chase for latency. Each
// launcher enqueues on `stream` and returns the launch error, if any.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace shoal::acceptance::gpu {

enum class ElementType { kF64, kF32, kBf16, kF16, kFp8E4m3 };

// data[i] = GemmInput(seed, i), converted to `type` (exact for every type).
cudaError_t FillGemmInput(void* data, ElementType type, int64_t count, uint64_t seed,
                          cudaStream_t stream);
// data[i] = StreamInput(i).
cudaError_t FillStreamInput(float* data, int64_t count, cudaStream_t stream);
// data[i] = CollectiveInput(rank, i).
cudaError_t FillCollectiveInput(float* data, int64_t count, int rank, cudaStream_t stream);

// dst = src, and a = b + scalar * c, as STREAM's copy and triad.
cudaError_t Copy(float* dst, const float* src, int64_t count, cudaStream_t stream);
cudaError_t Triad(float* a, const float* b, const float* c, float scalar, int64_t count,
                  cudaStream_t stream);

// Adds an order-independent 64-bit hash of `bytes` (a multiple of 8) to
// *sum, which lives in device memory and should start at 0. Equal data gives
// equal sums; one flipped bit changes it.
cudaError_t Checksum(const void* data, int64_t bytes, unsigned long long* sum, cudaStream_t stream);

// ring[i] = (i + stride) % count: a cycle for PointerChase.
cudaError_t BuildRing(uint32_t* ring, uint32_t count, uint32_t stride, cudaStream_t stream);
// One thread follows `steps` links of `ring` (which may be in a peer GPU's
// memory), each load depending on the last: time / steps is the latency.
cudaError_t PointerChase(const uint32_t* ring, int64_t steps, uint32_t* sink, cudaStream_t stream);

}  // namespace shoal::acceptance::gpu
