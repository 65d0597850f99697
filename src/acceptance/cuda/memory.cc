// GPU memory bandwidth (copy and triad over most of the memory) and host <->
// GPU bandwidth over pinned memory, next to the GPU's NUMA node.
#include <cstring>
#include <functional>
#include <tuple>
#include <vector>

#include "acceptance/checks.h"
#include "acceptance/cuda/cuda_util.h"
#include "acceptance/cuda/kernels.h"
#include "acceptance/cuda/node_tests.h"
#include "acceptance/numa.h"
#include "acceptance/pattern.h"
#include "acceptance/stats.h"

namespace shoal::acceptance::gpu {

namespace {

constexpr float kTriadScalar = 2.0f;  // exact in float: the triad's result is exact too

// Times `reps` runs of `op` one by one; returns GB/s of each for `bytes` moved per run.
Result<std::vector<double>> TimeEach(int reps, double bytes, cudaStream_t stream,
                                     const std::function<cudaError_t()>& op) {
  std::vector<double> rates;
  EventTimer timer;
  for (int i = 0; i < reps; ++i) {
    SHOAL_RETURN_IF_ERROR(timer.Start(stream));
    SHOAL_CUDA(op());
    SHOAL_RETURN_IF_ERROR(timer.Stop(stream));
    SHOAL_ASSIGN_OR_RETURN(const double s, timer.Seconds());
    rates.push_back(bytes / s / 1e9);
  }
  return rates;
}

// Warm up, then time enough runs to fill the plan.
Result<std::vector<double>> Measure(const TimingPlan& plan, double bytes, cudaStream_t stream,
                                    const std::function<cudaError_t()>& op) {
  SHOAL_ASSIGN_OR_RETURN(const std::vector<double> first, TimeEach(1, bytes, stream, op));
  const double one_s = bytes / (first[0] * 1e9);
  SHOAL_RETURN_IF_ERROR(
      TimeEach(RepetitionsFor(one_s, plan.warmup_s, 1, 1000), bytes, stream, op).status());
  return TimeEach(RepetitionsFor(one_s, plan.measure_s, plan.min_reps, 10000), bytes, stream, op);
}

Status HbmOnGpu(int gpu, bool quick, Recorder& rec) {
  size_t free_bytes = 0, total_bytes = 0;
  SHOAL_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const int64_t array_bytes = HbmArrayBytes(static_cast<int64_t>(free_bytes), quick);
  const int64_t count = array_bytes / static_cast<int64_t>(sizeof(float));
  if (count < 1024)
    return FailedPrecondition(fmt::format("only {} bytes of GPU memory free", free_bytes));
  DeviceBuffer x, y, z;
  SHOAL_RETURN_IF_ERROR(x.Allocate(array_bytes));
  SHOAL_RETURN_IF_ERROR(y.Allocate(array_bytes));
  SHOAL_RETURN_IF_ERROR(z.Allocate(array_bytes));
  Stream stream;
  SHOAL_RETURN_IF_ERROR(stream.Create());
  SHOAL_CUDA(FillStreamInput(x.as<float>(), count, stream.get()));
  const TimingPlan plan = TimingFor(TestKind::kHbm, quick);
  // STREAM's convention: copy moves 2 x the array (read + write), triad 3 x.
  SHOAL_ASSIGN_OR_RETURN(const std::vector<double> copy,
                         Measure(plan, 2.0 * static_cast<double>(array_bytes), stream.get(), [&] {
                           return Copy(y.as<float>(), x.as<float>(), count, stream.get());
                         }));
  SHOAL_ASSIGN_OR_RETURN(const std::vector<double> triad,
                         Measure(plan, 3.0 * static_cast<double>(array_bytes), stream.get(), [&] {
                           return Triad(z.as<float>(), x.as<float>(), y.as<float>(), kTriadScalar,
                                        count, stream.get());
                         }));
  SHOAL_CUDA(cudaStreamSynchronize(stream.get()));

  // y = x and z = x + 2y = 3x, exactly, everywhere sampled.
  SampleCheck copy_check("copy"), triad_check("triad");
  for (int64_t i : SampleIndices(count, 256, 0x4B3 + static_cast<uint64_t>(gpu))) {
    float got_y = 0, got_z = 0;
    SHOAL_CUDA(cudaMemcpy(&got_y, y.as<float>() + i, sizeof(float), cudaMemcpyDeviceToHost));
    SHOAL_CUDA(cudaMemcpy(&got_z, z.as<float>() + i, sizeof(float), cudaMemcpyDeviceToHost));
    const double want = StreamInput(static_cast<uint64_t>(i));
    copy_check.Add(got_y, want, 0, fmt::format("[{}]", i));
    triad_check.Add(got_z, (1 + kTriadScalar) * want, 0, fmt::format("[{}]", i));
  }
  for (auto& [name, rates, check] : {std::tuple{"copy", &copy, copy_check.Finish()},
                                     std::tuple{"triad", &triad, triad_check.Finish()}}) {
    Measurement m = FigureFromSamples(TestKind::kHbm, name, gpu, *rates, kUnitGbps);
    m.size_bytes = array_bytes;
    m.params = {{"arrays", 3},
                {"array_bytes", static_cast<double>(array_bytes)},
                {"free_bytes", static_cast<double>(free_bytes)}};
    m.ok = check.ok;
    m.check = check.detail;
    Log("hbm {} gpu{}: {:.0f} GB/s over 3 x {:.1f} GiB", m.metric, gpu, m.value,
        static_cast<double>(array_bytes) / (1 << 30));
    rec.Add(std::move(m));
  }
  return Status::Ok();
}

// Pins the calling thread to a GPU's NUMA node for its lifetime and restores
// the old affinity after; does nothing where the node is unknown.
class NumaPin {
 public:
  explicit NumaPin(int numa_node) {
    if (numa_node < 0) return;
    auto cpus = ReadNumaCpus(numa_node);
    auto old = ThreadCpus();
    if (!cpus.ok() || !old.ok()) return;
    pinned_ = PinThreadToCpus(*cpus).ok();
    if (pinned_) old_ = std::move(old).value();
  }
  ~NumaPin() {
    if (pinned_) (void)PinThreadToCpus(old_);
  }
  bool pinned() const { return pinned_; }

 private:
  bool pinned_ = false;
  std::vector<int> old_;
};

Status PcieOnGpu(const GpuInfo& g, bool quick, Recorder& rec) {
  SHOAL_CUDA(cudaSetDevice(g.index));
  NumaPin pin(g.numa_node);
  const int64_t bytes = PcieBufferBytes(quick);
  // Allocated after pinning, so the pages come from the GPU's NUMA node.
  PinnedBuffer host_in, host_out;
  SHOAL_RETURN_IF_ERROR(host_in.Allocate(bytes));
  SHOAL_RETURN_IF_ERROR(host_out.Allocate(bytes));
  // Any pattern will do (the round trip is compared byte for byte); this one
  // is cheap, and writing it puts the pages on the pinned thread's node.
  auto* src = static_cast<uint32_t*>(host_in.get());
  for (int64_t i = 0; i < bytes / 4; ++i)
    src[i] = static_cast<uint32_t>(i * 2654435761u);
  std::memset(host_out.get(), 0, static_cast<size_t>(bytes));
  DeviceBuffer dev_in, dev_out;
  SHOAL_RETURN_IF_ERROR(dev_in.Allocate(bytes));
  SHOAL_RETURN_IF_ERROR(dev_out.Allocate(bytes));
  Stream up, down;
  SHOAL_RETURN_IF_ERROR(up.Create());
  SHOAL_RETURN_IF_ERROR(down.Create());
  const TimingPlan plan = TimingFor(TestKind::kPcie, quick);
  const auto size = static_cast<size_t>(bytes);
  SHOAL_ASSIGN_OR_RETURN(
      const std::vector<double> h2d, Measure(plan, static_cast<double>(bytes), up.get(), [&] {
        return cudaMemcpyAsync(dev_in.get(), host_in.get(), size, cudaMemcpyHostToDevice, up.get());
      }));
  SHOAL_CUDA(cudaMemcpy(dev_out.get(), dev_in.get(), size, cudaMemcpyDeviceToDevice));
  SHOAL_ASSIGN_OR_RETURN(const std::vector<double> d2h,
                         Measure(plan, static_cast<double>(bytes), down.get(), [&] {
                           return cudaMemcpyAsync(host_out.get(), dev_out.get(), size,
                                                  cudaMemcpyDeviceToHost, down.get());
                         }));
  // What went up and came back down must be what was sent.
  SHOAL_CUDA(cudaDeviceSynchronize());
  const bool round_trip_ok = std::memcmp(host_in.get(), host_out.get(), size) == 0;

  // Both directions at once: the two streams start together (down waits for
  // up's start event) and the pair is timed until both are done; the figure
  // is the bytes moved both ways over that time.
  const int reps = RepetitionsFor(static_cast<double>(bytes) / (Median(h2d) * 1e9), plan.measure_s,
                                  plan.min_reps, 10000);
  Event start, down_done, end;
  SHOAL_RETURN_IF_ERROR(start.Create());
  SHOAL_RETURN_IF_ERROR(down_done.Create());
  SHOAL_RETURN_IF_ERROR(end.Create());
  std::vector<double> both;
  for (int i = 0; i < reps; ++i) {
    SHOAL_CUDA(cudaEventRecord(start.get(), up.get()));
    SHOAL_CUDA(cudaStreamWaitEvent(down.get(), start.get(), 0));
    SHOAL_CUDA(
        cudaMemcpyAsync(dev_in.get(), host_in.get(), size, cudaMemcpyHostToDevice, up.get()));
    SHOAL_CUDA(
        cudaMemcpyAsync(host_out.get(), dev_out.get(), size, cudaMemcpyDeviceToHost, down.get()));
    SHOAL_CUDA(cudaEventRecord(down_done.get(), down.get()));
    SHOAL_CUDA(cudaStreamWaitEvent(up.get(), down_done.get(), 0));
    SHOAL_CUDA(cudaEventRecord(end.get(), up.get()));
    SHOAL_CUDA(cudaEventSynchronize(end.get()));
    float ms = 0;
    SHOAL_CUDA(cudaEventElapsedTime(&ms, start.get(), end.get()));
    both.push_back(2.0 * static_cast<double>(bytes) / (ms / 1000.0) / 1e9);
  }
  const std::string numa =
      pin.pinned() ? fmt::format("NUMA node {}", g.numa_node) : "not NUMA-pinned";
  const std::vector<double>& both_rates = both;
  for (auto& [name, rates] :
       {std::pair{"h2d", &h2d}, std::pair{"d2h", &d2h}, std::pair{"bidir", &both_rates}}) {
    Measurement m = FigureFromSamples(TestKind::kPcie, name, g.index, *rates, kUnitGbps);
    m.size_bytes = bytes;
    m.params = {{"numa_node", g.numa_node}, {"numa_pinned", pin.pinned() ? 1 : 0}};
    m.ok = round_trip_ok;
    m.check = round_trip_ok ? fmt::format("{} MiB round trip intact", bytes >> 20)
                            : fmt::format("{} MiB round trip came back different", bytes >> 20);
    Log("pcie {} gpu{}: {:.1f} GB/s ({})", m.metric, g.index, m.value, numa);
    rec.Add(std::move(m));
  }
  return Status::Ok();
}

}  // namespace

Status RunHbm(const NodeOptions& options, Recorder& rec) {
  ForEachGpu(static_cast<int>(rec.results().gpus.size()), TestKind::kHbm, rec,
             [&](int gpu) { return HbmOnGpu(gpu, options.quick, rec); });
  return Status::Ok();
}

Status RunPcie(const NodeOptions& options, Recorder& rec) {
  // One GPU at a time: each figure is its own link's, not a share of the
  // host's memory bandwidth. (All GPUs at once is not measured yet.)
  const std::vector<GpuInfo> gpus = rec.results().gpus;
  for (const GpuInfo& g : gpus) {
    Status s = PcieOnGpu(g, options.quick, rec);
    if (!s.ok()) rec.Error(TestKind::kPcie, g.index, s.message());
  }
  return Status::Ok();
}

}  // namespace shoal::acceptance::gpu
