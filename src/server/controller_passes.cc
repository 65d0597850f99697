// The Controller's periodic work: fair-share usage and job GPU-seconds
// (AccrueUsage, and CatchUpUsage at a restart), lost nodes and time limits (Tick), and the
// scheduling pass that turns the pure scheduler's plan into starts, preemptions and pending
// decisions (SchedulePass).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"
#include "sched/schedule.h"
#include "sched/working_state.h"
#include "server/controller.h"
#include "server/controller_internal.h"
#include "server/speeds.h"

namespace shoal::server {

namespace {

using internal::IsActive;

constexpr uint16_t kTimeLimitMarks = MailBit(MailEvent::kTimeLimit90) |
                                     MailBit(MailEvent::kTimeLimit80) |
                                     MailBit(MailEvent::kTimeLimit50);

}  // namespace

void Controller::AccrueUsage(Time now) {
  const Duration dt = now - last_usage_;
  if (dt.count() <= 0) return;
  for (auto& [name, u] : usage_) {
    u.usage_gpu_s = sched::DecayUsage(u.usage_gpu_s, dt, config_.usage_half_life);
    u.updated = now;  // the time its figure is for (Restore brings it up to date)
  }
  for (const auto& [id, r] : running_) {
    const Job* job = Find(JobId(id));
    if (job == nullptr) continue;
    const Duration held = now - std::max(job->start_time, last_usage_);
    account_gpu_s_[job->spec.account] +=
        std::max(0.0, job->allocation.GpuEquivalents() * ToSeconds(held));
    if (!job->spec.account.empty()) {
      state::AccountUsage& u = usage_[job->spec.account];
      u.account = job->spec.account;
      u.usage_gpu_s +=
          sched::DecayedService(job->allocation.GpuEquivalents(), held, config_.usage_half_life);
      u.updated = now;
    }
  }
  // Jobs keep their own GPU-seconds up to the last accrual in the job record
  // when they end (Finish); usage here is for fair share. (Running jobs
  // only: no ChangedJob, which a pass needs for pending jobs, and a running
  // job becomes pending again through Mutable.)
  for (auto& [id, r] : running_) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    auto copy = std::make_shared<Job>(*it->second);
    copy->gpu_seconds = ServiceAt(*copy, now);
    copy->efficiency = r.efficiency;
    it->second = std::move(copy);
  }
  // Running jobs' efficiency reaches the store every few minutes (and when
  // they end), so that a restart loses at most that much of it.
  if (now - last_efficiency_commit_ >= std::chrono::minutes(5)) {
    for (const auto& [id, r] : running_) {
      if (r.efficiency.samples == 0 && r.efficiency.progress_samples == 0) continue;
      if (auto it = jobs_.find(id); it != jobs_.end()) Record(*it->second);
    }
    last_efficiency_commit_ = now;
  }
  last_usage_ = now;
  if (now - last_usage_commit_ >= std::chrono::seconds(60)) {
    for (const auto& [name, u] : usage_)
      batch_.usage.push_back(u);
    last_usage_commit_ = now;
  }
}

void Controller::CatchUpUsage(Time now, const std::vector<Job>& ended_since) {
  std::map<std::string, Time> as_of;
  for (auto& [name, u] : usage_) {
    as_of[name] = u.updated;
    u.usage_gpu_s = sched::DecayUsage(u.usage_gpu_s, now - u.updated, config_.usage_half_life);
    u.updated = now;
  }
  // Jobs that ended after their account's figure was committed: what they
  // held from then to their end, decayed to now.
  for (const Job& job : ended_since) {
    auto since = as_of.find(job.spec.account);
    if (since == as_of.end() || job.end_time <= since->second || job.start_time == Time{}) continue;
    const Time from = std::max(job.start_time, since->second);
    state::AccountUsage& u = usage_[job.spec.account];
    u.usage_gpu_s +=
        sched::DecayUsage(sched::DecayedService(job.allocation.GpuEquivalents(),
                                                job.end_time - from, config_.usage_half_life),
                          now - job.end_time, config_.usage_half_life);
  }
  for (const auto& [id, r] : running_) {
    const Job* job = Find(JobId(id));
    if (job == nullptr || job->spec.account.empty()) continue;
    state::AccountUsage& u = usage_[job->spec.account];
    u.account = job->spec.account;
    u.updated = now;
    auto since = as_of.find(job->spec.account);
    const Time from = std::max(job->start_time, since == as_of.end() ? Time{} : since->second);
    u.usage_gpu_s += sched::DecayedService(job->allocation.GpuEquivalents(), now - from,
                                           config_.usage_half_life);
  }
}

void Controller::SettleUsage(const Job& job, Time ended) {
  // Fair share was charged for the running job up to the last accrual.
  // Bring it to the job's end: the time since, if it ended after (between
  // ticks), or back, if it ended before (its end heard late). Usage is kept
  // as of the last accrual, so what is added or taken is valued then.
  if (ended == last_usage_) return;
  const double eq = job.allocation.GpuEquivalents();
  const Time from = std::max(job.start_time, std::min(ended, last_usage_));
  const Duration span = std::max(ended, last_usage_) - from;
  if (span.count() <= 0) return;
  const double sign = ended > last_usage_ ? 1.0 : -1.0;
  // The metrics' counter only grows (a Prometheus counter that falls reads
  // as a reset): what was counted past an end heard late stays counted.
  if (sign > 0) account_gpu_s_[job.spec.account] += eq * ToSeconds(span);
  if (job.spec.account.empty()) return;
  const Duration half_life = config_.usage_half_life;
  double service = sched::DecayedService(eq, span, half_life);
  if (ended > last_usage_ && half_life.count() > 0)
    service *= std::exp2(ToSeconds(ended - last_usage_) / ToSeconds(half_life));
  state::AccountUsage& u = usage_[job.spec.account];
  u.account = job.spec.account;
  u.usage_gpu_s = std::max(0.0, u.usage_gpu_s + sign * service);
}

void Controller::CreditUnheard(Duration d) {
  for (auto& [name, n] : nodes_) {
    if (n.node.state != NodeState::kDown) n.last_seen += d;
  }
}

void Controller::Tick(Time now, std::optional<Time> heard_through) {
  // Usage first, while the jobs that this tick requeues or ends still run:
  // what they held since the last tick counts for their accounts too.
  AccrueUsage(now);
  const Time heard = heard_through.value_or(now);
  for (auto& [name, n] : nodes_) {
    if (n.node.state != NodeState::kDown && heard - n.last_seen > config_.node_timeout)
      NodeLost(n, now);
  }
  std::vector<uint64_t> over;
  std::vector<uint64_t> stuck;
  std::vector<uint64_t> fenced;
  std::vector<uint64_t> warn;
  for (const auto& [id, r] : running_) {
    const Job* job = Find(JobId(id));
    if (job == nullptr) continue;
    if (r.fence_until) {
      if (now >= *r.fence_until) fenced.push_back(id);
      continue;
    }
    if (!r.ending_as && job->time_limit.count() > 0 && now > job->start_time + job->time_limit)
      over.push_back(id);
    if (SignalDue(*job, r, now)) warn.push_back(id);
    if ((job->spec.mail_types & kTimeLimitMarks) != 0 && !r.ending_as)
      MailTimeLimits(*job, running_[id], now);
    if (r.ending_as && now - r.kill_sent > config_.kill_grace + config_.node_timeout)
      stuck.push_back(id);
  }
  for (uint64_t id : fenced) {
    // Fenced: back to the queue, unless it was being stopped for good
    // (cancelled, timed out) meanwhile.
    Job& j = Mutable(JobId(id));
    const Running& r = running_[id];
    if (r.ending_as && !r.requeue_after) {
      Finish(j, *r.ending_as, now);
    } else {
      RequeueNow(j, now, j.reason_detail.empty() ? "a node was lost" : j.reason_detail);
    }
  }
  for (uint64_t id : warn) {
    // sbatch --signal: the job's warning, once, signal_before_s before its limit.
    const Job& j = *Find(JobId(id));
    running_[id].warned = true;
    SignalSteps(j, j.spec.signal, j.spec.signal_batch_only,
                fmt::format("{} s before the time limit (--signal)", j.spec.signal_before_s));
  }
  for (uint64_t id : over)
    StopJob(Mutable(JobId(id)), JobState::kTimeout, now, "time limit reached");
  for (uint64_t id : stuck) {
    // The agents never confirmed the stop: count the job as ended anyway.
    Job& j = Mutable(JobId(id));
    const Running r = running_[id];
    j.reason_detail = "the node did not confirm the stop";
    if (r.requeue_after) {
      RequeueNow(j, now, "requeued");
    } else {
      Finish(j, *r.ending_as, now);
    }
  }
  for (auto& [name, n] : nodes_) {
    if (n.node.state != NodeState::kDraining) continue;
    bool busy = false;
    for (const auto& [id, r] : running_)
      busy |= r.nodes_left.count(name) > 0;
    if (!busy) {
      n.node.state = NodeState::kDrained;
      RecordNode(n);
    }
  }
  TickReservations(now);
  CheckIdle(now);
  SampleCluster(now);
  // Finished jobs leave memory after a while (the store keeps them), and
  // their end states after the dependency horizon. Both queues are in
  // order of ending, so this costs only what leaves.
  while (!evict_order_.empty() && now - evict_order_.front().first > config_.finished_retention) {
    auto it = jobs_.find(evict_order_.front().second);
    if (it != jobs_.end() && !IsActive(it->second->state)) EraseJob(it);  // a requeued job stays
    evict_order_.pop_front();
  }
  while (!forget_order_.empty() && now - forget_order_.front().first > config_.dependency_horizon) {
    finished_.erase(forget_order_.front().second);
    forget_order_.pop_front();
  }
  if (!over.empty() || !stuck.empty()) dirty_ = true;
}

std::unordered_set<uint64_t> Controller::SingletonBlocked(
    const std::vector<const Job*>& pending) const {
  std::unordered_set<uint64_t> blocked;
  auto singleton = [](const Job& j) {
    return std::any_of(j.spec.dependencies.begin(), j.spec.dependencies.end(),
                       [](const Dependency& d) { return d.type == DependencyType::kSingleton; });
  };
  std::set<std::pair<std::string, std::string>> taken;  // (user, name) that run or go first
  bool any = false;
  for (const Job* j : pending)
    any |= singleton(*j);
  if (!any) return blocked;
  for (const auto& [id, r] : running_) {
    if (const Job* j = Find(JobId(id)); j != nullptr) taken.insert({j->spec.user, j->spec.name});
  }
  for (const Job* j : pending) {  // in submission order
    if (!singleton(*j)) continue;
    if (!taken.insert({j->spec.user, j->spec.name}).second) blocked.insert(j->id.value());
  }
  return blocked;
}

sched::JobInfo Controller::InfoOf(const Job& job,
                                  const std::unordered_map<std::string, int>& account_index) const {
  sched::JobInfo info;
  info.id = job.id;
  info.spec = &job.spec;
  if (auto r = requests_.find(job.id.value()); r != requests_.end()) info.request = r->second;
  info.submit = job.submit_time;
  auto a = account_index.find(job.spec.account);
  info.account = a == account_index.end() ? -1 : a->second;
  info.admin_priority = job.priority;
  info.attained_gpu_s = job.gpu_seconds;
  if (UsesPowerHistory()) info.gpu_power_w = power_history_.Expected(job.spec);
  if (job.array_task_id >= 0 && job.spec.array) {
    info.array_id = job.array_job_id.value();
    info.array_max_running = job.spec.array->max_running;
  }
  if (policy_->params().speed_aware) {
    Speeds& s = speeds_[job.id.value()];
    if (s.inventory_version != inventory_->version() || s.learned_version != learned_.version()) {
      s = {inventory_->version(), learned_.version(),
           SpeedsOf(job.spec, *inventory_, &learned_).speed};
    }
    info.model_speed = s.speed;
  }
  return info;
}

void Controller::RecordService(double gpu_s) {
  if (UsesServiceHistory()) service_.Record(gpu_s);
}

void Controller::SeedServiceHistory(const std::vector<Job>& completed) {
  if (!UsesServiceHistory() || completed.empty()) return;
  for (auto it = completed.rbegin(); it != completed.rend(); ++it)
    service_.Record(it->gpu_seconds);
  service_.Rebuild();
}

sched::Snapshot Controller::RunningSnapshot(std::unordered_map<std::string, int>& account_index,
                                            Time now) const {
  sched::Snapshot snap;
  snap.running.reserve(running_.size());
  snap.inventory = inventory_;
  snap.nodes.resize(inventory_->size());
  for (size_t i = 0; i < inventory_->size(); ++i) {
    const NodeRecord& n = *inventory_records_[i];
    snap.nodes[i] = {EffectiveState(n), n.unhealthy_gpus};
  }
  for (const Account& a : accounts_) {
    account_index[a.name] = static_cast<int>(snap.accounts.size());
    auto u = usage_.find(a.name);
    snap.accounts.push_back(
        {a.name, a.shares, u == usage_.end() ? 0.0 : u->second.usage_gpu_s, a.max_gpus});
  }
  AddQosAndReservations(snap);
  snap.service_index = service_.table();
  for (const auto& [id, r] : running_) {
    const Job* job = Find(JobId(id));
    if (job == nullptr) continue;
    sched::JobInfo info = InfoOf(*job, account_index);
    SetQosAndReservation(*job, snap, info);
    info.allocation = &job->allocation;
    // A pass between ticks sees service up to now (LAS queues, and
    // Plan::wake_at, which would otherwise come round again), as one product
    // from the run's start, not a sum of ticks: a job at a Gittins or LAS
    // boundary must fall on the side the simulator puts it.
    info.attained_gpu_s = ServiceAt(*job, now);
    info.start = job->start_time;
    info.expected_end = job->start_time + job->time_limit;
    info.preemptible = job->spec.requeue && !r.ending_as;
    snap.running.push_back(info);
  }
  return snap;
}

Controller::PendingInfos Controller::GatherPending(
    sched::Snapshot& snap, const std::unordered_map<std::string, int>& account_index,
    const std::vector<Waiting>& pending) {
  PendingInfos& last = pending_infos_;
  PendingInfos out;
  out.ids.reserve(pending.size());
  out.jobs.reserve(pending.size());
  out.flags.reserve(pending.size());
  bool any_singleton = false;
  for (const Waiting& w : pending) {
    out.flags.push_back(w.kept != kNotKept ? last.flags[w.kept] : FlagsOf(*w.job));
    any_singleton |= (out.flags.back() & kSingleton) != 0;
  }
  std::unordered_set<uint64_t> singleton_blocked;
  if (any_singleton) {
    std::vector<const Job*> jobs;
    for (const Waiting& w : pending)
      jobs.push_back(w.job);
    singleton_blocked = SingletonBlocked(jobs);
  }
  PlaceInfos(snap, account_index, pending, out);
  for (size_t k = 0; k < out.slots.size(); ++k) {
    SHOAL_DCHECK(snap.pending[out.slots[k]].id.value() == out.ids[k],
                 "a waiting job's JobInfo lies in another job's slot");
  }
  for (size_t k = 0; k < pending.size(); ++k) {
    const Job& job = *pending[k].job;
    const uint8_t flags = out.flags[k];
    sched::JobInfo& info = snap.pending[out.slots[k]];
    // What may change between passes while the job does not.
    if (flags & kQosOrReservation) {
      info.qos = -1;
      info.qos_factor = 0;
      info.reservation = -1;
      info.reservation_gone = false;
      SetQosAndReservation(job, snap, info);
    }
    if (flags & kSingleton) info.singleton_blocked = singleton_blocked.count(job.id.value()) > 0;
    if (UsesPowerHistory()) info.gpu_power_w = power_history_.Expected(job.spec);
    if (flags & kDependencies) {
      for (const Dependency& d : job.spec.dependencies) {
        const Job* dep = Find(d.job);
        if (dep != nullptr) {
          snap.dependency_states[d.job] = dep->state;
        } else if (auto f = finished_.find(d.job.value()); f != finished_.end()) {
          snap.dependency_states[d.job] = f->second;
        }
      }
    }
  }
  return out;
}

// The JobInfos stay where the last pass left them (the scheduler does not
// care in which order `pending` lists the jobs): a kept job keeps its slot,
// a new or changed one takes the slot of one that left, or a new slot at the
// end, and the slots still empty are filled from the end. A JobInfo is
// hundreds of bytes; with 100,000 waiting, moving each into a new vector
// (and faulting that vector in) was most of gathering them.
void Controller::PlaceInfos(sched::Snapshot& snap,
                            const std::unordered_map<std::string, int>& account_index,
                            const std::vector<Waiting>& pending, PendingInfos& out) {
  PendingInfos& last = pending_infos_;
  snap.pending = std::move(last.infos);
  std::vector<uint8_t> taken(snap.pending.size(), 0);
  for (const Waiting& w : pending) {
    if (w.kept != kNotKept) taken[last.slots[w.kept]] = 1;
  }
  std::vector<uint32_t> holes;  // ascending
  for (uint32_t s = 0; s < taken.size(); ++s) {
    if (!taken[s]) holes.push_back(s);
  }
  size_t lo = 0;  // holes[lo, hi) are still empty
  size_t hi = holes.size();
  out.slots.reserve(pending.size());
  for (const Waiting& w : pending) {
    if (w.kept != kNotKept) {
      out.ids.push_back(last.ids[w.kept]);
      out.jobs.push_back(std::move(last.jobs[w.kept]));
      out.slots.push_back(last.slots[w.kept]);
      continue;
    }
    const Job& job = *w.job;
    sched::JobInfo info = InfoOf(job, account_index);
    info.held = job.spec.hold;
    info.begin_time = job.spec.begin_time;
    info.queued_since = job.requeued_at != Time{} ? job.requeued_at : job.submit_time;
    info.dependencies = job.spec.dependencies.empty() ? nullptr : &job.spec.dependencies;
    info.dependency_any = job.spec.dependency_any;
    out.ids.push_back(job.id.value());
    out.jobs.push_back(jobs_.at(job.id.value()));
    if (lo < hi) {
      out.slots.push_back(holes[lo]);
      snap.pending[holes[lo++]] = std::move(info);
    } else {
      out.slots.push_back(static_cast<uint32_t>(snap.pending.size()));
      snap.pending.push_back(std::move(info));
    }
  }
  if (lo == hi) return;
  std::vector<uint32_t> job_at(snap.pending.size());  // by slot: the job's place in `out`
  for (uint32_t k = 0; k < out.slots.size(); ++k)
    job_at[out.slots[k]] = k;
  while (lo < hi) {
    const uint32_t back = static_cast<uint32_t>(snap.pending.size() - 1);
    if (holes[hi - 1] == back) {
      --hi;
    } else {  // the last slot holds a job (it is past every hole): into the first hole
      const uint32_t to = holes[lo++];
      snap.pending[to] = std::move(snap.pending[back]);
      out.slots[job_at[back]] = to;
      job_at[to] = job_at[back];
    }
    snap.pending.pop_back();
  }
}

uint8_t Controller::FlagsOf(const Job& job) {
  uint8_t flags = 0;
  if (!job.spec.qos.empty() || !job.spec.reservation.empty()) flags |= kQosOrReservation;
  if (!job.spec.dependencies.empty()) flags |= kDependencies;
  if (std::any_of(job.spec.dependencies.begin(), job.spec.dependencies.end(),
                  [](const Dependency& d) { return d.type == DependencyType::kSingleton; }))
    flags |= kSingleton;
  return flags;
}

std::vector<Controller::Waiting> Controller::WaitingJobs(bool same_world,
                                                         std::vector<uint64_t>& acceptance) {
  // A job that is the same version (jobs are copied on write) as at the
  // last pass is still pending, and its JobInfo is that pass's, where it
  // lies (PlaceInfos): a deep queue is then read without touching the jobs'
  // records, which is most of what gathering it costs.
  if (!std::is_sorted(pending_order_.begin(), pending_order_.end()))
    std::sort(pending_order_.begin(), pending_order_.end());
  pending_order_.erase(std::unique(pending_order_.begin(), pending_order_.end()),
                       pending_order_.end());
  const PendingInfos& last = pending_infos_;
  std::vector<Waiting> pending;
  pending.reserve(pending_order_.size());
  // The jobs whose record was replaced since the last pass (ChangedJob): any
  // other job that pending is pending still, the version the last pass saw,
  // found without a walk through the job map, whose nodes lie all over
  // memory (18 ms of a 50 ms pass over 100,000 waiting jobs).
  std::sort(changed_jobs_.begin(), changed_jobs_.end());
  size_t keep = 0;
  size_t c = 0;        // into `last`, which is in id order too
  size_t changed = 0;  // into changed_jobs_
  // Both in id order: a few steps along the map find the next one, where
  // looking it up from the root would cost a walk down the tree each.
  auto it = jobs_.begin();
  const auto find = [&](uint64_t id) -> const Job* {
    for (int steps = 0; it != jobs_.end() && it->first < id; ++steps) {
      if (steps == 8) {
        it = jobs_.lower_bound(id);
        break;
      }
      ++it;
    }
    return it == jobs_.end() || it->first != id ? nullptr : it->second.get();
  };
  for (uint64_t id : pending_order_) {
    while (c < last.ids.size() && last.ids[c] < id)
      ++c;
    while (changed < changed_jobs_.size() && changed_jobs_[changed] < id)
      ++changed;
    const bool was_pending = c < last.ids.size() && last.ids[c] == id;
    const bool unchanged = changed == changed_jobs_.size() || changed_jobs_[changed] != id;
    const Job* job = nullptr;
    if (same_world && was_pending && unchanged) {
      job = last.jobs[c].get();
      SHOAL_DCHECK(Find(JobId(id)) == job, "a job's record changed without ChangedJob");
    } else {
      job = find(id);
      if (job == nullptr) continue;
    }
    const bool same = same_world && was_pending && last.jobs[c].get() == job;
    if (!same && job->state != JobState::kPending) continue;
    pending_order_[keep++] = id;
    if (!same && !job->spec.acceptance_node.empty()) {
      acceptance.push_back(id);
      continue;
    }
    pending.push_back({job, same ? c : kNotKept});
  }
  changed_jobs_.clear();
  pending_order_.resize(keep);
  return pending;
}

sched::PassStats Controller::SchedulePass(Time now) {
  // Each phase's time, measured on the steady clock (PassPhases).
  auto mark = std::chrono::steady_clock::now();
  auto phase_done = [&](size_t phase) {
    const auto t = std::chrono::steady_clock::now();
    pass_phases_.seconds[phase] += std::chrono::duration<double>(t - mark).count();
    mark = t;
  };
  // Paced: while a fleet joins, each pass would otherwise rebuild the whole
  // inventory for the few nodes that joined since the one before.
  if (std::chrono::steady_clock::now() >= next_paced_rebuild_) SettleLayout();
  phase_done(0);
  dirty_ = false;
  std::vector<std::string> accounts;
  accounts.reserve(accounts_.size());
  for (const Account& a : accounts_)
    accounts.push_back(a.name);
  const bool same_world = pending_infos_.inventory_version == inventory_->version() &&
                          pending_infos_.accounts == accounts;
  std::vector<uint64_t> acceptance;
  const std::vector<Waiting> pending = WaitingJobs(same_world, acceptance);
  // Acceptance tests first, so that the scheduler sees the nodes they hold.
  PlaceAcceptanceJobs(acceptance, now);
  std::unordered_map<std::string, int> account_index;
  sched::Snapshot snap = RunningSnapshot(account_index, now);
  PendingInfos now_infos = GatherPending(snap, account_index, pending);
  now_infos.inventory_version = inventory_->version();
  now_infos.accounts = std::move(accounts);
  phase_done(1);

  sched::Plan plan = sched::Schedule(snap, now, *policy_);
  wake_at_ = plan.wake_at;
  phase_done(2);
  now_infos.infos = std::move(snap.pending);
  pending_infos_ = std::move(now_infos);

  // Verify the plan against the state once more before committing it (one
  // writer makes this cheap, and a scheduler bug is caught here, not on a node).
  sched::WorkingState check(*inventory_, snap.nodes);
  for (const sched::JobInfo& r : snap.running)
    check.Allocate(*r.allocation);
  for (const sched::PreemptDecision& p : plan.preemptions) {
    const Job* victim = Find(p.victim);
    if (victim == nullptr || victim->state != JobState::kRunning) continue;
    StopJob(Mutable(p.victim), JobState::kPending, now,
            fmt::format("preempted by job {}", p.preemptor.value()),
            /*requeue_after=*/true);
  }
  // A start the check refuses is dropped, never applied: the job stays
  // pending with reason plan_conflict until a later pass plans it again, and
  // shoal_scheduler_plan_starts_dropped_total counts the refusal (the plan's
  // pending decisions are for other jobs: none is for a job it starts).
  for (sched::StartDecision& s : plan.starts) {
    // A job placed where preempted jobs still run starts once they have stopped.
    if (s.after_preemption) continue;
    const Job* job = Find(s.job);
    if (job == nullptr || job->state != JobState::kPending) {
      // The snapshot held only pending jobs: a start for anything else is a
      // scheduler bug too, but there is no waiting job to tell.
      ++plan_starts_dropped_;
      continue;
    }
    if (Status fits = check.CanAllocate(s.allocation); !fits.ok()) {
      ++plan_starts_dropped_;
      auto d = std::make_shared<sched::PendingDecision>();
      d->job = s.job;
      d->reason = PendingReason::kPlanConflict;
      d->detail = fmt::format(
          "the scheduler placed it, but the placement failed the check before commit ({}); "
          "a later pass plans it again",
          fits.message());
      decisions_[s.job.value()] = std::move(d);
      continue;
    }
    check.Allocate(s.allocation);
    Job& started = Mutable(s.job);
    StartJob(started, std::move(s.allocation), now);
    if (!s.detail.empty()) {  // why on that model (a speed-aware policy's choice)
      started.reason_detail = std::move(s.detail);
      Record(started);
    }
  }
  for (sched::PendingDecision& d : plan.pending) {
    if (d.reason == PendingReason::kDependencyNeverSatisfied &&
        invalid_dep_mailed_.insert(d.job.value()).second) {
      if (const Job* job = Find(d.job)) MailAbout(*job, MailEvent::kInvalidDepend, now, d.detail);
    }
    // A job that waits as it did at the last pass keeps that decision (a
    // deep queue mostly does): no allocation, nothing freed.
    std::shared_ptr<const sched::PendingDecision>& kept = decisions_[d.job.value()];
    if (kept && kept->reason == d.reason && kept->estimated_start == d.estimated_start &&
        kept->detail == d.detail && kept->planned_nodes == d.planned_nodes)
      continue;
    kept = std::make_shared<const sched::PendingDecision>(std::move(d));
  }
  phase_done(3);
  return plan.stats;
}

}  // namespace shoal::server
