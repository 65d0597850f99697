// shoal bench: measure this node's GPUs, memory, links and NCCL against what
// they should do (`shoal bench node`), or judge saved results again
// (`shoal bench report FILE`). The CUDA tests live in shoal-bench-node, a
// separate binary beside this one, so that `shoal` itself never needs CUDA.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "acceptance/node_runner.h"
#include "acceptance/report.h"
#include "acceptance/simulated.h"
#include "agent/gpu/nvml_provider.h"
#include "cli/app.h"
#include "cli/bench_telemetry.h"
#include "cli/commands.h"
#include "core/strings.h"

namespace shoal::cli {

namespace {

struct BenchArgs {
  bool quick = false;
  std::string tests = "all";
  int burn_in_s = -1;
  std::string nccl_max = "8G";
  int timeout_s = 1200;
  std::string binary;
  std::string file;
  bool json = false;
  std::string out;
  std::string model;
  double nccl_min_busbw_gbps = 0;
  bool outliers_fail = false;
  bool simulated = false;
  std::string simulated_fail;
  int gpus = 0;
};

// Burn-in telemetry from NVML, read by the agent's GPU provider (dlopen of
// libnvidia-ml.so.1). Without NVML the hook is null, `why_not` says why, and
// the report says that nothing was watched.
acceptance::TelemetryHook NodeTelemetry(std::string* why_not) {
  auto nvml = agent::OpenNvml(agent::NvmlOptions{});
  if (!nvml.ok()) {
    *why_not = nvml.status().message();
    return nullptr;
  }
  auto hook = ProviderTelemetry(std::move(*nvml), [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  });
  if (!hook.ok()) {
    *why_not = hook.status().message();
    return nullptr;
  }
  return *hook;
}

int Judge(acceptance::NodeResults raw, std::vector<acceptance::TelemetrySample> samples,
          const acceptance::SpecLookup& lookup, const BenchArgs& a) {
  acceptance::EvaluateOptions opts;
  opts.spec_for = lookup;
  opts.nccl_min_busbw_gbps = a.nccl_min_busbw_gbps;
  opts.outliers_fail = a.outliers_fail;
  opts.samples = std::move(samples);
  const acceptance::NodeReport report = acceptance::Evaluate(std::move(raw), opts);
  const std::string json = acceptance::ReportToJson(report);
  if (!a.out.empty()) {
    std::ofstream f(a.out);
    f << json << "\n";
    if (!f) {
      std::cerr << "shoal bench: cannot write " << a.out << "\n";
      return 1;
    }
  }
  std::cout << (a.json ? json + "\n" : acceptance::FormatReport(report));
  return report.passed ? 0 : 1;
}

// Why this host cannot run the CUDA tests, or "" when it has a driver: one
// line instead of every test failing with cudaErrorInsufficientDriver. A
// tests binary named by --binary or $SHOAL_BENCH_NODE is run regardless
// (a stand-in, or one that knows better).
std::string MissingDriver(const BenchArgs& a) {
  const char* env = std::getenv("SHOAL_BENCH_NODE");
  if (!a.binary.empty() || (env != nullptr && *env != '\0')) return "";
  void* cuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda != nullptr) {
    ::dlclose(cuda);
    return "";
  }
  const char* why = ::dlerror();
  return fmt::format(
      "no NVIDIA driver on this host ({}): node acceptance measures real GPUs; run it on a GPU "
      "node, or see the expectations with --simulated --model MODEL",
      why != nullptr ? why : "libcuda.so.1 cannot be loaded");
}

int RunNodeTests(const BenchArgs& a, const acceptance::SpecLookup& lookup) {
  if (std::string why = MissingDriver(a); !why.empty()) {
    std::cerr << "shoal bench: " << why << "\n";
    return 1;
  }
  acceptance::NodeRunOptions run;
  run.binary = a.binary;
  run.timeout_s = a.timeout_s;
  std::string no_telemetry;
  run.telemetry = NodeTelemetry(&no_telemetry);
  run.node.quick = a.quick;
  run.node.burn_in_s = a.burn_in_s;
  auto tests = acceptance::ParseTestList(a.tests);
  if (!tests.ok()) {
    std::cerr << "shoal bench: --tests: " << tests.status().message() << "\n";
    return 2;
  }
  run.node.tests = *tests;
  auto nccl_max_mib = ParseMemoryMib(a.nccl_max);
  if (!nccl_max_mib.ok() || *nccl_max_mib <= 0) {
    std::cerr << "shoal bench: --nccl-max: '" << a.nccl_max
              << "' is not a size such as 512M or 8G\n";
    return 2;
  }
  run.node.nccl_max_bytes = *nccl_max_mib << 20;
  auto result = acceptance::RunNode(run);
  if (!result.ok()) {
    std::cerr << "shoal bench: " << result.status().message() << "\n";
    return 1;
  }
  if (!no_telemetry.empty()) {
    result->results.notes.push_back("telemetry: NVML could not be opened: " + no_telemetry);
  }
  return Judge(std::move(result->results), std::move(result->samples), lookup, a);
}

// `shoal bench node --simulated`: results made of the catalogue's
// expectations for --model, for hosts without GPUs. They carry the note
// acceptance::kSimulatedNote and never pass for measurements.
int RunSimulated(const BenchArgs& a, const acceptance::SpecLookup& lookup) {
  if (a.model.empty()) {
    std::cerr
        << "shoal bench: --simulated needs --model (the GPU model whose expectations to use)\n";
    return 2;
  }
  acceptance::GpuInfo probe;
  probe.name = a.model;
  const catalog::GpuSpec* spec = lookup(probe);
  if (spec == nullptr) {
    std::cerr << "shoal bench: --model: no catalogue model '" << a.model << "'\n";
    return 2;
  }
  auto faults = acceptance::ParseSimulatedFaults(a.simulated_fail);
  if (!faults.ok()) {
    std::cerr << "shoal bench: --simulated-fail: " << faults.status().message() << "\n";
    return 2;
  }
  auto tests = acceptance::ParseTestList(a.tests);
  if (!tests.ok()) {
    std::cerr << "shoal bench: --tests: " << tests.status().message() << "\n";
    return 2;
  }
  acceptance::SimulatedOptions o;
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  o.host = host;
  o.gpus = a.gpus;
  if (o.gpus <= 0) {
    // The GPUs Shoal gave the job, else the whole node of a profile's size.
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    o.gpus = visible != nullptr && *visible != 0 ? static_cast<int>(Split(visible, ',').size()) : 8;
  }
  o.tests = *tests;
  o.quick = a.quick;
  o.now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  o.faults = *faults;
  // Shoal's launcher (or torchrun) says how many processes take part.
  for (auto [name, out] : {std::pair{"WORLD_SIZE", &o.world_size}, std::pair{"RANK", &o.rank}}) {
    const char* v = std::getenv(name);
    auto n = v != nullptr ? ParseInt(v) : Result<int64_t>(InvalidArgument("unset"));
    if (n.ok() && *n >= 0 && *n < 1'000'000) *out = static_cast<int>(*n);
  }
  o.nccl_min_busbw_gbps = a.nccl_min_busbw_gbps;
  std::cerr << "shoal bench: " << acceptance::kSimulatedNote << " (--simulated)\n";
  if (!a.json) {
    std::cout << "SIMULATED: no GPU was measured; every figure is the catalogue's expectation for "
              << a.model << "\n";
  }
  return Judge(acceptance::SimulatedResults(*spec, o), {}, lookup, a);
}

int JudgeFile(const BenchArgs& a, const acceptance::SpecLookup& lookup) {
  std::ifstream in(a.file);
  if (!in) {
    std::cerr << "shoal bench: cannot read " << a.file << "\n";
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto saved = acceptance::LoadSavedResults(text.str());
  if (!saved.ok()) {
    std::cerr << "shoal bench: " << a.file << ": " << saved.status().message() << "\n";
    return 1;
  }
  return Judge(std::move(saved->raw), std::move(saved->samples), lookup, a);
}

}  // namespace

int RunBench(const std::vector<std::string>& raw) {
  if (std::find(raw.begin(), raw.end(), "--cluster") != raw.end()) return RunBenchCluster(raw);
  BenchArgs a;
  CLI::App app{"Measure GPUs, memory, links and NCCL against what they should do.", "shoal bench"};
  app.require_subcommand(1);
  app.footer(
      "shoal bench --cluster [--nodes a,b | --all] ...: the node tests of the cluster's nodes as "
      "Shoal\n"
      "jobs, recording each node's acceptance (admins; see shoal bench --cluster --help)");
  CLI::App* node = app.add_subcommand(
      "node",
      "run the node tests on this host's GPUs (shoal-bench-node, beside shoal) and judge them");
  node->add_flag("--quick", a.quick,
                 "fewer sizes, shorter timings, 10 s burn-in (about a minute in all)");
  node->add_option("--tests", a.tests,
                   "tests to run, comma-separated: gemm,hbm,pcie,p2p,nccl,burnin or all");
  node->add_option("--burn-in", a.burn_in_s,
                   "seconds of sustained GEMM (default 60; quick 10; 0: none)");
  node->add_option("--nccl-max", a.nccl_max,
                   "largest NCCL message (default 8G; capped by free GPU memory)");
  node->add_option("--timeout", a.timeout_s,
                   "stop the node tests after this many seconds (default 1200)");
  node->add_option("--binary", a.binary,
                   "the shoal-bench-node to run (default: beside shoal, or $SHOAL_BENCH_NODE)");
  node->add_flag(
      "--simulated", a.simulated,
      "measure nothing: report the catalogue's expectations for --model (hosts without GPUs)");
  node->add_option(
      "--simulated-fail", a.simulated_fail,
      "with --simulated: figures of these GPUs' tests below the pass mark (gpu3:gemm,...)");
  node->add_option(
      "--gpus", a.gpus,
      "with --simulated: GPUs to report (default: $CUDA_VISIBLE_DEVICES's count, else 8)");
  CLI::App* report = app.add_subcommand(
      "report",
      "judge saved results again: a report written by --out, or shoal-bench-node's output");
  report->add_option("file", a.file, "the saved file")->required();
  for (CLI::App* sub : {node, report}) {
    sub->add_flag("--json", a.json, "print the report as JSON");
    sub->add_option("--out", a.out, "also write the report as JSON to this file");
    sub->add_option("--model", a.model,
                    "judge every GPU as this catalogue model (default: by the driver's name)");
    sub->add_option("--nccl-min-busbw", a.nccl_min_busbw_gbps,
                    "NCCL bus bandwidth floor in GB/s (the only expectation for multi-node NCCL)");
    sub->add_flag("--outliers-fail", a.outliers_fail,
                  "outliers among identical GPUs fail instead of being flagged");
  }
  if (int code = ParseApp(app, raw, "shoal bench"); code >= 0) return code;
  // Checked before the node tests run, not after minutes of them.
  auto lookup = acceptance::CatalogLookup(a.model);
  if (!lookup.ok()) {
    std::cerr << "shoal bench: --model: " << lookup.status().message() << "\n";
    return 2;
  }
  if (node->parsed() && a.simulated) return RunSimulated(a, *lookup);
  if (!a.simulated_fail.empty() || a.gpus != 0) {
    std::cerr << "shoal bench: --simulated-fail and --gpus go with --simulated\n";
    return 2;
  }
  if (node->parsed()) return RunNodeTests(a, *lookup);
  return JudgeFile(a, *lookup);
}

}  // namespace shoal::cli
