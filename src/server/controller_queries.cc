// The Controller's queries: jobs as users may see them (with the last
// pass's pending decision), nodes with their jobs and telemetry,
// partitions, accounts and tokens, and where a job would start (--test-only).
// Read-only but for Tokens, which clears the flag that says the token list
// changed.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "catalog/mig.h"
#include "core/check.h"
#include "sched/request.h"
#include "sched/schedule.h"
#include "server/controller.h"
#include "server/controller_internal.h"

namespace shoal::server {

namespace {

using internal::Denied;
using internal::IsActive;

}  // namespace

Result<std::vector<std::shared_ptr<const Job>>> Controller::ListJobs(const Identity& who,
                                                                     const JobFilter& f) const {
  if (f.all_users && !who.admin()) return Denied("only admins list every user's jobs");
  if (!f.user.empty() && f.user != who.user && !who.admin())
    return Denied("you may list only your own jobs");
  const std::string user = f.UserFor(who);
  std::vector<std::shared_ptr<const Job>> out;
  // False once the listing is full.
  const auto take = [&](const std::shared_ptr<const Job>& ptr) {
    const Job& job = *ptr;
    if (!InPartition(job, f.partition)) return true;
    const bool state_ok =
        f.states.empty() ? IsActive(job.state)
                         : std::find(f.states.begin(), f.states.end(), job.state) != f.states.end();
    if (!state_ok) return true;
    if (IsTerminal(job.state) && job.end_time < f.ended_since) return true;
    out.push_back(ptr);
    return out.size() != f.limit;
  };
  if (user.empty()) {
    for (auto it = jobs_.upper_bound(f.after); it != jobs_.end(); ++it) {
      if (!take(it->second)) break;
    }
    return out;
  }
  auto mine = jobs_of_user_.find(user);
  if (mine == jobs_of_user_.end()) return out;
  const std::vector<uint64_t>& ids = mine->second.ids;
  for (auto id = std::upper_bound(ids.begin(), ids.end(), f.after); id != ids.end(); ++id) {
    auto it = jobs_.find(*id);
    if (it == jobs_.end()) continue;  // it has left
    SHOAL_DCHECK(it->second->spec.user == user, "a job listed under another user");
    if (!take(it->second)) break;
  }
  return out;
}

bool Controller::InPartition(const Job& job, std::string_view name) const {
  if (name.empty()) return true;
  const Partition* p = PartitionOf(job);
  return (p != nullptr ? std::string_view(p->name) : std::string_view(job.spec.partition)) == name;
}

JobView Controller::View(std::shared_ptr<const Job> job) const {
  JobView v{std::move(job), nullptr, node_names_};
  // A hold shows at once, before the next pass replaces the last decision.
  if (v.job->state == JobState::kPending && !v.job->spec.hold) {
    if (auto d = decisions_.find(v.job->id.value()); d != decisions_.end()) v.decision = d->second;
  }
  return v;
}

api::Json JobViewJson(const JobView& v) {
  const NodeNameTable& table = *v.names;
  auto name_of = [&table](NodeId id) {
    auto it = table.find(id.value());
    return it != table.end() ? it->second : fmt::format("node{}", id.value());
  };
  api::NodeNames names{name_of, [](std::string_view) { return std::optional<NodeId>(); }};
  const Job& job = *v.job;
  api::Json j = api::ToJson(job, &names);
  if (job.state == JobState::kPending) {
    if (v.decision != nullptr) {
      const sched::PendingDecision& d = *v.decision;
      j["reason"] = std::string(PendingReasonName(d.reason));
      if (!d.detail.empty()) j["reason_detail"] = d.detail;
      if (d.estimated_start != kTimeNever)
        j["estimated_start"] = api::TimeToJson(d.estimated_start);
      api::Json planned = api::Json::array();
      for (NodeId n : d.planned_nodes)
        planned.push_back(name_of(n));
      if (!planned.empty()) j["planned_nodes"] = planned;
    } else {
      // Not looked at by a pass yet, or an acceptance test (which no pass decides).
      j["reason"] = job.spec.hold ? "held" : std::string(PendingReasonName(job.reason));
    }
  } else if (job.state != JobState::kRunning) {
    j["reason"] = "none";
  }
  return j;
}

Result<api::Json> Controller::ShowJob(const Identity& who, JobId id) const {
  const Job* job = Find(id);
  if (job == nullptr)
    return NotFound(fmt::format("no job {} (finished jobs are in the history)", id.value()));
  if (!MaySee(who, *job)) return Denied(fmt::format("job {} belongs to another user", id.value()));
  api::Json j = JobViewJson(View(jobs_.at(id.value())));
  auto r = running_.find(id.value());
  if (r != running_.end() && r->second.ending_as)
    j["ending_as"] = std::string(JobStateName(*r->second.ending_as));
  // With power budgets, what the scheduler counts each of its GPUs as drawing
  // (0: the GPU's rated power).
  if (UsesPowerHistory() && IsActive(job->state))
    j["expected_gpu_power_w"] = power_history_.Expected(job->spec);
  // With a speed-aware policy, the speeds it places the job by, and whence.
  if (policy_->params().speed_aware && IsActive(job->state)) {
    const ModelSpeeds s = SpeedsOf(job->spec, *inventory_, &learned_);
    if (s.speed != nullptr) {
      api::Json by_model = api::Json::object();
      for (size_t m = 0; m < s.speed->size(); ++m)
        by_model[inventory_->models()[m]] = (*s.speed)[m];
      j["speeds"] = {{"source", s.source}, {"by_model", std::move(by_model)}};
    }
  }
  return j;
}

Result<api::Json> Controller::LearnedSpeedsJson(const Identity& who,
                                                const std::string& user) const {
  if (!user.empty() && user != who.user && !who.admin())
    return Denied("only an admin sees another user's learned speeds");
  api::Json list = api::Json::array();
  for (const state::LearnedSpeed* s :
       learned_.List(user.empty() && !who.admin() ? who.user : user)) {
    list.push_back({{"user", s->user},
                    {"name", s->name},
                    {"model", s->model},
                    {"rate", s->rate},
                    {"runs", s->runs},
                    {"updated", api::TimeToJson(s->updated)}});
  }
  return api::Json{{"speeds", std::move(list)}};
}

// The running jobs' parts by node id (only node `only`'s when it is set):
// one look at each running job, so that listing every node costs
// O(nodes + jobs), not O(nodes x jobs).
Controller::JobsByNode Controller::RunningByNode(std::optional<NodeId> only) const {
  JobsByNode out;
  auto add = [&](uint64_t id) {
    const Job* job = Find(JobId(id));
    if (job == nullptr) return;
    for (const NodeAllocation& na : job->allocation.nodes) {
      if (!only || na.node == *only) out[na.node.value()].push_back({job, &na});
    }
  };
  if (only) {
    for (uint64_t id : RunningOn(NodeName(*only)))
      add(id);
  } else {
    for (const auto& [id, r] : running_)
      add(id);
  }
  return out;
}

NodeView Controller::ViewOf(const NodeRecord& n) const {
  NodeView v{.node = n.node,
             .last_seen = n.last_seen,
             .unhealthy_gpus = n.unhealthy_gpus,
             .gpus_now = n.gpus_now,
             .jobs = {}};
  v.node.state = EffectiveState(n);
  for (uint64_t id : RunningOn(n.node.name)) {
    const Job* job = Find(JobId(id));
    if (job == nullptr) continue;
    for (const NodeAllocation& na : job->allocation.nodes) {
      if (na.node == n.node.id) v.jobs.push_back({id, job->spec.user, na.gpu_mask, na.GpuCount()});
    }
  }
  return v;
}

NodePage Controller::ListNodes(const NodeFilter& f) const {
  NodePage page;
  const bool narrowed = f.state || !f.partition.empty() || !f.model.empty();
  for (auto it = f.after.empty() ? nodes_.begin() : nodes_.upper_bound(f.after); it != nodes_.end();
       ++it) {
    const NodeRecord& n = it->second;
    if (narrowed) {
      if (f.state && EffectiveState(n) != *f.state) continue;
      if (!f.partition.empty() && std::find(n.node.partitions.begin(), n.node.partitions.end(),
                                            f.partition) == n.node.partitions.end())
        continue;
      // A node of that model: a GPU of it, whole or split into MIG slices.
      if (!f.model.empty() &&
          std::none_of(n.node.gpus.begin(), n.node.gpus.end(), [&f](const Gpu& g) {
            return g.model == f.model || catalog::BaseModel(g.model) == f.model;
          })) {
        continue;
      }
    }
    if (f.limit != 0 && page.nodes.size() == f.limit) {
      page.next_after = page.nodes.back().node.name;
      break;
    }
    page.nodes.push_back(ViewOf(n));
  }
  return page;
}

api::Json Controller::NodeSummary() const {
  struct Count {
    int nodes = 0, gpus = 0, gpus_used = 0;
  };
  std::map<std::pair<std::string, NodeState>, Count> counts;  // (model, state)
  std::unordered_map<uint64_t, int> used;                     // node id -> GPUs in use
  for (const auto& [id, r] : running_) {
    if (const Job* job = Find(JobId(id))) {
      for (const NodeAllocation& na : job->allocation.nodes)
        used[na.node.value()] += na.GpuCount();
    }
  }
  for (const auto& [name, n] : nodes_) {
    Count& c = counts[{n.node.gpus.empty() ? "" : n.node.gpus[0].model, EffectiveState(n)}];
    c.nodes += 1;
    c.gpus += n.node.GpuCount();
    if (auto u = used.find(n.node.id.value()); u != used.end()) c.gpus_used += u->second;
  }
  api::Json rows = api::Json::array();
  for (const auto& [key, c] : counts) {
    rows.push_back({{"model", key.first},
                    {"state", std::string(NodeStateName(key.second))},
                    {"nodes", c.nodes},
                    {"gpus", c.gpus},
                    {"gpus_used", c.gpus_used}});
  }
  return api::Json{{"summary", rows}, {"nodes", nodes_.size()}};
}

Result<api::Json> Controller::NodeJson(const std::string& name) const {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NotFound(fmt::format("no node {}", name));
  return NodeViewJson(ViewOf(it->second));
}

api::Json NodeViewJson(const NodeView& v) {
  api::Json j = api::ToJson(v.node);
  j["state"] = std::string(NodeStateName(v.node.state));
  j["last_seen"] = api::TimeToJson(v.last_seen);
  // GPUs in use and by which job.
  api::Json jobs = api::Json::array();
  int used = 0;
  for (const NodeView::JobPart& p : v.jobs) {
    used += p.gpus;
    jobs.push_back({{"job", p.job}, {"user", p.user}, {"gpus", FormatGpuMask(p.gpu_mask)}});
  }
  j["gpus_used"] = used;
  j["jobs"] = jobs;
  if (v.unhealthy_gpus != 0) j["unhealthy_gpus"] = FormatGpuMask(v.unhealthy_gpus);
  // The last heartbeat's telemetry, beside each GPU.
  static const std::vector<GpuReport> kNoReports;
  for (const GpuReport& g : v.gpus_now ? *v.gpus_now : kNoReports) {
    if (g.index < 0 || g.index >= static_cast<int>(j["gpus"].size())) continue;
    api::Json& gj = j["gpus"][static_cast<size_t>(g.index)];
    if (!g.healthy) {
      gj["healthy"] = false;
      gj["health_reason"] = g.health_reason;
    }
    if (!g.telemetry.present) continue;
    const GpuTelemetry& t = g.telemetry;
    gj["telemetry"] = {{"util", t.util_pct},
                       {"mem_copy_util", t.mem_copy_util_pct},
                       {"fb_used_mib", t.fb_used_mib},
                       {"fb_free_mib", t.fb_free_mib},
                       {"power_w", t.power_w},
                       {"temp_c", t.temperature_c},
                       {"sm_clock_mhz", t.sm_clock_mhz},
                       {"energy_j", t.energy_j},
                       {"ecc_corrected", t.ecc_corrected},
                       {"ecc_uncorrected", t.ecc_uncorrected},
                       {"xid_errors", t.xid_errors},
                       {"last_xid", t.last_xid}};
  }
  return j;
}

api::Json Controller::PartitionsJson() const {
  api::Json out = api::Json::array();
  for (const Partition& p : partitions_)
    out.push_back(api::ToJson(p));
  return out;
}

api::Json Controller::AccountsJson() const {
  api::Json out = api::Json::array();
  for (const Account& a : accounts_) {
    api::Json j = api::ToJson(a);
    auto u = usage_.find(a.name);
    j["usage_gpu_hours"] = u == usage_.end() ? 0.0 : u->second.usage_gpu_s / 3600;
    out.push_back(j);
  }
  return out;
}

Result<api::Json> Controller::TokensJson(const Identity& who) const {
  if (!who.admin()) return Denied("only admins list tokens");
  api::Json out = api::Json::array();
  for (const auto& [id, t] : tokens_) {
    api::Json j{{"id", id},
                {"user", t.user},
                {"role", t.role},
                {"created", api::TimeToJson(t.created)},
                {"revoked", t.revoked}};
    if (t.expires != kTimeNever) j["expires"] = api::TimeToJson(t.expires);
    if (!t.node.empty()) j["node"] = t.node;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<state::TokenRecord> Controller::Tokens() {
  tokens_changed_ = false;
  std::vector<state::TokenRecord> out;
  for (const auto& [id, t] : tokens_)
    out.push_back(t);
  return out;
}

// sbatch --test-only: where and when the job would start among the running
// jobs, without submitting it.
Result<api::Json> Controller::TestSubmit(const Identity& who, JobSpec spec, Time now) {
  SettleLayout();
  SHOAL_RETURN_IF_ERROR(TakeSubmitter(who, spec));
  SHOAL_RETURN_IF_ERROR(CheckQosAndReservation(who, spec, now));
  if (!spec.acceptance_node.empty())
    return InvalidArgument("an acceptance test cannot be tried with --test-only");
  sched::Request req;
  SHOAL_RETURN_IF_ERROR(CompileAndCheck(spec, &req));
  if (inventory_->size() == 0) return FailedPrecondition("no node has registered yet");
  std::unordered_map<std::string, int> account_index;
  const sched::Snapshot snap = RunningSnapshot(account_index, now);
  const Time not_before = spec.begin_time ? std::max(now, *spec.begin_time) : now;
  SHOAL_ASSIGN_OR_RETURN(sched::StartEstimate e,
                         sched::EstimateStart(snap, req, not_before, *policy_,
                                              UsesPowerHistory() ? ExpectedGpuPower(spec) : 0));
  api::Json nodes = api::Json::array();
  int cpus = 0;
  for (const NodeAllocation& na : e.allocation.nodes) {
    nodes.push_back(NodeName(na.node));
    cpus += api::WholeCpus(na.cpu_milli);
  }
  return api::Json{
      {"job", next_job_id_},
      {"start_time", ToSeconds(e.start)},
      {"nodes", nodes},
      {"cpus", cpus},
      {"gpus", e.allocation.TotalGpus()},
      {"partition", inventory_->partitions()[static_cast<size_t>(req.partition)].name}};
}

}  // namespace shoal::server
