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
  JobId id;
  const JobSpec* spec =
      nullptr;  // optional: used for explanations and to recompile a stale request
  Request request;
  Time submit{};                   // when it was submitted (age)
  int account = -1;                // index into Snapshot::accounts; -1: none
  double qos_factor = 0;           // 0..1, from the job's QoS
  int64_t admin_priority = 0;      // > 0: replaces the computed priority
  double attained_gpu_s = 0;       // GPU-seconds of service received so far
  double oracle_remaining_s = -1;  // simulation only: true remaining run time; < 0 when unknown
  // How fast it runs on each GPU model, by inventory model index (only ratios
  // matter; 0: it cannot run there); null: not known. Read by speed-aware
  // policies (sched/speed.h).
  std::shared_ptr<const std::vector<double>> model_speed;
  // What each of its GPUs is expected to draw, in watts (its history, or
  // its power cap, whichever is lower); 0: each GPU's rated power. Read
  // only where the cluster has power budgets (sched/power.h).
  double gpu_power_w = 0;
  uint64_t array_id = 0;      // tasks of one job array share it; 0: not an array task
  int array_max_running = 0;  // tasks of the array that may run at once; 0: no limit
  int qos = -1;               // index into Snapshot::qos; -1: none
  // Index into Snapshot::reservations of the reservation it asked for; -1:
  // none. `reservation_gone`: it asked for one that no longer exists.
  int reservation = -1;
  bool reservation_gone = false;

  // Pending jobs.
  // Whether `request` can ever run on the inventory it was compiled for
  // (CheckSatisfiable), when the driver knows it already; null: the pass
  // finds out (once per request shape and pass). The simulator sets it when
  // a job joins the queue, so that a deep queue is not hashed at every pass.
  std::shared_ptr<const Status> satisfiable;
  bool held = false;
  std::optional<Time> begin_time;
  const std::vector<Dependency>* dependencies = nullptr;
  bool dependency_any = false;  // one satisfied dependency is enough (Slurm's ?)
  // --dependency=singleton: another job of the user with this name runs (or
  // waits with an earlier id); the driver decides it.
  bool singleton_blocked = false;
  Time queued_since{};  // when it last became pending

  // Running jobs.
  const Allocation* allocation = nullptr;
  Time start{};
  Time expected_end{};  // when the scheduler may count on it being gone (start + time limit)
  bool preemptible = false;
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
};

// Decays usage with a half-life: usage * 2^(-elapsed / half_life), as Slurm's
// PriorityDecayHalfLife does.
double DecayUsage(double usage, Duration elapsed, Duration half_life);

}  // namespace shoal::sched
