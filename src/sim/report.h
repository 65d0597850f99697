// What a simulation tells: job completion and queueing times (overall and by
// job size), makespan, GPU utilisation over time, fragmentation, fairness
// across accounts; or, in fill mode, GPU allocation against arrived demand.
// Rendered as a readable side-by-side table, JSON or CSV.
#pragma once

#include <string>
#include <vector>

#include "sim/engine.h"

namespace shoal::sim {

struct Stat {
  int count = 0;
  double mean = 0;
  double median = 0;
  double p99 = 0;
};

// Mean, median and 99th percentile (nearest rank) of `values`.
Stat Describe(std::vector<double> values);

struct SizeClass {
  std::string label;  // "1", "2-4", "5-8", "9-32", "33+"
  Stat jct_s;
  Stat queue_s;
};

struct AccountSummary {
  std::string account;
  int jobs = 0;
  double mean_jct_s = 0;
  double mean_slowdown = 0;
  double gpu_hours = 0;
};

struct Summary {
  std::string policy;
  std::string description;
  Mode mode = Mode::kReplay;
  // Replay.
  int jobs = 0;
  int completed = 0;
  int timeouts = 0;
  Stat jct_s;
  Stat queue_s;
  Stat slowdown;  // completion time / true run time
  std::vector<SizeClass> by_size;
  double makespan_s = 0;
  double utilisation = 0;    // mean allocated GPUs / cluster GPUs over the run
  double fragmentation = 0;  // mean fragmented GPUs / free GPUs, where any were free
  double pending_mean = 0;   // jobs waiting, over the run's samples (the backlog)
  int pending_max = 0;
  // Expected draw (docs/power.md), when the GPUs have ratings: the mean and
  // the highest sample, the cluster's peak, and the energy over the makespan.
  double power_mean_w = 0;
  double power_max_w = 0;
  double power_peak_w = 0;
  double energy_mwh = 0;
  std::vector<AccountSummary> accounts;
  double jain_fairness = 0;  // Jain's index over the accounts' mean slowdowns (1 is fair)
  int multi_node_jobs = 0;
  double leaves_per_multi_node_job = 0;  // leaf switches they span, on average
  double nodes_per_multi_node_job = 0;
  // GPU-hours held by jobs, and the share of them that went to work the jobs
  // kept: not to restart costs, nor to work a fault undid.
  double allocated_gpu_h = 0;
  double goodput = 0;
  double restart_gpu_h = 0;
  bool faults_on = false;
  std::string fault_model;
  FaultStats faults;
  // Fill.
  double allocation_at_full = 0;     // allocated / GPUs when arrived demand first reaches 100 %
  double fragmentation_at_full = 0;  // fragmented / GPUs then
  int failed_at_full = 0;
  // The run.
  int64_t events = 0;
  int64_t passes = 0;
  int64_t preemptions = 0;
  int64_t backfilled = 0;
  double wall_s = 0;
  double schedule_s = 0;
};

Summary Summarize(const SimResult& r);

struct ReportContext {
  std::string cluster;  // path or name
  std::string trace;
  int gpus = 0;
  int nodes = 0;
  std::string limits;  // time-limit estimate
  uint64_t seed = 0;
  double peak_rss_mib = 0;  // of the whole process, when known
};

// A readable report with the policies side by side.
std::string RenderTable(const ReportContext& ctx, const std::vector<SimResult>& results);
std::string RenderJson(const ReportContext& ctx, const std::vector<SimResult>& results);
// One row per policy with the summary figures.
std::string RenderCsv(const ReportContext& ctx, const std::vector<SimResult>& results);
// The utilisation time series (replay) or allocation curve (fill) of every policy.
std::string RenderSeriesCsv(const std::vector<SimResult>& results);

// A one-line chart of values in [0, 1] with `width` cells.
std::string Sparkline(const std::vector<double>& values, int width);

}  // namespace shoal::sim
