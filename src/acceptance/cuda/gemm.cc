#include "acceptance/cuda/gemm.h"

#include <cstring>
#include <vector>

#include "acceptance/cuda/kernels.h"
#include "acceptance/pattern.h"

namespace shoal::acceptance::gpu {

namespace {

// Hopper's cuBLASLt kernels want 32 MiB of workspace (cuBLAS documentation,
// "cublasSetWorkspace"); less limits the split-K kernels it can choose.
constexpr int64_t kWorkspaceBytes = int64_t{32} << 20;

struct TypeInfo {
  cudaDataType_t ab;
  cudaDataType_t cd;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  ElementType fill;
};

TypeInfo InfoFor(GemmType t) {
  switch (t) {
    case GemmType::kFp64:
      return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F, ElementType::kF64};
    case GemmType::kTf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, ElementType::kF32};
    case GemmType::kBf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, ElementType::kBf16};
    case GemmType::kFp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, ElementType::kF16};
    case GemmType::kFp8:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, ElementType::kFp8E4m3};
  }
  return {};
}

// One element of D, read back as a double.
double ToDouble(GemmType t, const unsigned char* bytes) {
  switch (t) {
    case GemmType::kFp64: {
      double v;
      std::memcpy(&v, bytes, sizeof(v));
      return v;
    }
    case GemmType::kTf32: {
      float v;
      std::memcpy(&v, bytes, sizeof(v));
      return v;
    }
    case GemmType::kFp16: {
      uint16_t v;
      std::memcpy(&v, bytes, sizeof(v));
      return HalfBitsToFloat(v);
    }
    case GemmType::kBf16:
    case GemmType::kFp8: {
      uint16_t v;
      std::memcpy(&v, bytes, sizeof(v));
      return Bf16BitsToFloat(v);
    }
  }
  return 0;
}

}  // namespace

Result<std::unique_ptr<GemmRunner>> GemmRunner::Create(int device, GemmType type,
                                                       const GemmShape& shape) {
  std::unique_ptr<GemmRunner> r(new GemmRunner(device, type, shape));
  SHOAL_RETURN_IF_ERROR(r->Init());
  return r;
}

GemmRunner::~GemmRunner() {
  if (a_layout_ != nullptr) cublasLtMatrixLayoutDestroy(a_layout_);
  if (b_layout_ != nullptr) cublasLtMatrixLayoutDestroy(b_layout_);
  if (d_layout_ != nullptr) cublasLtMatrixLayoutDestroy(d_layout_);
  if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

Status GemmRunner::Init() {
  SHOAL_CUDA(cudaSetDevice(device_));
  SHOAL_RETURN_IF_ERROR(stream_.Create());
  const TypeInfo info = InfoFor(type_);
  const auto m = static_cast<uint64_t>(shape_.m), n = static_cast<uint64_t>(shape_.n),
             k = static_cast<uint64_t>(shape_.k);
  SHOAL_RETURN_IF_ERROR(a_.Allocate(shape_.k * shape_.m * InputBytes(type_)));
  SHOAL_RETURN_IF_ERROR(b_.Allocate(shape_.k * shape_.n * InputBytes(type_)));
  SHOAL_RETURN_IF_ERROR(d_.Allocate(shape_.m * shape_.n * OutputBytes(type_)));
  SHOAL_RETURN_IF_ERROR(workspace_.Allocate(kWorkspaceBytes));
  SHOAL_RETURN_IF_ERROR(checksum_.Allocate(sizeof(unsigned long long)));
  SHOAL_CUDA(FillGemmInput(a_.get(), info.fill, shape_.k * shape_.m, kGemmSeedA, stream_.get()));
  SHOAL_CUDA(FillGemmInput(b_.get(), info.fill, shape_.k * shape_.n, kGemmSeedB, stream_.get()));

  SHOAL_CUBLAS(cublasLtCreate(&handle_));
  SHOAL_CUBLAS(cublasLtMatmulDescCreate(&desc_, info.compute, info.scale));
  // "TN": FP8 kernels accept no other layout on Hopper (cuBLASLt docs,
  // cublasLtMatmul); every precision uses it so all are alike.
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  SHOAL_CUBLAS(
      cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)));
  SHOAL_CUBLAS(
      cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)));
  SHOAL_CUBLAS(cublasLtMatrixLayoutCreate(&a_layout_, info.ab, k, m, static_cast<int64_t>(k)));
  SHOAL_CUBLAS(cublasLtMatrixLayoutCreate(&b_layout_, info.ab, k, n, static_cast<int64_t>(k)));
  SHOAL_CUBLAS(cublasLtMatrixLayoutCreate(&d_layout_, info.cd, m, n, static_cast<int64_t>(m)));

  cublasLtMatmulPreference_t pref = nullptr;
  SHOAL_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace = kWorkspaceBytes;
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_layout_, b_layout_, d_layout_, d_layout_,
                                       pref, 1, &heuristic, &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  SHOAL_CUBLAS(s);
  if (found == 0) {
    return FailedPrecondition(fmt::format("cuBLASLt has no {} kernel for {}x{}x{} on this GPU",
                                          GemmTypeName(type_), shape_.m, shape_.n, shape_.k));
  }
  algo_ = heuristic.algo;
  SHOAL_CUDA(cudaStreamSynchronize(stream_.get()));
  return Status::Ok();
}

Status GemmRunner::Enqueue(int n) {
  const bool fp64 = type_ == GemmType::kFp64;
  const void* alpha = fp64 ? static_cast<const void*>(&alpha64_) : &alpha32_;
  const void* beta = fp64 ? static_cast<const void*>(&beta64_) : &beta32_;
  for (int i = 0; i < n; ++i) {
    SHOAL_CUBLAS(cublasLtMatmul(handle_, desc_, alpha, a_.get(), a_layout_, b_.get(), b_layout_,
                                beta, d_.get(), d_layout_, d_.get(), d_layout_, &algo_,
                                workspace_.get(), kWorkspaceBytes, stream_.get()));
  }
  return Status::Ok();
}

Result<double> GemmRunner::Time(int n) {
  SHOAL_RETURN_IF_ERROR(timer_.Start(stream_.get()));
  SHOAL_RETURN_IF_ERROR(Enqueue(n));
  SHOAL_RETURN_IF_ERROR(timer_.Stop(stream_.get()));
  return timer_.Seconds();
}

Result<CheckOutcome> GemmRunner::Check(int samples, uint64_t seed) {
  SHOAL_CUDA(cudaStreamSynchronize(stream_.get()));
  const std::vector<int64_t> rows = SampleIndices(shape_.m, samples, seed);
  const std::vector<int64_t> cols = SampleIndices(shape_.n, samples, seed + 1);
  const int bytes = OutputBytes(type_);
  std::vector<GemmSample> got;
  for (size_t i = 0; i < rows.size() && i < cols.size(); ++i) {
    unsigned char element[8] = {};
    const int64_t offset = (rows[i] + cols[i] * shape_.m) * bytes;  // column-major
    SHOAL_CUDA(cudaMemcpy(element, d_.as<unsigned char>() + offset, static_cast<size_t>(bytes),
                          cudaMemcpyDeviceToHost));
    got.push_back({rows[i], cols[i], ToDouble(type_, element)});
  }
  return CheckGemmSamples(type_, shape_, got);
}

Result<uint64_t> GemmRunner::Checksum() {
  SHOAL_CUDA(cudaMemsetAsync(checksum_.get(), 0, sizeof(unsigned long long), stream_.get()));
  SHOAL_CUDA(
      gpu::Checksum(d_.get(), d_.bytes(), checksum_.as<unsigned long long>(), stream_.get()));
  unsigned long long sum = 0;
  SHOAL_CUDA(
      cudaMemcpyAsync(&sum, checksum_.get(), sizeof(sum), cudaMemcpyDeviceToHost, stream_.get()));
  SHOAL_CUDA(cudaStreamSynchronize(stream_.get()));
  return static_cast<uint64_t>(sum);
}

}  // namespace shoal::acceptance::gpu
