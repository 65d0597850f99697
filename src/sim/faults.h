// Faults in simulation (`shoal sim --faults`): nodes that fail and come back,
// heartbeats that stop for a while, GPUs that fail (XID) or run slow, and
// controller restarts, drawn from a seeded random process so that every
// policy of one run meets the same faults at the same times.
//
// The simulator meets each fault as `shoal server` does (docs/sim.md#faults):
// a node silent for longer than the node timeout is marked down and its jobs
// are requeued once its agent has surely stopped them (the fence); a GPU that
// fails kills what runs on it and drains its node until it is repaired; while
// the controller restarts nothing is scheduled. A job that is stopped by a
// fault loses the work since its last checkpoint.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "core/time.h"
#include "sched/snapshot.h"

namespace shoal::sim {

struct FaultModel {
  // Rates are per unit (node, GPU, controller) and per day; each unit's
  // faults arrive as a Poisson process. Durations are means of exponential
  // draws.
  double node_fail_per_day = 0;  // a node crashes: its jobs stop at once
  Duration node_repair = std::chrono::hours(4);
  double heartbeat_loss_per_day = 0;  // a node goes silent but keeps running
  Duration heartbeat_gap = std::chrono::seconds(60);
  double gpu_xid_per_day = 0;  // a GPU fails: its jobs crash, its node drains
  Duration gpu_repair = std::chrono::hours(24);
  double gpu_slow_per_day = 0;  // a GPU runs slow (throttled): its jobs run at slow_factor
  double slow_factor = 0.5;
  Duration slow_for = std::chrono::hours(6);
  double controller_restart_per_day = 0;  // the controller: nothing is scheduled while it is down
  Duration controller_down = std::chrono::seconds(60);
  // Jobs save their progress after every checkpoint_every of work; a fault
  // loses what came after the last save. 0: they save only when preempted.
  Duration checkpoint_every = std::chrono::hours(1);
  // The server's own timings (server::ControllerConfig's defaults): a node
  // silent for node_timeout is down; its requeueable jobs go back to the
  // queue node_timeout + kill_grace + fence_margin after it was last heard.
  Duration node_timeout = std::chrono::seconds(30);
  Duration kill_grace = std::chrono::seconds(30);
  Duration fence_margin = std::chrono::seconds(5);

  bool Any() const {
    return node_fail_per_day > 0 || heartbeat_loss_per_day > 0 || gpu_xid_per_day > 0 ||
           gpu_slow_per_day > 0 || controller_restart_per_day > 0;
  }
  // From a node's last heartbeat to its jobs' return to the queue.
  Duration Fence() const { return node_timeout + kill_grace + fence_margin; }
  // When the controller marks down a node silent since `since`: once it has
  // been silent for longer than the node timeout, as the server counts it.
  Time DownAt(Time since) const { return since + node_timeout + Duration(1); }
};

// "node-fail=1%/day,node-repair=4h,gpu-xid=0.1%/day,checkpoint=30m": keys as
// FaultModel's fields with dashes; a rate is a count or a percentage per
// hour, day (the default) or week ("2/week", "0.5%", "0.01/h"); a duration
// as ParseDuration takes it ("90s", "4h"). "none": no faults.
Result<FaultModel> ParseFaultModel(std::string_view text);
// The model as ParseFaultModel reads it back, naming only the kinds that occur.
std::string FormatFaultModel(const FaultModel& m);

struct Fault {
  enum class Kind : uint8_t { kNodeFail, kHeartbeatLoss, kGpuXid, kGpuSlow, kControllerRestart };
  Time at{};
  Kind kind = Kind::kNodeFail;
  uint32_t node = 0;  // inventory index; kNodeFail, kHeartbeatLoss, kGpuXid, kGpuSlow
  int gpu = 0;        // kGpuXid, kGpuSlow
  Duration lasts{0};  // how long the node, GPU or controller stays out (or slow)
};

std::string_view FaultKindName(Fault::Kind kind);

// The faults of one run, in time order, drawn as they are asked for: each
// kind is one Poisson process over all its units (the rate times the
// units), and each fault picks its unit uniformly. Faults that hit a unit
// already out are the simulator's to ignore, so the rates are per unit of
// time whether up or not.
class FaultSource {
 public:
  // `gpus_per_node`: each node's GPU count, by inventory index.
  FaultSource(const FaultModel& model, const std::vector<int>& gpus_per_node, uint64_t seed,
              Time start);
  // A fixed list instead (tests): handed out in time order.
  explicit FaultSource(std::vector<Fault> scripted);

  // When the next fault comes; kTimeNever when none will.
  Time NextAt() const;
  Fault Pop();

 private:
  struct Process {
    Fault::Kind kind;
    double per_second = 0;  // over all its units
    Duration mean_length{0};
    Time next = kTimeNever;
  };
  void Draw(Process& p, Time after);
  Process* Earliest();
  const Process* Earliest() const;

  Rng rng_{1};
  std::vector<Process> processes_;
  std::vector<uint32_t> gpu_owner_;     // a node per GPU of the cluster, to pick a GPU uniformly
  std::vector<size_t> node_first_gpu_;  // each node's first GPU in gpu_owner_
  std::vector<Fault> scripted_;
  size_t next_scripted_ = 0;
  bool is_scripted_ = false;
};

// What the faults of a run did.
struct FaultStats {
  int node_failures = 0;
  int heartbeat_losses = 0;       // of which the node was marked down (silent past the timeout):
  int heartbeat_losses_down = 0;  // the others cost nothing
  int gpu_failures = 0;
  int slow_gpus = 0;
  int controller_restarts = 0;
  int ignored = 0;   // hit a node, GPU or controller already out
  int requeues = 0;  // jobs a fault stopped and sent back to the queue
  // GPU-seconds that jobs stopped by a fault held after their last
  // checkpoint (work lost, and time held while their node was being fenced).
  double lost_gpu_s = 0;
  // GPU-seconds that no job could use: GPUs of nodes out, failed GPUs.
  double out_of_service_gpu_s = 0;
};

// The state that faults give the cluster's nodes, GPUs and controller: what
// the scheduler is told (statuses(), as the controller would know it) and
// what is true (a node may be out before the controller notices). The
// simulator drives it in time order and does what it means for the jobs.
class FaultState {
 public:
  FaultState(const FaultModel& model, const sched::Inventory& inv);

  // A fault begins at `now`. False: it is ignored (its node, GPU or the
  // controller is out already, or a heartbeat gap the timeout absorbs);
  // counted either way.
  bool Begin(const Fault& f, Time now);
  // The controller marks a node down (the node timeout after it was last heard).
  void Detected(sched::NodeIndex n);
  // A node is back (repaired, or heard again) and up.
  void Back(sched::NodeIndex n, Time now);
  void Repaired(sched::NodeIndex n, int gpu, Time now);
  void Fast(sched::NodeIndex n, int gpu);
  // The run ends: what is still out counts as out of service until now.
  void End(Time now);

  // Crashed or silent: nothing runs or starts there (the controller may not know yet).
  bool Out(sched::NodeIndex n) const { return nodes_[n].out != Node::Out::kNo; }
  bool Crashed(sched::NodeIndex n) const { return nodes_[n].out == Node::Out::kCrashed; }
  Time OutSince(sched::NodeIndex n) const { return nodes_[n].since; }
  uint64_t SlowGpus(sched::NodeIndex n) const { return nodes_[n].slow_gpus; }
  Time controller_up() const { return controller_up_; }
  const std::vector<sched::NodeStatus>& statuses() const { return statuses_; }
  // Whether statuses() changed since this was last asked.
  bool TakeStatusesChanged() { return std::exchange(statuses_changed_, false); }
  const FaultModel& model() const { return model_; }
  FaultStats& stats() { return stats_; }
  const FaultStats& stats() const { return stats_; }

 private:
  struct Node {
    enum class Out : uint8_t { kNo, kCrashed, kSilent } out = Out::kNo;
    bool detected = false;
    uint64_t failed_gpus = 0;
    uint64_t slow_gpus = 0;
    Time since{};  // out since (last heard)
  };
  void Refresh(sched::NodeIndex n);

  FaultModel model_;
  const sched::Inventory& inv_;
  std::vector<Node> nodes_;
  std::vector<sched::NodeStatus> statuses_;
  bool statuses_changed_ = false;
  std::vector<std::pair<uint64_t, Time>> failed_since_;  // (node << 8 | gpu, since), few
  Time controller_up_ = kTimeZero;
  FaultStats stats_;
};

}  // namespace shoal::sim
