// GPU discovery and the Recorder.
#include <thread>
#include <vector>

#include "acceptance/cuda/cuda_util.h"
#include "acceptance/cuda/node_tests.h"
#include "acceptance/numa.h"
#include "acceptance/stats.h"

namespace shoal::acceptance::gpu {

void Recorder::Add(Measurement m) {
  std::lock_guard<std::mutex> lock(mu_);
  results_->measurements.push_back(std::move(m));
}

void Recorder::Error(TestKind test, int gpu, std::string message) {
  Log("{} failed{}: {}", TestName(test), gpu >= 0 ? fmt::format(" on gpu{}", gpu) : "", message);
  std::lock_guard<std::mutex> lock(mu_);
  results_->errors.push_back({test, gpu, std::move(message)});
}

void Recorder::Note(std::string note) {
  std::lock_guard<std::mutex> lock(mu_);
  results_->notes.push_back(std::move(note));
}

Measurement FigureFromSamples(TestKind test, std::string metric, int gpu,
                              const std::vector<double>& samples, std::string_view unit) {
  Measurement m;
  m.test = test;
  m.metric = std::move(metric);
  m.gpu = gpu;
  m.stats = Summarize(samples);
  m.value = m.stats.median;
  m.unit = std::string(unit);
  return m;
}

void ForEachGpu(int gpus, TestKind test, Recorder& rec, const std::function<Status(int gpu)>& fn) {
  std::vector<std::thread> threads;
  for (int g = 0; g < gpus; ++g) {
    threads.emplace_back([&, g] {
      Status s = CudaStatus(cudaSetDevice(g), "cudaSetDevice");
      if (s.ok()) s = fn(g);
      if (!s.ok()) rec.Error(test, g, s.message());
    });
  }
  for (std::thread& t : threads)
    t.join();
}

namespace {

// "GPU-8f6b1a2c-...", as nvidia-smi and NVML print a GPU's UUID.
std::string UuidText(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::string hex;
  for (int i = 0; i < 16; ++i)
    hex += fmt::format("{:02x}", b[i]);
  return fmt::format("GPU-{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4),
                     hex.substr(16, 4), hex.substr(20));
}

std::string VersionText(int v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

}  // namespace

Status DiscoverGpus(NodeResults* results) {
  int driver = 0, runtime = 0;
  SHOAL_CUDA(cudaRuntimeGetVersion(&runtime));
  results->versions["cuda_runtime"] = VersionText(runtime);
  SHOAL_CUDA(cudaDriverGetVersion(&driver));
  results->versions["cuda_driver"] = VersionText(driver);
  results->versions["cublaslt"] = std::to_string(cublasLtGetVersion());
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) results->versions["nccl"] = std::to_string(nccl);
  int count = 0;
  SHOAL_CUDA(cudaGetDeviceCount(&count));
  if (count == 0) return NotFound("no CUDA GPUs are visible");
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    SHOAL_CUDA(cudaGetDeviceProperties(&p, i));
    GpuInfo g;
    g.index = i;
    g.name = p.name;
    g.uuid = UuidText(p.uuid);
    g.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    g.memory_mib = static_cast<int64_t>(p.totalGlobalMem >> 20);
    g.numa_node = ReadNumaNode(g.pci_bus_id);
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.sm_count = p.multiProcessorCount;
    Log("gpu{}: {}, {} MiB, {}, NUMA node {}, compute capability {}.{}", i, g.name, g.memory_mib,
        g.pci_bus_id, g.numa_node, g.cc_major, g.cc_minor);
    results->gpus.push_back(std::move(g));
  }
  return Status::Ok();
}

}  // namespace shoal::acceptance::gpu
