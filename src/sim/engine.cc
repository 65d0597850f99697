#include "sim/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <queue>
#include <unordered_map>

#include "sched/fragmentation.h"
#include "sched/inventory.h"
#include "sched/power.h"
#include "sched/schedule.h"
#include "sched/shape_memo.h"
#include "sched/speed.h"
#include "sim/fill.h"
#include "sim/ledger.h"

namespace shoal::sim {

namespace {

using sched::NodeIndex;

struct SimJob {
  const trace::TraceJob* t = nullptr;
  sched::Request req;
  int account = -1;
  enum class Phase : uint8_t { kFuture, kPending, kRunning, kDone } phase = Phase::kFuture;
  Time submit{};
  // When the controller took it: its submit, or, while the controller
  // restarts, when it is back (the client retries). Ages and ties count
  // from here; its completion time from `submit`.
  Time entered{};
  Time first_start = kTimeNever;
  Time seg_start{};
  Time end = kTimeNever;
  Time queued_since{};
  Duration waited{0};         // pending, in all: first wait and after each preemption
  double ref_s = 0;           // true run time on the reference GPU
  double seg_duration_s = 0;  // the whole job's run time on the GPUs it has now
  double seg_overhead_s = 0;  // restart cost paid at the start of this run
  double remaining = 1.0;     // fraction of the work left when this run began
  double slow = 1.0;          // the share of its speed it runs at (1: no slow GPU under it)
  Time mark{};  // its progress is known up to here: this run's start or last change of speed
  double mark_remaining = 1.0;  // the fraction of the work left then
  Time halted = kTimeNever;     // a fault stopped it here; it holds its GPUs until requeued
  bool fenced = false;          // and the controller has set when that will be
  Time ckpt_at{};               // its last checkpoint in this run (or the run's start)
  double ckpt_remaining = 1.0;  // the fraction of the work left then
  double attained_gpu_s = 0;    // GPU-seconds held before this run
  Allocation alloc;
  double gpu_eq = 0;  // alloc.GpuEquivalents(), while it runs
  // Speed on each model of the inventory (1 / run time there), for traces
  // that say (duration_by_model); null otherwise.
  std::shared_ptr<const std::vector<double>> speed;
  uint32_t shape_class = 0;  // jobs whose requests have the same shape share it (from 1)
  uint64_t epoch = 0;
  uint32_t running_pos = 0;  // in running_ and the snapshot's running jobs
  bool stopping = false;     // preempted, but a part is on a node out (StopUnheard)
  int restarts = 0;
  int first_nodes = 0;
  int first_leaves = 0;
  JobState state = JobState::kPending;
};

enum class EventType : uint8_t {
  kFinish,
  kTimeLimit,
  kWakeup,
  // Faults (job: the node; epoch: the GPU), and the fence that requeues a job of a lost node.
  kNodeDetected,
  kNodeBack,
  kGpuRepaired,
  kGpuFast,
  kControllerUp,
  kFence,
};

struct Event {
  Time at;
  uint64_t seq;
  EventType type;
  uint32_t job;
  uint64_t epoch;
};

struct EventLater {
  bool operator()(const Event& a, const Event& b) const {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  }
};

// Passes at one instant after which preemption must have settled: each
// preempts only jobs that rank below its preemptors, so a chain is short.
constexpr int kMaxPassesAtOnce = 1000;

class Simulator {
 public:
  Simulator(const Cluster& cluster, const trace::Trace& trace, sched::Policy policy,
            const SimOptions& opts, std::shared_ptr<const sched::Inventory> inv)
      : cluster_(cluster),
        trace_(trace),
        policy_(std::move(policy)),
        opts_(opts),
        inv_(std::move(inv)),
        ledger_(*inv_) {
    result_.policy = policy_.params().name;
    result_.policy_description = policy_.Describe();
    result_.mode = opts.mode;
    result_.seed = opts.seed;
    result_.cluster_gpus = inv_->total_gpus();
    result_.cluster_nodes = static_cast<int>(inv_->size());
    result_.peak_power_w = sched::PeakClusterPower(*inv_);
    idle_power_w_ = sched::IdleClusterPower(*inv_);
    result_.notes = trace.notes;
    snap_.inventory = inv_;
    snap_.pending_not_whole_gpus = 0;  // kept by AddPending and LeaveQueue
  }

  Result<SimResult> Run() {
    const Time wall_start = WallNow();
    if (opts_.mode == Mode::kFill && (opts_.faults.Any() || !opts_.scripted_faults.empty()))
      return InvalidArgument("faults apply to replays, not to fill mode (it has no time)");
    SHOAL_RETURN_IF_ERROR(Prepare());
    Status s = opts_.mode == Mode::kFill ? RunFill() : RunReplay();
    if (!s.ok()) return s;
    result_.wall_seconds = ToSeconds(WallNow() - wall_start);
    return std::move(result_);
  }

 private:
  Time WallNow() const { return opts_.wall_clock ? opts_.wall_clock->Now() : kTimeZero; }

  Status Violation(const std::string& what) const {
    return InvariantViolated(now_, result_.policy, opts_.seed, what);
  }

  Status Prepare() {
    jobs_.resize(trace_.jobs.size());
    queue_pos_.assign(jobs_.size(), kNotQueued);
    std::unordered_map<std::string, int> accounts;
    std::vector<const sched::Request*> reqs;
    sched::ShapeMemo<uint32_t> shape_classes;  // jobs' requests by shape, numbered from 1
    uint32_t classes = 0;
    for (size_t i = 0; i < trace_.jobs.size(); ++i) {
      const trace::TraceJob& t = trace_.jobs[i];
      SimJob& j = jobs_[i];
      j.t = &t;
      j.submit = t.submit;
      j.ref_s = std::max(1.0, ToSeconds(t.duration));
      JobSpec spec = SpecFor(t);
      if (opts_.mode == Mode::kReplay) spec.time_limit = TimeLimitFor(t, opts_.limits);
      Result<sched::Request> r = sched::CompileRequest(*inv_, spec);
      if (!r.ok()) return r.status().WithContext(fmt::format("trace job {} ('{}')", i + 1, t.name));
      j.req = *r;
      Status sat = sched::CheckSatisfiable(*inv_, j.req);
      if (sat.ok()) sat = sched::CheckPowerFits(*inv_, j.req, 0);
      if (!sat.ok()) {
        return sat.WithContext(
            fmt::format("trace job {} ('{}') can never run on this cluster", i + 1, t.name));
      }
      if (!t.account.empty()) {
        auto [it, inserted] = accounts.emplace(t.account, static_cast<int>(accounts.size()));
        if (inserted) {
          snap_.accounts.push_back({t.account, 1.0, 0.0, 0});
          account_gpus_.push_back(0);
        }
        j.account = it->second;
      }
      j.speed = SpeedsOf(t);
      reqs.push_back(&j.req);
      const sched::ShapeKey key = sched::KeyOf(j.req);
      if (const uint32_t* known = shape_classes.Find(j.req, key)) {
        j.shape_class = *known;
      } else {
        j.shape_class = ++classes;
        shape_classes.Put(j.req, key, j.shape_class);
      }
    }
    // The workload mix for fragmentation, as FGD measures it: CPUs and GPUs, not memory.
    std::vector<sched::Request> no_mem;
    no_mem.reserve(reqs.size());
    for (const sched::Request* r : reqs) {
      sched::Request c = *r;
      c.mem_base = 0;
      c.mem_per_gpu = 0;
      no_mem.push_back(c);
    }
    std::vector<const sched::Request*> ptrs;
    for (const sched::Request& r : no_mem)
      ptrs.push_back(&r);
    const sched::PolicyParams& p = policy_.params();
    workload_ =
        sched::WorkloadOf(ptrs, inv_->max_gpus_per_node(), p.workload_coverage, p.workload_by_gpus);
    return Status::Ok();
  }

  // A trace job's speed on each of the inventory's models: 1 / its run time
  // there; 0 where the trace gives none (it does not fit that model).
  std::shared_ptr<const std::vector<double>> SpeedsOf(const trace::TraceJob& t) const {
    if (t.duration_by_model.empty()) return nullptr;
    std::vector<std::pair<std::string, double>> named;
    for (const auto& [model, d] : t.duration_by_model)
      named.emplace_back(model, 1 / std::max(1.0, ToSeconds(d)));
    return sched::SpeedsByName(inv_->models(), named);
  }

  // ---- replay ----

  double DurationOn(const SimJob& j, const Allocation& a) const {
    const trace::TraceJob& t = *j.t;
    if (t.duration_by_model.empty()) return j.ref_s;
    double worst = 0;
    for (const NodeAllocation& na : a.nodes) {
      const sched::InvNode& node = inv_->node(*inv_->IndexOf(na.node));
      for (uint64_t bits = na.gpu_mask; bits != 0; bits &= bits - 1) {
        const std::string& model =
            inv_->models()[node.gpu_model[static_cast<size_t>(std::countr_zero(bits))]];
        double d = j.ref_s;
        for (const auto& [m, dur] : t.duration_by_model) {
          if (GpuModelMatches(m, model)) d = std::max(1.0, ToSeconds(dur));
        }
        worst = std::max(worst, d);
      }
    }
    return worst > 0 ? worst : j.ref_s;
  }

  double GpuEq(const SimJob& j) const { return j.gpu_eq; }

  double AttainedNow(const SimJob& j) const {
    if (j.phase != SimJob::Phase::kRunning) return j.attained_gpu_s;
    return j.attained_gpu_s + ToSeconds(now_ - j.seg_start) * GpuEq(j);
  }

  double RemainingNow(const SimJob& j) const {
    return j.phase != SimJob::Phase::kRunning ? j.remaining : RemainingAt(j, now_);
  }

  // A running job's work left at `t` (from its mark on): none is done while
  // the restart cost is paid or after a fault stopped it.
  static double RemainingAt(const SimJob& j, Time t) {
    auto worked = [&](Time u) {
      return std::max(0.0, ToSeconds(std::min(u, j.halted) - j.seg_start) - j.seg_overhead_s);
    };
    const double w = worked(t) - worked(j.mark);  // (worked(start) is 0: x - 0.0 is x)
    return std::max(0.0, j.mark_remaining - w * j.slow / j.seg_duration_s);
  }

  void Push(Time at, EventType type, uint32_t job, uint64_t epoch) {
    events_.push({at, seq_++, type, job, epoch});
  }

  Status Start(uint32_t idx, Allocation alloc, bool backfilled) {
    SimJob& j = jobs_[idx];
    if (j.phase != SimJob::Phase::kPending)
      return Violation(fmt::format("job {} started while not pending", j.t->name));
    SHOAL_RETURN_IF_ERROR(CheckWhole(j, alloc));
    Status took = ledger_.Take(alloc);
    if (!took.ok()) return Violation(fmt::format("starting job {}: {}", j.t->name, took.message()));
    j.alloc = std::move(alloc);
    j.gpu_eq = j.alloc.GpuEquivalents();
    if (j.account >= 0) account_gpus_[static_cast<size_t>(j.account)] += j.gpu_eq;
    j.phase = SimJob::Phase::kRunning;
    j.seg_start = now_;
    j.waited += now_ - j.queued_since;
    if (j.first_start == kTimeNever) {
      j.first_start = now_;
      j.first_nodes = static_cast<int>(j.alloc.nodes.size());
      std::vector<uint32_t> leaves;
      for (const NodeAllocation& na : j.alloc.nodes)
        leaves.push_back(inv_->node(*inv_->IndexOf(na.node)).leaf);
      std::sort(leaves.begin(), leaves.end());
      j.first_leaves = static_cast<int>(std::unique(leaves.begin(), leaves.end()) - leaves.begin());
    }
    j.seg_overhead_s = j.restarts > 0 ? ToSeconds(opts_.restart_cost) : 0.0;
    j.seg_duration_s = DurationOn(j, j.alloc);
    j.mark = j.ckpt_at = now_;
    j.mark_remaining = j.ckpt_remaining = j.remaining;
    j.halted = kTimeNever;
    j.fenced = false;
    j.stopping = false;
    j.slow = SlowFactor(j.alloc);
    PushEnd(idx);
    j.running_pos = static_cast<uint32_t>(running_.size());
    running_.push_back(idx);
    snap_.running.push_back(Info(idx, true));
    if (backfilled) ++result_.backfilled;
    if (faults_) SHOAL_RETURN_IF_ERROR(StartOnFaultyNodes(idx));
    return Status::Ok();
  }

  // Its end from its mark on, at the pace it runs now: done, or its time limit.
  void PushEnd(uint32_t idx) {
    SimJob& j = jobs_[idx];
    ++j.epoch;
    const double overhead_left = j.seg_overhead_s - ToSeconds(now_ - j.seg_start);
    const Time finish = now_ + DurationFromSeconds(std::max(0.0, overhead_left) +
                                                   j.mark_remaining * j.seg_duration_s / j.slow);
    const Time limit = j.seg_start + j.req.time_limit;
    if (finish <= limit) {
      Push(std::max(finish, now_ + Duration(1)), EventType::kFinish, idx, j.epoch);
    } else {
      Push(std::max(limit, now_), EventType::kTimeLimit, idx, j.epoch);
    }
  }

  Status CheckWhole(const SimJob& j, const Allocation& a) const {
    const std::string wrong = NotWhole(j.req, a, j.t->name);
    return wrong.empty() ? Status::Ok() : Violation(wrong);
  }

  void StopRunning(uint32_t idx) {
    SimJob& j = jobs_[idx];
    const double held_s = ToSeconds(now_ - j.seg_start);
    result_.allocated_gpu_s += held_s * GpuEq(j);
    result_.restart_gpu_s += std::min(held_s, j.seg_overhead_s) * GpuEq(j);
    j.attained_gpu_s = AttainedNow(j);
    j.remaining = RemainingNow(j);
    ledger_.Give(j.alloc);
    if (j.account >= 0) account_gpus_[static_cast<size_t>(j.account)] -= GpuEq(j);
    SwapOut(running_, snap_.running, j.running_pos,
            [&](uint32_t moved, uint32_t pos) { jobs_[moved].running_pos = pos; });
    ++j.epoch;
  }

  void Finish(uint32_t idx, JobState state) {
    StopRunning(idx);
    SimJob& j = jobs_[idx];
    if (state == JobState::kCompleted && policy_.sort().UsesServiceHistory())
      RecordService(j.attained_gpu_s);
    j.phase = SimJob::Phase::kDone;
    j.state = state;
    j.end = now_;
    ++finished_;
  }

  // Back to the queue: preempted (it saved its work as it was told to
  // stop), or stopped by a fault (it keeps what its last checkpoint saved).
  void Requeue(uint32_t idx, bool preempted = true) {
    SimJob& j = jobs_[idx];
    double kept = 0;
    if (!preempted) {
      SaveCheckpoint(j, now_);
      kept = j.ckpt_remaining;
      const Time work_from = j.seg_start + DurationFromSeconds(j.seg_overhead_s);
      FaultStats& stats = faults_->stats();
      stats.lost_gpu_s +=
          std::max(0.0, ToSeconds(now_ - std::max(j.ckpt_at, work_from))) * GpuEq(j);
      ++stats.requeues;
      // Between passes: the last pass's order no longer holds it (RankHint).
      std::erase(ranked_, idx);
    }
    StopRunning(idx);
    if (!preempted) j.remaining = kept;
    j.alloc = Allocation{};
    j.phase = SimJob::Phase::kPending;
    j.queued_since = now_;
    ++j.restarts;
    AddPending(idx);
    if (preempted) ++result_.preemptions;
  }

  void RecordService(double gpu_s) {
    // A completion while the controller restarts is heard once it is back.
    if (faults_ && now_ < faults_->controller_up()) {
      unheard_service_.push_back(gpu_s);
      return;
    }
    service_.Record(gpu_s);
    snap_.service_index = service_.table();
  }

  // Fair share's usage, up to now: as the server accrues it (at every
  // instant here, before anything starts or stops; sched::DecayedService).
  void AccrueUsage() {
    const Duration dt = now_ - usage_updated_;
    if (dt.count() <= 0) return;
    for (size_t a = 0; a < snap_.accounts.size(); ++a) {
      double& usage = snap_.accounts[a].usage_gpu_s;
      usage = sched::DecayUsage(usage, dt, opts_.usage_half_life) +
              sched::DecayedService(account_gpus_[a], dt, opts_.usage_half_life);
    }
    usage_updated_ = now_;
  }

  sched::JobInfo Info(uint32_t idx, bool running) const {
    const SimJob& j = jobs_[idx];
    sched::JobInfo info;
    info.id = JobId(idx + 1);
    info.request = j.req;
    info.submit = j.entered;
    info.account = j.account;
    info.attained_gpu_s = AttainedNow(j);
    info.oracle_remaining_s = RemainingNow(j) * j.ref_s;
    info.queued_since = std::max(j.queued_since, j.entered);
    info.preemptible = true;  // trace jobs are taken to checkpoint; only preemptive policies use it
    info.model_speed = j.speed;
    if (running) {
      info.allocation = &j.alloc;
      info.start = j.seg_start;
      info.expected_end = j.seg_start + j.req.time_limit;
    }
    return info;
  }

  // A job joins the queue. What the scheduler sees of a pending job does
  // not change while it waits (nothing accrues), so its JobInfo is made once
  // here and kept beside pending_, at the same place, until it starts: a
  // pass with thousands waiting copies none of their requests.
  void AddPending(uint32_t idx) {
    queue_pos_[idx] = static_cast<uint32_t>(pending_.size());
    pending_.push_back(idx);
    joined_.push_back(idx);
    sched::JobInfo info = Info(idx, false);
    info.satisfiable = satisfiable_;  // Prepare() refused any job that could never run
    info.shape_class = jobs_[idx].shape_class;
    if (!info.request.NeedsWholeGpus()) ++snap_.pending_not_whole_gpus;
    snap_.pending.push_back(std::move(info));
  }

  // A job leaves the queue: the last one takes its place (the order of the
  // queue is kept in the rank hint, not here).
  void LeaveQueue(uint32_t idx) {
    const uint32_t pos = queue_pos_[idx];
    queue_pos_[idx] = kNotQueued;
    if (!snap_.pending[pos].request.NeedsWholeGpus()) --snap_.pending_not_whole_gpus;
    SwapOut(pending_, snap_.pending, pos,
            [&](uint32_t moved, uint32_t to) { queue_pos_[moved] = to; });
  }

  // Takes place `pos` out of a list of jobs and of the snapshot's JobInfos
  // kept beside it: the last job moves into the place (moved(job, pos) says
  // so), so that nothing behind it shifts.
  template <typename Moved>
  static void SwapOut(std::vector<uint32_t>& jobs, std::vector<sched::JobInfo>& infos, uint32_t pos,
                      Moved moved) {
    if (pos + 1 != jobs.size()) {
      jobs[pos] = jobs.back();
      infos[pos] = std::move(infos.back());
      moved(jobs[pos], pos);
    }
    jobs.pop_back();
    infos.pop_back();
  }

  // The next pass's Snapshot::rank_hint: the last pass's order without the
  // jobs that left the queue, then those that joined it since, so that the
  // pass sorts only what changed. (Only small arrays are read here: the
  // queue is deep and its jobs lie all over jobs_.)
  void RankHint() {
    std::vector<uint32_t>& hint = snap_.rank_hint;
    hint.clear();
    for (uint32_t idx : ranked_) {
      if (queue_pos_[idx] != kNotQueued) hint.push_back(queue_pos_[idx]);
    }
    // A waiting job's JobInfo does not change and the inventory is fixed:
    // what the last pass ranked is still in order.
    snap_.rank_hint_ranked = hint.size();
    for (uint32_t idx : joined_) {  // none of them was waiting at the last pass
      if (queue_pos_[idx] != kNotQueued) hint.push_back(queue_pos_[idx]);
    }
    if (hint.size() == pending_.size()) return;
    // Jobs no pass ranked yet (the first pass): list every job once.
    std::vector<bool> listed(pending_.size());
    for (uint32_t pos : hint)
      listed[pos] = true;
    for (uint32_t pos = 0; pos < pending_.size(); ++pos) {
      if (!listed[pos]) hint.push_back(pos);
    }
  }

  // Passes at this instant until one preempts nothing. As on the server, a
  // job placed where preempted jobs run starts at the next pass, once they
  // have stopped, and that pass sees them waiting again.
  Status Pass() {
    bool again = true;
    for (int round = 0; again && (!pending_.empty() || !stopping_.empty()); ++round) {
      if (round == kMaxPassesAtOnce)
        return Violation(fmt::format("{} passes at one instant still preempt", round));
      again = false;
      if (!pending_.empty()) SHOAL_RETURN_IF_ERROR(PassOnce(again));
      // Gangs a fault stopped on one node hold the rest until their other
      // nodes have stopped them too: after this pass, as a preemption's victims.
      for (uint32_t idx : std::exchange(stopping_, {})) {
        if (jobs_[idx].phase == SimJob::Phase::kRunning) Requeue(idx, /*preempted=*/false);
        again = true;
      }
    }
    return Status::Ok();
  }

  // A preemption victim with a part on a node that is out: the kill cannot
  // reach that part, and the server holds the job, no longer preemptible,
  // until the node reboots or its fence passes (then it is requeued as a
  // fault's job). Its parts on nodes that are up stop now and save its work
  // (as told); a job out everywhere goes on as the fault has it (a crashed
  // node's is halted; a silent node's runs until its agent fences it).
  void StopUnheard(uint32_t idx) {
    SimJob& j = jobs_[idx];
    if (j.stopping) return;
    j.stopping = true;
    snap_.running[j.running_pos].preemptible = false;
    bool reached = false;
    for (const NodeAllocation& na : j.alloc.nodes)
      reached |= !faults_->Out(*inv_->IndexOf(na.node));
    if (reached && j.halted == kTimeNever) {
      j.ckpt_remaining = RemainingAt(j, now_);
      j.ckpt_at = now_;
      Halt(idx);
    }
  }

  // A fault ended a job's part on one node (a failed GPU, a reboot): back to
  // the queue at once when that was all of it; a gang once its other nodes
  // have stopped their parts, which the server hears after the pass at this
  // instant (Pass). While the controller restarts it hears nothing: at once.
  void StopFailed(uint32_t idx) {
    // (A job being stopped already has its other parts stopped.)
    const bool gang = jobs_[idx].alloc.nodes.size() > 1 && !jobs_[idx].stopping;
    if (!gang || (faults_ && now_ < faults_->controller_up())) {
      Requeue(idx, /*preempted=*/false);
      return;
    }
    Halt(idx);
    stopping_.push_back(idx);
  }

  Status PassOnce(bool& preempted) {
    for (size_t k = 0; k < running_.size(); ++k) {  // what accrues while a job runs
      const SimJob& j = jobs_[running_[k]];
      snap_.running[k].attained_gpu_s = AttainedNow(j);
      snap_.running[k].oracle_remaining_s = RemainingNow(j) * j.ref_s;
    }
    RankHint();
    snap_.explain =
        opts_.check_invariants && result_.passes % std::max(1, opts_.explain_every) == 0;
    const Time t0 = WallNow();
    sched::Plan plan = sched::Schedule(snap_, now_, policy_);
    result_.schedule_seconds += ToSeconds(WallNow() - t0);
    ++result_.passes;
    if (snap_.explain) SHOAL_RETURN_IF_ERROR(CheckDecisions(plan));
    if (!plan.ranked.empty() || pending_.empty()) {
      ranked_.clear();
      for (uint32_t pos : plan.ranked)
        ranked_.push_back(pending_[pos]);
      joined_.clear();
    }  // else the pass ended before ranking: the last order stands, newcomers after it
    for (const sched::PreemptDecision& p : plan.preemptions) {
      const uint32_t v = static_cast<uint32_t>(p.victim.value() - 1);
      if (v >= jobs_.size() || jobs_[v].phase != SimJob::Phase::kRunning) {
        return Violation(fmt::format("preempted job {} is not running", ToString(p.victim)));
      }
      if (OnNodeOut(v)) {
        StopUnheard(v);
        continue;
      }
      Requeue(v, /*preempted=*/jobs_[v].halted == kTimeNever);  // a stopped job saves nothing more
    }
    preempted = !plan.preemptions.empty();
    std::erase_if(plan.starts, [](const sched::StartDecision& s) { return s.after_preemption; });
    for (sched::StartDecision& s : plan.starts) {
      const uint32_t idx = static_cast<uint32_t>(s.job.value() - 1);
      if (idx >= jobs_.size())
        return Violation(fmt::format("unknown job {} started", ToString(s.job)));
      SHOAL_RETURN_IF_ERROR(Start(idx, std::move(s.allocation), s.backfilled));
    }
    for (const sched::StartDecision& s : plan.starts)
      LeaveQueue(static_cast<uint32_t>(s.job.value() - 1));
    ScheduleWakeup(plan.wake_at);
    return Status::Ok();
  }

  // Every pending job got exactly one decision.
  Status CheckDecisions(const sched::Plan& plan) {
    seen_.assign(jobs_.size(), 0);
    for (const sched::StartDecision& s : plan.starts)
      ++seen_[s.job.value() - 1];
    for (const sched::PendingDecision& p : plan.pending) {
      if (p.reason == PendingReason::kNone)
        return Violation(fmt::format("job {} waits without a reason", ToString(p.job)));
      ++seen_[p.job.value() - 1];
    }
    for (uint32_t idx : pending_) {
      if (seen_[idx] != 1) {
        return Violation(fmt::format("pending job {} got {} decisions", jobs_[idx].t->name,
                                     static_cast<int>(seen_[idx])));
      }
    }
    return Status::Ok();
  }

  // The plan says when the order of the running jobs next changes with no
  // event (a LAS job reaching its next queue): wake up then, unless a later
  // pass says otherwise (a wake-up that is no longer the last plan's passes
  // nothing, as on the server).
  void ScheduleWakeup(Time wake_at) {
    next_wakeup_ = wake_at;
    if (wake_at < kTimeNever) Push(wake_at, EventType::kWakeup, 0, 0);
  }

  void Sample(Time until) {
    while (next_sample_ <= until) {
      UtilSample s;
      s.at = next_sample_;
      s.allocated_gpus = ledger_.AllocatedGpus();
      s.fragmented_gpus = ledger_.FragmentedGpus(workload_);
      if (result_.peak_power_w > 0) {
        s.power_w = idle_power_w_;
        for (uint32_t idx : running_)
          s.power_w += sched::AddedPower(*inv_, jobs_[idx].alloc, 0);
      }
      s.pending = static_cast<int>(pending_.size());
      s.running = static_cast<int>(running_.size());
      result_.samples.push_back(s);
      next_sample_ += sample_every_;
    }
  }

  Status RunReplay() {
    if (jobs_.empty()) return Status::Ok();
    const Time first = jobs_.front().submit;
    const Time last = jobs_.back().submit;
    StartFaults(first);
    sample_every_ = std::max(opts_.sample_every, (last - first) / 2000);
    next_sample_ = first;
    usage_updated_ = first;
    size_t cursor = 0;
    Time last_progress = WallNow();
    // The run ends when the last job does: faults never stop coming, and a
    // wake-up planned for a job that has since ended may still be queued.
    while ((cursor < jobs_.size() || !events_.empty()) && finished_ < jobs_.size()) {
      Time t = kTimeNever;
      if (cursor < jobs_.size()) t = jobs_[cursor].submit;
      if (!events_.empty()) t = std::min(t, events_.top().at);
      if (faults_) t = std::min(t, fault_source_->NextAt());
      Sample(t - Duration(1));
      now_ = t;
      AccrueUsage();
      bool changed = false;
      while (!events_.empty() && events_.top().at == t) {
        const Event e = events_.top();
        events_.pop();
        ++result_.events;
        changed |= Handle(e);
      }
      while (faults_ && fault_source_->NextAt() == t) {
        ++result_.events;
        changed |= BeginFault(fault_source_->Pop());
      }
      while (cursor < jobs_.size() && jobs_[cursor].submit == t) {
        SimJob& j = jobs_[cursor];
        j.phase = SimJob::Phase::kPending;
        j.entered = faults_ ? std::max(t, faults_->controller_up()) : t;
        j.queued_since = t;
        AddPending(static_cast<uint32_t>(cursor));
        ++cursor;
        ++result_.events;
        changed = true;
      }
      // The nodes as the controller knows them, after the faults of this instant.
      if (faults_ && faults_->TakeStatusesChanged()) snap_.nodes = faults_->statuses();
      // While the controller restarts, nothing is scheduled; it passes when back.
      if (changed && (!pending_.empty() || !stopping_.empty()) &&
          (!faults_ || now_ >= faults_->controller_up()))
        SHOAL_RETURN_IF_ERROR(Pass());
      if (opts_.check_invariants && result_.events - last_full_check_ >= opts_.full_check_every) {
        SHOAL_RETURN_IF_ERROR(FullCheck());
      }
      if (opts_.progress && opts_.wall_clock && (result_.events & 1023) == 0 &&
          WallNow() - last_progress >= std::chrono::seconds(1)) {
        last_progress = WallNow();
        opts_.progress(
            {result_.policy, now_, finished_, jobs_.size(), pending_.size(), running_.size()});
      }
    }
    Sample(now_);
    if (faults_) {
      faults_->End(now_);
      result_.faults = faults_->stats();
    }
    if (opts_.check_invariants) SHOAL_RETURN_IF_ERROR(FullCheck());
    for (const SimJob& j : jobs_) {
      if (j.phase != SimJob::Phase::kDone) {
        return Violation(fmt::format(
            "job {} never finished (it waits for {})", j.t->name,
            j.phase == SimJob::Phase::kPending ? "resources that never came" : "nothing"));
      }
    }
    Record();
    return Status::Ok();
  }

  // A finish, time limit, wake-up or fault event; true when the scheduler
  // should look again.
  bool Handle(const Event& e) {
    switch (e.type) {
      case EventType::kWakeup:
        if (next_wakeup_ != now_) return false;  // a later pass planned otherwise
        next_wakeup_ = kTimeNever;
        return true;
      case EventType::kFinish:
      case EventType::kTimeLimit: {
        const SimJob& j = jobs_[e.job];
        if (j.epoch != e.epoch || j.phase != SimJob::Phase::kRunning) return false;  // stale
        if (e.type == EventType::kFinish && OnNodeOut(e.job)) {
          // Its end cannot reach the controller, which will requeue it at
          // the node's fence as every job there: it runs again from its
          // last checkpoint, as on the server.
          Halt(e.job);
          return false;
        }
        Finish(e.job, e.type == EventType::kFinish ? JobState::kCompleted : JobState::kTimeout);
        return true;
      }
      default:
        return OnFaultEvent(e);
    }
  }

  // ---- faults (sim/faults.h) ----

  void StartFaults(Time first) {
    if (!opts_.faults.Any() && opts_.scripted_faults.empty()) return;
    faults_.emplace(opts_.faults, *inv_);
    if (!opts_.scripted_faults.empty()) {
      fault_source_.emplace(opts_.scripted_faults);
    } else {
      std::vector<int> gpus;
      for (NodeIndex n = 0; n < inv_->size(); ++n)
        gpus.push_back(inv_->node(n).gpu_count);
      fault_source_.emplace(opts_.faults, gpus, opts_.seed, first);
    }
    snap_.nodes = faults_->statuses();
    result_.faults_on = true;
    result_.fault_model =
        opts_.scripted_faults.empty() ? FormatFaultModel(opts_.faults) : "scripted";
  }

  // A fault begins; true when what the scheduler sees changed.
  bool BeginFault(const Fault& f) {
    if (!faults_->Begin(f, now_)) return false;
    const FaultModel& m = faults_->model();
    switch (f.kind) {
      case Fault::Kind::kNodeFail:
      case Fault::Kind::kHeartbeatLoss: {
        // A crashed node's jobs stop at once; a silent node's run until its
        // agent, cut off for the node timeout, stops them. The controller
        // notices either after the node timeout, unless a crashed node
        // reboots first (its jobs are requeued when it registers again). A
        // silent node is heard again no sooner than noticed (shorter gaps
        // change nothing: FaultState::Begin).
        const bool crashed = f.kind == Fault::Kind::kNodeFail;
        if (crashed) {
          for (uint32_t idx : JobsOn(f.node, -1))
            Halt(idx);
        }
        const Time detected = m.DownAt(now_);
        Push(detected, EventType::kNodeDetected, f.node, 0);
        Push(crashed ? now_ + f.lasts : std::max(now_ + f.lasts, detected), EventType::kNodeBack,
             f.node, 0);
        return false;
      }
      case Fault::Kind::kGpuXid:
        // What runs on it crashes, and its agent says so at once.
        for (uint32_t idx : JobsOn(f.node, f.gpu))
          StopFailed(idx);
        Push(now_ + f.lasts, EventType::kGpuRepaired, f.node, static_cast<uint64_t>(f.gpu));
        return true;
      case Fault::Kind::kGpuSlow:
        for (uint32_t idx : JobsOn(f.node, f.gpu))
          ChangePace(idx);
        Push(now_ + f.lasts, EventType::kGpuFast, f.node, static_cast<uint64_t>(f.gpu));
        return false;
      case Fault::Kind::kControllerRestart:
        Push(faults_->controller_up(), EventType::kControllerUp, 0, 0);
        return false;
    }
    return false;
  }

  bool OnFaultEvent(const Event& e) {
    const auto n = static_cast<NodeIndex>(e.job);
    const FaultModel& m = faults_->model();
    switch (e.type) {
      case EventType::kNodeDetected:
        if (now_ < faults_->controller_up()) {  // it counts anew once back (CreditUnheard)
          Push(m.DownAt(faults_->controller_up()), EventType::kNodeDetected, n, 0);
          return false;
        }
        // Back before it was noticed (a reboot), and perhaps out again since.
        if (!faults_->Out(n) || now_ < m.DownAt(faults_->OutSince(n))) return false;
        faults_->Detected(n);
        for (uint32_t idx : JobsOn(n, -1)) {
          Halt(idx);
          SimJob& j = jobs_[idx];
          if (j.fenced) continue;
          j.fenced = true;
          Push(std::max(now_, faults_->OutSince(n) + m.Fence()), EventType::kFence, idx, j.epoch);
        }
        return true;
      case EventType::kNodeBack:
        // Jobs it stopped that the controller never fenced (the node
        // rebooted before it was noticed, or the controller was down
        // meanwhile) go back to the queue as it registers again.
        for (uint32_t idx : JobsOn(n, -1)) {
          if (jobs_[idx].halted != kTimeNever && !jobs_[idx].fenced) StopFailed(idx);
        }
        faults_->Back(n, now_);
        return true;
      case EventType::kGpuRepaired:
        faults_->Repaired(n, static_cast<int>(e.epoch), now_);
        return true;
      case EventType::kGpuFast:
        faults_->Fast(n, static_cast<int>(e.epoch));
        for (uint32_t idx : JobsOn(n, static_cast<int>(e.epoch)))
          ChangePace(idx);
        return false;
      case EventType::kControllerUp:
        // A restarted server builds its service table afresh from the
        // store's last completions (server::RestoreFromStore), then hears
        // of the jobs that completed meanwhile.
        if (policy_.sort().UsesServiceHistory() && service_.size() > 0) {
          service_.Rebuild();
          snap_.service_index = service_.table();
        }
        for (double gpu_s : std::exchange(unheard_service_, {}))
          RecordService(gpu_s);
        return true;
      case EventType::kFence: {
        const SimJob& j = jobs_[e.job];
        if (j.epoch != e.epoch || j.phase != SimJob::Phase::kRunning) return false;
        if (now_ < faults_->controller_up()) {
          Push(faults_->controller_up(), EventType::kFence, e.job, e.epoch);
          return false;
        }
        Requeue(e.job, /*preempted=*/false);
        return true;
      }
      default:
        return false;
    }
  }

  // Running jobs with GPU `gpu` of node `n` (-1: anything there).
  std::vector<uint32_t> JobsOn(NodeIndex n, int gpu) const {
    std::vector<uint32_t> out;
    const NodeId id = inv_->node(n).id;
    for (uint32_t idx : running_) {
      for (const NodeAllocation& na : jobs_[idx].alloc.nodes) {
        if (na.node == id && (gpu < 0 || (na.gpu_mask >> gpu & 1) != 0)) out.push_back(idx);
      }
    }
    return out;
  }

  // Whether a node of its run is out: cut off from the controller (silent,
  // or crashed: then the job is halted already), noticed or not.
  bool OnNodeOut(uint32_t idx) const {
    if (!faults_) return false;
    for (const NodeAllocation& na : jobs_[idx].alloc.nodes) {
      if (faults_->Out(*inv_->IndexOf(na.node))) return true;
    }
    return false;
  }

  // A fault stopped it: no more progress, and its end events are void.
  void Halt(uint32_t idx) {
    SimJob& j = jobs_[idx];
    if (j.halted != kTimeNever) return;
    j.halted = now_;
    ++j.epoch;
  }

  // Faults: the controller starts nothing where it knows a node down or
  // draining or a GPU failed (an invariant). A node out that it has not
  // noticed yet takes the job but runs none of it.
  Status StartOnFaultyNodes(uint32_t idx) {
    for (const NodeAllocation& na : jobs_[idx].alloc.nodes) {
      const NodeIndex n = *inv_->IndexOf(na.node);
      const sched::NodeStatus& st = faults_->statuses()[n];
      if (st.state != NodeState::kUp || (na.gpu_mask & st.unhealthy_gpus) != 0) {
        return Violation(fmt::format("job {} started on node {}, which is {}{}", jobs_[idx].t->name,
                                     inv_->node(n).name, NodeStateName(st.state),
                                     st.unhealthy_gpus ? " with a failed GPU" : ""));
      }
      if (faults_->Out(n)) Halt(idx);
    }
    return Status::Ok();
  }

  // The share of its speed a job keeps on `a`: a slow GPU slows the whole job.
  double SlowFactor(const Allocation& a) const {
    if (!faults_) return 1.0;
    for (const NodeAllocation& na : a.nodes) {
      if ((faults_->SlowGpus(*inv_->IndexOf(na.node)) & na.gpu_mask) != 0)
        return faults_->model().slow_factor;
    }
    return 1.0;
  }

  // One of its GPUs turned slow, or fast again: it goes on at the new pace.
  void ChangePace(uint32_t idx) {
    SimJob& j = jobs_[idx];
    const double slow = SlowFactor(j.alloc);
    if (slow == j.slow) return;
    SaveCheckpoint(j, now_);
    j.mark_remaining = RemainingAt(j, now_);
    j.mark = now_;
    j.slow = slow;
    if (j.halted == kTimeNever) PushEnd(idx);
  }

  // Moves a running job's last checkpoint up to the last one at or before
  // `t`: one after every FaultModel::checkpoint_every of work in this run.
  void SaveCheckpoint(SimJob& j, Time t) const {
    const Duration every = opts_.faults.checkpoint_every;
    if (every.count() <= 0) return;
    const Time work_from = j.seg_start + DurationFromSeconds(j.seg_overhead_s);
    const Time until = std::min(t, j.halted);
    if (until < work_from + every) return;
    const Time last = work_from + (until - work_from) / every * every;
    if (last <= j.ckpt_at) return;  // (then `last` is after the mark: RemainingAt holds)
    j.ckpt_remaining = RemainingAt(j, last);
    j.ckpt_at = last;
  }

  Status FullCheck() {
    last_full_check_ = result_.events;
    std::vector<const Allocation*> running;
    for (uint32_t idx : running_)
      running.push_back(&jobs_[idx].alloc);
    Status s = ledger_.CheckAgainst(running);
    return s.ok() ? s : Violation(s.message());
  }

  void Record() {
    result_.jobs.reserve(jobs_.size());
    for (const SimJob& j : jobs_) {
      JobRecord r;
      r.name = j.t->name;
      r.account = j.t->account;
      r.gpus = j.req.total_gpus;
      r.gpu_equivalents = j.req.GpuEquivalents();
      r.submit = j.submit;
      r.first_start = j.first_start;
      r.waited = j.waited;
      r.end = j.end;
      r.duration = DurationFromSeconds(j.ref_s);
      r.state = j.state;
      r.restarts = j.restarts;
      r.nodes = j.first_nodes;
      r.leaves = j.first_leaves;
      result_.jobs.push_back(std::move(r));
    }
  }

  // ---- fill (sim/fill.h) ----

  Status RunFill() {
    std::vector<FillTask> tasks;
    tasks.reserve(jobs_.size());
    for (const SimJob& j : jobs_)
      tasks.push_back({&j.req, j.t->name});
    FillContext c{opts_, policy_.params(), workload_, snap_, ledger_};
    return sim::RunFill(tasks, c, result_);
  }

  const Cluster& cluster_;
  const trace::Trace& trace_;
  sched::Policy policy_;
  const SimOptions& opts_;
  std::shared_ptr<const sched::Inventory> inv_;
  double idle_power_w_ = 0;  // every node idle
  Ledger ledger_;
  SimResult result_;
  sched::Snapshot snap_;
  std::vector<SimJob> jobs_;
  std::vector<uint32_t> pending_;  // jobs, in the order of snap_.pending
  std::vector<uint32_t> running_;  // jobs, in the order of snap_.running
  static constexpr uint32_t kNotQueued = ~uint32_t{0};
  std::vector<uint32_t> queue_pos_;  // by job: its place in pending_, or kNotQueued
  std::vector<uint32_t> ranked_;     // pending jobs in the order the last pass ranked them
  std::vector<uint32_t> joined_;     // jobs that joined the queue since
  std::vector<uint8_t> seen_;
  const std::shared_ptr<const Status> satisfiable_ = std::make_shared<const Status>();
  std::priority_queue<Event, std::vector<Event>, EventLater> events_;
  std::vector<sched::TypicalDemand> workload_;
  sched::ServiceHistory service_;
  std::vector<double> unheard_service_;  // completions while the controller restarts
  std::vector<uint32_t> stopping_;       // gangs requeued after this instant's pass (StopFailed)
  std::optional<FaultState> faults_;     // replays with faults
  std::optional<FaultSource> fault_source_;
  uint64_t seq_ = 0;
  Time now_{};
  Time usage_updated_{};
  std::vector<double> account_gpus_;  // GPUs each account's running jobs hold
  Time next_sample_{};
  Time next_wakeup_ = kTimeNever;
  Duration sample_every_{0};
  size_t finished_ = 0;
  int64_t last_full_check_ = 0;
};

}  // namespace

Result<SimResult> Simulate(const Cluster& cluster, const trace::Trace& trace,
                           const sched::PolicyParams& params, const SimOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<const sched::Inventory> inv,
                         sched::Inventory::Build(cluster));
  const sched::Registry builtin = sched::BuiltinRegistry();
  SHOAL_ASSIGN_OR_RETURN(
      sched::Policy policy,
      sched::Policy::Create(params, options.registry ? *options.registry : builtin, {true}));
  Simulator sim(cluster, trace, std::move(policy), options, std::move(inv));
  return sim.Run();
}

}  // namespace shoal::sim
