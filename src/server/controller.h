// The controller's state and every change to it (DESIGN.md, boundaries 3 and 4).
//
// A Controller holds the truth about jobs, nodes, partitions, accounts and
// tokens in memory. Commands (submit, cancel, register, heartbeat, ...) check
// who asks and what they ask, change the state, and record what changed in a
// pending state::Batch and what agents must be told in an Outbox. The caller
// (the control loop) commits the batch and only then acknowledges the
// commands and sends the orders, so nothing is acknowledged or launched that
// a crash could lose.
//
// Not thread-safe: one thread (the control loop) owns it. It reads no clock:
// every command is given the time.
//
// Its code is in five files: controller.cc (commands and the job
// lifecycle), controller_queries.cc (what users and admins read),
// controller_passes.cc (usage accrual, ticks, scheduling passes),
// controller_acceptance.cc (node acceptance) and controller_telemetry.cc
// (GPU health, efficiency, idle GPUs, metrics).
#pragma once

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/json.h"
#include "api/node_protocol.h"
#include "core/cluster.h"
#include "core/job.h"
#include "core/time.h"
#include "sched/gittins.h"
#include "sched/inventory.h"
#include "sched/plan.h"
#include "sched/policy.h"
#include "server/port_book.h"
#include "server/power_history.h"
#include "server/speeds.h"
#include "server/telemetry_store.h"
#include "state/store.h"

namespace shoal::server {

// Who is asking: a user (their own jobs), an admin (everything), or a node
// agent (register and heartbeat).
struct Identity {
  std::string user;
  std::string role;  // "admin", "user", "node" or "join"
  // A node's identity acts for this node only. Empty for the shared node
  // token of a plain-HTTP cluster on one host, which acts for any node.
  std::string node_name{};
  // The fingerprint of the certificate it was proven by (TLS), else empty.
  std::string credential{};
  std::string token_id{};  // the token it came with, if any
  // A job token (SHOAL_JOB_TOKEN inside a job): acts as the job's user while
  // that job runs in this epoch.
  uint64_t job = 0;
  uint64_t job_epoch = 0;
  bool admin() const { return role == "admin"; }
  bool node() const { return role == "node"; }
  // May it act for node `name`?
  bool ActsFor(std::string_view name) const {
    return admin() || (node() && (node_name.empty() || node_name == name));
  }
};

// What POST /v1/tokens asks for.
struct TokenRequest {
  std::string user{};  // join tokens: the admin who makes it, unless named
  std::string role{};  // "admin", "user", "node" or "join"
  Duration ttl{0};     // 0: the token never expires (join tokens: 1 hour)
  std::string node{};  // join and node tokens: the only node they act for
};

// What POST /v1/reservations asks for: a reservation whose nodes are named,
// or counted (nodes or GPUs, chosen by the server among the nodes of
// `partition` that no other reservation holds then, idle ones first).
struct ReservationRequest {
  Reservation reservation{};  // start before now means now
  Duration duration{0};       // > 0: it ends this long after its (actual) start
  int node_count = 0;
  int gpu_count = 0;
  std::string partition{};  // where counted nodes come from; empty: any
};

struct ControllerConfig {
  std::string policy = "backfill";
  Duration node_timeout = std::chrono::seconds(30);  // missed heartbeats before a node is down
  Duration kill_grace = std::chrono::seconds(30);    // SIGTERM to SIGKILL, told to the agent
  // The heartbeats per second the controller asks its fleet to stay under:
  // agents beat every second (their own interval) up to this many nodes,
  // and a larger fleet is told to beat less often, at most node_timeout / 3
  // apart (HeartbeatInterval). Steps' starts and ends still go out at once.
  // 1,000/s: 10,000 nodes beat every 10 s (a third of the default node
  // timeout; kubelets renew their node lease every 10 s), which costs the
  // controller under half a core (docs/scale.md).
  int max_heartbeat_rate = 1000;
  // While nodes keep joining or changing, passes rebuild the scheduler's
  // inventory (O(nodes)) at most once per `rebuild_pacing` times the last
  // rebuild's own time, so that rebuilding takes at most 1/20 of the loop;
  // only once a rebuild takes `paced_rebuild_from` or more (thousands of
  // nodes). A submission that only a new node can hold has it rebuilt at once.
  int rebuild_pacing = 20;
  std::chrono::microseconds paced_rebuild_from{1000};
  // Fencing (docs/security.md): an agent that has not been heard for
  // node_timeout stops its requeueable jobs' steps itself (SIGTERM, SIGKILL
  // after kill_grace); the server requeues such a job of a lost node only
  // once last_seen + node_timeout + kill_grace + fence_margin has passed, so
  // that it never runs twice at once. The margin covers the agent's check
  // interval (one heartbeat) and the kill's own latency.
  Duration fence_margin = std::chrono::seconds(5);
  Duration launch_grace =
      std::chrono::seconds(15);  // a launched job may be missing from heartbeats this long
  Duration usage_half_life = std::chrono::hours(24 * 7);
  Duration finished_retention = std::chrono::hours(1);  // finished jobs kept in memory for `show`
  Duration dependency_horizon = std::chrono::hours(24 * 30);
  int max_jobs_per_submit = 100000;
  int max_active_jobs = 1000000;
  // The ports handed to jobs as MASTER_PORT and TF_CONFIG's (server/port_book.h):
  // below Linux's ephemeral range (32768-60999), where outgoing connections
  // take their local ports, and above the usual services.
  int rendezvous_first = 20000;
  int rendezvous_last = 32767;
  bool mail_enabled = false;          // the server has a mail program (sbatch --mail-type)
  std::vector<Partition> partitions;  // from the configuration file
  std::vector<Account> accounts;
  // Power budgets for the site, rows or racks, and how idle power is counted
  // (docs/power.md).
  std::vector<PowerBudget> power_budgets;
  PowerModel power;
  // Where the policy's plugins are looked up; null: sched::BuiltinRegistry().
  // Tests add plugins here (a faulty one stands in for a scheduler bug).
  std::shared_ptr<const sched::Registry> registry;
};

// Orders for node agents, sent after the batch that decided them is
// committed: the node protocol's message, and where it goes.
struct LaunchOrder : api::LaunchMessage {
  std::string node{};
  std::string address{};
};

struct KillOrder : api::KillMessage {
  std::string node{};
  std::string address{};
};

// A mail about a job for its user (sbatch --mail-type), sent by the server's
// Mailer (server/mailer.h).
struct MailOrder {
  std::string to;
  std::string subject;
  std::string body;
};

struct Outbox {
  std::vector<LaunchOrder> launches;
  std::vector<KillOrder> kills;
  std::vector<MailOrder> mails;
  bool empty() const { return launches.empty() && kills.empty() && mails.empty(); }
};

// What a node agent reports with each heartbeat: the node protocol's types
// (api/node_protocol.h), shared with the agent.
using api::GpuReport;
using api::GpuTelemetry;
using api::Heartbeat;
using api::JobEvent;

// A listing's filter and page: jobs in ascending id order after `after`,
// at most `limit` of them (0: every one).
struct JobFilter {
  std::string user;              // empty: the caller's own jobs (admins: everyone's)
  bool all_users = false;        // admins only
  std::vector<JobState> states;  // empty: pending and running
  Time ended_since{};            // finished jobs: only those that ended at or after
  std::string partition{};       // empty: every partition
  uint64_t after = 0;
  size_t limit = 0;

  // Whose jobs it selects when `who` asks; empty: every user's.
  std::string UserFor(const Identity& who) const {
    return all_users ? "" : user.empty() ? who.user : user;
  }
};

// A listing of nodes: in name order after `after`, at most `limit` of them
// (0: every one), of one state, partition and GPU model when those are set.
struct NodeFilter {
  std::optional<NodeState> state;
  std::string partition;
  std::string model;
  std::string after;
  size_t limit = 0;
};

// What the API shows of a node, captured on the loop thread and turned into
// JSON by NodeViewJson on any thread.
struct NodeView {
  struct JobPart {
    uint64_t job = 0;
    std::string user;
    uint64_t gpu_mask = 0;
    int gpus = 0;
  };
  Node node;  // with its effective state
  Time last_seen{};
  uint64_t unhealthy_gpus = 0;
  std::shared_ptr<const std::vector<GpuReport>> gpus_now;  // may be null
  std::vector<JobPart> jobs;                               // the running jobs' parts here
};
api::Json NodeViewJson(const NodeView& view);

// One page of nodes, and the last one's name when more may follow.
struct NodePage {
  std::vector<NodeView> nodes;
  std::optional<std::string> next_after;
};

// Node id -> name, replaced whole (never changed) when nodes change, so that
// other threads may hold and read it.
using NodeNameTable = std::unordered_map<uint64_t, std::string>;

struct JobView {
  std::shared_ptr<const Job> job;
  std::shared_ptr<const sched::PendingDecision> decision;  // why it waits, after a pass
  std::shared_ptr<const NodeNameTable> names;
};

// The API's JSON of a job: its spec, state and allocation (by node name), and
// for a pending job why it waits (reason, detail, estimated start, planned
// nodes). Safe on any thread.
api::Json JobViewJson(const JobView& view);

// How long jobs waited from their submission (or --begin time) to their
// first start, in one partition, as a Prometheus histogram's counts.
struct WaitHistogram {
  // Upper bounds in seconds: a second, 10 s, a minute, 5 and 15 minutes, an
  // hour, 4 and 12 hours, a day; then +Inf.
  static constexpr std::array<double, 9> kBounds = {1, 10, 60, 300, 900, 3600, 14400, 43200, 86400};
  std::array<uint64_t, kBounds.size()> buckets{};  // not cumulative
  uint64_t count = 0;
  double sum_s = 0;
  void Add(double seconds);
};

// Where scheduling passes spend their time, summed since the server started:
// rebuilding the inventory after nodes changed, gathering the pending and
// running jobs, the policy's Schedule, and checking and applying its plan.
struct PassPhases {
  static constexpr std::array<const char*, 4> kNames = {"inventory", "snapshot", "schedule",
                                                        "apply"};
  std::array<double, kNames.size()> seconds{};
};

// What /metrics shows, captured on the loop thread by Controller::Metrics in
// O(nodes + active jobs) pointer copies, and turned into text on another
// thread (server/metrics.h). Everything it points to is immutable.
struct MetricsView {
  struct NodeNow {
    NodeState state = NodeState::kUp;
    uint64_t unhealthy_gpus = 0;
    std::shared_ptr<const std::vector<GpuReport>> gpus;  // the last heartbeat's; may be null
    Time last_seen{};                                    // its last heartbeat; Time{}: none yet
  };
  std::shared_ptr<const std::vector<Node>> nodes;  // by name
  std::vector<NodeNow> now;                        // the same order as *nodes
  std::vector<std::shared_ptr<const Job>> jobs;    // pending and running
  std::string default_partition;
  std::map<std::string, double> account_gpu_s;  // GPU-seconds by account since the server started
  uint64_t submissions = 0;                     // jobs submitted since the server started
  uint64_t plan_starts_dropped = 0;             // planned starts the commit's check refused
  std::map<std::string, WaitHistogram> waits;   // by partition, since the server started
  PassPhases pass_phases;
  // Each power budget: its cap, the draw the scheduler expects (idle nodes
  // and running jobs, docs/power.md), and what its GPUs measured.
  std::vector<TelemetryStore::PowerBudgetNow> power_budgets;
};

class Controller {
 public:
  explicit Controller(ControllerConfig config);

  // Takes over the state a store loaded. Called once, before any command.
  // `ended_since` (optional): the jobs that ended since the oldest account
  // usage the store kept (it is committed once a minute), whose GPU-time
  // since then counts for fair share too.
  Status Restore(const state::Loaded& loaded, Time now, const std::vector<Job>& ended_since = {});
  // A policy that ranks by the service past jobs needed (gittins) learns it
  // from the jobs that complete; at start, the store's last completed jobs
  // (`completed`, newest first) stand in for what it saw before.
  bool UsesServiceHistory() const { return policy_->sort().UsesServiceHistory(); }
  void SeedServiceHistory(const std::vector<Job>& completed);
  size_t ServiceHistorySize() const { return service_.size(); }
  // With power budgets, what jobs of the same user and name drew per GPU
  // (server/power_history.h); at start, the store's last finished jobs.
  bool UsesPowerHistory() const { return !config_.power_budgets.empty(); }
  void SeedPowerHistory(const std::vector<Job>& finished) { power_history_.Seed(finished); }
  double ExpectedGpuPower(const JobSpec& spec) const { return power_history_.Expected(spec); }

  // --- commands (each returns its reply body or an error; none throws) ---
  Result<api::Json> Submit(const Identity& who, JobSpec spec, Time now);
  // Every spec or none (POST /v1/jobs/batch): each is checked as Submit
  // checks one, and the first refused refuses them all, named by its place
  // in the list. The reply has every new job's id, in order ("jobs"). Not
  // for acceptance tests.
  Result<api::Json> SubmitAll(const Identity& who, std::vector<JobSpec> specs, Time now);
  // sbatch --test-only: checks `spec` as Submit does and says when and where
  // it could start ("start_time", "nodes", "cpus", "gpus", "partition", and
  // "job", the id the next submission gets), stores nothing. The estimate
  // (sched::EstimateStart) counts the running jobs' expected ends, not the
  // other pending jobs; like Slurm's, it ignores holds and dependencies.
  Result<api::Json> TestSubmit(const Identity& who, JobSpec spec, Time now);
  // An array's id cancels every task of the array (as scancel does).
  Status Cancel(const Identity& who, JobId id, Time now);
  Status Hold(const Identity& who, JobId id, Time now);
  Status Release(const Identity& who, JobId id, Time now);
  Status Requeue(const Identity& who, JobId id, Time now);
  Status SetPriority(const Identity& who, JobId id, int64_t priority, Time now);
  Result<api::Json> RegisterNode(const Identity& who, Node node, Time now);
  Result<api::Json> ReceiveHeartbeat(const Identity& who, const std::string& node,
                                     const Heartbeat& hb, Time now);
  Status Drain(const Identity& who, const std::string& node, const std::string& reason, Time now);
  Status Resume(const Identity& who, const std::string& node, Time now);
  // Where an admin's MIG order for `node` goes: its agent's address, once
  // `layout` fits each of `gpus` (physical, by driver index; empty: all)
  // and the node is drained (or draining) with no job on it.
  Result<std::string> MigTarget(const Identity& who, const std::string& node,
                                const std::string& layout, const std::vector<int>& gpus) const;
  // Stores a node's acceptance result (admins only). A pass resumes a node
  // drained for acceptance ("awaiting acceptance" or a failed one); a failure
  // drains it with "acceptance failed: <summary>". A drain for any other
  // reason is left as it is.
  Result<api::Json> RecordAcceptance(const Identity& who, const std::string& node,
                                     AcceptanceResult result, Time now);
  Status PutPartition(const Identity& who, Partition p);
  Status PutAccount(const Identity& who, Account a);
  // QoS and reservations (admins; controller_qos.cc). A QoS that active jobs
  // use cannot be deleted; a reservation's nodes are fixed when it is made.
  Status PutQos(const Identity& who, Qos q);
  Status DeleteQos(const Identity& who, const std::string& name);
  Result<api::Json> CreateReservation(const Identity& who, ReservationRequest request, Time now);
  Status DeleteReservation(const Identity& who, const std::string& name);
  // Returns the token's text, shown once.
  Result<api::Json> CreateToken(const Identity& who, const TokenRequest& request, Time now);
  Status RevokeToken(const Identity& who, const std::string& id);
  // Job steps (`shoal run` inside a running job; the job's owner, an admin,
  // or the job's own token): placed in the job's allocation
  // (server/step_placement.h), launched on its nodes; the answer is the
  // step's JSON. Cancel stops one step; the job goes on.
  Result<api::Json> CreateStep(const Identity& who, JobId id, StepSpec spec, Time now);
  Status CancelStep(const Identity& who, JobId id, uint32_t step, Time now);
  // Sends `signal` (1..64) to a running job's steps, as scancel --signal
  // does: every step but the batch shell, or the batch shell alone when
  // `batch_only` (scancel -b). An array's id signals its running tasks.
  Status Signal(const Identity& who, JobId id, int signal, bool batch_only, Time now);
  // Where task `rank` of a step ran: its node and that node's agent.
  struct TaskSource {
    std::string node;
    std::string address;
    uint64_t epoch = 0;
  };
  Result<TaskSource> StepTaskOf(const Identity& who, JobId id, uint32_t step, int rank) const;
  // Whether a job token (Identity::job) still names a running job's epoch.
  Status CheckJobToken(const Identity& who) const;
  // The secret job tokens are signed with (kept by the server).
  void SetJobTokenKey(std::string key) { job_token_key_ = std::move(key); }
  // Uses up the join token `who` came with, for node `name`, whose new
  // certificate has fingerprint `credential`. Refused when the token is
  // used, revoked or expired, names another node, or when `name` already
  // belongs to a joined node and the token was not made for that node (so
  // that only an admin's token bound to it can re-key a node). A node
  // already known acts with the new certificate from now on.
  Status Join(const Identity& who, const std::string& name, const std::string& credential,
              Time now);

  // --- queries (read-only; the returned pointers stay valid as long as held) ---
  Result<std::vector<std::shared_ptr<const Job>>> ListJobs(const Identity& who,
                                                           const JobFilter& f) const;
  // A job with why it waits and where it would run (estimated start, planned nodes).
  Result<api::Json> ShowJob(const Identity& who, JobId id) const;
  // Learned speeds (server/speeds.h): `user`'s (empty: the caller's own; an
  // admin's: everyone's), and forgetting one job name's of them. Only an
  // admin acts for another user.
  Result<api::Json> LearnedSpeedsJson(const Identity& who, const std::string& user) const;
  Result<api::Json> ForgetSpeeds(const Identity& who, const std::string& user,
                                 const std::string& name);
  // Whether the controller holds the job (active or recently finished):
  // then its record here is newer than the store's.
  bool Holds(JobId id) const { return jobs_.count(id.value()) > 0; }
  // Whether `job` is in partition `name` (empty: any); a job that named none
  // is in the default partition.
  bool InPartition(const Job& job, std::string_view name) const;
  // What the API shows of a job, captured here (cheaply: shared pointers)
  // and turned into JSON by JobViewJson on any thread, so that listing many
  // jobs does not hold up the control loop.
  JobView View(std::shared_ptr<const Job> job) const;
  // The nodes `f` selects, one page; O(log nodes + the page) for the nodes
  // of every state, and a scan from `after` for one state.
  NodePage ListNodes(const NodeFilter& f) const;
  // Nodes and GPUs by state and GPU model (`shoal nodes` without --all).
  api::Json NodeSummary() const;
  Result<api::Json> NodeJson(const std::string& name) const;
  api::Json PartitionsJson() const;
  api::Json AccountsJson() const;
  api::Json QosJson() const;
  api::Json ReservationsJson(Time now) const;
  Result<api::Json> TokensJson(const Identity& who) const;
  // Settles the node layout first, so that nodes that have just registered are in it.
  MetricsView Metrics();
  // Each power budget's cap, expected and measured draw (MetricsView).
  std::vector<TelemetryStore::PowerBudgetNow> PowerBudgetsNow() const;
  // Where a job's output is: the agent of its first node. `history` is the
  // stored record when the job has left memory.
  struct OutputSource {
    std::string node;
    std::string address;
  };
  Result<OutputSource> OutputOf(const Identity& who, JobId id, const Job* history) const;
  // Whether the caller may see `job`.
  bool MaySee(const Identity& who, const Job& job) const;

  // --- time ---
  // The control loop could not hear nodes for `d` (it ran late): every
  // node's silence is shortened by it.
  void CreditUnheard(Duration d);
  // Node timeouts (a node silent for node_timeout by `heard_through`, when
  // everything that arrived before it has been handled; default `now`),
  // fences, time limits, draining nodes, usage and eviction of old finished
  // jobs. Call often (every few hundred milliseconds).
  void Tick(Time now, std::optional<Time> heard_through = std::nullopt);
  // Runs one scheduling pass and applies its plan.
  sched::PassStats SchedulePass(Time now);
  // Whether something happened since the last pass that a pass could act on.
  bool WantsPass() const { return dirty_; }
  // When the last pass's policy said its order of running jobs next changes
  // with no event (sched::Plan::wake_at: a LAS job reaching its next queue);
  // the loop passes then. kTimeNever: only events change it.
  Time WakeAt() const { return wake_at_; }

  // --- output ---
  // Whether anything waits to be committed (TakeBatch would not be empty).
  bool HasChanges() const { return !batch_.empty(); }
  state::Batch TakeBatch();
  Outbox TakeOutbox();
  // Tokens as the HTTP layer's cache needs them (after each commit of tokens).
  bool TokensChanged() const { return tokens_changed_; }
  std::vector<state::TokenRecord> Tokens();

  // Where heartbeats' telemetry and the cluster's utilisation are recorded
  // as time series (may be null; the store outlives the controller).
  void SetTelemetryStore(TelemetryStore* store) { telemetry_ = store; }

  size_t active_jobs() const { return active_; }
  // How often the controller asks each agent to beat, given the fleet's size
  // (ControllerConfig::max_heartbeat_rate); an agent's own longer interval stands.
  Duration HeartbeatInterval() const;
  // Applies the node layout registrations changed (they only mark it, so
  // that a fleet registering costs one rebuild per pass, not one per node);
  // a pass does this first, paced (ControllerConfig::rebuild_pacing).
  void SettleLayout();
  // Whether the inventory holds every node that registered (tests).
  bool layout_settled() const { return !layout_changed_; }
  const ControllerConfig& config() const { return config_; }

 private:
  struct NodeRecord {
    Node node;
    Time last_seen{};
    uint64_t unhealthy_gpus = 0;
    bool admin_drain =
        false;  // drained by an admin or for a sick GPU (stays drained until resumed)
    std::shared_ptr<const std::vector<GpuReport>> gpus_now;  // the last heartbeat's GPU reports
    Time last_telemetry{};                                   // when gpus_now last carried telemetry
  };
  // A `shoal run` step that has not ended yet.
  struct LiveStep {
    std::unordered_set<std::string> nodes_left;  // nodes whose part has not exited yet
    std::unordered_set<std::string> confirmed;   // nodes that have reported it running
    // Nodes told to stop it before they reported it running: the order may
    // have come before the launch, so it is sent again when they report it.
    std::unordered_set<std::string> stopped_unconfirmed;
    Time started{};
    int worst_code = 0;  // the largest exit code of its tasks (srun's rule)
    int worst_signal = 0;
    std::string first_failure;           // where a task failed first, for people
    int first_code = 0;                  // and how (the step's exit code when that
    int first_signal = 0;                //  failure stopped the rest: --kill-on-bad-exit)
    std::optional<StepState> ending_as;  // set when it was asked to stop
    int master_port = 0;                 // its block of rendezvous ports
  };
  struct Running {
    std::vector<std::string> nodes;              // the allocation's nodes, in rank order
    std::unordered_set<std::string> nodes_left;  // nodes whose part of step 0 has not exited yet
    std::unordered_set<std::string> confirmed;   // nodes that have reported the job running
    std::optional<JobState> ending_as;           // set when we asked it to stop
    Time kill_sent{};
    bool requeue_after = false;  // preempted: back to pending when it exits
    // A node of the job was lost: it goes back to the queue at this time,
    // once that node has surely fenced it (ControllerConfig::fence_margin).
    std::optional<Time> fence_until;
    // The latest end its nodes reported for the main step (their clocks,
    // kept between `alive_at` and when heard): when it ended, however late
    // the server heard of it. Unset while steps outlive it.
    std::optional<Time> ended_at;
    Time alive_at{};  // the last heartbeat that reported the main step running
    int first_failure_code = 0;
    int first_failure_signal = 0;
    // GPU efficiency, accumulated from heartbeats and copied into the job.
    JobEfficiency efficiency;
    std::map<std::pair<std::string, int>, double>
        last_energy_j;    // (node, GPU) -> its energy counter
    Time first_sample{};  // the first telemetry seen (0: none yet)
    Time last_busy{};     // the last time a GPU of the job was at or above the idle threshold
    std::map<uint32_t, LiveStep> steps;  // `shoal run` steps that run
    // Step 0 has ended: the job ends once its other steps have too.
    std::optional<JobState> main_ended_as;
    bool warned = false;       // sbatch --signal's warning went out (SignalDue)
    int limit_mailed_pct = 0;  // the highest --mail-type TIME_LIMIT_x mark mailed
  };

  Job& Mutable(JobId id);
  void ChangedJob(uint64_t id);  // jobs_[id] was replaced, added or erased
  const Job* Find(JobId id) const;
  // Queues an order to stop job `job`'s step `step` on `node` (every step of
  // the epoch there when none), or with `signal` to signal it; nothing when
  // the node is gone.
  void OrderKill(const std::string& node, JobId job, uint64_t epoch, std::optional<uint32_t> step,
                 std::string why, int signal = 0, bool leader_only = false);
  // --dependency=singleton: the pending jobs (of `pending`, in submission
  // order) that must wait because another job of their user with their name
  // runs, or waits with an earlier id.
  std::unordered_set<uint64_t> SingletonBlocked(const std::vector<const Job*>& pending) const;
  // A waiting job this pass, and its place in pending_infos_ when it is the
  // version the last pass saw (kNotKept otherwise).
  static constexpr size_t kNotKept = ~size_t{0};
  struct Waiting {
    const Job* job;
    size_t kept;
  };
  // The waiting jobs in submission order, compacting pending_order_ (the
  // acceptance tests among them go to `acceptance`); `same_world`: the last
  // pass's JobInfos were made for this layout and these accounts.
  std::vector<Waiting> WaitingJobs(bool same_world, std::vector<uint64_t>& acceptance);
  static constexpr uint8_t kQosOrReservation = 1, kDependencies = 2, kSingleton = 4;
  static uint8_t FlagsOf(const Job& job);
  // The waiting jobs' JobInfos into `snap` (and the dependency states they
  // need); returns them as the next pass will find them, but for the infos.
  struct PendingInfos;
  PendingInfos GatherPending(sched::Snapshot& snap,
                             const std::unordered_map<std::string, int>& account_index,
                             const std::vector<Waiting>& pending);
  // GatherPending's JobInfos into snap.pending, where the last pass's lie;
  // out.ids, jobs and slots say which job's is where.
  void PlaceInfos(sched::Snapshot& snap, const std::unordered_map<std::string, int>& account_index,
                  const std::vector<Waiting>& pending, PendingInfos& out);
  // The scheduler's view of a job, and of the cluster with its running jobs
  // (SchedulePass adds the pending ones) at `now` (the running jobs' service
  // up to it); `account_index` gets each account's index in the snapshot.
  sched::JobInfo InfoOf(const Job& job,
                        const std::unordered_map<std::string, int>& account_index) const;
  sched::Snapshot RunningSnapshot(std::unordered_map<std::string, int>& account_index,
                                  Time now) const;
  // The signal orders for a running job's steps (Signal, SignalDue).
  void SignalSteps(const Job& j, int signal, bool batch_only, const std::string& why);
  // sbatch --signal: whether a running job's warning is due by `now`.
  static bool SignalDue(const Job& j, const Running& r, Time now);
  Status CheckOwner(const Identity& who, const Job& job) const;
  Status CheckActsFor(const Identity& who, const std::string& name) const;
  // Cancel's parts: one active job; the tasks of the array `array` names
  // that are still kept (none when `array` is not an array's id).
  void CancelOne(const Identity& who, JobId id, Time now);
  std::vector<JobId> ArrayTasks(JobId array) const;
  Status CancelArray(const Identity& who, JobId array, const std::vector<JobId>& tasks, Time now);
  // May rebuild the inventory first (SettleLayout) when the job does not
  // fit the one built before nodes registered.
  Status CompileAndCheck(const JobSpec& spec, sched::Request* out);
  // At submit: the job's QoS (the default one when it names none, on a
  // cluster with QoS) and its right to the reservation it names.
  Status CheckQosAndReservation(const Identity& who, JobSpec& spec, Time now) const;
  // The snapshot's QoS and reservations, and each job's place in them.
  void AddQosAndReservations(sched::Snapshot& snap) const;
  void SetQosAndReservation(const Job& job, const sched::Snapshot& snap,
                            sched::JobInfo& info) const;
  // Reservations that have ended are deleted; one that began or ended since
  // the last tick asks for a pass.
  void TickReservations(Time now);
  // Mail (controller_mail.cc): `event` for job `j`, when it asked for it.
  void MailAbout(const Job& j, MailEvent event, Time now, std::string_view detail = {});
  bool ArrayMailDue(const Job& j, MailEvent event);
  void MailEnded(const Job& j, Time now);
  void MailTimeLimits(const Job& j, Running& r, Time now);
  Result<std::vector<std::string>> ChooseReservationNodes(const ReservationRequest& request) const;
  void RebuildInventory();
  // running_ and the index of its jobs by node (running_on_) together.
  Running& AddRunning(uint64_t id, Running run);
  void EraseRunning(uint64_t id);
  // The running jobs with a part on `node` (every step's nodes are among the job's).
  const std::vector<uint64_t>& RunningOn(const std::string& node) const;
  void Record(const Job& job);
  void RecordNode(const NodeRecord& n);
  // The node as RecordNode writes it (with its effective state).
  Node StoredNode(const NodeRecord& n) const;
  void Finish(Job& job, JobState state, Time now);
  // When a running job ended: what its nodes reported, else `now`; and its
  // GPU-seconds then (its service before this run and what the run held).
  Time EndOf(const Job& job, Time now) const;
  double ServiceAt(const Job& job, Time t) const;
  // Brings a running job's fair-share charge to its end (`ended`), from the
  // last accrual: more if it ended since, less if it ended before (heard late).
  void SettleUsage(const Job& job, Time ended);
  void RecordService(double gpu_s);
  void StopJob(Job& job, JobState ending_as, Time now, const std::string& why,
               bool requeue_after = false);
  void RequeueNow(Job& job, Time now, const std::string& why);
  void NodeLost(NodeRecord& n, Time now);
  void NodeRebooted(const std::string& name, Time now);
  // An exit's time, as its node reported it (Running::ended_at).
  void NoteEnded(const api::JobEvent& e, Time now);
  Result<api::Json> SubmitAcceptance(JobSpec spec, Time now);
  // Submit's first checks: who may submit, and the job's user and command.
  Status TakeSubmitter(const Identity& who, JobSpec& spec) const;
  // A submission checked and compiled, to be admitted as `count` jobs.
  struct Admission {
    JobSpec spec;
    sched::Request req;
    size_t count = 0;
  };
  // Submit's checks of an ordinary (not acceptance) job, with `queued` more
  // jobs about to join the queue before it; changes nothing.
  Result<Admission> CheckSubmission(const Identity& who, JobSpec spec, Time now, size_t queued);
  // Queues the jobs `a` makes; their ids go to `ids`.
  void Admit(const Admission& a, Time now, api::Json& ids);
  void StartJob(Job& j, Allocation allocation, Time now);
  // The orders that start step `step` of running job `j` on its nodes.
  void LaunchStep(const Job& j, const JobStep& step, int master_port, Time now);
  // A node's part of step 0 ended (the job's own).
  void MainStepExited(JobId id, uint64_t epoch, const std::string& node, int code, int signal,
                      const std::string& message, Time now);
  void ReconcileLost(const std::string& node,
                     const std::set<std::pair<uint64_t, uint32_t>>& reported, Time now);
  // A node's part of a step ended.
  void StepExited(JobId id, uint32_t step, const std::string& node, int code, int signal,
                  const std::string& message, Time now);
  // Step 0 ended as `state`: the job ends with it once its other steps have.
  void MainStepEnded(Job& j, JobState state, Time now);
  // Whether `job` holds a GPU of node `name` that the node reports unhealthy.
  bool OnFailedGpu(const Job& job, const std::string& name) const;
  // Every step of the job still live is recorded as ended (the job ended).
  void EndLiveSteps(Job& j, Time now, const std::string& why);
  // Kill orders for every node of the job that runs something of it.
  void KillEverywhere(const Job& j, const std::string& why);
  // A job token for `j`'s current epoch.
  std::string JobToken(const Job& j) const;
  void PlaceAcceptanceJobs(const std::vector<uint64_t>& pending,
                           Time now);  // pending acceptance tests
  static std::vector<std::string> AcceptanceNodes(const JobSpec& spec);
  bool RequiresAcceptance(const Node& node) const;
  static bool DrainedForAcceptance(const NodeRecord& n);
  void AccrueUsage(Time now);
  // At a restart: the stored usage is as of its last commit (updated); decays
  // it to now and charges the running jobs for what they held since, as the
  // ticks would have (sched::DecayedService).
  void CatchUpUsage(Time now, const std::vector<Job>& ended_since);
  std::string NodeName(NodeId id) const;  // O(1), from node_names_
  std::optional<NodeId> NodeIdOf(std::string_view name) const;
  api::NodeNames Names() const;
  void RebuildNodeNames();
  NodeState EffectiveState(const NodeRecord& n) const;
  // The spec an agent gets: the job's, with the partition it runs in named.
  JobSpec LaunchSpec(const Job& job) const;
  const Partition* PartitionOf(const Job& job) const;
  using JobsByNode =
      std::unordered_map<uint64_t, std::vector<std::pair<const Job*, const NodeAllocation*>>>;
  JobsByNode RunningByNode(std::optional<NodeId> only) const;
  NodeView ViewOf(const NodeRecord& n) const;
  void GpuReports(NodeRecord& n, const Heartbeat& hb, Time now);
  void AccountGpuUse(const std::string& node, NodeRecord& n, const Heartbeat& hb, Time now);
  // A run's progress figure from its first node's heartbeat, and what the
  // run taught of the job's speed once it ended or went back to the queue.
  static void NoteProgress(JobEfficiency& e, double rate);
  void LearnSpeed(const Job& job, Time now);
  // The GPU model every GPU of the job's allocation is ("": several, none).
  std::string ModelOfRun(const Job& job) const;
  void CheckIdle(Time now);
  void SampleCluster(Time now);

  ControllerConfig config_;
  std::optional<sched::Policy> policy_;
  sched::ServiceHistory service_;  // with a policy that uses it (gittins)
  PowerHistory power_history_;     // with power budgets
  std::shared_ptr<const sched::Inventory> inventory_;
  // The record of each of its nodes, by inventory index (RebuildInventory):
  // a pass reads every node's state without a lookup by name. Records are
  // never erased, so the pointers hold.
  std::vector<const NodeRecord*> inventory_records_;
  // Speed-aware policies: each job's speeds on the inventory's models
  // (server/speeds.h), with the inventory and learned_ versions they were
  // made for.
  struct Speeds {
    uint64_t inventory_version = ~uint64_t{0};  // none yet
    uint64_t learned_version = 0;
    std::shared_ptr<const std::vector<double>> speed;
  };
  LearnedSpeeds learned_;
  mutable std::unordered_map<uint64_t, Speeds> speeds_;
  std::map<uint64_t, std::shared_ptr<const Job>> jobs_;  // active and recently finished
  // The jobs whose entry in jobs_ was replaced, added or erased since the
  // last pass (each write to jobs_ says so through ChangedJob): a pass takes
  // every other job that was pending at the last pass as that pass saw it.
  std::vector<uint64_t> changed_jobs_;
  // Each user's jobs in jobs_, by id, for a user's listing, which otherwise
  // read every job (35 ms of the loop with 141,000 jobs). Ids of jobs that
  // left jobs_ stay until they are half of a user's (UserJobs).
  struct UserJobs {
    std::vector<uint64_t> ids;  // ascending
    size_t gone = 0;            // of them, no longer in jobs_
  };
  std::unordered_map<std::string, UserJobs> jobs_of_user_;
  void AddJob(std::shared_ptr<const Job> job);  // into jobs_ and jobs_of_user_
  void EraseJob(std::map<uint64_t, std::shared_ptr<const Job>>::iterator it);
  std::unordered_map<uint64_t, sched::Request> requests_;
  std::unordered_map<uint64_t, Running> running_;
  std::unordered_map<std::string, std::vector<uint64_t>>
      running_on_;                                      // node -> running_'s jobs there
  std::unordered_map<uint64_t, JobState> finished_;     // for dependencies
  std::deque<std::pair<Time, uint64_t>> evict_order_;   // ended jobs by end time: leave jobs_
  std::deque<std::pair<Time, uint64_t>> forget_order_;  // ended jobs by end time: leave finished_
  std::vector<uint64_t> pending_order_;                 // submission order, compacted lazily
  std::map<std::string, NodeRecord> nodes_;
  std::shared_ptr<const NodeNameTable> node_names_ =
      std::make_shared<NodeNameTable>();  // rebuilt with the inventory
  std::shared_ptr<const std::vector<Node>> node_table_ =
      std::make_shared<std::vector<Node>>();  // likewise, by name
  TelemetryStore* telemetry_ = nullptr;
  Time last_cluster_sample_{};
  Time last_efficiency_commit_{};
  uint64_t submissions_ = 0;
  std::map<std::string, WaitHistogram> waits_;  // first starts' waits, by partition
  uint64_t plan_starts_dropped_ = 0;  // since the server started: each one is a scheduler bug
  PassPhases pass_phases_;
  // The last pass's waiting jobs, in id order: each the version of the job it
  // saw (kept alive, so that its address is not reused), its JobInfo, and
  // what of it a pass must look at again (kQosOrReservation, ...); with the
  // layout and the accounts the JobInfos were made for (SchedulePass).
  struct PendingInfos {
    std::vector<uint64_t> ids;
    std::vector<std::shared_ptr<const Job>> jobs;
    std::vector<sched::JobInfo> infos;  // in no order: the job ids[k]'s is infos[slots[k]]
    std::vector<uint32_t> slots;
    std::vector<uint8_t> flags;
    uint64_t inventory_version = 0;
    std::vector<std::string> accounts;
  };
  PendingInfos pending_infos_;
  std::map<std::string, double> account_gpu_s_;  // not decayed: the metrics' counter
  std::vector<Partition> partitions_;
  std::vector<Account> accounts_;
  std::vector<Qos> qos_;
  std::vector<Reservation> reservations_;
  Time last_reservation_tick_{};
  std::unordered_set<uint64_t> arrays_mailed_;       // arrays whose BEGIN went out (mail)
  std::unordered_set<uint64_t> invalid_dep_mailed_;  // jobs mailed INVALID_DEPEND
  std::map<std::string, state::AccountUsage> usage_;
  std::map<std::string, state::TokenRecord> tokens_;
  std::unordered_map<uint64_t, std::shared_ptr<const sched::PendingDecision>>
      decisions_;  // from the last pass
  uint64_t next_job_id_ = 1;
  uint32_t next_node_id_ = 1;
  size_t active_ = 0;
  bool dirty_ = true;
  Time wake_at_ = kTimeNever;    // the last plan's (WakeAt)
  bool layout_changed_ = false;  // nodes registered or changed since the inventory was built
  // No pass rebuilds the inventory before this (ControllerConfig::rebuild_pacing).
  std::chrono::steady_clock::time_point next_paced_rebuild_{};
  bool tokens_changed_ = true;
  std::string job_token_key_;
  PortBook ports_{20000, 32767};  // rendezvous ports, per node (config: rendezvous_ports)
  Time last_usage_{};
  Time last_usage_commit_{};
  state::Batch batch_;
  std::unordered_set<uint64_t> batch_jobs_;
  std::unordered_map<std::string, size_t> batch_nodes_;  // name -> index in batch_.nodes
  Outbox outbox_;
};

}  // namespace shoal::server
