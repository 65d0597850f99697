// One dense GEMM through cuBLASLt on one GPU, set up once and run many
// times: the GEMM test and the burn-in both use it. D = A^T * B in the
// layout bench/checks.h describes, inputs filled with the deterministic
// pattern so that any element of D can be checked on the host.
//
// Not thread-safe: one runner per GPU per thread; that thread must have made
// the runner's device current.
#pragma once

#include <memory>

#include "acceptance/checks.h"
#include "acceptance/cuda/cuda_util.h"

namespace shoal::acceptance::gpu {

class GemmRunner {
 public:
  static Result<std::unique_ptr<GemmRunner>> Create(int device, GemmType type,
                                                    const GemmShape& shape);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Enqueues `n` GEMMs on the runner's stream.
  Status Enqueue(int n);
  // Runs `n` GEMMs and returns the GPU time they took, in seconds.
  Result<double> Time(int n);
  // Compares `samples` elements of D (after the last GEMM) with the exact result.
  Result<CheckOutcome> Check(int samples, uint64_t seed);
  // A hash of all of D: equal while a deterministic kernel keeps computing right.
  Result<uint64_t> Checksum();

  double Flops() const { return shape_.Flops(); }
  cudaStream_t stream() const { return stream_.get(); }

 private:
  GemmRunner(int device, GemmType type, const GemmShape& shape)
      : device_(device), type_(type), shape_(shape) {}
  Status Init();

  int device_;
  GemmType type_;
  GemmShape shape_;
  Stream stream_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr, b_layout_ = nullptr, d_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  DeviceBuffer a_, b_, d_, workspace_, checksum_;
  double alpha64_ = 1, beta64_ = 0;
  float alpha32_ = 1, beta32_ = 0;
  EventTimer timer_;
};

}  // namespace shoal::acceptance::gpu
