// Runs `shoal-bench-node` (the CUDA executable, built apart so that the
// `shoal` binary never links CUDA libraries) as a child process, samples
// telemetry while it runs, and reads the results it prints on stdout. Its
// stderr (progress lines) passes through.
//
// One call runs one child; calls are independent and may run on different
// threads.
#pragma once

#include <string>
#include <vector>

#include "acceptance/node_options.h"
#include "acceptance/results.h"
#include "acceptance/telemetry.h"
#include "core/status.h"

namespace shoal::acceptance {

inline constexpr const char* kNodeBinaryName = "shoal-bench-node";

// $SHOAL_BENCH_NODE when set, else shoal-bench-node beside the running
// executable (/proc/self/exe); NotFound, saying where it looked, otherwise.
Result<std::string> FindNodeBinary();

struct NodeRunOptions {
  std::string binary;  // empty: FindNodeBinary()
  NodeOptions node;
  int timeout_s = 1200;     // the child is killed after this
  TelemetryHook telemetry;  // null: nothing is sampled
  int telemetry_interval_ms = 1000;
  std::vector<std::string> extra_env;  // "NAME=value", added to the child's environment
};

struct NodeRun {
  NodeResults results;
  std::vector<TelemetrySample> samples;
};

// Fails when the binary is missing, cannot start, dies, times out, or prints
// something that is not valid results; the message says which.
Result<NodeRun> RunNode(const NodeRunOptions& options);

}  // namespace shoal::acceptance
