#include "acceptance/cuda/cuda_util.h"

#include <utility>

namespace shoal::acceptance::gpu {

Status CudaStatus(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return Status::Ok();
  return Internal(fmt::format("{}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e)));
}

Status CublasStatus(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Internal(fmt::format("{}: cuBLAS status {}", what, static_cast<int>(s)));
}

Status NcclStatus(ncclResult_t r, std::string_view what) {
  if (r == ncclSuccess) return Status::Ok();
  return Internal(fmt::format("{}: {}", what, ncclGetErrorString(r)));
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(ptr_, o.ptr_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

Status DeviceBuffer::Allocate(int64_t bytes) {
  SHOAL_CUDA(cudaMalloc(&ptr_, static_cast<size_t>(bytes)));
  bytes_ = bytes;
  return Status::Ok();
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_ != nullptr) cudaFreeHost(ptr_);
}

Status PinnedBuffer::Allocate(int64_t bytes) {
  SHOAL_CUDA(cudaHostAlloc(&ptr_, static_cast<size_t>(bytes), cudaHostAllocDefault));
  bytes_ = bytes;
  return Status::Ok();
}

Stream::~Stream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Status Stream::Create() {
  SHOAL_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  return Status::Ok();
}

Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

Status Event::Create() {
  if (event_ == nullptr) SHOAL_CUDA(cudaEventCreate(&event_));
  return Status::Ok();
}

EventTimer::~EventTimer() = default;

Status EventTimer::Init() {
  SHOAL_RETURN_IF_ERROR(start_.Create());
  return stop_.Create();
}

Status EventTimer::Start(cudaStream_t stream) {
  SHOAL_RETURN_IF_ERROR(Init());
  SHOAL_CUDA(cudaEventRecord(start_.get(), stream));
  return Status::Ok();
}

Status EventTimer::Stop(cudaStream_t stream) {
  SHOAL_RETURN_IF_ERROR(Init());
  SHOAL_CUDA(cudaEventRecord(stop_.get(), stream));
  return Status::Ok();
}

Result<double> EventTimer::Seconds() {
  SHOAL_CUDA(cudaEventSynchronize(stop_.get()));
  float ms = 0;
  SHOAL_CUDA(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
  return static_cast<double>(ms) / 1000.0;
}

}  // namespace shoal::acceptance::gpu
