// The Controller's node acceptance (docs/acceptance.md, "In the cluster"): the
// results `shoal bench --cluster` records, which lift or set acceptance
// drains, and the acceptance jobs the control loop places itself.
#include <fmt/format.h>

#include <algorithm>

#include "core/strings.h"
#include "server/controller.h"
#include "server/controller_internal.h"

namespace shoal::server {

namespace {

using internal::Denied;
using internal::kAcceptanceFailed;
using internal::kAwaitingAcceptance;

constexpr size_t kMaxReasonChars = 1000;
constexpr int kMaxAcceptanceNodes = 1024;

}  // namespace

Result<api::Json> Controller::RecordAcceptance(const Identity& who, const std::string& name,
                                               AcceptanceResult result, Time now) {
  if (!who.admin()) return Denied("only admins record acceptance results");
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFound(fmt::format("no node {}", name));
  NodeRecord& n = it->second;
  if (result.time == Time{}) result.time = now;
  const bool ours = !n.admin_drain || DrainedForAcceptance(n);
  std::string action = "kept";
  if (result.passed && n.admin_drain && DrainedForAcceptance(n)) {
    n.admin_drain = false;
    if (n.node.state != NodeState::kDown) n.node.state = NodeState::kUp;
    n.node.state_reason.clear();
    action = "resumed";
  } else if (!result.passed && ours) {
    n.admin_drain = true;
    if (n.node.state == NodeState::kUp) n.node.state = NodeState::kDraining;
    std::string why = std::string(kAcceptanceFailed) +
                      (result.summary.empty() ? "no summary given" : result.summary);
    if (why.size() > kMaxReasonChars) why.resize(kMaxReasonChars);
    n.node.state_reason = std::move(why);
    action = "drained";
  }
  n.node.acceptance = std::move(result);
  RecordNode(n);
  dirty_ = true;
  return api::Json{{"node", name},
                   {"state", std::string(NodeStateName(EffectiveState(n)))},
                   {"state_reason", n.node.state_reason},
                   {"acceptance", api::ToJson(*n.node.acceptance)},
                   {"action", action}};
}

bool Controller::DrainedForAcceptance(const NodeRecord& n) {
  const std::string& r = n.node.state_reason;
  return n.admin_drain && (r == kAwaitingAcceptance || r.starts_with(kAcceptanceFailed));
}

bool Controller::RequiresAcceptance(const Node& node) const {
  for (const Partition& p : partitions_) {
    if (!p.require_acceptance) continue;
    if (node.partitions.empty() ? p.is_default
                                : std::find(node.partitions.begin(), node.partitions.end(),
                                            p.name) != node.partitions.end()) {
      return true;
    }
  }
  return false;
}

// An acceptance test is one job on its nodes (one, or several for the
// multi-node NCCL test), all of each: it never goes through the scheduler
// (which must not place work on drained nodes), and the control loop starts
// it itself (PlaceAcceptanceJobs) through the normal launch path.
Result<api::Json> Controller::SubmitAcceptance(JobSpec spec, Time now) {
  const std::vector<std::string> names = AcceptanceNodes(spec);
  if (names.empty() || names.size() > static_cast<size_t>(kMaxAcceptanceNodes)) {
    return InvalidArgument(
        fmt::format("acceptance_node names 1 to {} nodes, comma-separated", kMaxAcceptanceNodes));
  }
  int gpus = -1;
  for (size_t k = 0; k < names.size(); ++k) {
    auto it = nodes_.find(names[k]);
    if (it == nodes_.end()) {
      return NotFound(
          fmt::format("acceptance test for node {}, which is not registered", names[k]));
    }
    if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(k), names[k]) !=
        names.begin() + static_cast<std::ptrdiff_t>(k)) {
      return InvalidArgument(fmt::format("acceptance_node names {} twice", names[k]));
    }
    if (gpus >= 0 && it->second.node.GpuCount() != gpus) {
      return InvalidArgument(
          "the nodes of a multi-node acceptance test must have as many GPUs each");
    }
    gpus = it->second.node.GpuCount();
  }
  if (spec.array || !spec.dependencies.empty() || spec.hold || spec.begin_time) {
    return InvalidArgument("an acceptance test takes no array, dependencies, hold or begin time");
  }
  spec.nodes = static_cast<int>(names.size());
  spec.gpus = 0;
  spec.gpus_per_node = gpus;
  spec.gpu_milli = kMilliPerGpu;
  spec.gpu_models.clear();
  spec.constraints.clear();
  spec.exclusive = true;
  spec.requeue = false;
  spec.tasks = 0;
  SHOAL_RETURN_IF_ERROR(spec.Validate());
  const Partition* part = nullptr;
  for (const Partition& p : partitions_) {
    if (spec.partition.empty() ? p.is_default : p.name == spec.partition) part = &p;
  }
  if (part == nullptr)
    return InvalidArgument(fmt::format("unknown partition '{}'", spec.partition));
  if (active_ + 1 > static_cast<size_t>(config_.max_active_jobs)) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("the queue is full ({} active jobs)", active_));
  }
  sched::Request req;
  req.inventory_version = 0;
  req.time_limit = spec.time_limit.count() > 0 ? spec.time_limit : part->DefaultTimeLimit();
  auto job = std::make_shared<Job>();
  job->id = JobId(next_job_id_++);
  job->spec = std::move(spec);
  job->state = JobState::kPending;
  job->submit_time = now;
  job->time_limit = req.time_limit;
  requests_[job->id.value()] = req;
  pending_order_.push_back(job->id.value());
  Record(*job);
  const uint64_t id = job->id.value();
  AddJob(std::move(job));
  ++active_;
  batch_.next_job_id = next_job_id_;
  submissions_ += 1;
  dirty_ = true;
  return api::Json{{"jobs", api::Json::array({id})}};
}

std::vector<std::string> Controller::AcceptanceNodes(const JobSpec& spec) {
  std::vector<std::string> names;
  for (std::string_view n : Split(spec.acceptance_node, ',')) {
    if (!n.empty()) names.emplace_back(n);
  }
  return names;
}

void Controller::PlaceAcceptanceJobs(const std::vector<uint64_t>& pending, Time now) {
  for (uint64_t id : pending) {
    const Job* job = Find(JobId(id));
    if (job == nullptr || job->state != JobState::kPending) continue;
    PendingReason reason = PendingReason::kNodesUnavailable;
    std::string wait;
    Allocation a;
    if (job->spec.hold) {
      reason = PendingReason::kHeld;
      wait = "held";
    }
    for (const std::string& name : AcceptanceNodes(job->spec)) {
      if (!wait.empty()) break;
      auto it = nodes_.find(name);
      if (it == nodes_.end()) {
        wait = fmt::format("node {} is no longer registered", name);
        break;
      }
      const NodeRecord& n = it->second;
      const NodeState st = EffectiveState(n);
      if (st == NodeState::kDown) {
        wait = fmt::format("node {} is down", name);
      } else if (st != NodeState::kUp && !DrainedForAcceptance(n)) {
        wait = fmt::format(
            "node {} is {} ({}); acceptance tests run only on nodes that are up or drained "
            "for acceptance",
            name, NodeStateName(st), n.node.state_reason);
      } else if (!RunningByNode(n.node.id).empty()) {
        reason = PendingReason::kResources;
        wait = fmt::format("node {} still runs other jobs", name);
      }
      NodeAllocation na;
      na.node = n.node.id;
      na.gpu_mask = n.node.GpuCount() >= 64 ? ~uint64_t{0} : (uint64_t{1} << n.node.GpuCount()) - 1;
      na.cpu_milli = n.node.cpu_milli;
      na.mem_mib = n.node.memory_mib;
      na.exclusive = true;
      a.nodes.push_back(na);
    }
    if (!wait.empty()) {
      if (job->reason != reason || job->reason_detail != wait) {
        Job& j = Mutable(JobId(id));
        j.reason = reason;
        j.reason_detail = std::move(wait);
        Record(j);
      }
      continue;
    }
    StartJob(Mutable(JobId(id)), std::move(a), now);
  }
}

}  // namespace shoal::server
