// Raw results that were not measured: every figure is the catalogue's
// expectation for a GPU model (bench/expect.h), for hosts without GPUs (CI,
// `shoal up` with simulated GPUs) where the cluster's acceptance flow must
// still be exercised end to end. The results say so in a note, and each
// figure's check text says "simulated", so they are never taken for
// measurements.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "acceptance/results.h"
#include "catalog/gpus.h"
#include "core/status.h"

namespace shoal::acceptance {

// The note every simulated result carries (and `shoal bench --cluster` shows).
inline constexpr std::string_view kSimulatedNote =
    "simulated: no measurement; every figure is the catalogue's expectation";

// One GPU made to fail one test: its figures are set below the pass mark.
struct SimulatedFault {
  int gpu = 0;
  TestKind test = TestKind::kGemm;
};

// Parses "gpu3:gemm" (several, comma-separated: "gpu3:gemm,gpu0:hbm").
Result<std::vector<SimulatedFault>> ParseSimulatedFaults(std::string_view text);

struct SimulatedOptions {
  std::string host;
  int gpus = 8;
  std::vector<TestKind> tests;  // empty: all
  bool quick = false;
  int64_t now_ms = 0;  // Unix time the results say they started
  std::vector<SimulatedFault> faults;
  // Multi-node NCCL (WORLD_SIZE > 1): only the NCCL test, over world_size x
  // gpus ranks, at the operator's floor (nothing is expected without one).
  int rank = 0;
  int world_size = 1;
  double nccl_min_busbw_gbps = 0;
};

// Results as `shoal-bench-node` writes them, one figure per test, metric and
// GPU (P2P for every ordered pair, NCCL at one size), each equal to the
// expected figure, or 80 % of the lowest that passes for a faulty GPU's test.
NodeResults SimulatedResults(const catalog::GpuSpec& spec, const SimulatedOptions& options);

}  // namespace shoal::acceptance
