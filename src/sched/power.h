// Power budgets within one scheduling pass (docs/power.md).
//
// A budget covers some nodes (a site, a row, a rack) and caps the power they
// may be expected to draw: every node's idle draw (Inventory: its own plus
// each GPU at the cluster's idle fraction of its rated power), and on top of
// it, for each GPU that a job holds, what the job is expected to draw there
// in place of the GPU's idle draw, in proportion to the job's share of the
// GPU. A job's draw per GPU is JobInfo::gpu_power_w (its history or its cap),
// else the GPU's rated power; never more than the rated power, which NVML
// enforces.
//
// The ledger is pure and belongs to one pass: the cycle charges the running
// jobs, asks before each start whether a budget would be crossed, and
// charges what it starts.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/time.h"
#include "sched/inventory.h"
#include "sched/plan.h"
#include "sched/request.h"
#include "sched/snapshot.h"

namespace shoal::sched {

class PowerLedger {
 public:
  explicit PowerLedger(const Inventory& inv);

  // False when the cluster has no budgets: then nothing needs asking.
  bool active() const { return !load_w_.empty(); }

  // `alloc`, drawing `gpu_w` per GPU (0: rated), joins the budgets
  // (`sign` +1) or leaves them (-1). A job that joins with an expected end
  // is counted as gone from then on by WhenFits.
  void Charge(JobId job, const Allocation& alloc, double gpu_w, int sign,
              Time expected_end = kTimeNever);

  // The first budget that starting `alloc` at `gpu_w` would take past its
  // cap; -1 when it crosses none.
  int Crossed(const Allocation& alloc, double gpu_w) const;

  // A job that waits because `alloc` at `gpu_w` would cross a budget: reason
  // power_budget, which budget and by how much, and when the running jobs'
  // expected ends would make room (kTimeNever, and says so, when even idle
  // nodes would not).
  PendingDecision Wait(JobId job, const Allocation& alloc, double gpu_w, Time now) const;

  // When `alloc` at `gpu_w` would fit under `budget`, counting the running
  // jobs as gone at their expected ends; kTimeNever when it never would.
  Time WhenFits(int budget, const Allocation& alloc, double gpu_w, Time now) const;

  // The nodes of every budget `alloc` at `gpu_w` would cross, or an empty
  // set when it crosses none: a placement elsewhere may still fit.
  NodeBitset CrossedNodes(const Allocation& alloc, double gpu_w) const;

  // EASY backfill over power. The first job of a backfill pass that waits
  // for power reserves what `alloc` at `gpu_w` needs at `at` (when the
  // running jobs' expected ends make room); a later job then starts only if
  // it ends by `at`, or if what it adds leaves the reserved job its room.
  void Reserve(const Allocation& alloc, double gpu_w, Time at);
  bool reserved() const { return reservation_.has_value(); }
  // Whether a job on `alloc` at `gpu_w` that ends by `end` keeps the
  // reservation; counts what it takes of the room when it does.
  bool KeepsReservation(const Allocation& alloc, double gpu_w, Time end);

  // Expected draw of each budget now, in watts (Inventory::power_budgets() order).
  const std::vector<double>& loads_w() const { return load_w_; }

  // What `alloc` at `gpu_w` adds to each budget, in watts.
  std::vector<double> Added(const Allocation& alloc, double gpu_w) const;

 private:
  struct Release {
    Time at;
    JobId job;
    std::vector<double> added;  // per budget
  };

  struct PowerReservation {
    Time at;
    std::vector<double> spare_w;  // per budget, left at `at` once the reserved job runs
  };

  const Inventory& inv_;
  std::vector<double> load_w_;
  std::vector<Release> releases_;
  std::optional<PowerReservation> reservation_;
};

// A job whose placement `crossing` would cross a budget, placed again off
// the nodes of the budgets crossed so far (three tries at most) with
// `place`: the first placement that crosses none, else nullopt.
std::optional<Allocation> PlaceUnderBudgets(
    const PowerLedger& ledger, const Request& req, const Allocation& crossing, double gpu_w,
    const std::function<std::optional<Allocation>(const Request&)>& place);

// An error when some budget would refuse `req` at `gpu_w` per GPU even with
// every node idle: one that covers every node the request may use, and
// whose idle draw plus the least the job could add (its GPUs on the nodes
// of lowest rating) is over its cap. Ok does not promise a fit.
Status CheckPowerFits(const Inventory& inv, const Request& req, double gpu_w);

// The first time from `from` at which `alloc` at `gpu_w` fits every budget,
// the snapshot's running jobs counted as gone at their expected ends;
// `from` without budgets. An error when some budget never has the room.
Result<Time> PowerStart(const Snapshot& snapshot, const Allocation& alloc, double gpu_w, Time from);

// What `alloc`, drawing `gpu_w` per GPU (0: rated), adds to its nodes' idle draw.
double AddedPower(const Inventory& inv, const Allocation& alloc, double gpu_w);

// What the whole cluster draws with nothing running: every node's idle
// draw. Counts every node, with or without budgets.
double IdleClusterPower(const Inventory& inv);

// Every GPU at its rated power and every node's own idle draw: the most the
// cluster can be expected to draw.
double PeakClusterPower(const Inventory& inv);

}  // namespace shoal::sched
