// What a healthy GPU should measure, from the catalogue's peak figures
// (catalog/gpus.h) times the fraction of peak that the test reaches on
// healthy hardware, and the margin below that which still passes. Every
// fraction carries its source; docs/acceptance.md explains them.
//
// Pure functions over a GpuSpec, so tests build specs by hand; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "acceptance/results.h"
#include "catalog/gpus.h"

namespace shoal::acceptance {

// How the GPUs of a node talk to each other, which sets what P2P and
// single-node NCCL should reach.
enum class Link { kNone, kNvlink, kPcie };
std::string_view LinkName(Link l);

// NVLink when the catalogue gives the GPU a scale-up link and the node's GPUs
// fit in one scale-up domain; PCIe otherwise (two or more GPUs); none for one.
Link NodeLink(const catalog::GpuSpec& spec, int node_gpus);

// A test's achievable fraction of peak and its pass margin.
struct Achievable {
  TestKind test;
  std::string_view metric;  // "bf16", "copy", "h2d", "bw", "all_reduce", "sustained_bf16", ...
  Link link;                // kNone where the link does not matter
  double fraction;          // of the peak, reached by healthy hardware
  double margin;  // below fraction x peak that still passes: pass >= (1 - margin) x expected
  std::string_view source;
};
std::span<const Achievable> AchievableTable();

// The expected figure for one measurement and the lowest that passes.
struct Expectation {
  double expected = 0;
  double min_pass = 0;
  std::string basis;  // "0.78 x 989 TFLOP/s (bf16 peak)"
  std::string source;
};

struct ExpectContext {
  int node_gpus = 1;
  bool multi_node = false;
  // Operator's floor for NCCL bus bandwidth (GB/s); 0: none. The only
  // expectation for multi-node NCCL, which depends on the network, not the GPU.
  double nccl_min_busbw_gbps = 0;
};

// Null when nothing is expected: an unknown figure, a precision the GPU has
// no peak for, or multi-node NCCL without an operator's floor.
std::optional<Expectation> Expect(const Measurement& m, const catalog::GpuSpec& spec,
                                  const ExpectContext& ctx);

// Throughput during burn-in may dip below its median by this fraction at
// most (a GPU that slows down under sustained load is failing).
inline constexpr double kBurnInStability = 0.90;

}  // namespace shoal::acceptance
