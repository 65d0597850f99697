// GPU to GPU: whether peers can reach each other's memory, the bandwidth of
// copies from each GPU to each other one, and the latency of loads from a
// peer's memory (a pointer chase, as nvbandwidth's latency tests do).
#include <vector>

#include "acceptance/checks.h"
#include "acceptance/cuda/cuda_util.h"
#include "acceptance/cuda/kernels.h"
#include "acceptance/cuda/node_tests.h"
#include "acceptance/pattern.h"

namespace shoal::acceptance::gpu {

namespace {

// 16K links 2 KiB apart (32 MiB): far beyond the reach of caches' prefetch,
// small enough to place on any GPU.
constexpr uint32_t kRingCount = 16384;
constexpr uint32_t kRingStride = 512;  // elements of 4 bytes: 2 KiB
constexpr int64_t kChaseSteps = 20000;

Status EnablePeers(int gpus, std::vector<std::vector<int>>* access) {
  access->assign(static_cast<size_t>(gpus), std::vector<int>(static_cast<size_t>(gpus), 0));
  for (int i = 0; i < gpus; ++i) {
    SHOAL_CUDA(cudaSetDevice(i));
    for (int j = 0; j < gpus; ++j) {
      if (i == j) continue;
      int can = 0;
      SHOAL_CUDA(cudaDeviceCanAccessPeer(&can, i, j));
      if (!can) continue;
      const cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();  // clears the sticky "already enabled"
      } else if (e != cudaSuccess) {
        return CudaStatus(e, fmt::format("cudaDeviceEnablePeerAccess({} -> {})", i, j));
      }
      (*access)[static_cast<size_t>(i)][static_cast<size_t>(j)] = 1;
    }
  }
  return Status::Ok();
}

Status PairBandwidth(int from, int to, int64_t bytes, const TimingPlan& plan, Recorder& rec) {
  SHOAL_CUDA(cudaSetDevice(to));
  DeviceBuffer dst;
  SHOAL_RETURN_IF_ERROR(dst.Allocate(bytes));
  SHOAL_CUDA(cudaSetDevice(from));
  DeviceBuffer src;
  SHOAL_RETURN_IF_ERROR(src.Allocate(bytes));
  Stream stream;
  SHOAL_RETURN_IF_ERROR(stream.Create());
  const int64_t count = bytes / 4;
  SHOAL_CUDA(FillStreamInput(src.as<float>(), count, stream.get()));
  EventTimer timer;
  auto copy_once = [&]() -> Result<double> {
    SHOAL_RETURN_IF_ERROR(timer.Start(stream.get()));
    SHOAL_CUDA(cudaMemcpyPeerAsync(dst.get(), to, src.get(), from, static_cast<size_t>(bytes),
                                   stream.get()));
    SHOAL_RETURN_IF_ERROR(timer.Stop(stream.get()));
    return timer.Seconds();
  };
  SHOAL_ASSIGN_OR_RETURN(const double one_s, copy_once());
  const int warm = RepetitionsFor(one_s, plan.warmup_s, 1, 100);
  for (int i = 0; i < warm; ++i)
    SHOAL_RETURN_IF_ERROR(copy_once().status());
  std::vector<double> rates;
  const int reps = RepetitionsFor(one_s, plan.measure_s, plan.min_reps, 1000);
  for (int i = 0; i < reps; ++i) {
    SHOAL_ASSIGN_OR_RETURN(const double s, copy_once());
    rates.push_back(static_cast<double>(bytes) / s / 1e9);
  }
  SampleCheck check(fmt::format("gpu{} -> gpu{} copy", from, to));
  for (int64_t i : SampleIndices(count, 32, 0x9292 + static_cast<uint64_t>(from * 64 + to))) {
    float got = 0;
    SHOAL_CUDA(cudaMemcpy(&got, dst.as<float>() + i, sizeof(got), cudaMemcpyDeviceToHost));
    check.Add(got, StreamInput(static_cast<uint64_t>(i)), 0, fmt::format("[{}]", i));
  }
  const CheckOutcome outcome = check.Finish();
  Measurement m = FigureFromSamples(TestKind::kP2p, "bw", from, rates, kUnitGbps);
  m.peer = to;
  m.size_bytes = bytes;
  m.ok = outcome.ok;
  m.check = outcome.detail;
  rec.Add(std::move(m));
  return Status::Ok();
}

// GPU `from` chases a ring that lives in GPU `to`'s memory.
Status PairLatency(int from, int to, Recorder& rec) {
  SHOAL_CUDA(cudaSetDevice(to));
  DeviceBuffer ring;
  SHOAL_RETURN_IF_ERROR(ring.Allocate(int64_t{kRingCount} * kRingStride * 4));
  const uint32_t links = kRingCount * kRingStride;
  SHOAL_CUDA(BuildRing(ring.as<uint32_t>(), links, kRingStride, nullptr));
  SHOAL_CUDA(cudaDeviceSynchronize());
  SHOAL_CUDA(cudaSetDevice(from));
  DeviceBuffer sink;
  SHOAL_RETURN_IF_ERROR(sink.Allocate(sizeof(uint32_t)));
  Stream stream;
  SHOAL_RETURN_IF_ERROR(stream.Create());
  EventTimer timer;
  std::vector<double> latencies;
  for (int i = 0; i < 4; ++i) {  // the first run pays for cold TLBs and is dropped
    SHOAL_RETURN_IF_ERROR(timer.Start(stream.get()));
    SHOAL_CUDA(PointerChase(ring.as<uint32_t>(), kChaseSteps, sink.as<uint32_t>(), stream.get()));
    SHOAL_RETURN_IF_ERROR(timer.Stop(stream.get()));
    SHOAL_ASSIGN_OR_RETURN(const double s, timer.Seconds());
    if (i > 0) latencies.push_back(s / kChaseSteps * 1e6);
  }
  Measurement m = FigureFromSamples(TestKind::kP2p, "latency", from, latencies, kUnitUs);
  m.peer = to;
  m.params = {{"steps", kChaseSteps}, {"stride_bytes", kRingStride * 4}};
  m.check = "not checked (a latency)";
  rec.Add(std::move(m));
  return Status::Ok();
}

}  // namespace

Status RunP2p(const NodeOptions& options, Recorder& rec) {
  const int gpus = static_cast<int>(rec.results().gpus.size());
  if (gpus < 2) {
    rec.Note("p2p skipped: one GPU");
    return Status::Ok();
  }
  std::vector<std::vector<int>> access;
  SHOAL_RETURN_IF_ERROR(EnablePeers(gpus, &access));
  const TimingPlan plan = TimingFor(TestKind::kP2p, options.quick);
  const int64_t bytes = options.quick ? int64_t{64} << 20 : int64_t{256} << 20;
  for (int i = 0; i < gpus; ++i) {
    for (int j = 0; j < gpus; ++j) {
      if (i == j) continue;
      const int can = access[static_cast<size_t>(i)][static_cast<size_t>(j)];
      Measurement a;
      a.test = TestKind::kP2p;
      a.metric = "access";
      a.gpu = i;
      a.peer = j;
      a.value = can;
      a.check = can ? "peer access enabled" : "no peer access: copies go through host memory";
      rec.Add(std::move(a));
      // Without peer access cudaMemcpyPeer still works, staged through the
      // host: worth measuring, since that is what NCCL would see too.
      Status s = PairBandwidth(i, j, bytes, plan, rec);
      if (s.ok() && can) s = PairLatency(i, j, rec);
      if (!s.ok())
        rec.Error(TestKind::kP2p, i, fmt::format("gpu{} -> gpu{}: {}", i, j, s.message()));
    }
    Log("p2p from gpu{} done", i);
  }
  return Status::Ok();
}

}  // namespace shoal::acceptance::gpu
