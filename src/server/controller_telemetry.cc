// The Controller's GPU telemetry: health verdicts from heartbeats, each
// job's GPU efficiency and idle GPUs, the cluster's series, and the view
// that /metrics is written from.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/log.h"
#include "sched/power.h"
#include "server/controller.h"
#include "server/controller_internal.h"
#include "server/telemetry_store.h"

namespace shoal::server {

namespace {

using internal::Denied;
using internal::IsActive;

}  // namespace

// The GPUs' health and telemetry from a heartbeat that carries them.
void Controller::GpuReports(NodeRecord& n, const Heartbeat& hb, Time now) {
  uint64_t unhealthy = 0;
  std::string first_reason;
  for (const GpuReport& g : hb.gpus) {
    if (g.healthy || g.index < 0 || g.index >= n.node.GpuCount()) continue;
    if (!(n.unhealthy_gpus >> g.index & 1) && first_reason.empty()) first_reason = g.health_reason;
    unhealthy |= uint64_t{1} << g.index;
  }
  if (unhealthy != n.unhealthy_gpus) {
    // A GPU that turns sick drains its node until an admin resumes it: what
    // runs may finish, nothing new starts there.
    if ((unhealthy & ~n.unhealthy_gpus) != 0 && !n.admin_drain) {
      n.admin_drain = true;
      n.node.state = NodeState::kDraining;
      n.node.state_reason = first_reason.empty() ? "a GPU reported itself unhealthy" : first_reason;
      RecordNode(n);
    }
    n.unhealthy_gpus = unhealthy;
    dirty_ = true;
  }
  n.gpus_now = std::make_shared<const std::vector<GpuReport>>(hb.gpus);
  AccountGpuUse(n.node.name, n, hb, now);
}

void Controller::NoteProgress(JobEfficiency& e, double rate) {
  e.progress_samples += 1;
  e.progress_rate += (rate - e.progress_rate) / static_cast<double>(e.progress_samples);
}

std::string Controller::ModelOfRun(const Job& job) const {
  std::optional<uint8_t> model;
  for (const NodeAllocation& na : job.allocation.nodes) {
    const std::optional<sched::NodeIndex> i = inventory_->IndexOf(na.node);
    if (!i) return "";
    const sched::InvNode& node = inventory_->node(*i);
    for (uint64_t mask = na.gpu_mask; mask != 0; mask &= mask - 1) {
      const auto g = static_cast<size_t>(std::countr_zero(mask));
      if (g >= node.gpu_model.size() || (model && *model != node.gpu_model[g])) return "";
      model = node.gpu_model[g];
    }
  }
  return model ? inventory_->models()[*model] : "";
}

void Controller::LearnSpeed(const Job& job, Time now) {
  if (job.efficiency.progress_samples == 0) return;
  if (auto learned =
          learned_.Learn(job.spec.user, job.spec.name, ModelOfRun(job), job.efficiency, now)) {
    batch_.speeds.push_back(std::move(*learned));
  }
}

Result<api::Json> Controller::ForgetSpeeds(const Identity& who, const std::string& user,
                                           const std::string& name) {
  const std::string& whose = user.empty() ? who.user : user;
  if (whose != who.user && !who.admin())
    return Denied("only an admin forgets another user's learned speeds");
  if (name.empty()) return InvalidArgument("name the job whose learned speeds to forget");
  const int forgotten = learned_.Forget(whose, name);
  if (forgotten > 0) {
    // A rate learned since the last commit goes with the rest.
    std::erase_if(batch_.speeds,
                  [&](const state::LearnedSpeed& s) { return s.user == whose && s.name == name; });
    batch_.deleted_speeds.emplace_back(whose, name);
  }
  return api::Json{{"user", whose}, {"name", name}, {"forgotten", forgotten}};
}

// Adds one heartbeat's telemetry to the efficiency of the jobs on the node,
// and notes which of them kept a GPU busy (for idle detection). Costs what
// the heartbeat's reconciliation costs already: one look at each running job.
void Controller::AccountGpuUse(const std::string& name, NodeRecord& n, const Heartbeat& hb,
                               Time now) {
  std::array<const GpuTelemetry*, kMaxGpusPerNode> by_index{};
  bool any = false;
  for (const GpuReport& g : hb.gpus) {
    if (!g.telemetry.present || g.index < 0 || g.index >= kMaxGpusPerNode) continue;
    by_index[static_cast<size_t>(g.index)] = &g.telemetry;
    any = true;
  }
  if (!any) return;
  if (telemetry_ != nullptr) telemetry_->Record(name, now, hb.gpus);
  const double interval_s = n.last_telemetry != Time{} ? ToSeconds(now - n.last_telemetry) : 0.0;
  n.last_telemetry = now;
  std::vector<uint64_t> woke;
  for (uint64_t id : RunningOn(name)) {
    Running& run = running_.at(id);
    if (!run.nodes_left.count(name)) continue;
    const Job* job = Find(JobId(id));
    if (job == nullptr) continue;
    const Partition* part = PartitionOf(*job);
    const double idle_pct = part != nullptr ? part->idle_util_pct : 5.0;
    bool busy = false, seen = false;
    for (const NodeAllocation& na : job->allocation.nodes) {
      if (na.node != n.node.id) continue;
      const double share = na.gpu_milli / 1000.0;
      for (uint64_t mask = na.gpu_mask; mask != 0; mask &= mask - 1) {
        const int index = std::countr_zero(mask);
        const GpuTelemetry* t = by_index[static_cast<size_t>(index)];
        if (t == nullptr) continue;
        seen = true;
        JobEfficiency& e = run.efficiency;
        e.samples += 1;
        const double k = static_cast<double>(e.samples);
        e.util_mean_pct += (t->util_pct - e.util_mean_pct) / k;
        e.util_peak_pct = std::max(e.util_peak_pct, t->util_pct);
        e.mem_mean_mib += (static_cast<double>(t->fb_used_mib) - e.mem_mean_mib) / k;
        e.mem_peak_mib = std::max(e.mem_peak_mib, t->fb_used_mib);
        // Energy from the GPU's own counter where it has one; otherwise power
        // over the time since the node's last telemetry (if that was recent).
        double& last = run.last_energy_j[{name, index}];
        if (t->energy_j > 0) {
          if (last > 0 && t->energy_j >= last) e.energy_wh += (t->energy_j - last) / 3600.0 * share;
          last = t->energy_j;
        } else if (interval_s > 0 && interval_s < 300) {
          e.energy_wh += t->power_w * interval_s / 3600.0 * share;
        }
        busy |= t->util_pct >= idle_pct;
      }
    }
    if (!seen) continue;
    if (run.first_sample == Time{}) {
      run.first_sample = now;
      run.last_busy = now;
    }
    if (busy) {
      run.last_busy = now;
      if (job->idle) woke.push_back(id);
    }
  }
  for (uint64_t id : woke) {
    Job& j = Mutable(JobId(id));
    j.idle = false;
    j.idle_since = Time{};
    Record(j);
    log::Info("job.busy_again", {{"job", id}, {"user", j.spec.user}});
  }
}

// Flags running jobs whose GPUs have all stayed under their partition's
// threshold for its idle_minutes, and cancels them where the partition says so.
void Controller::CheckIdle(Time now) {
  std::vector<std::pair<uint64_t, const Partition*>> flag;
  for (const auto& [id, run] : running_) {
    if (run.first_sample == Time{} || run.ending_as) continue;
    const Job* job = Find(JobId(id));
    if (job == nullptr || job->idle) continue;
    const Partition* part = PartitionOf(*job);
    const int minutes = part != nullptr ? part->idle_minutes : 30;
    if (minutes <= 0 || now - run.last_busy < std::chrono::minutes(minutes)) continue;
    flag.emplace_back(id, part);
  }
  for (const auto& [id, part] : flag) {
    Job& j = Mutable(JobId(id));
    j.idle = true;
    j.idle_since = running_[id].last_busy;
    Record(j);
    const bool cancel = part != nullptr && part->idle_action == "cancel";
    log::Info("job.idle", {{"job", id},
                           {"user", j.spec.user},
                           {"idle_since", ToSeconds(j.idle_since)},
                           {"action", cancel ? "cancel" : "notify"}});
    if (cancel) StopJob(j, JobState::kCancelled, now, "idle GPUs");
  }
}

// A point of the cluster-wide series: mean utilisation of the GPUs that
// report telemetry, and the fraction of all GPUs allocated.
void Controller::SampleCluster(Time now) {
  if (telemetry_ == nullptr || now - last_cluster_sample_ < telemetry_->interval()) return;
  last_cluster_sample_ = now;
  double util = 0;
  int reporting = 0, total = 0;
  for (const auto& [name, n] : nodes_) {
    total += n.node.GpuCount();
    if (!n.gpus_now || n.node.state == NodeState::kDown) continue;
    for (const GpuReport& g : *n.gpus_now) {
      if (!g.telemetry.present) continue;
      util += g.telemetry.util_pct;
      ++reporting;
    }
  }
  int allocated = 0;
  for (const auto& [id, r] : running_) {
    if (const Job* job = Find(JobId(id))) allocated += job->allocation.TotalGpus();
  }
  telemetry_->RecordCluster(
      now, reporting > 0 ? util / reporting : 0.0,
      total > 0 ? std::min(1.0, static_cast<double>(allocated) / total) : 0.0);
  if (UsesPowerHistory()) telemetry_->RecordPower(now, PowerBudgetsNow());
}

MetricsView Controller::Metrics() {
  SettleLayout();
  MetricsView v;
  v.nodes = node_table_;
  v.now.reserve(node_table_->size());
  for (const Node& node : *node_table_) {
    auto it = nodes_.find(node.name);
    if (it == nodes_.end()) {
      v.now.push_back({});
      continue;
    }
    v.now.push_back({EffectiveState(it->second), it->second.unhealthy_gpus, it->second.gpus_now,
                     it->second.last_seen});
  }
  v.jobs.reserve(active_);
  for (const auto& [id, job] : jobs_) {
    if (IsActive(job->state)) v.jobs.push_back(job);
  }
  for (const Partition& p : partitions_) {
    if (p.is_default) v.default_partition = p.name;
  }
  v.account_gpu_s = account_gpu_s_;
  v.submissions = submissions_;
  v.plan_starts_dropped = plan_starts_dropped_;
  v.pass_phases = pass_phases_;
  v.waits = waits_;
  v.power_budgets = PowerBudgetsNow();
  return v;
}

std::vector<TelemetryStore::PowerBudgetNow> Controller::PowerBudgetsNow() const {
  std::vector<TelemetryStore::PowerBudgetNow> out;
  if (inventory_ == nullptr || inventory_->power_budgets().empty()) return out;
  sched::PowerLedger ledger(*inventory_);
  for (const auto& [id, run] : running_) {
    const Job* job = Find(JobId(id));
    if (job != nullptr) {
      ledger.Charge(job->id, job->allocation, power_history_.Expected(job->spec), 1);
    }
  }
  for (size_t b = 0; b < inventory_->power_budgets().size(); ++b) {
    const sched::InvPowerBudget& budget = inventory_->power_budgets()[b];
    TelemetryStore::PowerBudgetNow now{budget.name, budget.watts, ledger.loads_w()[b], 0};
    sched::NodeBitset::ForEachAnd(budget.nodes, budget.nodes, [&](uint32_t n) {
      auto it = nodes_.find(inventory_->node(n).name);
      if (it == nodes_.end() || it->second.gpus_now == nullptr ||
          it->second.node.state == NodeState::kDown)
        return true;  // a node that is down reports nothing now
      for (const GpuReport& g : *it->second.gpus_now)
        now.gpu_measured_w += g.telemetry.power_w;
      return true;
    });
    out.push_back(std::move(now));
  }
  return out;
}

}  // namespace shoal::server
