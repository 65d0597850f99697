// What `shoal-bench-node` is asked to run, and how long each part may take.
// `shoal bench node` builds these options and passes them as arguments; the
// node binary parses the same arguments back, so both sides share one list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "acceptance/results.h"
#include "core/status.h"

namespace shoal::acceptance {

struct NodeOptions {
  bool quick = false;
  std::vector<TestKind> tests = AllTests();
  int burn_in_s = -1;  // -1: the mode's default (60 s, quick 10 s)
  int64_t nccl_max_bytes = int64_t{8} << 30;

  int BurnInSeconds() const { return burn_in_s >= 0 ? burn_in_s : (quick ? 10 : 60); }
  bool Runs(TestKind t) const;
};

// The arguments that make the node binary run `options`.
std::vector<std::string> NodeArgs(const NodeOptions& options);
// The reverse; an unknown or malformed argument is an error naming it.
Result<NodeOptions> ParseNodeArgs(const std::vector<std::string>& args);

// How long to measure: a warm-up (clocks ramp, cuBLASLt picks kernels), then
// timed repetitions until `measure_s` has passed and at least `min_reps` ran.
struct TimingPlan {
  double warmup_s = 0;
  double measure_s = 0;
  int min_reps = 0;
};
TimingPlan TimingFor(TestKind t, bool quick);

// Repetitions of an operation that takes `one_s` to fill `target_s`, within [lo, hi].
int RepetitionsFor(double one_s, double target_s, int lo, int hi);

// Timed iterations of one NCCL collective at `size_bytes`, after
// kNcclWarmups untimed ones. A function of the size alone, never of a
// measurement: in a multi-node run every process must issue the same
// number of collectives, or they wait for each other forever. nccl-tests
// runs 20 (-n 20) after 5 warm-ups (-w 5) at every size; the largest sizes
// here run fewer, as each takes tens of milliseconds.
inline constexpr int kNcclWarmups = 3;
int NcclIterations(int64_t size_bytes, bool quick);

// Bytes of each of the three arrays of the HBM test: together `fraction` of
// the free memory (most of it by default; a quarter in quick mode, at most
// 8 GiB), rounded down to 2 MiB.
int64_t HbmArrayBytes(int64_t free_bytes, bool quick);

// Pinned host buffer per GPU for the host<->device test.
int64_t PcieBufferBytes(bool quick);

}  // namespace shoal::acceptance
