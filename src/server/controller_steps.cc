// The Controller's job steps: `shoal run` inside a running job, each step
// launched on some of the job's nodes, and how a job ends when its steps
// and its own step (the batch script or command) do.
#include <fmt/format.h>

#include <algorithm>

#include "core/strings.h"
#include "net/token.h"
#include "server/controller.h"
#include "server/controller_internal.h"
#include "server/step_placement.h"

namespace shoal::server {

using internal::Denied;
using internal::PortKey;

namespace {

constexpr std::string_view kJobTokenPrefix = "shoaljob_";

// The signed part of a job token.
std::string JobTokenClaim(uint64_t job, uint64_t epoch, std::string_view user) {
  return fmt::format("{}.{}.{}", job, epoch, user);
}

}  // namespace

std::string Controller::JobToken(const Job& j) const {
  if (job_token_key_.empty()) return "";
  std::string user_hex;
  for (unsigned char c : j.spec.user)
    user_hex += fmt::format("{:02x}", c);
  return fmt::format(
      "{}{}_{}_{}_{}", kJobTokenPrefix, j.id.value(), j.epoch, user_hex,
      net::HmacSha256Hex(job_token_key_, JobTokenClaim(j.id.value(), j.epoch, j.spec.user)));
}

Status Controller::CheckJobToken(const Identity& who) const {
  if (who.job == 0) return Status::Ok();
  const Job* j = Find(JobId(who.job));
  if (j == nullptr || j->state != JobState::kRunning || j->epoch != who.job_epoch) {
    return Status(StatusCode::kUnauthenticated,
                  fmt::format("this job token's job ({}) no longer runs", who.job));
  }
  return Status::Ok();
}

Result<api::Json> Controller::CreateStep(const Identity& who, JobId id, StepSpec spec, Time now) {
  SHOAL_RETURN_IF_ERROR(CheckJobToken(who));
  const Job* found = Find(id);
  if (found == nullptr) return NotFound(fmt::format("no job {}", id.value()));
  SHOAL_RETURN_IF_ERROR(CheckOwner(who, *found));
  if (found->state != JobState::kRunning)
    return FailedPrecondition(fmt::format("job {} is {}: steps run only in a running job",
                                          id.value(), JobStateName(found->state)));
  auto r = running_.find(id.value());
  if (r == running_.end() || r->second.ending_as || r->second.main_ended_as ||
      r->second.fence_until)
    return FailedPrecondition(fmt::format("job {} is ending: it takes no new steps", id.value()));
  if (found->next_step >= 0xffffff)
    return FailedPrecondition(fmt::format("job {} has run all the steps it may", id.value()));
  std::vector<StepNode> layout;
  const int n = static_cast<int>(found->allocation.nodes.size());
  const int tasks = found->spec.tasks > 0 ? found->spec.tasks : n;
  for (int k = 0; k < n; ++k) {
    const NodeAllocation& na = found->allocation.nodes[static_cast<size_t>(k)];
    const std::string& name = r->second.nodes[static_cast<size_t>(k)];
    const std::string& address = nodes_[name].node.address;
    layout.push_back({.name = name,
                      .host = address.substr(0, address.rfind(':')),
                      .job_tasks = tasks / n + (k < tasks % n ? 1 : 0),
                      .cpus = static_cast<int>(na.cpu_milli / 1000),
                      .gpus = na.GpuCount()});
  }
  SHOAL_ASSIGN_OR_RETURN(StepPlacement placement, PlaceStep(spec, layout));
  Job& j = Mutable(id);
  JobStep st;
  st.id = j.next_step++;
  st.spec = std::move(spec);
  for (size_t k = 0; k < placement.nodes.size(); ++k) {
    st.nodes.push_back(r->second.nodes[static_cast<size_t>(placement.nodes[k])]);
    st.tasks.push_back(placement.tasks[k]);
  }
  st.start_time = now;
  st.master_port = ports_.Reserve(PortKey(id, st.id), st.nodes, st.TaskCount() + 1).value_or(0);
  LiveStep live;
  live.nodes_left.insert(st.nodes.begin(), st.nodes.end());
  live.started = now;
  live.master_port = st.master_port;
  r->second.steps[st.id] = std::move(live);
  LaunchStep(j, st, st.master_port, now);
  j.steps.push_back(st);
  // Bounded: the oldest finished steps go first.
  while (j.steps.size() > kMaxKeptSteps) {
    auto done = std::find_if(j.steps.begin(), j.steps.end(),
                             [](const JobStep& x) { return x.state != StepState::kRunning; });
    if (done == j.steps.end()) break;
    j.steps.erase(done);
  }
  Record(j);
  return api::ToJson(st);
}

void Controller::LaunchStep(const Job& j, const JobStep& st, int master_port, Time now) {
  const Running& run = running_.at(j.id.value());
  std::vector<std::string> addresses;
  for (const std::string& name : run.nodes)
    addresses.push_back(nodes_[name].node.address);
  std::vector<int> indices;
  for (const std::string& name : st.nodes) {
    indices.push_back(
        static_cast<int>(std::find(run.nodes.begin(), run.nodes.end(), name) - run.nodes.begin()));
  }
  const std::string token = JobToken(j);
  for (int k : indices) {
    LaunchOrder o;
    o.node = run.nodes[static_cast<size_t>(k)];
    o.address = addresses[static_cast<size_t>(k)];
    o.job = j.id;
    o.epoch = j.epoch;
    o.spec = LaunchSpec(j);
    o.allocation = j.allocation.nodes[static_cast<size_t>(k)];
    o.node_rank = k;
    o.nodes = run.nodes;
    o.addresses = addresses;
    o.node_cpus = api::NodeCpus(j.allocation);
    o.master_port = master_port;
    o.array_job_id = j.array_job_id.value();
    o.array_task_id = j.array_task_id;
    o.not_after = now + config_.launch_grace;
    o.step = st.id;
    o.restarts = j.restarts;
    o.job_token = token;
    o.run = st.spec;
    o.step_nodes = indices;
    o.step_tasks = st.tasks;
    outbox_.launches.push_back(std::move(o));
  }
}

namespace {

// A step asked to stop (`as`): the nodes to send the stop to. Those that have
// not reported it running yet may get the stop before the launch, so they are
// remembered, and the heartbeat that reports the step sends it again.
// (A template: Controller::LiveStep is the controller's own type.)
template <typename Live>
const std::unordered_set<std::string>& Stopping(Live& live, StepState as) {
  live.ending_as = as;
  for (const std::string& node : live.nodes_left)
    if (!live.confirmed.count(node)) live.stopped_unconfirmed.insert(node);
  return live.nodes_left;
}

}  // namespace

void Controller::StepExited(JobId id, uint32_t step, const std::string& node, int code, int signal,
                            const std::string& message, Time now) {
  auto r = running_.find(id.value());
  if (r == running_.end()) return;
  auto live_it = r->second.steps.find(step);
  if (live_it == r->second.steps.end() || !live_it->second.nodes_left.erase(node)) return;
  LiveStep& live = live_it->second;
  const bool failed = code != 0 || signal != 0;
  live.worst_code = std::max(live.worst_code, code);
  live.worst_signal = std::max(live.worst_signal, signal);
  if (failed && live.first_failure.empty()) {
    live.first_failure = message.empty() ? fmt::format("a task failed on {}", node) : message;
    live.first_code = code;
    live.first_signal = signal;
  }
  Job& j = Mutable(id);
  auto st =
      std::find_if(j.steps.begin(), j.steps.end(), [&](const JobStep& x) { return x.id == step; });
  if (!live.nodes_left.empty()) {
    // --kill-on-bad-exit: one failed task stops the step's others.
    if (failed && st != j.steps.end() && st->spec.kill_on_bad_exit && !live.ending_as) {
      for (const std::string& other : Stopping(live, StepState::kFailed)) {
        OrderKill(other, id, j.epoch, step,
                  fmt::format("step {}: a task failed on {} (--kill-on-bad-exit)", step, node));
      }
    }
    return;
  }
  if (st != j.steps.end()) {
    // Stopped for one task's failure: that failure is the step's.
    const bool stopped_for_failure = live.ending_as == StepState::kFailed;
    st->exit_code = stopped_for_failure ? live.first_code : live.worst_code;
    st->exit_signal = stopped_for_failure ? live.first_signal : live.worst_signal;
    st->end_time = now;
    st->reason = live.first_failure;
    st->state = live.ending_as == StepState::kCancelled ? StepState::kCancelled
                : live.worst_code != 0 || live.worst_signal != 0 || live.ending_as
                    ? StepState::kFailed
                    : StepState::kCompleted;
  }
  ports_.Release(PortKey(id, step));
  r->second.steps.erase(live_it);
  Record(j);
  // The job's own step is over and this was the last of the others.
  if (r->second.main_ended_as && r->second.steps.empty())
    MainStepEnded(j, *r->second.main_ended_as, now);
}

void Controller::MainStepEnded(Job& j, JobState state, Time now) {
  Running& run = running_.at(j.id.value());
  if (!run.steps.empty()) {
    // Steps still run (an srun left in the background): stopped, and the
    // job ends once they are (or once the stop goes unconfirmed, Tick),
    // when the server hears so.
    run.ended_at.reset();
    if (!run.main_ended_as) {
      run.main_ended_as = state;
      if (!run.ending_as) {
        run.ending_as = state == JobState::kPending ? JobState::kFailed : state;
        run.requeue_after = state == JobState::kPending;
        run.kill_sent = now;
      }
      KillEverywhere(j, "the job's own step ended");
    }
    return;
  }
  if (state == JobState::kPending) {
    RequeueNow(j, now, j.reason_detail.empty() ? "requeued" : j.reason_detail);
  } else {
    Finish(j, state, now);
  }
}

void Controller::EndLiveSteps(Job& j, Time now, const std::string& why) {
  auto r = running_.find(j.id.value());
  if (r != running_.end()) {
    for (const auto& [step, live] : r->second.steps)
      ports_.Release(PortKey(j.id, step));
    r->second.steps.clear();
  }
  ports_.Release(PortKey(j.id, 0));
  for (JobStep& st : j.steps) {
    if (st.state != StepState::kRunning) continue;
    st.state = StepState::kCancelled;
    st.end_time = now;
    st.reason = why;
  }
}

void Controller::KillEverywhere(const Job& j, const std::string& why) {
  auto r = running_.find(j.id.value());
  if (r == running_.end()) return;
  std::set<std::string> where(r->second.nodes_left.begin(), r->second.nodes_left.end());
  for (const auto& [step, live] : r->second.steps)
    where.insert(live.nodes_left.begin(), live.nodes_left.end());
  for (const std::string& node : where)
    OrderKill(node, j.id, j.epoch, std::nullopt, why);
}

void Controller::OrderKill(const std::string& node, JobId job, uint64_t epoch,
                           std::optional<uint32_t> step, std::string why, int signal,
                           bool leader_only) {
  auto n = nodes_.find(node);
  if (n == nodes_.end()) return;
  KillOrder k;
  k.node = node;
  k.address = n->second.node.address;
  k.job = job;
  k.epoch = epoch;
  k.step = step;
  k.grace = config_.kill_grace;
  k.why = std::move(why);
  k.signal = signal;
  k.leader_only = leader_only;
  outbox_.kills.push_back(std::move(k));
}

Status Controller::CancelStep(const Identity& who, JobId id, uint32_t step, Time) {
  SHOAL_RETURN_IF_ERROR(CheckJobToken(who));
  const Job* j = Find(id);
  if (j == nullptr) return NotFound(fmt::format("no job {}", id.value()));
  SHOAL_RETURN_IF_ERROR(CheckOwner(who, *j));
  auto r = running_.find(id.value());
  if (r == running_.end() || !r->second.steps.count(step))
    return FailedPrecondition(fmt::format("step {} of job {} is not running", step, id.value()));
  for (const std::string& node : Stopping(r->second.steps.at(step), StepState::kCancelled)) {
    OrderKill(node, id, j->epoch, step, fmt::format("step {} cancelled", step));
  }
  return Status::Ok();
}

Status Controller::Signal(const Identity& who, JobId id, int signal, bool batch_only, Time) {
  if (signal < 1 || signal > 64) return InvalidArgument(fmt::format("no signal {}", signal));
  std::vector<JobId> targets = ArrayTasks(id);
  if (targets.empty()) targets.push_back(id);
  bool any = false;
  for (JobId t : targets) {
    const Job* j = Find(t);
    if (j == nullptr) {
      if (t == id) return NotFound(fmt::format("no job {} (or it has ended)", id.value()));
      continue;
    }
    SHOAL_RETURN_IF_ERROR(CheckOwner(who, *j));
    if (j->state != JobState::kRunning || !running_.count(t.value())) continue;
    SignalSteps(*j, signal, batch_only,
                fmt::format("signal {} from {}", SignalName(signal), who.user));
    any = true;
  }
  if (!any) return FailedPrecondition(fmt::format("job {} is not running", id.value()));
  return Status::Ok();
}

bool Controller::SignalDue(const Job& j, const Running& r, Time now) {
  if (j.spec.signal == 0 || r.warned || r.ending_as || j.time_limit.count() <= 0) return false;
  return now >= j.start_time + j.time_limit - std::chrono::seconds(j.spec.signal_before_s);
}

void Controller::SignalSteps(const Job& j, int signal, bool batch_only, const std::string& why) {
  const Running& r = running_.at(j.id.value());
  // The batch shell is step 0 on the first node; a job without a script
  // has no shell, and its step 0 is its tasks, which are signalled as a
  // step's are (Slurm's B: then reaches each task's own process).
  if (batch_only) {
    for (const std::string& node : r.nodes_left)
      if (!j.spec.script || (!r.nodes.empty() && node == r.nodes.front()))
        OrderKill(node, j.id, j.epoch, 0, why, signal, true);
    return;
  }
  if (!j.spec.script) {
    for (const std::string& node : r.nodes_left)
      OrderKill(node, j.id, j.epoch, 0, why, signal);
  }
  for (const auto& [step, live] : r.steps)
    for (const std::string& node : live.nodes_left)
      OrderKill(node, j.id, j.epoch, step, why, signal);
}

Result<Controller::TaskSource> Controller::StepTaskOf(const Identity& who, JobId id, uint32_t step,
                                                      int rank) const {
  SHOAL_RETURN_IF_ERROR(CheckJobToken(who));
  const Job* j = Find(id);
  if (j == nullptr) return NotFound(fmt::format("no job {} (or it has left memory)", id.value()));
  SHOAL_RETURN_IF_ERROR(CheckOwner(who, *j));
  auto st = std::find_if(j->steps.begin(), j->steps.end(),
                         [&](const JobStep& x) { return x.id == step; });
  if (st == j->steps.end()) return NotFound(fmt::format("job {} has no step {}", id.value(), step));
  int first = 0;
  for (size_t k = 0; k < st->nodes.size(); ++k) {
    if (rank >= first && rank < first + st->tasks[k]) {
      auto n = nodes_.find(st->nodes[k]);
      if (n == nodes_.end()) return NotFound(fmt::format("node {} is gone", st->nodes[k]));
      return TaskSource{st->nodes[k], n->second.node.address, j->epoch};
    }
    first += st->tasks[k];
  }
  return NotFound(fmt::format("step {} of job {} has no task {}", step, id.value(), rank));
}

}  // namespace shoal::server
