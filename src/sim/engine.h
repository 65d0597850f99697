// The trace-driven simulator (`shoal sim`): a discrete-event simulation on a
// virtual clock that drives the real scheduler (sched::Schedule) with the
// jobs of a trace, and checks the cluster's invariants after every event.
//
// Two modes:
//  - replay: jobs arrive at their trace times and run for their trace
//    durations; the scheduler sees only the time limits the chosen estimate
//    gives. Preempted jobs are requeued and pay a restart cost. Faults
//    (sim/faults.h), when asked for, stop nodes, GPUs and the controller.
//  - fill (the FGD methodology, for the Alibaba GPU-sharing trace): no
//    time; tasks arrive in seeded random order, with random copies of the
//    trace's tasks appended until arrived GPU demand reaches fill_target
//    times the cluster's GPUs; each is placed as it arrives or dropped.
//
// A violated invariant stops the run with an error that names the seed.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/status.h"
#include "core/time.h"
#include "sched/policy.h"
#include "sim/faults.h"
#include "sim/inputs.h"
#include "trace/trace.h"

namespace shoal::sim {

enum class Mode { kReplay, kFill };

struct Progress {
  std::string policy;
  Time now{};
  size_t finished = 0;
  size_t total = 0;
  size_t pending = 0;
  size_t running = 0;
};

struct SimOptions {
  Mode mode = Mode::kReplay;
  uint64_t seed = 1;
  LimitModel limits;
  Duration restart_cost = std::chrono::seconds(30);  // lost on every restart after preemption
  double fill_target = 1.3;
  Duration sample_every = std::chrono::minutes(10);
  Duration usage_half_life = std::chrono::hours(24 * 7);
  bool check_invariants = true;
  int full_check_every = 1000;  // events between full recomputations of the ledger
  // Passes between those that say why every pending job waits (and have the
  // reasons checked); the others end once nothing more can start
  // (sched::Snapshot::explain). 1: every pass explains.
  int explain_every = 1000;
  // Called about once a second of wall time when a wall clock is given.
  std::function<void(const Progress&)> progress;
  const Clock* wall_clock = nullptr;
  // Where plugins come from; null: sched::BuiltinRegistry().
  const sched::Registry* registry = nullptr;
  // Replay: the faults to run through, drawn with `seed` (none by default).
  FaultModel faults;
  // Replay: these faults instead of drawn ones (`faults` still gives the
  // timeouts and checkpoints); for tests.
  std::vector<Fault> scripted_faults;
};

struct JobRecord {
  std::string name;
  std::string account;
  int gpus = 0;
  double gpu_equivalents = 0;
  Time submit{};
  Time first_start = kTimeNever;
  Duration waited{0};  // pending in all, the first wait and every wait after a preemption
  Time end = kTimeNever;
  Duration duration{0};  // true run time on the reference GPU
  JobState state = JobState::kPending;
  int restarts = 0;
  int nodes = 0;   // nodes of its first run
  int leaves = 0;  // leaf switches those nodes sit under
};

struct UtilSample {
  Time at{};
  double allocated_gpus = 0;
  double fragmented_gpus = 0;  // free GPU capacity the workload mix cannot use (FGD's measure)
  // Expected draw in watts: running jobs' GPUs at their rated power (or cap),
  // everything else idle (the power budgets' own count); 0 when no GPU has a rated power.
  double power_w = 0;
  int pending = 0;
  int running = 0;
};

// Tasks dropped in fill mode, by kind ("CPU only", "shared GPU", "1 GPU", "2 GPUs", ...).
struct DroppedKind {
  std::string kind;
  int tasks = 0;
  double gpus = 0;
};

struct FillPoint {
  double arrived = 0;     // arrived GPU demand / cluster GPUs
  double allocated = 0;   // allocated GPUs / cluster GPUs
  double fragmented = 0;  // fragmented GPUs / cluster GPUs
  int arrived_tasks = 0;
  int failed_tasks = 0;
};

struct SimResult {
  std::string policy;
  std::string policy_description;
  Mode mode = Mode::kReplay;
  uint64_t seed = 0;
  int cluster_gpus = 0;
  int cluster_nodes = 0;
  double peak_power_w = 0;  // the cluster with every GPU at its rated power
  std::vector<JobRecord> jobs;
  std::vector<UtilSample> samples;
  std::vector<FillPoint> fill;
  std::vector<DroppedKind> dropped_at_full;  // fill mode: what did not fit by 100 % arrived demand
  int64_t events = 0;
  int64_t passes = 0;
  int64_t preemptions = 0;
  int64_t backfilled = 0;
  // GPU-seconds held by jobs, and of them the restart cost paid after a
  // preemption or a fault (what goodput leaves out besides faults' losses).
  double allocated_gpu_s = 0;
  double restart_gpu_s = 0;
  bool faults_on = false;
  std::string fault_model;  // FormatFaultModel, when faults_on
  FaultStats faults;
  double wall_seconds = 0;      // when a wall clock was given
  double schedule_seconds = 0;  // of which inside Schedule()
  std::vector<std::string> notes;
};

Result<SimResult> Simulate(const Cluster& cluster, const trace::Trace& trace,
                           const sched::PolicyParams& policy, const SimOptions& options);

}  // namespace shoal::sim
