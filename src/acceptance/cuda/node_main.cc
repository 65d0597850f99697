// shoal-bench-node: runs the node tests on this host's GPUs and prints the
// raw results as JSON on stdout (progress on stderr). `shoal bench node`
// runs it and judges the results; it also runs alone:
//
//   shoal-bench-node [--quick] [--tests gemm,hbm,pcie,p2p,nccl,burnin]
//                    [--burn-in-s N] [--nccl-max-bytes N]
//
// With WORLD_SIZE > 1 in the environment (RANK, MASTER_ADDR, MASTER_PORT as
// torchrun sets them) it runs the multi-node NCCL test only, with every
// process driving all the GPUs it sees.
//
// Exit status: 0 when results were printed (failures are in them), 2 for bad
// arguments, 1 when the results could not be written.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "acceptance/cuda/cuda_util.h"
#include "acceptance/cuda/node_tests.h"

namespace {

using namespace shoal::acceptance;

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

shoal::Status RunTest(TestKind t, const NodeOptions& options, const std::optional<DistEnv>& dist,
                      gpu::Recorder& rec) {
  switch (t) {
    case TestKind::kGemm:
      return gpu::RunGemm(options, rec);
    case TestKind::kHbm:
      return gpu::RunHbm(options, rec);
    case TestKind::kPcie:
      return gpu::RunPcie(options, rec);
    case TestKind::kP2p:
      return gpu::RunP2p(options, rec);
    case TestKind::kNccl:
      return gpu::RunNccl(options, dist, rec);
    case TestKind::kBurnIn:
      return gpu::RunBurnIn(options, rec);
  }
  return shoal::Internal("unknown test");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::printf(
        "usage: shoal-bench-node [--quick] [--tests gemm,hbm,pcie,p2p,nccl,burnin] [--burn-in-s N] "
        "[--nccl-max-bytes N]\nprints the raw results as JSON on stdout; `shoal bench node` judges "
        "them\n");
    return 0;
  }
  auto options = ParseNodeArgs(args);
  if (!options.ok()) {
    std::fprintf(stderr, "shoal-bench-node: %s\n", options.status().message().c_str());
    return 2;
  }
  // stdout carries the results alone: libraries that print there (NCCL with
  // NCCL_DEBUG set, for one) are sent to stderr, and the results go to a copy
  // of the original stdout at the end.
  std::fflush(stdout);
  const int results_fd = ::dup(STDOUT_FILENO);
  if (results_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::perror("shoal-bench-node: dup");
    return 1;
  }
  NodeResults results;
  results.host = Hostname();
  results.started_ms = gpu::NowMs();
  results.quick = options->quick;
  gpu::Recorder rec(&results);

  auto dist = DistEnvFrom([](const char* name) { return std::getenv(name); });
  std::vector<TestKind> tests = options->tests;
  shoal::Status setup = dist.ok() ? gpu::DiscoverGpus(&results) : dist.status();
  if (setup.ok() && *dist) {
    results.rank = (*dist)->rank;
    results.world_size = (*dist)->world_size;
    if (tests != std::vector<TestKind>{TestKind::kNccl}) {
      rec.Note("multi-node run (WORLD_SIZE > 1): only the NCCL test runs");
    }
    tests = {TestKind::kNccl};
  }
  if (!setup.ok()) {
    // Every test asked for fails, so that the node fails with the reason.
    for (TestKind t : tests)
      rec.Error(t, -1, setup.message());
    tests.clear();
  }
  for (TestKind t : tests) {
    gpu::Log("{} ...", TestName(t));
    shoal::Status s = RunTest(t, *options, dist.ok() ? *dist : std::nullopt, rec);
    if (!s.ok()) rec.Error(t, -1, s.message());
  }
  results.finished_ms = gpu::NowMs();
  std::fflush(stdout);
  const std::string json = ToJson(results) + "\n";
  for (size_t done = 0; done < json.size();) {
    const ssize_t n = ::write(results_fd, json.data() + done, json.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::perror("shoal-bench-node: writing the results");
      return 1;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}
