// Checks the training model against published, measured runs: the rows of
// data/compiled/published_training_runs.csv (Megatron-LM 2021,
// Megatron-Core on H100, MT-NLG, Llama 3, ...) and vTrain's measured
// Megatron-DeepSpeed iterations (data/vtrain/ground_truth_single.csv).
// The model's assumptions are global; a row contributes only what the run
// itself was (model, GPUs, the parallel sizes it reports, the software
// generation); what a row does not say is chosen by the same layout search
// the planner uses. Takes file contents, does no I/O; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "plan/training.h"

namespace shoal::plan {

struct ValidationRow {
  std::string group;  // "Narayanan2021_Table1", "vTrain", ...
  std::string label;  // model and size, e.g. "GPT-175B PTD on 384 x A100-SXM4-80GB"
  int line = 0;       // line in its file
  std::string gpu;
  int gpus = 0;
  std::string layout;        // the layout predicted (reported sizes plus searched knobs)
  double measured_s = 0;     // step (iteration) time, measured or derived from the row
  std::string measured_how;  // "measured", or how it was derived
  double predicted_s = 0;
  double error = 0;  // predicted / measured - 1
  // Published runs: the planner's own layout for the same run (its
  // software and precision kept, every parallel knob searched); searched_s
  // is 0 where none fits.
  std::string searched_layout;
  double searched_s = 0;
  double searched_error = 0;
  std::string searched_failure;  // why the search found none
  bool skipped = false;
  std::string skip_reason;
};

struct ValidationGroup {
  std::string group;
  int rows = 0;
  double mae = 0;    // mean of |error|
  double worst = 0;  // largest |error|
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  std::vector<ValidationGroup> groups;
  ValidationGroup published;  // all rows of the published-runs file
  // The published rows with the planner's own (searched) layouts. Not
  // vTrain's: it measured a sweep of layouts, good and bad, on purpose,
  // where a published run is the layout its authors tuned.
  ValidationGroup published_searched;
  ValidationGroup vtrain;
  ValidationGroup all;
  int worst = -1;  // index into rows of the largest |error|; -1 when none compared
  // Serving throughput checks, informational and kept apart from the targets.
  std::vector<ValidationRow> serving;
  ValidationGroup serving_summary;

  // Fills groups, published, published_searched, vtrain, all, worst and
  // serving_summary.
  void Summarise();
};

// Compares every row of published_training_runs.csv it can. Rows it cannot
// compare (a GPU outside the catalogue; no step time or throughput) are kept
// with skipped = true and the reason.
Result<std::vector<ValidationRow>> ValidatePublishedRuns(std::string_view csv_text);

// Compares the rows of vTrain's ground_truth_single.csv; `every` > 1 takes
// every n-th row (tests).
Result<std::vector<ValidationRow>> ValidateVtrain(std::string_view csv_text, int every = 1);

// Serving throughput against TensorRT-LLM's published maximum-throughput
// figures (data/compiled/inference_anchors.csv, rows "max-throughput"):
// informational, outside the training targets. Here measured_s and
// predicted_s hold tokens per second (throughput, not time).
Result<std::vector<ValidationRow>> ValidateInferenceAnchors(std::string_view csv_text);

// Splits one CSV line, honouring double quotes ("a, b" is one field).
std::vector<std::string> SplitCsvLine(std::string_view line);

}  // namespace shoal::plan
