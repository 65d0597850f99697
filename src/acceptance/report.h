// A node's results judged: each figure against what its GPU model should do
// (expect.h), wrong results and broken tests as failures, outliers among
// identical GPUs flagged, burn-in telemetry checked. The report is what
// `shoal bench` prints and what the cluster stores as a node's last result;
// its JSON holds the raw results too, so it can be judged again.
//
// Plain values; the functions are thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "acceptance/expect.h"
#include "acceptance/outliers.h"
#include "acceptance/results.h"
#include "acceptance/telemetry.h"
#include "catalog/gpus.h"
#include "core/status.h"

namespace shoal::acceptance {

inline constexpr std::string_view kReportSchema = "shoal-bench-report/1";

enum class Verdict {
  kPass,  // met its expectation
  kFail,  // below its expectation, a wrong result, a broken test, a hardware fault
  kFlag,  // passed, but an outlier among identical GPUs
  kInfo,  // measured, nothing to compare with
};
std::string_view VerdictName(Verdict v);  // "pass", "fail", "flag", "info"

// One judged figure.
struct Check {
  TestKind test = TestKind::kGemm;
  std::string metric;
  int gpu = -1;  // -1: the whole node
  int peer = -1;
  int64_t size_bytes = 0;
  double value = 0;
  std::string unit;
  std::string model;  // catalogue model it was judged as; "" when unknown
  std::optional<Expectation> expectation;
  Verdict verdict = Verdict::kInfo;
  bool outlier = false;
  std::string reason;  // why it failed or was flagged: a sentence with the figures
};

// About three significant figures, fixed-point as nccl-tests prints them:
// "771 TFLOP/s", "55.2 GB/s", "2.11 us".
std::string FormatFigure(double value, std::string_view unit);

// "gpu3 gemm bf16", "gpu0->gpu1 p2p bw", "node nccl all_reduce".
std::string CheckName(const Check& c);

struct NodeReport {
  NodeResults raw;
  std::vector<TelemetrySample> samples;  // as sampled during the run, for judging again
  std::vector<std::string> models;       // per raw.gpus entry: catalogue model, "" when unknown
  std::vector<Check> checks;
  std::vector<GpuTelemetry> telemetry;  // over the burn-in window
  std::vector<std::string> notes;
  bool passed = false;

  int Count(Verdict v) const;
  // One line per failure ("gpu3 gemm bf16: 512 TFLOP/s, below 656 ..."), for
  // a drained node's reason and the end of the table.
  std::vector<std::string> Failures() const;
  // The failures joined and cut to `max_chars`; "passed" when none.
  std::string Summary(size_t max_chars = 400) const;
};

// The catalogue entry a GPU is judged as; null when unknown.
using SpecLookup = std::function<const catalog::GpuSpec*(const GpuInfo&)>;

// Looks GPUs up in the catalogue by the name and memory the driver reports,
// or, when `model` is not empty, judges every GPU as that catalogue model.
// Fails when `model` is not in the catalogue.
Result<SpecLookup> CatalogLookup(const std::string& model);

struct EvaluateOptions {
  SpecLookup spec_for;  // null: no GPU is known, nothing is judged
  OutlierOptions outliers;
  bool outliers_fail = false;            // outliers fail instead of being flagged
  double nccl_min_busbw_gbps = 0;        // see ExpectContext
  std::vector<TelemetrySample> samples;  // sampled while the node test ran
};

NodeReport Evaluate(NodeResults raw, const EvaluateOptions& options);

// Flags outliers among identical GPUs over several reports (the nodes of a
// cluster; Evaluate already does it within one node) and updates `passed`.
void FlagOutlierGpus(std::span<NodeReport* const> reports, const OutlierOptions& options,
                     bool outliers_fail);

// The human-readable report: tables by test, the NCCL sizes, the P2P matrix,
// telemetry, then failures, flags and notes.
std::string FormatReport(const NodeReport& report);

std::string ReportToJson(const NodeReport& report, int indent = 2);
Result<NodeReport> ParseReport(std::string_view text);

// What `shoal bench report FILE` judges: the raw results and samples of a
// saved report, or the node binary's raw output.
struct SavedResults {
  NodeResults raw;
  std::vector<TelemetrySample> samples;
};
Result<SavedResults> LoadSavedResults(std::string_view text);

}  // namespace shoal::acceptance
