// The raw results of one run of `shoal-bench-node`: what was measured on
// which GPU, with the result checks, before anything is compared with what
// the GPU should do. The node binary writes them as JSON on stdout; `shoal
// bench` reads them back, judges them (report.h) and can store them, so a
// saved file can be judged again later (`shoal bench report FILE`).
//
// Plain values; the functions are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "acceptance/stats.h"
#include "core/status.h"

namespace shoal::acceptance {

inline constexpr std::string_view kNodeResultsSchema = "shoal-bench-node/1";

inline constexpr std::string_view kUnitTflops = "TFLOP/s";
inline constexpr std::string_view kUnitGbps = "GB/s";  // 10^9 bytes per second
inline constexpr std::string_view kUnitUs = "us";

// The node tests, in the order they run.
enum class TestKind { kGemm, kHbm, kPcie, kP2p, kNccl, kBurnIn };

const std::vector<TestKind>& AllTests();
std::string_view TestName(TestKind t);  // "gemm", "hbm", "pcie", "p2p", "nccl", "burnin"
Result<TestKind> ParseTestName(std::string_view name);
// "gemm,hbm" -> the tests, in run order, each once; "all" -> every test.
Result<std::vector<TestKind>> ParseTestList(std::string_view csv);

// What a GPU is, as the node binary saw it.
struct GpuInfo {
  int index = 0;           // CUDA index with CUDA_DEVICE_ORDER=PCI_BUS_ID (nvidia-smi's order)
  std::string name;        // "NVIDIA H200", as the driver reports it
  std::string uuid;        // "GPU-8f6b..."
  std::string pci_bus_id;  // "0000:19:00.0"
  int64_t memory_mib = 0;
  int numa_node = -1;  // -1: unknown or a single-node host
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;

  friend bool operator==(const GpuInfo&, const GpuInfo&) = default;
};

// One figure. `gpu` is -1 for a figure of the whole node (a collective);
// `peer` is the second GPU of a P2P pair.
struct Measurement {
  TestKind test = TestKind::kGemm;
  std::string metric;  // gemm: "bf16"; hbm: "copy"; pcie: "h2d"; p2p: "bw"; nccl: "all_reduce"; ...
  int gpu = -1;
  int peer = -1;
  int ranks = 0;           // nccl: ranks in the communicator
  int64_t size_bytes = 0;  // nccl: message size as nccl-tests counts it; others: buffer size
  double value = 0;        // the figure judged: TFLOP/s, GB/s (busbw for nccl), us
  std::string unit;
  Stats stats;                           // over the timed repetitions, in `unit`
  std::map<std::string, double> params;  // m, n, k, iterations, algbw_gbps, time_us, ...
  std::vector<double> series;            // burn-in: throughput of each interval
  bool ok = true;                        // the result check passed (a wrong result fails the GPU)
  std::string check;                     // what the check found

  friend bool operator==(const Measurement&, const Measurement&) = default;
};

// A test that could not run, or broke: it fails the node. A test skipped on
// purpose (FP8 on a GPU without it, P2P on one GPU) is a note instead.
struct TestError {
  TestKind test = TestKind::kGemm;
  int gpu = -1;
  std::string message;

  friend bool operator==(const TestError&, const TestError&) = default;
};

struct NodeResults {
  std::string host;
  int64_t started_ms = 0;  // Unix time
  int64_t finished_ms = 0;
  bool quick = false;
  int rank = 0;  // multi-node NCCL: this process's rank among WORLD_SIZE
  int world_size = 1;
  std::map<std::string, std::string> versions;  // driver, runtime, cublaslt, nccl
  std::vector<GpuInfo> gpus;
  std::vector<Measurement> measurements;
  std::vector<TestError> errors;
  std::vector<std::string> notes;
  int64_t burn_in_start_ms = 0;  // Unix time; 0 when no burn-in ran
  int64_t burn_in_end_ms = 0;

  friend bool operator==(const NodeResults&, const NodeResults&) = default;
};

std::string ToJson(const NodeResults& r, int indent = 2);

// Parses what the node binary printed. Strict: a missing or mistyped field
// is an error naming it, and the schema must be kNodeResultsSchema.
Result<NodeResults> ParseNodeResults(std::string_view text);

}  // namespace shoal::acceptance
