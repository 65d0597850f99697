// The node tests of shoal-bench-node, one function per test. Each appends its
// figures, errors and notes to the results through a Recorder; a Status it
// returns is an error of the whole test. GPU indices are CUDA's, which follow
// PCI order when CUDA_DEVICE_ORDER=PCI_BUS_ID (shoal bench sets it).
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acceptance/bootstrap.h"
#include "acceptance/node_options.h"
#include "acceptance/results.h"
#include "core/status.h"

namespace shoal::acceptance::gpu {

// Appends to the results from the tests' threads.
class Recorder {
 public:
  explicit Recorder(NodeResults* results) : results_(results) {}
  void Add(Measurement m);
  void Error(TestKind test, int gpu, std::string message);
  void Note(std::string note);
  // Read-only use, between tests (no test thread running).
  const NodeResults& results() const { return *results_; }
  NodeResults& mutable_results() { return *results_; }

 private:
  std::mutex mu_;
  NodeResults* results_;
};

// A figure from timed repetitions: the statistics of `samples` (each a rate
// or a latency in `unit`) and their median as the value.
Measurement FigureFromSamples(TestKind test, std::string metric, int gpu,
                              const std::vector<double>& samples, std::string_view unit);

// Runs fn(gpu) for every GPU, one thread each, and waits for all; a GPU whose
// fn fails gets an error of `test`, and the others carry on.
void ForEachGpu(int gpus, TestKind test, Recorder& rec, const std::function<Status(int gpu)>& fn);

// Fills in the GPUs and the versions of the driver and libraries.
Status DiscoverGpus(NodeResults* results);

Status RunGemm(const NodeOptions& options, Recorder& rec);
Status RunHbm(const NodeOptions& options, Recorder& rec);
Status RunPcie(const NodeOptions& options, Recorder& rec);
Status RunP2p(const NodeOptions& options, Recorder& rec);
Status RunNccl(const NodeOptions& options, const std::optional<DistEnv>& dist, Recorder& rec);
Status RunBurnIn(const NodeOptions& options, Recorder& rec);

}  // namespace shoal::acceptance::gpu
