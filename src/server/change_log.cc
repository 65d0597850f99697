#include "server/change_log.h"

#include "core/log.h"

namespace shoal::server {

namespace {

// One job.state line: `job` went from `from` to `to` (its state, or the
// pending it passed through within one commit).
void LogJob(const Job& job, std::string_view from, JobState to) {
  const std::string_view to_name = JobStateName(to);
  if (to == JobState::kPending) {
    log::Info("job.state",
              {{"job", job.id.value()},
               {"user", job.spec.user},
               {"partition", job.spec.partition},
               {"from", from},
               {"to", to_name},
               {"reason", PendingReasonName(to == job.state ? job.reason : PendingReason::kNone)}});
  } else if (to == JobState::kRunning) {
    log::Info("job.state", {{"job", job.id.value()},
                            {"user", job.spec.user},
                            {"partition", job.spec.partition},
                            {"from", from},
                            {"to", to_name},
                            {"nodes", static_cast<uint64_t>(job.allocation.nodes.size())},
                            {"epoch", job.epoch}});
  } else {
    log::Info("job.state", {{"job", job.id.value()},
                            {"user", job.spec.user},
                            {"partition", job.spec.partition},
                            {"from", from},
                            {"to", to_name},
                            {"exit_code", job.exit_code},
                            {"signal", job.exit_signal},
                            {"why", job.reason_detail}});
  }
}

}  // namespace

void ChangeLog::Seed(const state::Loaded& loaded) {
  for (const Job& job : loaded.active_jobs)
    jobs_[job.id.value()] = job.state;
  for (const Node& node : loaded.nodes)
    nodes_[node.name] = node.state;
}

void ChangeLog::Committed(const state::Batch& batch) {
  for (const Job& job : batch.jobs) {
    auto it = jobs_.find(job.id.value());
    const bool known = it != jobs_.end();
    if (known && it->second == job.state) continue;
    std::string_view from = known ? JobStateName(it->second) : "new";
    if (!known && job.state != JobState::kPending) {
      // Submitted and started (or ended) within one commit: every job is
      // pending first, so its submission is told too.
      LogJob(job, from, JobState::kPending);
      from = JobStateName(JobState::kPending);
    }
    LogJob(job, from, job.state);
    if (IsTerminal(job.state)) {
      if (known) jobs_.erase(it);
    } else {
      jobs_[job.id.value()] = job.state;
    }
  }
  for (const std::string& name : batch.deleted_nodes) {
    if (nodes_.erase(name) > 0) log::Info("node.removed", {{"node", name}});
  }
  for (const Node& node : batch.nodes) {
    auto [it, added] = nodes_.try_emplace(node.name, node.state);
    if (!added && it->second == node.state) continue;
    log::Info("node.state", {{"node", node.name},
                             {"from", added ? std::string_view("new") : NodeStateName(it->second)},
                             {"to", NodeStateName(node.state)},
                             {"gpus", static_cast<uint64_t>(node.gpus.size())},
                             {"why", node.state_reason}});
    it->second = node.state;
  }
}

void ChangeLog::Pass(const sched::PassStats& s, double ms) {
  const log::Level level =
      s.started > 0 || s.preempted > 0 ? log::Level::kInfo : log::Level::kDebug;
  if (!log::Enabled(level)) return;
  log::Event(level, "sched.pass",
             {{"pending", s.pending},
              {"considered", s.considered},
              {"started", s.started},
              {"backfilled", s.backfilled},
              {"preempted", s.preempted},
              {"ms", ms}});
}

}  // namespace shoal::server
