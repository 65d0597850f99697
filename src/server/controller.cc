#include "server/controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/check.h"
#include "core/strings.h"
#include "sched/request.h"
#include "sched/schedule.h"
#include "server/controller_internal.h"

namespace shoal::server {

namespace {

using internal::Denied;
using internal::IsActive;
using internal::kAwaitingAcceptance;
using internal::PortKey;
using internal::PortsFor;

}  // namespace

Controller::Controller(ControllerConfig config) : config_(std::move(config)) {
  ports_ = PortBook(config_.rendezvous_first, config_.rendezvous_last);
  auto params = sched::Policy::Preset(config_.policy);
  SHOAL_CHECK(params.ok(), params.status().message().c_str());
  auto policy = sched::Policy::Create(
      *params, config_.registry != nullptr ? *config_.registry : sched::BuiltinRegistry(),
      {.simulation = false});
  SHOAL_CHECK(policy.ok(), policy.status().message().c_str());
  policy_ = std::move(*policy);
  partitions_ = config_.partitions;
  if (partitions_.empty()) {
    Partition p;
    p.name = "default";
    p.is_default = true;
    partitions_.push_back(p);
  }
  accounts_ = config_.accounts;
  RebuildInventory();
}

Status Controller::Restore(const state::Loaded& loaded, Time now,
                           const std::vector<Job>& ended_since) {
  next_job_id_ = std::max<uint64_t>(1, loaded.next_job_id);
  // Partitions and accounts: the stored ones, with the configuration file's on top.
  std::vector<Partition> parts = loaded.partitions;
  for (const Partition& p : config_.partitions) {
    auto it = std::find_if(parts.begin(), parts.end(),
                           [&](const Partition& q) { return q.name == p.name; });
    if (it == parts.end()) {
      parts.push_back(p);
    } else {
      *it = p;
    }
  }
  if (!parts.empty()) partitions_ = parts;
  if (!config_.partitions.empty()) {
    for (Partition& p : partitions_) {
      p.is_default = false;
      for (const Partition& c : config_.partitions) {
        if (c.name == p.name) p.is_default = c.is_default;
      }
    }
  }
  for (const Partition& p : partitions_)
    batch_.partitions.push_back(p);
  std::vector<Account> accounts = loaded.accounts;
  for (const Account& a : config_.accounts) {
    auto it = std::find_if(accounts.begin(), accounts.end(),
                           [&](const Account& b) { return b.name == a.name; });
    if (it == accounts.end()) {
      accounts.push_back(a);
    } else {
      *it = a;
    }
  }
  accounts_ = accounts;
  for (const Account& a : accounts_)
    batch_.accounts.push_back(a);
  for (const state::AccountUsage& u : loaded.usage)
    usage_[u.account] = u;
  qos_ = loaded.qos;
  reservations_ = loaded.reservations;
  last_reservation_tick_ = now;
  for (const state::TokenRecord& t : loaded.tokens)
    tokens_[t.id] = t;
  tokens_changed_ = true;
  for (const Node& n : loaded.nodes) {
    NodeRecord r;
    r.node = n;
    r.last_seen = now;  // it has node_timeout to check in again
    r.admin_drain = n.state == NodeState::kDrained || n.state == NodeState::kDraining;
    next_node_id_ = std::max(next_node_id_, n.id.value() + 1);
    nodes_[n.name] = std::move(r);
  }
  RebuildNodeNames();  // running jobs below name their nodes
  for (const auto& [id, st] : loaded.finished) {
    finished_[id.value()] = st;
    forget_order_.push_back({now, id.value()});
  }
  std::vector<uint64_t> pending;
  for (const Job& j : loaded.active_jobs) {
    auto job = std::make_shared<Job>(j);
    if (j.state == JobState::kRunning) {
      // Its record may be minutes old: its service is what it had at its
      // start and what it has held since (through the restart too, as
      // CatchUpUsage counts it for its account). A record from before
      // gpu_seconds_at_start was kept gives a lower bound of it.
      const double held = j.allocation.GpuEquivalents() * ToSeconds(now - j.start_time);
      if (j.gpu_seconds_at_start == 0 && j.restarts > 0)
        job->gpu_seconds_at_start = std::max(0.0, j.gpu_seconds - held);
      job->gpu_seconds = std::max(j.gpu_seconds, job->gpu_seconds_at_start + held);
    }
    AddJob(job);
    ++active_;
    next_job_id_ = std::max(next_job_id_, j.id.value() + 1);
    if (j.state == JobState::kPending) {
      pending.push_back(j.id.value());
    } else {
      Running r;
      for (const NodeAllocation& na : j.allocation.nodes)
        r.nodes.push_back(NodeName(na.node));
      if (!r.nodes.empty()) {
        if (j.spec.script) {
          r.nodes_left.insert(r.nodes[0]);  // the batch script's node
        } else {
          r.nodes_left.insert(r.nodes.begin(), r.nodes.end());
        }
      }
      // Started before the restart: whether each launch arrived is not known,
      // so a job that is missing is failed as lost, never run again.
      r.confirmed = r.nodes_left;
      r.efficiency = j.efficiency;
      if (j.master_port > 0)
        ports_.Hold(PortKey(j.id, 0), r.nodes, j.master_port, PortsFor(j.spec, r.nodes.size()));
      for (const JobStep& st : j.steps) {
        if (st.state != StepState::kRunning) continue;
        LiveStep live;
        live.nodes_left.insert(st.nodes.begin(), st.nodes.end());
        live.confirmed = live.nodes_left;
        live.started = st.start_time;
        live.master_port = st.master_port;
        if (st.master_port > 0)
          ports_.Hold(PortKey(j.id, st.id), st.nodes, st.master_port, st.TaskCount() + 1);
        r.steps[st.id] = std::move(live);
      }
      AddRunning(j.id.value(), std::move(r));
    }
  }
  std::sort(pending.begin(), pending.end());
  pending_order_ = std::move(pending);
  learned_.Load(loaded.speeds);
  RebuildInventory();
  CatchUpUsage(now, ended_since);
  last_usage_ = now;
  last_usage_commit_ = now;
  last_efficiency_commit_ = now;
  dirty_ = true;
  return Status::Ok();
}

// ---------------------------------------------------------------- helpers

Job& Controller::Mutable(JobId id) {
  auto it = jobs_.find(id.value());
  SHOAL_CHECK(it != jobs_.end(), "Mutable on an unknown job");
  // Copy on write: readers holding the old version keep a consistent view.
  auto copy = std::make_shared<Job>(*it->second);
  Job* raw = copy.get();
  it->second = std::move(copy);
  ChangedJob(id.value());
  return *raw;
}

void Controller::AddJob(std::shared_ptr<const Job> job) {
  const uint64_t id = job->id.value();
  std::vector<uint64_t>& ids = jobs_of_user_[job->spec.user].ids;
  if (ids.empty() || ids.back() < id) {
    ids.push_back(id);
  } else if (auto at = std::lower_bound(ids.begin(), ids.end(), id); at == ids.end() || *at != id) {
    ids.insert(at, id);  // loaded from the store out of order
  }
  jobs_[id] = std::move(job);
  ChangedJob(id);
}

void Controller::EraseJob(std::map<uint64_t, std::shared_ptr<const Job>>::iterator it) {
  const uint64_t id = it->first;
  auto u = jobs_of_user_.find(it->second->spec.user);
  jobs_.erase(it);
  ChangedJob(id);
  if (u == jobs_of_user_.end()) return;
  UserJobs& mine = u->second;
  if (++mine.gone * 2 < mine.ids.size()) return;
  std::erase_if(mine.ids, [&](uint64_t j) { return jobs_.find(j) == jobs_.end(); });
  mine.gone = 0;
  if (mine.ids.empty()) jobs_of_user_.erase(u);
}

void Controller::ChangedJob(uint64_t id) {
  changed_jobs_.push_back(id);
  if (changed_jobs_.size() > 2 * jobs_.size() + 1024) {  // no pass for a while
    std::sort(changed_jobs_.begin(), changed_jobs_.end());
    changed_jobs_.erase(std::unique(changed_jobs_.begin(), changed_jobs_.end()),
                        changed_jobs_.end());
  }
}

const Job* Controller::Find(JobId id) const {
  auto it = jobs_.find(id.value());
  return it == jobs_.end() ? nullptr : it->second.get();
}

// A node's credential acts for its own node only, and only while it is the
// credential that node joined with (a re-join replaces it).
Status Controller::CheckActsFor(const Identity& who, const std::string& name) const {
  if (!who.ActsFor(name)) {
    return Denied(fmt::format("this credential acts for node {}, not {}", who.node_name, name));
  }
  if (who.credential.empty()) return Status::Ok();
  auto it = nodes_.find(name);
  if (it != nodes_.end() && !it->second.node.credential.empty() &&
      it->second.node.credential != who.credential) {
    return Denied(fmt::format(
        "node {} acts with another certificate (it was re-joined, or this one is not its own)",
        name));
  }
  return Status::Ok();
}

Status Controller::CheckOwner(const Identity& who, const Job& job) const {
  if (who.admin() || job.spec.user == who.user) return Status::Ok();
  return Denied(fmt::format("job {} belongs to another user", job.id.value()));
}

Result<Controller::OutputSource> Controller::OutputOf(const Identity& who, JobId id,
                                                      const Job* history) const {
  const Job* job = Find(id);
  if (job == nullptr) job = history;
  if (job == nullptr) return NotFound(fmt::format("no job {}", id.value()));
  if (!MaySee(who, *job)) return Denied(fmt::format("job {} belongs to another user", id.value()));
  if (job->allocation.nodes.empty()) {
    return FailedPrecondition(
        fmt::format("job {} has not run yet, so it has no output", id.value()));
  }
  const std::string name = NodeName(job->allocation.nodes[0].node);
  auto n = nodes_.find(name);
  if (n == nodes_.end())
    return NotFound(
        fmt::format("job {} ran on {}, which is no longer registered", id.value(), name));
  return OutputSource{name, n->second.node.address};
}

bool Controller::MaySee(const Identity& who, const Job& job) const {
  return who.admin() || job.spec.user == who.user;
}

void Controller::Record(const Job& job) {
  auto [it, inserted] =
      std::pair<std::unordered_set<uint64_t>::iterator, bool>(batch_jobs_.insert(job.id.value()));
  if (inserted) {
    batch_.jobs.push_back(job);
    return;
  }
  for (Job& j : batch_.jobs) {
    if (j.id == job.id) j = job;
  }
}

Node Controller::StoredNode(const NodeRecord& n) const {
  Node node = n.node;
  node.state = EffectiveState(n);
  return node;
}

void Controller::RecordNode(const NodeRecord& n) {
  Node node = StoredNode(n);
  auto [at, added] = batch_nodes_.try_emplace(node.name, batch_.nodes.size());
  if (added) {
    batch_.nodes.push_back(std::move(node));
  } else {
    batch_.nodes[at->second] = std::move(node);
  }
}

Controller::Running& Controller::AddRunning(uint64_t id, Running run) {
  EraseRunning(id);
  for (const std::string& node : run.nodes)
    running_on_[node].push_back(id);
  return running_[id] = std::move(run);
}

void Controller::EraseRunning(uint64_t id) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  for (const std::string& node : it->second.nodes) {
    auto on = running_on_.find(node);
    if (on == running_on_.end()) continue;
    std::erase(on->second, id);
    if (on->second.empty()) running_on_.erase(on);
  }
  running_.erase(it);
}

const std::vector<uint64_t>& Controller::RunningOn(const std::string& node) const {
  static const std::vector<uint64_t> kNone;
  auto it = running_on_.find(node);
  return it == running_on_.end() ? kNone : it->second;
}

void Controller::SettleLayout() {
  if (!layout_changed_) return;
  layout_changed_ = false;
  RebuildInventory();
}

std::string Controller::NodeName(NodeId id) const {
  auto it = node_names_->find(id.value());
  return it != node_names_->end() ? it->second : fmt::format("node{}", id.value());
}

std::optional<NodeId> Controller::NodeIdOf(std::string_view name) const {
  auto it = nodes_.find(std::string(name));
  if (it == nodes_.end()) return std::nullopt;
  return it->second.node.id;
}

api::NodeNames Controller::Names() const {
  return {[this](NodeId id) { return NodeName(id); },
          [this](std::string_view n) { return NodeIdOf(n); }};
}

void Controller::RebuildNodeNames() {
  auto names = std::make_shared<NodeNameTable>();
  auto table = std::make_shared<std::vector<Node>>();
  table->reserve(nodes_.size());
  for (const auto& [name, n] : nodes_) {
    (*names)[n.node.id.value()] = name;
    table->push_back(n.node);
  }
  node_names_ = std::move(names);
  node_table_ = std::move(table);
}

const Partition* Controller::PartitionOf(const Job& job) const {
  for (const Partition& p : partitions_) {
    if (job.spec.partition.empty() ? p.is_default : p.name == job.spec.partition) return &p;
  }
  return nullptr;
}

JobSpec Controller::LaunchSpec(const Job& job) const {
  JobSpec spec = job.spec;
  const Partition* p = PartitionOf(job);
  if (spec.partition.empty() && p != nullptr) spec.partition = p->name;
  return spec;
}

NodeState Controller::EffectiveState(const NodeRecord& n) const {
  if (n.node.state == NodeState::kDown) return NodeState::kDown;
  if (n.admin_drain)
    return n.node.state == NodeState::kDrained ? NodeState::kDrained : NodeState::kDraining;
  return NodeState::kUp;
}

void Controller::RebuildInventory() {
  const auto started = std::chrono::steady_clock::now();
  layout_changed_ = false;
  Cluster c;
  c.name = "shoal";
  c.partitions = partitions_;
  c.accounts = accounts_;
  c.power_budgets = config_.power_budgets;
  c.power = config_.power;
  for (const auto& [name, n] : nodes_) {
    Node node = n.node;
    // Partitions a node names but the cluster no longer has are dropped, not fatal.
    node.partitions.erase(
        std::remove_if(node.partitions.begin(), node.partitions.end(),
                       [&](const std::string& p) { return c.FindPartition(p) == nullptr; }),
        node.partitions.end());
    c.nodes.push_back(std::move(node));
  }
  auto inv = sched::Inventory::Build(c);
  SHOAL_CHECK(inv.ok(), inv.status().message().c_str());
  inventory_ = *inv;
  inventory_records_.clear();
  inventory_records_.reserve(inventory_->size());
  for (const sched::InvNode& n : inventory_->nodes())
    inventory_records_.push_back(&nodes_.at(n.name));
  RebuildNodeNames();
  // Requests are compiled against the new layout; one that no longer compiles
  // is recompiled (and explained) by the scheduler from its spec each pass.
  for (auto& [id, job] : jobs_) {
    if (!IsActive(job->state)) continue;
    auto r = sched::CompileRequest(*inventory_, job->spec);
    if (r.ok()) {
      requests_[id] = *r;
    } else {
      sched::Request stale;
      stale.inventory_version = 0;
      requests_[id] = stale;
    }
  }
  dirty_ = true;
  const auto took = std::chrono::steady_clock::now() - started;
  // No pacing before the first nodes are in.
  const bool paced = took >= config_.paced_rebuild_from && inventory_->size() > 0;
  next_paced_rebuild_ =
      paced ? started + took * config_.rebuild_pacing : std::chrono::steady_clock::time_point{};
}

Status Controller::CompileAndCheck(const JobSpec& spec, sched::Request* out) {
  SHOAL_RETURN_IF_ERROR(spec.Validate());
  const Partition* part = nullptr;
  for (const Partition& p : partitions_) {
    if (spec.partition.empty() ? p.is_default : p.name == spec.partition) part = &p;
  }
  if (part == nullptr) {
    return InvalidArgument(spec.partition.empty()
                               ? "there is no default partition; name one with -p"
                               : fmt::format("unknown partition '{}'", spec.partition));
  }
  if (!spec.account.empty() && !accounts_.empty()) {
    const bool known = std::any_of(accounts_.begin(), accounts_.end(),
                                   [&](const Account& a) { return a.name == spec.account; });
    if (!known) return InvalidArgument(fmt::format("unknown account '{}'", spec.account));
  }
  if (!part->AllowsAccount(spec.account)) {
    return Denied(fmt::format("account '{}' may not use partition '{}'", spec.account, part->name));
  }
  if (part->max_time.count() > 0 && spec.time_limit > part->max_time) {
    return InvalidArgument(fmt::format("time limit {} exceeds partition '{}' maximum {}",
                                       FormatDuration(spec.time_limit), part->name,
                                       FormatDuration(part->max_time)));
  }
  if (inventory_->size() == 0) SettleLayout();  // the first nodes have just registered
  if (inventory_->size() == 0) {
    // No node has registered yet: the request is checked when nodes join.
    // It is compiled for the empty layout where it compiles, so that the
    // passes until then do not recompile every waiting job's request.
    Result<sched::Request> empty = sched::CompileRequest(*inventory_, spec);
    if (empty.ok()) {
      *out = *empty;
    } else {
      out->inventory_version = 0;
    }
    out->time_limit = spec.time_limit.count() > 0 ? spec.time_limit : part->DefaultTimeLimit();
    return Status::Ok();
  }
  auto compile = [&]() -> Status {
    SHOAL_ASSIGN_OR_RETURN(*out, sched::CompileRequest(*inventory_, spec));
    return sched::CheckSatisfiable(*inventory_, *out);
  };
  Status fits = compile();
  if (!fits.ok() && layout_changed_) {
    // Nodes have registered since the inventory was built (it is rebuilt
    // once per pass while a fleet joins, not once per node): the job may
    // need one of them. Only such a job pays for the rebuild.
    SettleLayout();
    fits = compile();
  }
  return fits;
}

// ---------------------------------------------------------------- commands

Status Controller::TakeSubmitter(const Identity& who, JobSpec& spec) const {
  if (who.node()) return Denied("node tokens cannot submit jobs");
  if (!who.admin() || spec.user.empty()) spec.user = who.user;
  if (spec.user.empty()) return InvalidArgument("the job has no user");
  if (spec.command.empty()) return InvalidArgument("the job has no command");
  return Status::Ok();
}

Result<Controller::Admission> Controller::CheckSubmission(const Identity& who, JobSpec spec,
                                                          Time now, size_t queued) {
  SHOAL_RETURN_IF_ERROR(TakeSubmitter(who, spec));
  SHOAL_RETURN_IF_ERROR(CheckQosAndReservation(who, spec, now));
  if (!spec.acceptance_node.empty())
    return InvalidArgument("acceptance tests are submitted one at a time");
  for (const Dependency& d : spec.dependencies) {
    if (d.type == DependencyType::kSingleton) continue;
    if (Find(d.job) == nullptr && !finished_.count(d.job.value())) {
      return NotFound(fmt::format("dependency on job {}, which does not exist", d.job.value()));
    }
  }
  Admission a;
  SHOAL_RETURN_IF_ERROR(CompileAndCheck(spec, &a.req));
  a.count = spec.array ? spec.array->indices.size() : 1;
  if (a.count > static_cast<size_t>(config_.max_jobs_per_submit)) {
    return InvalidArgument(fmt::format("{} array tasks; at most {} per submission", a.count,
                                       config_.max_jobs_per_submit));
  }
  if (active_ + queued + a.count > static_cast<size_t>(config_.max_active_jobs)) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("the queue is full ({} active jobs)", active_));
  }
  a.spec = std::move(spec);
  return a;
}

void Controller::Admit(const Admission& a, Time now, api::Json& ids) {
  const JobId first(next_job_id_);
  for (size_t k = 0; k < a.count; ++k) {
    auto job = std::make_shared<Job>();
    job->id = JobId(next_job_id_++);
    job->spec = a.spec;
    job->state = JobState::kPending;
    job->submit_time = now;
    job->time_limit = a.req.time_limit;
    if (a.spec.array) {
      job->array_job_id = first;
      job->array_task_id = a.spec.array->indices[k];
    }
    requests_[job->id.value()] = a.req;
    pending_order_.push_back(job->id.value());
    ids.push_back(job->id.value());
    Record(*job);
    AddJob(std::move(job));
    ++active_;
  }
  batch_.next_job_id = next_job_id_;
  submissions_ += a.count;
  dirty_ = true;
}

Result<api::Json> Controller::Submit(const Identity& who, JobSpec spec, Time now) {
  if (!spec.acceptance_node.empty()) {
    SHOAL_RETURN_IF_ERROR(TakeSubmitter(who, spec));
    SHOAL_RETURN_IF_ERROR(CheckQosAndReservation(who, spec, now));
    if (!who.admin()) return Denied("only admins submit acceptance tests");
    return SubmitAcceptance(std::move(spec), now);
  }
  SHOAL_ASSIGN_OR_RETURN(Admission a, CheckSubmission(who, std::move(spec), now, 0));
  api::Json ids = api::Json::array();
  Admit(a, now, ids);
  api::Json reply = {{"jobs", ids}};
  if (a.spec.array) reply["array_job_id"] = ids.front();
  if (a.spec.mail_types != 0 && !config_.mail_enabled) {
    reply["notes"] = api::Json::array(
        {"the server has no mail program (mail_program): no mail is sent for --mail-type"});
  }
  return reply;
}

Result<api::Json> Controller::SubmitAll(const Identity& who, std::vector<JobSpec> specs, Time now) {
  if (specs.empty()) return InvalidArgument("the batch has no jobs");
  std::vector<Admission> admitted;
  admitted.reserve(specs.size());
  size_t queued = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto a = CheckSubmission(who, std::move(specs[i]), now, queued);
    if (!a.ok()) {
      return Status(a.status().code(), fmt::format("job {} of {}: {} (none was submitted)", i + 1,
                                                   specs.size(), a.status().message()));
    }
    queued += a->count;
    admitted.push_back(std::move(*a));
  }
  api::Json ids = api::Json::array();
  for (const Admission& a : admitted)
    Admit(a, now, ids);
  return api::Json{{"jobs", std::move(ids)}};
}

Status Controller::Cancel(const Identity& who, JobId id, Time now) {
  // As scancel: an array's id names every task of the array, another task's
  // id that task alone.
  const std::vector<JobId> tasks = ArrayTasks(id);
  if (!tasks.empty()) return CancelArray(who, id, tasks, now);
  const Job* job = Find(id);
  if (job == nullptr) {
    if (finished_.count(id.value()))
      return FailedPrecondition(fmt::format("job {} has already ended", id.value()));
    return NotFound(fmt::format("no job {}", id.value()));
  }
  SHOAL_RETURN_IF_ERROR(CheckOwner(who, *job));
  if (!IsTerminal(job->state)) {
    CancelOne(who, id, now);
    return Status::Ok();
  }
  return FailedPrecondition(
      fmt::format("job {} has already ended ({})", id.value(), JobStateName(job->state)));
}

void Controller::CancelOne(const Identity& who, JobId id, Time now) {
  const Job* job = Find(id);
  if (job->state == JobState::kPending) {
    Finish(Mutable(id), JobState::kCancelled, now);
  } else if (job->state == JobState::kRunning) {
    StopJob(Mutable(id), JobState::kCancelled, now, fmt::format("cancelled by {}", who.user));
  }
}

std::vector<JobId> Controller::ArrayTasks(JobId array) const {
  // An array's tasks have consecutive ids from the array's own (Submit).
  std::vector<JobId> tasks;
  for (auto it = jobs_.lower_bound(array.value());
       it != jobs_.end() && it->second->array_job_id == array; ++it) {
    tasks.push_back(it->second->id);
  }
  return tasks;
}

Status Controller::CancelArray(const Identity& who, JobId array, const std::vector<JobId>& tasks,
                               Time now) {
  for (JobId t : tasks)
    SHOAL_RETURN_IF_ERROR(CheckOwner(who, *Find(t)));
  int cancelled = 0;
  for (JobId t : tasks) {
    if (IsTerminal(Find(t)->state)) continue;
    CancelOne(who, t, now);
    ++cancelled;
  }
  if (cancelled == 0)
    return FailedPrecondition(
        fmt::format("every task of array {} has already ended", array.value()));
  return Status::Ok();
}

Status Controller::Hold(const Identity& who, JobId id, Time) {
  const Job* job = Find(id);
  if (job == nullptr) return NotFound(fmt::format("no job {}", id.value()));
  SHOAL_RETURN_IF_ERROR(CheckOwner(who, *job));
  if (job->state != JobState::kPending)
    return FailedPrecondition(fmt::format("job {} is not pending", id.value()));
  Job& j = Mutable(id);
  j.spec.hold = true;
  Record(j);
  dirty_ = true;
  return Status::Ok();
}

Status Controller::Release(const Identity& who, JobId id, Time) {
  const Job* job = Find(id);
  if (job == nullptr) return NotFound(fmt::format("no job {}", id.value()));
  SHOAL_RETURN_IF_ERROR(CheckOwner(who, *job));
  if (job->state != JobState::kPending)
    return FailedPrecondition(fmt::format("job {} is not pending", id.value()));
  if (!job->spec.hold) return FailedPrecondition(fmt::format("job {} is not held", id.value()));
  Job& j = Mutable(id);
  j.spec.hold = false;
  Record(j);
  dirty_ = true;
  return Status::Ok();
}

Status Controller::Requeue(const Identity& who, JobId id, Time now) {
  const Job* job = Find(id);
  if (job == nullptr) return NotFound(fmt::format("no job {}", id.value()));
  SHOAL_RETURN_IF_ERROR(CheckOwner(who, *job));
  if (job->state != JobState::kRunning)
    return FailedPrecondition(fmt::format("job {} is not running", id.value()));
  StopJob(Mutable(id), JobState::kPending, now, fmt::format("requeued by {}", who.user),
          /*requeue_after=*/true);
  return Status::Ok();
}

Status Controller::SetPriority(const Identity& who, JobId id, int64_t priority, Time) {
  if (!who.admin()) return Denied("only admins set priorities");
  const Job* job = Find(id);
  if (job == nullptr) return NotFound(fmt::format("no job {}", id.value()));
  if (!IsActive(job->state)) return FailedPrecondition(fmt::format("job {} has ended", id.value()));
  if (priority < 0) return InvalidArgument("priority cannot be negative");
  Job& j = Mutable(id);
  j.priority = priority;
  Record(j);
  dirty_ = true;
  return Status::Ok();
}

void WaitHistogram::Add(double seconds) {
  for (size_t b = 0; b < kBounds.size(); ++b) {
    if (seconds <= kBounds[b]) {
      ++buckets[b];
      break;
    }
  }
  ++count;
  sum_s += seconds;
}

void Controller::StartJob(Job& j, Allocation allocation, Time now) {
  if (j.epoch == 0) {  // its first start: a requeued job's later ones are not waits for a GPU
    const Time from = std::max(j.submit_time, j.spec.begin_time.value_or(Time{}));
    const Partition* p = PartitionOf(j);
    waits_[p != nullptr ? p->name : j.spec.partition].Add(
        std::max(0.0, std::chrono::duration<double>(now - from).count()));
  }
  j.state = JobState::kRunning;
  j.start_time = now;
  j.gpu_seconds_at_start = j.gpu_seconds;
  j.allocation = std::move(allocation);
  j.epoch += 1;
  j.reason = PendingReason::kNone;
  j.reason_detail.clear();
  decisions_.erase(j.id.value());
  j.steps.clear();
  j.next_step = 1;
  MailAbout(j, MailEvent::kBegin, now);
  Running run;
  std::vector<std::string> addresses;
  for (const NodeAllocation& na : j.allocation.nodes) {
    run.nodes.push_back(NodeName(na.node));
    addresses.push_back(nodes_[run.nodes.back()].node.address);
  }
  // A batch script runs once, on the first node; a command runs as the
  // job's tasks over all of them.
  const bool batch = j.spec.script;
  if (batch) {
    run.nodes_left.insert(run.nodes[0]);
  } else {
    run.nodes_left.insert(run.nodes.begin(), run.nodes.end());
  }
  // MASTER_PORT and TF_CONFIG's ports after it, free on every node of the job.
  j.master_port =
      ports_.Reserve(PortKey(j.id, 0), run.nodes, PortsFor(j.spec, run.nodes.size())).value_or(0);
  const std::vector<std::string> names = run.nodes;
  AddRunning(j.id.value(), std::move(run));
  const std::string token = JobToken(j);
  for (size_t k = 0; k < j.allocation.nodes.size(); ++k) {
    if (batch && k > 0) break;
    LaunchOrder o;
    o.node = names[k];
    o.address = addresses[k];
    o.job = j.id;
    o.epoch = j.epoch;
    o.spec = LaunchSpec(j);
    o.allocation = j.allocation.nodes[k];
    o.node_rank = static_cast<int>(k);
    o.nodes = names;
    o.addresses = addresses;
    o.node_cpus = api::NodeCpus(j.allocation);
    o.master_port = j.master_port;
    o.array_job_id = j.array_job_id.value();
    o.array_task_id = j.array_task_id;
    o.not_after = now + config_.launch_grace;
    o.batch = batch;
    o.restarts = j.restarts;
    o.job_token = token;
    outbox_.launches.push_back(std::move(o));
  }
  Record(j);
}

// ---------------------------------------------------------------- lifecycle

void Controller::Finish(Job& job, JobState state, Time now) {
  const bool was_running = job.state == JobState::kRunning;
  const Time ended = was_running ? EndOf(job, now) : now;
  job.state = state;
  job.end_time = ended;
  if (was_running) {
    job.gpu_seconds = ServiceAt(job, ended);
    SettleUsage(job, ended);
    if (auto r = running_.find(job.id.value()); r != running_.end())
      job.efficiency = r->second.efficiency;
    LearnSpeed(job, now);
    EndLiveSteps(job, now, fmt::format("the job ended ({})", JobStateName(state)));
    EraseRunning(job.id.value());
  }
  requests_.erase(job.id.value());
  speeds_.erase(job.id.value());
  decisions_.erase(job.id.value());
  finished_[job.id.value()] = state;
  if (state == JobState::kCompleted) RecordService(job.gpu_seconds);
  if (was_running && UsesPowerHistory()) power_history_.Record(job);
  evict_order_.push_back({now, job.id.value()});
  forget_order_.push_back({now, job.id.value()});
  --active_;
  invalid_dep_mailed_.erase(job.id.value());
  MailEnded(job, now);
  Record(job);
  dirty_ = true;
}

void Controller::StopJob(Job& job, JobState ending_as, Time now, const std::string& why,
                         bool requeue_after) {
  auto r = running_.find(job.id.value());
  if (r == running_.end()) return;
  Running& run = r->second;
  if (run.ending_as && !requeue_after) return;  // already stopping
  run.ending_as = ending_as;
  run.requeue_after = requeue_after;
  run.kill_sent = now;
  // Every step of the job, wherever it runs.
  KillEverywhere(job, why);
  job.reason_detail = why;
  Record(job);
}

Time Controller::EndOf(const Job& job, Time now) const {
  // A job of a lost node holds its GPUs until its fence, whenever its
  // other parts stopped.
  auto r = running_.find(job.id.value());
  return r != running_.end() && r->second.ended_at && !r->second.fence_until ? *r->second.ended_at
                                                                             : now;
}

double Controller::ServiceAt(const Job& job, Time t) const {
  return job.gpu_seconds_at_start +
         job.allocation.GpuEquivalents() * std::max(0.0, ToSeconds(t - job.start_time));
}

void Controller::RequeueNow(Job& job, Time now, const std::string& why) {
  const Time ended = EndOf(job, now);
  job.gpu_seconds = ServiceAt(job, ended);
  SettleUsage(job, ended);
  if (auto r = running_.find(job.id.value()); r != running_.end())
    job.efficiency = r->second.efficiency;
  LearnSpeed(job, now);
  EndLiveSteps(job, now, "the job was requeued");
  EraseRunning(job.id.value());
  job.idle = false;
  job.state = JobState::kPending;
  job.requeued_at = now;
  job.allocation = Allocation{};
  job.restarts += 1;
  job.reason_detail = why;
  MailAbout(job, MailEvent::kRequeue, now, why);
  pending_order_.push_back(job.id.value());
  auto r = sched::CompileRequest(*inventory_, job.spec);
  if (r.ok()) requests_[job.id.value()] = *r;
  Record(job);
  dirty_ = true;
}

state::Batch Controller::TakeBatch() {
  state::Batch b = std::move(batch_);
  batch_ = state::Batch{};
  batch_jobs_.clear();
  batch_nodes_.clear();
  return b;
}

Outbox Controller::TakeOutbox() {
  Outbox o = std::move(outbox_);
  outbox_ = Outbox{};
  return o;
}

}  // namespace shoal::server
