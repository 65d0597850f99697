// The Controller's nodes: registration, heartbeats (what the agents report
// running and ending, reconciled with what the controller believes), drain
// and resume, and a node that is lost or rebooted.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "catalog/mig.h"
#include "core/check.h"
#include "core/log.h"
#include "core/strings.h"
#include "server/controller.h"
#include "server/controller_internal.h"

namespace shoal::server {

using internal::Denied;
using internal::kAwaitingAcceptance;

namespace {

// Whether the scheduler's inventory would see the same node: all of it but
// its state, which passes read from the node's record (a fleet that
// re-registers after a controller restart changes only that).
bool SameLayout(Node before, const Node& now) {
  before.state = now.state;
  before.state_reason = now.state_reason;
  before.boot_id = now.boot_id;
  return api::ToJson(before) == api::ToJson(now);
}

}  // namespace

Result<api::Json> Controller::RegisterNode(const Identity& who, Node node, Time now) {
  if (!who.node() && !who.admin()) return Denied("only node agents register nodes");
  if (node.name.empty()) return InvalidArgument("node: a name is required");
  if (!IsValidNodeName(node.name))
    return InvalidArgument(
        fmt::format("'{}' is not a node name (letters, digits, . _ -)", node.name));
  SHOAL_RETURN_IF_ERROR(CheckActsFor(who, node.name));
  if (node.address.empty()) return InvalidArgument("node: the agent's address is required");
  for (const std::string& p : node.partitions) {
    if (std::none_of(partitions_.begin(), partitions_.end(),
                     [&](const Partition& q) { return q.name == p; })) {
      return InvalidArgument(fmt::format("node {} names unknown partition '{}'", node.name, p));
    }
  }
  if (node.GpuCount() > kMaxGpusPerNode) return InvalidArgument("node: too many GPUs");
  auto it = nodes_.find(node.name);
  NodeRecord rec;
  if (it != nodes_.end()) {
    rec = it->second;
    node.id = rec.node.id;
  } else {
    node.id = NodeId(next_node_id_++);
  }
  node.state =
      rec.node.state == NodeState::kDown || it == nodes_.end() ? NodeState::kUp : rec.node.state;
  if (rec.admin_drain) node.state = rec.node.state;
  node.state_reason = rec.admin_drain ? rec.node.state_reason : "";
  // The acceptance result and the credential are the server's record, never
  // the agent's word; a node's first registration with a certificate binds it.
  node.acceptance = rec.node.acceptance;
  node.credential = rec.node.credential.empty() ? who.credential : rec.node.credential;
  if (it == nodes_.end() && RequiresAcceptance(node)) {
    rec.admin_drain = true;
    node.state = NodeState::kDrained;
    node.state_reason = std::string(kAwaitingAcceptance);
  }
  // A node that comes back as it was (every node of a fleet after a
  // controller restart) changes nothing: no store write, no pass. The record
  // in memory is what the store holds or is about to (every change of a
  // node's record goes through RecordNode).
  const bool known = it != nodes_.end();
  const bool rebooted = known && !rec.node.boot_id.empty() && !node.boot_id.empty() &&
                        rec.node.boot_id != node.boot_id;
  const api::Json before = known ? api::ToJson(StoredNode(rec)) : api::Json();
  Node previous = known ? std::move(rec.node) : Node();
  rec.node = std::move(node);
  rec.last_seen = now;
  const bool unchanged = known && api::ToJson(StoredNode(rec)) == before;
  const bool layout_changed = !known || (!unchanged && !SameLayout(previous, rec.node));
  const std::string name = rec.node.name;
  nodes_[name] = rec;
  if (!unchanged) {
    RecordNode(nodes_[name]);
    dirty_ = true;
  }
  // The scheduler's inventory is rebuilt once before the next pass, however
  // many nodes register meanwhile (a fleet after a controller restart).
  layout_changed_ |= layout_changed;
  if (rebooted) NodeRebooted(name, now);
  // What the server believes runs there, for the agent to reconcile with.
  api::Json running = api::Json::array();
  for (uint64_t id : RunningOn(name)) {
    if (running_.at(id).nodes_left.count(name))
      running.push_back({{"job", id}, {"epoch", Find(JobId(id))->epoch}});
  }
  // The timing the agent fences by (ControllerConfig::fence_margin).
  return api::Json{{"node", name},
                   {"id", nodes_[name].node.id.value()},
                   {"running", running},
                   {"node_timeout_s", ToSeconds(config_.node_timeout)},
                   {"heartbeat_s", ToSeconds(HeartbeatInterval())},
                   {"kill_grace_s", ToSeconds(config_.kill_grace)},
                   {"protocol", api::kNodeProtocol}};
}

Result<api::Json> Controller::ReceiveHeartbeat(const Identity& who, const std::string& name,
                                               const Heartbeat& hb, Time now) {
  if (!who.node() && !who.admin()) return Denied("only node agents send heartbeats");
  SHOAL_RETURN_IF_ERROR(CheckActsFor(who, name));
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFound(fmt::format("node {} is not registered", name));
  NodeRecord& n = it->second;
  n.last_seen = now;
  if (n.node.state == NodeState::kDown) {
    n.node.state = n.admin_drain ? NodeState::kDrained : NodeState::kUp;
    n.node.state_reason = n.admin_drain ? n.node.state_reason : "";
    RecordNode(n);
    dirty_ = true;
  }
  if (hb.has_gpus) GpuReports(n, hb, now);
  for (const JobEvent& e : hb.events) {
    if (e.kind != JobEvent::kExited) continue;
    if (e.step == 0) {
      NoteEnded(e, now);
      MainStepExited(e.job, e.epoch, name, e.exit_code, e.signal, e.message, now);
    } else if (const Job* job = Find(e.job); job != nullptr && job->epoch == e.epoch) {
      StepExited(e.job, e.step, name, e.exit_code, e.signal, e.message, now);
    }
  }
  // Reconcile: kill what the server does not know to run here; fail what the
  // agent has lost.
  std::set<std::pair<uint64_t, uint32_t>> reported;
  for (const api::RunningStep& rs : hb.running) {
    reported.insert({rs.job.value(), rs.step});
    const Job* job = Find(rs.job);
    auto r = running_.find(rs.job.value());
    const bool job_here = job != nullptr && job->state == JobState::kRunning &&
                          job->epoch == rs.epoch && r != running_.end();
    std::unordered_set<std::string>* confirmed = nullptr;
    if (job_here && rs.step == 0 && r->second.nodes_left.count(name)) {
      confirmed = &r->second.confirmed;
      r->second.alive_at = now;
      if (rs.progress > 0 && r->second.nodes.front() == name)
        NoteProgress(r->second.efficiency, rs.progress);
    } else if (job_here && rs.step != 0) {
      auto st = r->second.steps.find(rs.step);
      if (st != r->second.steps.end() && st->second.nodes_left.count(name)) {
        confirmed = &st->second.confirmed;
        if (st->second.stopped_unconfirmed.erase(name))
          OrderKill(name, rs.job, rs.epoch, rs.step, "stopped before its launch arrived");
      }
    }
    if (confirmed != nullptr) {
      confirmed->insert(name);
      continue;
    }
    OrderKill(name, rs.job, rs.epoch, rs.step, "not known to the server");
  }
  ReconcileLost(name, reported, now);
  return api::Json{{"ok", true}, {"heartbeat_s", ToSeconds(HeartbeatInterval())}};
}

Duration Controller::HeartbeatInterval() const {
  const double fleet_s =
      static_cast<double>(nodes_.size()) / std::max(1, config_.max_heartbeat_rate);
  const double most_s = ToSeconds(config_.node_timeout) / 3;
  return DurationFromSeconds(std::min(fleet_s, most_s));
}

// Exits: a gang ends when every node's task has; the first failure decides how.
void Controller::MainStepExited(JobId id, uint64_t epoch, const std::string& name, int code,
                                int signal, const std::string& message, Time now) {
  const Job* job = Find(id);
  auto r = running_.find(id.value());
  if (job == nullptr || job->state != JobState::kRunning || job->epoch != epoch ||
      r == running_.end())
    return;
  if (!r->second.nodes_left.erase(name)) return;
  Running& run = r->second;
  const bool failed = code != 0 || signal != 0;
  if (failed && run.first_failure_code == 0 && run.first_failure_signal == 0) {
    run.first_failure_code = code;
    run.first_failure_signal = signal;
  }
  // A job with a lost node goes back to the queue when its fence is
  // over (Tick), not when the other nodes' tasks end.
  if (run.fence_until) return;
  // A requeueable job that failed on a GPU its node now reports unhealthy
  // (an XID, in this heartbeat or before) goes back to the queue, as after a
  // lost node: the failure was the GPU's.
  if (failed && !run.ending_as && job->spec.requeue && OnFailedGpu(*job, name)) {
    StopJob(Mutable(id), JobState::kPending, now,
            fmt::format("a GPU it used on {} failed; requeued", name), /*requeue_after=*/true);
  }
  if (!run.nodes_left.empty()) {
    // One task of a gang failed: stop the others.
    if (failed && !run.ending_as)
      StopJob(Mutable(id), JobState::kFailed, now, fmt::format("a task failed on {}", name));
    return;
  }
  Job& j = Mutable(id);
  j.exit_code = run.first_failure_code != 0 ? run.first_failure_code : code;
  j.exit_signal = run.first_failure_signal != 0 ? run.first_failure_signal : signal;
  if (!message.empty()) j.reason_detail = message;
  const JobState state = run.requeue_after                        ? JobState::kPending
                         : run.ending_as                          ? *run.ending_as
                         : j.exit_code == 0 && j.exit_signal == 0 ? JobState::kCompleted
                                                                  : JobState::kFailed;
  MainStepEnded(j, state, now);
}

void Controller::NoteEnded(const JobEvent& e, Time now) {
  if (e.ended == Time{}) return;
  const Job* job = Find(e.job);
  auto r = running_.find(e.job.value());
  if (job == nullptr || job->state != JobState::kRunning || job->epoch != e.epoch ||
      r == running_.end())
    return;
  // The node's clock, kept within what the server saw: never before a
  // heartbeat said it still ran (or its start), never after this one.
  const Time at = std::clamp(e.ended, std::max(job->start_time, r->second.alive_at), now);
  if (!r->second.ended_at || at > *r->second.ended_at) r->second.ended_at = at;
}

bool Controller::OnFailedGpu(const Job& job, const std::string& name) const {
  auto n = nodes_.find(name);
  if (n == nodes_.end()) return false;
  for (const NodeAllocation& na : job.allocation.nodes) {
    if (na.node == n->second.node.id && (na.gpu_mask & n->second.unhealthy_gpus) != 0) return true;
  }
  return false;
}

// What the server believes runs on `name` but the node did not report
// (`reported`: (job, step)) after the launch grace: a launch that never
// arrived (the job goes back to the queue), or processes that vanished.
void Controller::ReconcileLost(const std::string& name,
                               const std::set<std::pair<uint64_t, uint32_t>>& reported, Time now) {
  std::vector<uint64_t> lost;
  std::vector<std::pair<uint64_t, uint32_t>> lost_steps;
  for (uint64_t id : RunningOn(name)) {
    const Running& r = running_.at(id);
    for (const auto& [step, live] : r.steps) {
      if (live.nodes_left.count(name) && !reported.count({id, step}) &&
          now - live.started > config_.launch_grace) {
        lost_steps.push_back({id, step});
      }
    }
    if (!r.nodes_left.count(name) || reported.count({id, 0})) continue;
    const Job* job = Find(JobId(id));
    if (job != nullptr && now - job->start_time > config_.launch_grace) lost.push_back(id);
  }
  for (const auto& [id, step] : lost_steps) {
    const bool arrived = running_.at(id).steps.at(step).confirmed.count(name) > 0;
    StepExited(JobId(id), step, name, -1, 0,
               arrived ? fmt::format("the step's processes vanished from {}", name)
                       : fmt::format("the step's launch never reached {}", name),
               now);
  }
  for (uint64_t id : lost) {
    if (!running_.count(id)) continue;  // ended with a step above
    const uint64_t epoch = Find(JobId(id))->epoch;
    if (!running_.at(id).confirmed.count(name)) {
      // No trace of it ever came from this node (no step, no refusal): the
      // launch never arrived and the job never ran here, so it goes back to
      // the queue under a new epoch whatever its requeue setting. Should the
      // order still arrive, its epoch is one the server has left: the next
      // heartbeat that reports it gets it killed.
      const std::string why = fmt::format("the launch never reached {}; requeued", name);
      StopJob(Mutable(JobId(id)), JobState::kPending, now, why, /*requeue_after=*/true);
      MainStepExited(JobId(id), epoch, name, -1, 0, why, now);
      // Mutable hands out a fresh copy: take the job again after the requeue.
      if (Job& j = Mutable(JobId(id)); j.state == JobState::kPending) {
        j.reason_detail = why;
        Record(j);
      }
      continue;
    }
    MainStepExited(JobId(id), epoch, name, -1, 0,
                   fmt::format("the job's processes vanished from {}", name), now);
  }
}

Status Controller::Drain(const Identity& who, const std::string& name, const std::string& reason,
                         Time) {
  if (!who.admin()) return Denied("only admins drain nodes");
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFound(fmt::format("no node {}", name));
  if (reason.empty()) return InvalidArgument("drain needs a reason");
  NodeRecord& n = it->second;
  n.admin_drain = true;
  n.node.state = NodeState::kDraining;
  n.node.state_reason = reason;
  RecordNode(n);
  dirty_ = true;
  return Status::Ok();
}

Status Controller::Resume(const Identity& who, const std::string& name, Time) {
  if (!who.admin()) return Denied("only admins resume nodes");
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFound(fmt::format("no node {}", name));
  NodeRecord& n = it->second;
  n.admin_drain = false;
  if (n.node.state != NodeState::kDown) {
    n.node.state = NodeState::kUp;
    n.node.state_reason.clear();
  }
  RecordNode(n);
  dirty_ = true;
  return Status::Ok();
}

Result<std::string> Controller::MigTarget(const Identity& who, const std::string& name,
                                          const std::string& layout,
                                          const std::vector<int>& gpus) const {
  if (!who.admin()) return Denied("only admins re-partition GPUs");
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFound(fmt::format("no node {}", name));
  const Node& n = it->second.node;
  SHOAL_RETURN_IF_ERROR(catalog::PlanMigLayouts(n.gpus, layout, gpus).status());
  if (n.state != NodeState::kDrained && n.state != NodeState::kDraining) {
    return FailedPrecondition(
        fmt::format("node {} is {}: drain it first (shoal drain {} --reason ...)", name,
                    NodeStateName(n.state), name));
  }
  if (const std::vector<uint64_t>& running = RunningOn(name); !running.empty()) {
    return FailedPrecondition(fmt::format("node {} still runs job {}: re-partition it once empty",
                                          name, running.front()));
  }
  return n.address;
}

// A node registered with a new boot id: it rebooted (within the node timeout,
// or the server would have found it lost), so what ran there ended with the
// reboot and needs no fencing. As after a lost node, a job that may be
// requeued goes back to the queue, once its other nodes' parts have stopped;
// any other ends NODE_FAIL. (Slurm: "Node unexpectedly rebooted".)
void Controller::NodeRebooted(const std::string& name, Time now) {
  const std::string why = fmt::format("node {} rebooted", name);
  const std::vector<uint64_t> hit = RunningOn(name);
  log::Warning("node.rebooted", {{"node", name}, {"jobs", static_cast<int64_t>(hit.size())}});
  for (uint64_t id : hit) {
    auto it = running_.find(id);
    if (it == running_.end()) continue;
    std::vector<uint32_t> steps;
    for (const auto& [step, live] : it->second.steps) {
      if (live.nodes_left.count(name)) steps.push_back(step);
    }
    for (uint32_t step : steps)
      StepExited(JobId(id), step, name, -1, 0, why, now);
    it = running_.find(id);
    if (it == running_.end() || !it->second.nodes_left.count(name)) continue;
    Job& j = Mutable(JobId(id));
    const uint64_t epoch = j.epoch;
    if (!it->second.ending_as) {
      if (j.spec.requeue) {
        StopJob(j, JobState::kPending, now, why + "; requeued", /*requeue_after=*/true);
      } else {
        StopJob(j, JobState::kNodeFail, now, why);
      }
    }
    MainStepExited(JobId(id), epoch, name, -1, 0, why, now);
  }
  dirty_ = true;
}

void Controller::NodeLost(NodeRecord& n, Time now) {
  n.node.state = NodeState::kDown;
  n.node.state_reason = fmt::format("not responding since {:.0f}", ToSeconds(n.last_seen));
  RecordNode(n);
  const std::vector<uint64_t> hit = RunningOn(n.node.name);
  for (uint64_t id : hit) {
    auto it = running_.find(id);
    if (it == running_.end()) continue;  // ended with a job before it
    Running& run = it->second;
    Job& j = Mutable(JobId(id));
    run.nodes_left.erase(n.node.name);
    for (auto& [step, live] : run.steps)
      live.nodes_left.erase(n.node.name);
    // The rest of the job cannot go on without this node.
    KillEverywhere(j, fmt::format("node {} was lost", n.node.name));
    if (j.spec.requeue || run.requeue_after) {
      // Not at once: the lost node may still run its part until its agent
      // notices it cannot reach us and stops it (fencing).
      const Time fenced =
          n.last_seen + config_.node_timeout + config_.kill_grace + config_.fence_margin;
      if (!run.fence_until || fenced > *run.fence_until) run.fence_until = fenced;
      j.reason_detail = fmt::format(
          "node {} was lost; requeued at {:.0f} once its agent has surely stopped the job",
          n.node.name, ToSeconds(*run.fence_until));
      Record(j);
    } else {
      j.reason_detail = fmt::format("node {} stopped responding", n.node.name);
      Finish(j, JobState::kNodeFail, now);
    }
  }
  dirty_ = true;
}

}  // namespace shoal::server
