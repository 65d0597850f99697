#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "acceptance/cuda/kernels.h"
#include "acceptance/pattern.h"

namespace shoal::acceptance::gpu {

namespace {

constexpr int kThreads = 256;

// Enough blocks to fill any current GPU several times over; the kernels
// stride through the rest.
unsigned Blocks(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 8192 ? 8192 : blocks));
}

template <typename T>
__device__ T FromFloat(float v);
template <>
__device__ double FromFloat<double>(float v) {
  return v;
}
template <>
__device__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __half FromFloat<__half>(float v) {
  return __float2half(v);
}
template <>
__device__ __nv_fp8_e4m3 FromFloat<__nv_fp8_e4m3>(float v) {
  return __nv_fp8_e4m3(v);
}

template <typename T>
__global__ void FillGemmKernel(T* out, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = FromFloat<T>(GemmInput(seed, static_cast<uint64_t>(i)));
  }
}

__global__ void FillStreamKernel(float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = StreamInput(static_cast<uint64_t>(i));
  }
}

__global__ void FillCollectiveKernel(float* out, int64_t n, int rank) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = CollectiveInput(rank, static_cast<uint64_t>(i));
  }
}

// 16-byte loads and stores: what reaches HBM peak; the tail goes one by one.
__global__ void CopyKernel(float* __restrict__ dst, const float* __restrict__ src, int64_t n) {
  const int64_t n4 = n / 4;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  float4* d4 = reinterpret_cast<float4*>(dst);
  const float4* s4 = reinterpret_cast<const float4*>(src);
  for (int64_t i = first; i < n4; i += stride)
    d4[i] = s4[i];
  for (int64_t i = n4 * 4 + first; i < n; i += stride)
    dst[i] = src[i];
}

__global__ void TriadKernel(float* __restrict__ a, const float* __restrict__ b,
                            const float* __restrict__ c, float scalar, int64_t n) {
  const int64_t n4 = n / 4;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  float4* a4 = reinterpret_cast<float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  const float4* c4 = reinterpret_cast<const float4*>(c);
  for (int64_t i = first; i < n4; i += stride) {
    const float4 x = b4[i], y = c4[i];
    a4[i] =
        make_float4(x.x + scalar * y.x, x.y + scalar * y.y, x.z + scalar * y.z, x.w + scalar * y.w);
  }
  for (int64_t i = n4 * 4 + first; i < n; i += stride)
    a[i] = b[i] + scalar * c[i];
}

__global__ void ChecksumKernel(const unsigned long long* words, int64_t n,
                               unsigned long long* sum) {
  unsigned long long local = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    // Hashing each word with its index makes a swap of two words count.
    local += PatternHash(words[i], static_cast<uint64_t>(i));
  }
  atomicAdd(sum, local);
}

__global__ void BuildRingKernel(uint32_t* ring, uint32_t n, uint32_t stride) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    ring[i] = static_cast<uint32_t>((uint64_t{i} + stride) % n);
  }
}

__global__ void ChaseKernel(const uint32_t* ring, int64_t steps, uint32_t* sink) {
  // volatile: every step is a real load from (possibly remote) memory.
  const volatile uint32_t* r = ring;
  uint32_t i = 0;
  for (int64_t s = 0; s < steps; ++s)
    i = r[i];
  *sink = i;
}

template <typename T>
cudaError_t LaunchFill(void* data, int64_t count, uint64_t seed, cudaStream_t stream) {
  FillGemmKernel<T><<<Blocks(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, seed);
  return cudaGetLastError();
}

}  // namespace

cudaError_t FillGemmInput(void* data, ElementType type, int64_t count, uint64_t seed,
                          cudaStream_t stream) {
  switch (type) {
    case ElementType::kF64:
      return LaunchFill<double>(data, count, seed, stream);
    case ElementType::kF32:
      return LaunchFill<float>(data, count, seed, stream);
    case ElementType::kBf16:
      return LaunchFill<__nv_bfloat16>(data, count, seed, stream);
    case ElementType::kF16:
      return LaunchFill<__half>(data, count, seed, stream);
    case ElementType::kFp8E4m3:
      return LaunchFill<__nv_fp8_e4m3>(data, count, seed, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t FillStreamInput(float* data, int64_t count, cudaStream_t stream) {
  FillStreamKernel<<<Blocks(count), kThreads, 0, stream>>>(data, count);
  return cudaGetLastError();
}

cudaError_t FillCollectiveInput(float* data, int64_t count, int rank, cudaStream_t stream) {
  FillCollectiveKernel<<<Blocks(count), kThreads, 0, stream>>>(data, count, rank);
  return cudaGetLastError();
}

cudaError_t Copy(float* dst, const float* src, int64_t count, cudaStream_t stream) {
  CopyKernel<<<Blocks(count / 4), kThreads, 0, stream>>>(dst, src, count);
  return cudaGetLastError();
}

cudaError_t Triad(float* a, const float* b, const float* c, float scalar, int64_t count,
                  cudaStream_t stream) {
  TriadKernel<<<Blocks(count / 4), kThreads, 0, stream>>>(a, b, c, scalar, count);
  return cudaGetLastError();
}

cudaError_t Checksum(const void* data, int64_t bytes, unsigned long long* sum,
                     cudaStream_t stream) {
  const int64_t words = bytes / 8;
  ChecksumKernel<<<Blocks(words), kThreads, 0, stream>>>(
      static_cast<const unsigned long long*>(data), words, sum);
  return cudaGetLastError();
}

cudaError_t BuildRing(uint32_t* ring, uint32_t count, uint32_t stride, cudaStream_t stream) {
  BuildRingKernel<<<Blocks(count), kThreads, 0, stream>>>(ring, count, stride);
  return cudaGetLastError();
}

cudaError_t PointerChase(const uint32_t* ring, int64_t steps, uint32_t* sink, cudaStream_t stream) {
  ChaseKernel<<<1, 1, 0, stream>>>(ring, steps, sink);
  return cudaGetLastError();
}

}  // namespace shoal::acceptance::gpu
