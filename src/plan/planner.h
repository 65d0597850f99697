// `shoal plan` as a function: a workload (training runs, inference services,
// general GPU shares) and constraints in, one cluster design per allowed GPU
// model out, side by side, with the cheapest and the fastest marked. A design
// that cannot meet the workload says what binds. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "plan/cluster.h"
#include "plan/inference.h"
#include "plan/model.h"
#include "plan/training.h"

namespace shoal::plan {

struct TrainingWorkload {
  std::string name = "training";
  ModelShape model;
  double tokens = 0;           // to train on
  std::optional<double> days;  // deadline; or
  std::optional<int> gpus;     // a fixed cluster size
  NumberFormat format = NumberFormat::kBf16;
  double global_batch_tokens = 0;  // tokens per step; 0: DefaultBatchTokens(model)
};

// Tokens per optimizer step when a workload does not say: 4 Mi below 200B
// parameters (Llama 3 70B and GPT-3 175B trained at 4M and 3.2M), 16 Mi above
// (Llama 3 405B's batch; arXiv 2407.21783 section 3.4.1).
double DefaultBatchTokens(const ModelShape& model);

struct InferenceWorkload {
  std::string name = "inference";
  ModelShape model;
  InferenceTarget target;
};

// "N GPUs of data analysis / fine-tuning jobs": a fixed count, or the demand
// of a job trace (what serves it 90 % of the time without queueing).
struct GeneralWorkload {
  std::string name = "general";
  int gpus = 0;
  // Where the count comes from: "given", or a trace's path. A workload file
  // may name a trace with gpus = 0; the caller reads it and fills `gpus`
  // with GpusForDemand (this library reads no files).
  std::string from;
};

struct Workload {
  std::string name = "workload";
  std::vector<TrainingWorkload> training;
  std::vector<InferenceWorkload> inference;
  std::vector<GeneralWorkload> general;
  std::vector<std::string> gpu_models;  // allowed; empty: the default set
  SiteConstraints site;
};

// The GPU models tried when a workload names none: current training parts.
std::vector<std::string> DefaultGpuModels();

// Parses a workload file (format in docs/plan.md); `origin` names it in errors.
Result<Workload> ParseWorkloadToml(std::string_view text, std::string_view origin);

// "15T", "4M", "1.5e12", "70B" -> a count.
Result<double> ParseCount(std::string_view text);

// A GPU count from a job trace's arrivals: the time-weighted 90th percentile
// of the GPUs its jobs would hold if none waited. `jobs` are (submit seconds,
// duration seconds, GPUs).
struct JobDemand {
  double submit_s = 0;
  double duration_s = 0;
  int gpus = 0;
};
int GpusForDemand(const std::vector<JobDemand>& jobs, double quantile = 0.9);

struct TrainingPlan {
  std::string name;
  std::string model;
  int layers = 0;  // the model's
  int gpus = 0;
  Layout layout;
  StepEstimate step;
  int64_t global_batch = 0;  // sequences, as rounded for the layout
  double tokens_per_s = 0;
  double days = 0;  // compute only
  CheckpointPlan checkpoints;
  double days_with_failures = 0;  // with checkpoint and failure overhead
  std::string sizing;             // why this many GPUs
};

struct InferencePlan {
  std::string name;
  std::string model;
  InferenceEstimate estimate;
  // On MIG slices, where those take less than the whole GPUs would (a
  // service that needs part of a GPU); the design then counts their GPUs.
  std::optional<MigServing> mig;
  int Gpus() const { return mig ? mig->gpus : estimate.gpus; }
};

struct Design {
  std::string gpu_model;
  bool feasible = false;
  std::string problem;  // what binds, when not feasible
  std::vector<TrainingPlan> training;
  std::vector<InferencePlan> inference;
  std::vector<GeneralWorkload> general;
  int gpus = 0;  // all workloads together
  ClusterDesign cluster;
  double longest_training_days = 0;  // with failures
  double energy_usd = 0;             // over the longest training run, or one year
  double total_usd = 0;              // capex + energy
  bool cheapest = false;
  bool fastest = false;
};

struct PlanResult {
  std::string workload;
  std::vector<Design> designs;
  int recommended = -1;  // the cheapest feasible design
};

// Plans every allowed GPU model. Fails (kUnsatisfiable) when no model can
// meet the workload, with each model's reason.
Result<PlanResult> PlanWorkload(const Workload& workload);

}  // namespace shoal::plan
