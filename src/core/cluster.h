// The cluster's hardware and its organisation: nodes, GPUs, network places,
// partitions and accounts (DESIGN.md, "Resource model").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal {

// A node may hold at most this many GPUs: allocations keep GPUs in a 64-bit mask.
inline constexpr int kMaxGpusPerNode = 64;
// GPU shares are counted in thousandths of a GPU, as Alibaba's GPU-sharing traces do.
inline constexpr int kMilliPerGpu = 1000;

enum class NodeState : uint8_t {
  kUp,        // accepts work
  kDraining,  // runs what it has, takes nothing new
  kDrained,   // empty and out of service until an admin resumes it
  kDown,      // not responding
};

std::string_view NodeStateName(NodeState state);
Result<NodeState> ParseNodeState(std::string_view text);

struct Gpu {
  int index = 0;
  std::string uuid;
  std::string model;  // e.g. "H100-SXM-80GB"
  int64_t memory_mib = 0;
  int nvlink_island = 0;  // GPUs of one island talk over NVLink/NVSwitch
  int numa_node = 0;
  int pcie_switch = 0;
  bool healthy = true;
  // What it may draw, in watts: its power limit as NVML enforces it, else
  // the catalogue's TDP for its model; 0: unknown (power budgets then count
  // nothing for it).
  double rated_w = 0;
  // The physical GPU, by its driver's index (what /dev/nvidiaN and NVML
  // count); -1: `index` (a node whose GPUs are all whole).
  int device = -1;
  // A MIG slice: a GPU instance of the physical GPU `device`, scheduled as
  // a GPU of its own. Its model is the GPU's with the profile after a '/'
  // ("H100-SXM-80GB/1g.10gb"), its UUID "MIG-...". Empty: a whole GPU.
  std::string mig_profile;
  int mig_gi = -1;  // GPU instance id
  int mig_ci = -1;  // compute instance id within it

  bool IsMigSlice() const { return !mig_profile.empty(); }
  int Device() const { return device >= 0 ? device : index; }
};

// Where a node sits in a two-level (leaf/spine) network tree.
struct NetworkPlace {
  std::string spine;
  std::string leaf;

  // Parses "spine1/leaf3" or "leaf3" (a single-spine tree).
  static Result<NetworkPlace> Parse(std::string_view text);
  std::string ToString() const;
};

// A node's last acceptance test (`shoal bench --cluster`), as an admin
// recorded it: whether it passed, the failures in one line, and when.
struct AcceptanceResult {
  bool passed = false;
  std::string summary;
  Time time{};
  std::vector<std::string>
      failures;      // one line each, with figures (at most kMaxAcceptanceFailures)
  uint64_t job = 0;  // the job that ran the tests; 0: not run as a job
  friend bool operator==(const AcceptanceResult&, const AcceptanceResult&) = default;
};
inline constexpr size_t kMaxAcceptanceFailures = 32;

struct Node {
  NodeId id;
  std::string name;
  std::string address;
  NodeState state = NodeState::kUp;
  std::string state_reason;
  int64_t cpu_milli = 0;  // CPUs in thousandths
  int64_t memory_mib = 0;
  std::vector<Gpu> gpus;
  std::vector<std::string> labels;      // "ib", "nvme", "rack=r12", ...
  std::vector<std::string> partitions;  // the partitions this node serves
  NetworkPlace place;
  std::optional<AcceptanceResult>
      acceptance;  // the last acceptance test; kept by the server, not the agent
  // The SHA-256 fingerprint of the certificate the node acts with (a TLS
  // cluster); kept by the server, not the agent. Empty: not joined yet.
  std::string credential;
  // The kernel's boot id as the agent last registered it
  // (/proc/sys/kernel/random/boot_id). A new one means the node rebooted and
  // nothing the server thought ran there survived. Empty: not reported.
  std::string boot_id;

  int GpuCount() const { return static_cast<int>(gpus.size()); }
};

// A node's name: 1 to 64 of letters, digits, '.', '_' and '-' (what the
// API's routes and a certificate's common name can both carry).
bool IsValidNodeName(std::string_view name);

struct Partition {
  std::string name;
  bool is_default = false;
  bool up = true;
  Duration max_time{0};                       // 0: no limit
  Duration default_time{0};                   // 0: max_time, or 1 day when there is no limit
  int max_nodes_per_job = 0;                  // 0: no limit
  int max_gpus_per_job = 0;                   // 0: no limit
  std::vector<std::string> allowed_accounts;  // empty: every account
  int priority_tier = 0;  // higher tiers are scheduled first and may preempt lower ones
  // Idle GPUs: a running job whose GPUs all stay under idle_util_pct for
  // idle_minutes (0: never) is flagged, and cancelled when idle_action is "cancel".
  double idle_util_pct = 5;
  int idle_minutes = 30;
  std::string idle_action = "notify";  // "notify" or "cancel"
  // A node that registers for the first time into such a partition joins
  // drained ("awaiting acceptance") until its acceptance test passes.
  bool require_acceptance = false;

  bool AllowsAccount(std::string_view account) const;
  // The time limit a job gets when it names none.
  Duration DefaultTimeLimit() const;
};

struct Account {
  std::string name;
  double shares = 1.0;  // fair-share weight against the other accounts
  int max_gpus = 0;     // GPUs the account may hold at once; 0: no limit
};

// A quality of service, as Slurm's QOS: a priority that enters the
// multifactor sort, limits on one job and on what one user's jobs of the QoS
// hold at once, and the QoS whose jobs its jobs may preempt (with a policy
// whose preempt plugin is `qos`). Jobs name one with --qos; a cluster with
// QoS gives a job that names none the default one.
struct Qos {
  std::string name;
  bool is_default = false;
  int priority = 0;           // the multifactor QoS factor is priority / the highest QoS priority
  int max_gpus_per_job = 0;   // 0: no limit (Slurm's MaxTRESPerJob=gres/gpu)
  int max_gpus_per_user = 0;  // held at once by one user's running jobs of this QoS
  int max_jobs_per_user = 0;  // running at once, per user (MaxJobsPerUser)
  Duration max_time{0};       // the longest time limit (MaxWall); 0: none
  std::vector<std::string> preempt;  // QoS whose running jobs this one's may preempt
};

// At most this many QoS and reservations: the scheduler keeps sets of them in 64-bit masks.
inline constexpr size_t kMaxQos = 64;
inline constexpr size_t kMaxReservations = 64;

// An admin's reservation of nodes for a time, as Slurm's: from `start` to
// `end`, `nodes` run only jobs that ask for the reservation (--reservation)
// and whose user or account it names; no other job starts there if it could
// still run when the reservation begins (by its time limit), which is how a
// maintenance window keeps backfill from crossing it.
struct Reservation {
  std::string name;
  Time start{};
  Time end{};
  std::vector<std::string> nodes;     // chosen when it is made
  std::vector<std::string> users;     // who may use it
  std::vector<std::string> accounts;  // and whose accounts may
  bool maintenance = false;           // nodes reserved for maintenance (shown as such)

  bool Allows(std::string_view user, std::string_view account) const;
  bool Overlaps(Time from, Time to) const { return start < to && from < end; }
};

// A cap on the power that the nodes of a site, a row or a rack may be
// expected to draw (docs/power.md). The scheduler keeps, for each budget, the
// expected draw of the running jobs' GPUs plus the idle draw of everything
// else it covers under `watts`; a job that would cross it waits with reason
// power_budget.
struct PowerBudget {
  std::string name;
  std::string label;  // the node label that marks its nodes ("row=r1"); empty: every node
  double watts = 0;
};

// How the scheduler counts power where nothing was measured: an idle GPU
// draws `gpu_idle_fraction` of its rated power, and each node `node_idle_w`
// besides its GPUs (CPUs, memory, fans, NICs).
struct PowerModel {
  double gpu_idle_fraction = 0.1;
  double node_idle_w = 0;
};

// At most this many power budgets: a node keeps the budgets it is in as a 64-bit mask.
inline constexpr size_t kMaxPowerBudgets = 64;

struct Cluster {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Partition> partitions;
  std::vector<Account> accounts;
  std::vector<PowerBudget> power_budgets;
  PowerModel power;

  // Checks names are unique, GPU counts within kMaxGpusPerNode, every node's
  // partitions exist, and exactly one partition is the default.
  Status Validate() const;

  const Partition* FindPartition(std::string_view partition) const;
  const Partition* DefaultPartition() const;
  const Node* FindNode(std::string_view node_name) const;
  int TotalGpus() const;
};

// Whether a requested GPU model names `model`: equal ignoring case, or a prefix
// of it that ends at a '-' ("h100" names "H100-SXM-80GB"). A MIG slice's
// model ("H100-SXM-80GB/1g.10gb") is named by its profile ("1g.10gb") or by
// a GPU name and the profile ("h100/1g.10gb"), never by a GPU name alone:
// a request for H100s wants whole ones.
bool GpuModelMatches(std::string_view requested, std::string_view model);

}  // namespace shoal
