// CUDA, cuBLASLt and NCCL errors as Status, and owners for the resources the
// node tests allocate, so that a test that fails half-way frees what it took.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace shoal::acceptance::gpu {

Status CudaStatus(cudaError_t e, std::string_view what);
Status CublasStatus(cublasStatus_t s, std::string_view what);
Status NcclStatus(ncclResult_t r, std::string_view what);

#define SHOAL_CUDA(expr) SHOAL_RETURN_IF_ERROR(::shoal::acceptance::gpu::CudaStatus((expr), #expr))
#define SHOAL_CUBLAS(expr) \
  SHOAL_RETURN_IF_ERROR(::shoal::acceptance::gpu::CublasStatus((expr), #expr))
#define SHOAL_NCCL(expr) SHOAL_RETURN_IF_ERROR(::shoal::acceptance::gpu::NcclStatus((expr), #expr))

// Progress on stderr; stdout carries the results alone.
template <typename... Args>
void Log(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "[shoal-bench-node] {}\n", fmt::format(format, std::forward<Args>(args)...));
}

int64_t NowMs();  // Unix time

// Device memory; freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // On the current device.
  Status Allocate(int64_t bytes);
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  int64_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
};

// Page-locked host memory; freed on destruction.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  Status Allocate(int64_t bytes);
  void* get() const { return ptr_; }
  int64_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
};

// A stream on the current device; destroyed with it.
class Stream {
 public:
  Stream() = default;
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Status Create();
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// A CUDA event on the current device; destroyed with it.
class Event {
 public:
  Event() = default;
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  Status Create();
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Times work enqueued on a stream between Start and Stop with CUDA events,
// which measure the GPU's time and not the host's.
class EventTimer {
 public:
  EventTimer() = default;
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  Status Start(cudaStream_t stream);
  Status Stop(cudaStream_t stream);
  // Waits for Stop's event; seconds between the two.
  Result<double> Seconds();

 private:
  Status Init();
  Event start_;
  Event stop_;
};

}  // namespace shoal::acceptance::gpu
