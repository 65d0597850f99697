// shoal bench: measure this node's GPUs, memory, links and NCCL against what
// they should do (`shoal bench node`), or judge saved results again
// (`shoal bench report FILE`). The CUDA tests live in shoal-bench-node, a
// separate binary beside this one, so that `shoal` itself never needs CUDA.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bench/node_runner.h"
#include "bench/report.h"
#include "cli/app.h"
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
};

// Where burn-in telemetry comes from. NVML is read by the agent's GPU
// provider (dlopen of libnvidia-ml.so.1); until it is wired here, nothing is
// sampled and the report says so.
bench::TelemetryHook NodeTelemetry() {
  return nullptr;
}

int Judge(bench::NodeResults raw, std::vector<bench::TelemetrySample> samples,
          const bench::SpecLookup& lookup, const BenchArgs& a) {
  bench::EvaluateOptions opts;
  opts.spec_for = lookup;
  opts.nccl_min_busbw_gbps = a.nccl_min_busbw_gbps;
  opts.outliers_fail = a.outliers_fail;
  opts.samples = std::move(samples);
  const bench::NodeReport report = bench::Evaluate(std::move(raw), opts);
  const std::string json = bench::ReportToJson(report);
  if (!a.out.empty()) {
    std::ofstream f(a.out);
    f << json << "\n";
    if (!f) {
      std::cerr << "shoal bench: cannot write " << a.out << "\n";
      return 1;
    }
  }
  std::cout << (a.json ? json + "\n" : bench::FormatReport(report));
  return report.passed ? 0 : 1;
}

int RunNodeTests(const BenchArgs& a, const bench::SpecLookup& lookup) {
  bench::NodeRunOptions run;
  run.binary = a.binary;
  run.timeout_s = a.timeout_s;
  run.telemetry = NodeTelemetry();
  run.node.quick = a.quick;
  run.node.burn_in_s = a.burn_in_s;
  auto tests = bench::ParseTestList(a.tests);
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
  auto result = bench::RunNode(run);
  if (!result.ok()) {
    std::cerr << "shoal bench: " << result.status().message() << "\n";
    return 1;
  }
  return Judge(std::move(result->results), std::move(result->samples), lookup, a);
}

int JudgeFile(const BenchArgs& a, const bench::SpecLookup& lookup) {
  std::ifstream in(a.file);
  if (!in) {
    std::cerr << "shoal bench: cannot read " << a.file << "\n";
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto saved = bench::LoadSavedResults(text.str());
  if (!saved.ok()) {
    std::cerr << "shoal bench: " << a.file << ": " << saved.status().message() << "\n";
    return 1;
  }
  return Judge(std::move(saved->raw), std::move(saved->samples), lookup, a);
}

}  // namespace

int RunBench(const std::vector<std::string>& raw) {
  BenchArgs a;
  CLI::App app{"Measure GPUs, memory, links and NCCL against what they should do.", "shoal bench"};
  app.require_subcommand(1);
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
  auto lookup = bench::CatalogLookup(a.model);
  if (!lookup.ok()) {
    std::cerr << "shoal bench: --model: " << lookup.status().message() << "\n";
    return 2;
  }
  if (node->parsed()) return RunNodeTests(a, *lookup);
  return JudgeFile(a, *lookup);
}

}  // namespace shoal::cli
