// The scheduler's whole input besides the time and the policy: the cluster as
// it is at one instant (STYLE habit 1).
//
// A Snapshot is a view: JobInfo points at specs, dependencies and allocations
// owned by the caller, which must outlive the Schedule() call. Nothing in it
// is modified by the scheduler.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/job.h"
#include "core/time.h"
#include "sched/bitset.h"
#include "sched/gittins.h"
#include "sched/inventory.h"
#include "sched/request.h"

namespace shoal::sched {

// A node's state and which of its GPUs are healthy; parallel to Inventory::nodes().
struct NodeStatus {
  NodeState state = NodeState::kUp;
  uint64_t unhealthy_gpus = 0;
};

struct AccountInfo {
  std::string name;
  double shares = 1.0;
  double usage_gpu_s = 0;  // decayed GPU-seconds (see DecayUsage)
  int max_gpus = 0;        // 0: no limit
};

// A QoS's limits and whom its jobs may preempt; Snapshot::qos is indexed by JobInfo::qos.
struct QosInfo {
  std::string name;
  int max_gpus_per_job = 0;  // 0: no limit
  int max_gpus_per_user = 0;
  int max_jobs_per_user = 0;
  Duration max_time{0};
  uint64_t preempts = 0;  // bit q: its jobs may preempt running jobs of QoS q
};

// An admin's reservation (core/cluster.h): from `start` to `end`, `nodes`
// serve only the jobs that ask for it. Nodes are inventory indices.
struct ReservationInfo {
  std::string name;
  Time start{};
  Time end{};
  NodeBitset nodes;
};

struct JobInfo {
  // The fields a pass reads for every pending job come first, in as few
  // cache lines as they fit (a deep queue is read at every pass); the
  // request, most of which only jobs that reach placement need, comes last.
  JobId id;
  Time submit{};  // when it was submitted (age)
  // Pending jobs with the same nonzero shape_class have requests of the
  // same shape (Request::SameShape), when the driver knows; 0: not known.
  // A pass then remembers what did not fit by class, without hashing and
  // comparing requests, which in a deep queue is most of its work.
  uint32_t shape_class = 0;
  int account = -1;  // index into Snapshot::accounts; -1: none
  int qos = -1;      // index into Snapshot::qos; -1: none
  // Index into Snapshot::reservations of the reservation it asked for; -1:
  // none. `reservation_gone`: it asked for one that no longer exists.
  int reservation = -1;
  bool reservation_gone = false;
  bool held = false;            // pending jobs
  bool dependency_any = false;  // one satisfied dependency is enough (Slurm's ?)
  // --dependency=singleton: another job of the user with this name runs (or
  // waits with an earlier id); the driver decides it.
  bool singleton_blocked = false;
  int array_max_running = 0;  // tasks of the array that may run at once; 0: no limit
  uint64_t array_id = 0;      // tasks of one job array share it; 0: not an array task
  const std::vector<Dependency>* dependencies = nullptr;  // pending jobs
  // Pending jobs: whether `request` can ever run on the inventory it was
  // compiled for (CheckSatisfiable), when the driver knows it already; null:
  // the pass finds out (once per request shape and pass). The simulator sets
  // it when a job joins the queue, so that a deep queue is not hashed at every pass.
  std::shared_ptr<const Status> satisfiable;
  std::optional<Time> begin_time;  // pending jobs
  double attained_gpu_s = 0;       // GPU-seconds of service received so far
  double qos_factor = 0;           // 0..1, from the job's QoS
  int64_t admin_priority = 0;      // > 0: replaces the computed priority
  double oracle_remaining_s = -1;  // simulation only: true remaining run time; < 0 when unknown
  // What each of its GPUs is expected to draw, in watts (its history, or
  // its power cap, whichever is lower); 0: each GPU's rated power. Read
  // only where the cluster has power budgets (sched/power.h).
  double gpu_power_w = 0;
  // How fast it runs on each GPU model, by inventory model index (only ratios
  // matter; 0: it cannot run there); null: not known. Read by speed-aware
  // policies (sched/speed.h).
  std::shared_ptr<const std::vector<double>> model_speed;
  Time queued_since{};  // pending jobs: when it last became pending
  const JobSpec* spec =
      nullptr;  // optional: used for explanations and to recompile a stale request

  // Running jobs.
  const Allocation* allocation = nullptr;
  Time start{};
  Time expected_end{};  // when the scheduler may count on it being gone (start + time limit)
  bool preemptible = false;

  Request request;
};

struct Snapshot {
  std::shared_ptr<const Inventory> inventory;
  std::vector<NodeStatus> nodes;  // empty: every node up and healthy
  std::vector<JobInfo> running;
  std::vector<JobInfo> pending;
  std::vector<AccountInfo> accounts;
  std::vector<QosInfo> qos;                   // at most kMaxQos
  std::vector<ReservationInfo> reservations;  // at most kMaxReservations
  // The states of the jobs that pending jobs depend on. A dependency on a job
  // missing here can never be satisfied.
  std::unordered_map<JobId, JobState> dependency_states;
  // Gittins indices from the service that recently completed jobs needed (see
  // gittins.h); the caller rebuilds it as jobs complete. Null: no history.
  std::shared_ptr<const GittinsTable> service_index;
  // False: the plan need not say why jobs wait. Plan::pending is then left
  // empty and the pass ends as soon as no later job in the order can start or
  // preempt, so that a deep queue blocked at its head costs little to
  // schedule; the starts and preemptions are those of an explained pass.
  // The simulator explains only the passes whose reasons it checks.
  bool explain = true;
  // Optional: the pending jobs (indices into `pending`, each once) in the
  // order a previous pass ranked them (Plan::ranked), newcomers after them.
  // The plan does not depend on it, but a pass whose jobs are still in this
  // order, as they mostly are from one pass to the next, sorts almost
  // nothing. Empty: the order of `pending` (and no Plan::ranked).
  std::vector<uint32_t> rank_hint;
  // How many of rank_hint's first jobs are, in that order, as a previous
  // pass ranked them, each unchanged since (the same JobInfo, compiled for
  // this inventory). Under a sort whose values are fixed while a job waits
  // (SortPlugin::FixedWhilePending) the pass then reads those jobs only as
  // it reaches them, merges the rest in, and checks the order of the jobs it
  // reaches (a pass that explains reaches them all). 0: the driver does not know.
  size_t rank_hint_ranked = 0;
  // Optional: how many pending jobs need no GPU or a share of one
  // (Request::NeedsWholeGpus false), when the driver keeps count; -1: it
  // does not. With 0, a pass that need not explain, on a cluster with no
  // whole GPU free and a policy that does not preempt, ends before ranking:
  // nothing can start whatever the order (Plan::ranked is then empty).
  int pending_not_whole_gpus = -1;
};

// Decays usage with a half-life: usage * 2^(-elapsed / half_life), as Slurm's
// PriorityDecayHalfLife does.
double DecayUsage(double usage, Duration elapsed, Duration half_life);

// What `gpus` GPUs held through the last `held` add to a decayed usage now:
// the integral of gpus * 2^(-age / half_life) over that time, so that usage
// accrued in steps (a server's ticks, a simulator's events) is the same
// wherever the steps fall. Undecayed (gpus * held) with no half-life.
double DecayedService(double gpus, Duration held, Duration half_life);

}  // namespace shoal::sched
