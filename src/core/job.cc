#include "core/job.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/constraints.h"
#include "core/strings.h"

namespace shoal {

std::string_view StepStateName(StepState state) {
  switch (state) {
    case StepState::kRunning:
      return "running";
    case StepState::kCompleted:
      return "completed";
    case StepState::kFailed:
      return "failed";
    case StepState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

Result<StepState> ParseStepState(std::string_view text) {
  for (StepState s :
       {StepState::kRunning, StepState::kCompleted, StepState::kFailed, StepState::kCancelled}) {
    if (StepStateName(s) == text) return s;
  }
  return InvalidArgument(fmt::format("unknown step state '{}'", text));
}

int JobStep::TaskCount() const {
  int n = 0;
  for (int t : tasks)
    n += t;
  return n;
}

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kPending:
      return "pending";
    case JobState::kRunning:
      return "running";
    case JobState::kCompleted:
      return "completed";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kTimeout:
      return "timeout";
    case JobState::kNodeFail:
      return "node_fail";
    case JobState::kPreempted:
      return "preempted";
  }
  return "unknown";
}

std::string_view JobStateCode(JobState state) {
  switch (state) {
    case JobState::kPending:
      return "PD";
    case JobState::kRunning:
      return "R";
    case JobState::kCompleted:
      return "CD";
    case JobState::kFailed:
      return "F";
    case JobState::kCancelled:
      return "CA";
    case JobState::kTimeout:
      return "TO";
    case JobState::kNodeFail:
      return "NF";
    case JobState::kPreempted:
      return "PR";
  }
  return "?";
}

Result<JobState> ParseJobState(std::string_view text) {
  const std::string s = ToLower(Trim(text));
  for (JobState st : kJobStates) {
    if (s == JobStateName(st) || s == ToLower(JobStateCode(st))) return st;
  }
  return InvalidArgument(fmt::format("unknown job state '{}'", text));
}

bool IsTerminal(JobState state) {
  return state != JobState::kPending && state != JobState::kRunning;
}

namespace {

constexpr std::pair<std::string_view, MailEvent> kMailNames[] = {
    {"BEGIN", MailEvent::kBegin},
    {"END", MailEvent::kEnd},
    {"FAIL", MailEvent::kFail},
    {"REQUEUE", MailEvent::kRequeue},
    {"INVALID_DEPEND", MailEvent::kInvalidDepend},
    {"TIME_LIMIT", MailEvent::kTimeLimit},
    {"TIME_LIMIT_90", MailEvent::kTimeLimit90},
    {"TIME_LIMIT_80", MailEvent::kTimeLimit80},
    {"TIME_LIMIT_50", MailEvent::kTimeLimit50},
    {"ARRAY_TASKS", MailEvent::kArrayTasks},
};

}  // namespace

Result<uint16_t> ParseMailTypes(std::string_view text) {
  uint16_t out = 0;
  for (std::string_view item : Split(text, ',')) {
    std::string word(Trim(item));
    for (char& ch : word)
      ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (word == "NONE" || word == "STAGE_OUT") continue;
    if (word == "ALL") {
      out |= MailBit(MailEvent::kBegin) | MailBit(MailEvent::kEnd) | MailBit(MailEvent::kFail) |
             MailBit(MailEvent::kRequeue) | MailBit(MailEvent::kInvalidDepend);
      continue;
    }
    bool known = false;
    for (const auto& [name, event] : kMailNames) {
      if (word == name) {
        out |= MailBit(event);
        known = true;
      }
    }
    if (!known) {
      return InvalidArgument(fmt::format(
          "mail type '{}': BEGIN, END, FAIL, REQUEUE, ALL, NONE, INVALID_DEPEND, TIME_LIMIT, "
          "TIME_LIMIT_90, TIME_LIMIT_80, TIME_LIMIT_50, ARRAY_TASKS or STAGE_OUT",
          Trim(item)));
    }
  }
  return out;
}

std::string FormatMailTypes(uint16_t types) {
  std::vector<std::string> names;
  for (const auto& [name, event] : kMailNames) {
    if ((types & MailBit(event)) != 0) names.emplace_back(name);
  }
  return Join(names, ",");
}

std::string_view PendingReasonName(PendingReason reason) {
  switch (reason) {
    case PendingReason::kNone:
      return "none";
    case PendingReason::kResources:
      return "resources";
    case PendingReason::kPriority:
      return "priority";
    case PendingReason::kDependency:
      return "dependency";
    case PendingReason::kDependencyNeverSatisfied:
      return "dependency_never_satisfied";
    case PendingReason::kHeld:
      return "held";
    case PendingReason::kBeginTime:
      return "begin_time";
    case PendingReason::kGpuModelUnavailable:
      return "gpu_model_unavailable";
    case PendingReason::kPartitionLimit:
      return "partition_limit";
    case PendingReason::kPartitionDown:
      return "partition_down";
    case PendingReason::kAccountLimit:
      return "account_limit";
    case PendingReason::kNodesUnavailable:
      return "nodes_unavailable";
    case PendingReason::kUnsatisfiable:
      return "unsatisfiable";
    case PendingReason::kArrayLimit:
      return "array_limit";
    case PendingReason::kQosLimit:
      return "qos_limit";
    case PendingReason::kReservation:
      return "reservation";
    case PendingReason::kPowerBudget:
      return "power_budget";
    case PendingReason::kPlanConflict:
      return "plan_conflict";
  }
  return "unknown";
}

std::string_view DependencyTypeName(DependencyType t) {
  switch (t) {
    case DependencyType::kAfterOk:
      return "afterok";
    case DependencyType::kAfterAny:
      return "afterany";
    case DependencyType::kAfterNotOk:
      return "afternotok";
    case DependencyType::kAfter:
      return "after";
    case DependencyType::kSingleton:
      return "singleton";
  }
  return "afterok";
}

namespace {

// Slurm keeps one of each dependency a list repeats.
void AddDependency(std::vector<Dependency>& deps, const Dependency& d) {
  if (std::find(deps.begin(), deps.end(), d) == deps.end()) deps.push_back(d);
}

}  // namespace

Result<DependencyList> ParseDependencies(std::string_view text) {
  DependencyList out;
  if (Trim(text).empty()) return out;
  // As Slurm 22.05 reads a list: one ? anywhere makes every clause an
  // alternative, those joined with , included.
  out.any = text.find('?') != std::string_view::npos;
  std::vector<std::string_view> clauses;
  for (std::string_view part : Split(text, ',')) {
    for (std::string_view clause : Split(part, '?'))
      clauses.push_back(clause);
  }
  for (std::string_view clause : clauses) {
    std::vector<std::string_view> parts = Split(Trim(clause), ':');
    std::string kind = ToLower(parts[0]);
    if (kind == "singleton") {
      if (parts.size() > 1)
        return InvalidArgument(fmt::format("dependency '{}': singleton takes no job ids", clause));
      AddDependency(out.deps, Dependency{DependencyType::kSingleton, JobId(0)});
      continue;
    }
    if (parts.size() < 2) {
      return InvalidArgument(
          fmt::format("dependency '{}' needs a type and job ids (afterok:12)", clause));
    }
    DependencyType type;
    if (kind == "afterok") {
      type = DependencyType::kAfterOk;
    } else if (kind == "afterany") {
      type = DependencyType::kAfterAny;
    } else if (kind == "afternotok") {
      type = DependencyType::kAfterNotOk;
    } else if (kind == "after") {
      type = DependencyType::kAfter;
    } else {
      return InvalidArgument(fmt::format(
          "dependency type '{}' is not supported (after, afterok, afterany, afternotok, "
          "singleton)",
          parts[0]));
    }
    for (size_t i = 1; i < parts.size(); ++i) {
      auto id = ParseInt(parts[i]);
      if (!id.ok() || *id <= 0)
        return InvalidArgument(fmt::format("'{}' is not a job id", parts[i]));
      AddDependency(out.deps, Dependency{type, JobId(static_cast<uint64_t>(*id))});
    }
  }
  return out;
}

std::string FormatDependencies(const std::vector<Dependency>& deps, bool any) {
  std::string out;
  for (const Dependency& d : deps) {
    if (!out.empty()) out += any ? "?" : ",";
    out += DependencyTypeName(d.type);
    if (d.type != DependencyType::kSingleton) out += ":" + ToString(d.job);
  }
  return out;
}

Result<ArraySpec> ParseArraySpec(std::string_view text) {
  ArraySpec a;
  std::string_view body = Trim(text);
  const size_t pct = body.find('%');
  if (pct != std::string_view::npos) {
    auto m = ParseInt(body.substr(pct + 1));
    if (!m.ok() || *m <= 0)
      return InvalidArgument(
          fmt::format("'{}': the limit after % must be a positive number", text));
    a.max_running = static_cast<int>(*m);
    body = body.substr(0, pct);
  }
  for (std::string_view part : Split(body, ',')) {
    part = Trim(part);
    int64_t step = 1;
    const size_t colon = part.find(':');
    if (colon != std::string_view::npos) {
      auto s = ParseInt(part.substr(colon + 1));
      if (!s.ok() || *s <= 0)
        return InvalidArgument(fmt::format("'{}': the step after : must be positive", text));
      step = *s;
      part = part.substr(0, colon);
    }
    const size_t dash = part.find('-');
    auto lo = ParseInt(dash == std::string_view::npos ? part : part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : ParseInt(part.substr(dash + 1));
    // Indices fit an int and the loop below cannot overflow.
    if (!lo.ok() || !hi.ok() || *lo < 0 || *hi < *lo || *hi > 100'000'000 || step > 100'000'000) {
      return InvalidArgument(
          fmt::format("'{}' is not an array (use e.g. 0-99%10, 1,3,5 or 0-15:4)", text));
    }
    for (int64_t i = *lo; i <= *hi; i += step) {
      a.indices.push_back(static_cast<int>(i));
      if (a.indices.size() > 100000)
        return InvalidArgument(fmt::format("'{}': at most 100,000 tasks", text));
    }
  }
  std::sort(a.indices.begin(), a.indices.end());
  a.indices.erase(std::unique(a.indices.begin(), a.indices.end()), a.indices.end());
  if (a.indices.empty()) return InvalidArgument(fmt::format("'{}' names no tasks", text));
  return a;
}

std::string FormatArraySpec(const ArraySpec& a) {
  std::string out;
  size_t i = 0;
  while (i < a.indices.size()) {
    size_t j = i;
    while (j + 1 < a.indices.size() && a.indices[j + 1] == a.indices[j] + 1)
      ++j;
    if (!out.empty()) out += ",";
    out +=
        j == i ? fmt::format("{}", a.indices[i]) : fmt::format("{}-{}", a.indices[i], a.indices[j]);
    i = j + 1;
  }
  if (a.max_running > 0) out += fmt::format("%{}", a.max_running);
  return out;
}

int JobSpec::TotalGpus() const {
  if (gpus_per_node > 0) return (nodes > 0 ? nodes : 1) * gpus_per_node;
  return gpus;
}

namespace {

// A text field: within its size and free of NUL bytes (which would cut it
// short in every C API on its way to a process).
Status CheckText(std::string_view what, std::string_view text, size_t max_bytes) {
  if (text.size() > max_bytes) {
    return InvalidArgument(
        fmt::format("{} is {} bytes; at most {} are accepted", what, text.size(), max_bytes));
  }
  if (text.find('\0') != std::string_view::npos)
    return InvalidArgument(fmt::format("{} holds a NUL byte", what));
  if (!IsValidUtf8(text)) return InvalidArgument(fmt::format("{} is not valid UTF-8", what));
  return Status::Ok();
}

// An environment variable's name: not empty, no '=' (which ends a name in
// "KEY=VALUE"), no NUL. Other characters are allowed, since exported shell
// functions ("BASH_FUNC_module%%") travel in the environment too.
bool IsVariableName(std::string_view key) {
  return !key.empty() && key.size() <= kMaxNameBytes &&
         key.find_first_of(std::string_view("=\0", 2)) == std::string_view::npos;
}

Status CheckTextFields(const JobSpec& s) {
  for (const auto& [what, text] :
       {std::pair<std::string_view, const std::string&>{"the job name", s.name},
        {"the user", s.user},
        {"the account", s.account},
        {"the partition", s.partition},
        {"the QoS", s.qos},
        {"the reservation", s.reservation}}) {
    SHOAL_RETURN_IF_ERROR(CheckText(what, text, kMaxNameBytes));
  }
  SHOAL_RETURN_IF_ERROR(
      CheckText(s.script ? "the batch script" : "the command", s.command.get(), kMaxScriptBytes));
  if (!s.script_args.empty() && !s.script)
    return InvalidArgument("arguments are for a batch script; this job has none");
  if (!s.argv.empty() && s.script)
    return InvalidArgument("a batch script job runs its script, not argv");
  if (s.argv.size() > kMaxScriptArgs)
    return InvalidArgument(
        fmt::format("argv: {} words; at most {}", s.argv.size(), kMaxScriptArgs));
  if (!s.argv.empty() && s.argv.front().empty())
    return InvalidArgument("argv: the program is an empty word");
  if (s.script_args.size() > kMaxScriptArgs) {
    return InvalidArgument(fmt::format("{} arguments to the batch script; at most {}",
                                       s.script_args.size(), kMaxScriptArgs));
  }
  size_t arg_bytes = 0;
  for (const auto* args : {&s.script_args, &s.argv}) {
    for (const std::string& a : *args) {
      SHOAL_RETURN_IF_ERROR(CheckText("an argument", a, kMaxEnvBytes));
      arg_bytes += a.size() + 1;
    }
  }
  if (arg_bytes > kMaxEnvBytes) {
    return InvalidArgument(
        fmt::format("the job's arguments are {} bytes; at most {}", arg_bytes, kMaxEnvBytes));
  }
  for (const auto& [what, text] :
       {std::pair<std::string_view, const std::string&>{"the working directory", s.work_dir},
        {"the output path", s.stdout_path},
        {"the error path", s.stderr_path},
        {"the submit folder", s.submit_dir},
        {"the submit host", s.submit_host},
        {"the comment", s.comment}}) {
    SHOAL_RETURN_IF_ERROR(CheckText(what, text, kMaxPathBytes));
  }
  for (const auto& [what, list] :
       {std::pair<std::string_view, const std::vector<std::string>&>{"GPU models", s.gpu_models},
        {"constraints", s.constraints}}) {
    if (list.size() > kMaxListEntries) {
      return InvalidArgument(
          fmt::format("{} {} given; at most {}", list.size(), what, kMaxListEntries));
    }
    for (const std::string& e : list)
      SHOAL_RETURN_IF_ERROR(CheckText(what, e, kMaxNameBytes));
  }
  if (s.gpu_speeds.size() > kMaxListEntries) {
    return InvalidArgument(
        fmt::format("{} GPU speeds given; at most {}", s.gpu_speeds.size(), kMaxListEntries));
  }
  for (const auto& [model, speed] : s.gpu_speeds) {
    SHOAL_RETURN_IF_ERROR(CheckText("GPU speeds", model, kMaxNameBytes));
    if (model.empty() || !std::isfinite(speed) || speed <= 0 || speed > 1e6) {
      return InvalidArgument(fmt::format(
          "--gpu-speed: '{}={}' needs a model and a speed above 0 (e.g. h100=1,a100=0.55)", model,
          speed));
    }
  }
  if (s.gpu_power_cap_w != 0 &&
      (s.gpu_power_cap_w < kMinGpuPowerCapW || s.gpu_power_cap_w > kMaxGpuPowerCapW)) {
    return InvalidArgument(fmt::format("--gpu-power-cap: {} W is outside {} to {} W",
                                       s.gpu_power_cap_w, kMinGpuPowerCapW, kMaxGpuPowerCapW));
  }
  for (const auto& [what, list] :
       {std::pair<std::string_view, const std::vector<std::string>&>{"--nodelist", s.node_list},
        {"--exclude", s.exclude}}) {
    if (list.size() > kMaxNodeListEntries) {
      return InvalidArgument(
          fmt::format("{}: {} nodes; at most {}", what, list.size(), kMaxNodeListEntries));
    }
    for (const std::string& e : list) {
      SHOAL_RETURN_IF_ERROR(CheckText(what, e, kMaxNameBytes));
      if (e.empty()) return InvalidArgument(fmt::format("{}: an empty node name", what));
    }
  }
  if (s.env.size() > kMaxEnvVariables) {
    return InvalidArgument(
        fmt::format("{} environment variables; at most {}", s.env.size(), kMaxEnvVariables));
  }
  size_t env_bytes = 0;
  for (const auto& [key, value] : s.env) {
    if (!IsVariableName(key)) {
      return InvalidArgument(
          fmt::format("'{}' is not an environment variable name (not empty, at most {} "
                      "bytes, no '=' or NUL)",
                      key.substr(0, 64), kMaxNameBytes));
    }
    SHOAL_RETURN_IF_ERROR(CheckText(fmt::format("variable {}", key), value, kMaxEnvBytes));
    env_bytes += key.size() + value.size() + 2;
  }
  if (env_bytes > kMaxEnvBytes) {
    return InvalidArgument(fmt::format("the environment is {} bytes; at most {} are accepted",
                                       env_bytes, kMaxEnvBytes));
  }
  return Status::Ok();
}

// --nodelist and --exclude agree with each other and with the node count.
Status CheckNodeLists(const JobSpec& s) {
  if (s.node_list.empty()) return Status::Ok();
  std::vector<std::string> listed = s.node_list;
  std::sort(listed.begin(), listed.end());
  if (auto dup = std::adjacent_find(listed.begin(), listed.end()); dup != listed.end())
    return InvalidArgument(fmt::format("--nodelist names {} twice", *dup));
  for (const std::string& e : s.exclude) {
    if (std::binary_search(listed.begin(), listed.end(), e))
      return InvalidArgument(fmt::format("node {} is both in --nodelist and in --exclude", e));
  }
  const int listed_count = static_cast<int>(listed.size());
  if (s.nodes > listed_count) {
    return InvalidArgument(
        fmt::format("asks for {} nodes and lists {}: Shoal takes all of a job's nodes from "
                    "--nodelist (list {} nodes, or leave out -N)",
                    s.nodes, listed_count, s.nodes));
  }
  if (s.nodes > 0 && s.nodes < listed_count) {
    return InvalidArgument(
        fmt::format("asks for {} nodes and lists {}: the job runs on every listed node", s.nodes,
                    listed_count));
  }
  return Status::Ok();
}

// Slurm's counts agree with the job's node count (-N, or its --nodelist):
// [a*2&b*4] are all of its nodes, a*2 some of them.
Status CheckConstraintCounts(const JobSpec& s) {
  Result<std::optional<ConstraintCounts>> parsed = ParseConstraintCounts(s.constraints);
  if (!parsed.ok()) {
    auto it = std::find_if(s.constraints.begin(), s.constraints.end(),
                           [](const std::string& c) { return c.find('*') != std::string::npos; });
    return InvalidArgument(fmt::format("constraint {}: {}", *it, parsed.status().message()));
  }
  const std::optional<ConstraintCounts>& counts = *parsed;
  if (!counts) return Status::Ok();
  const int nodes = s.node_list.empty() ? s.nodes : static_cast<int>(s.node_list.size());
  const int sum = counts->Sum();
  if (nodes == 0 || nodes == sum || (nodes > sum && !counts->all_nodes)) return Status::Ok();
  const std::string_view at_least = counts->all_nodes ? "" : "at least ";
  if (!s.node_list.empty()) {
    return InvalidArgument(
        fmt::format("constraint {} asks for {}{} nodes and --nodelist names {}: list {}{}",
                    s.constraints.front(), at_least, sum, nodes, at_least, sum));
  }
  return InvalidArgument(fmt::format(
      "constraint {} asks for {}{} nodes and the job for {}: leave out -N, or make "
      "it {}{}",
      s.constraints.front(), at_least, sum, nodes, sum, counts->all_nodes ? "" : " or more"));
}

}  // namespace

Status JobSpec::Validate() const {
  SHOAL_RETURN_IF_ERROR(CheckTextFields(*this));
  SHOAL_RETURN_IF_ERROR(ValidateContainer(container));
  if (nodes < 0 || gpus_per_node < 0 || gpus < 0)
    return InvalidArgument("counts cannot be negative");
  if (gpus_per_node > kMaxGpusPerNode) {
    return InvalidArgument(fmt::format("{} GPUs per node is more than any node has (at most {})",
                                       gpus_per_node, kMaxGpusPerNode));
  }
  if (gpus_per_node > 0 && gpus > 0 && gpus != TotalGpus()) {
    return InvalidArgument(fmt::format(
        "{} GPUs in total does not match {} nodes x {} GPUs per node", gpus, nodes, gpus_per_node));
  }
  if (gpu_milli <= 0 || gpu_milli > kMilliPerGpu) {
    return InvalidArgument(
        fmt::format("GPU share {} is outside 1..{} thousandths", gpu_milli, kMilliPerGpu));
  }
  if (cpu_milli_per_gpu < 0 || mem_mib_per_gpu < 0 || cpu_milli_per_node < 0 ||
      mem_mib_per_node < 0) {
    return InvalidArgument("CPU and memory amounts cannot be negative");
  }
  if (time_limit.count() < 0) return InvalidArgument("time limit cannot be negative");
  if (nodes > 100000) return InvalidArgument("too many nodes");
  const int64_t most_tasks = int64_t{kMaxTasksPerNode} * std::max({1, nodes, TotalGpus()});
  if (tasks < 0 || tasks > most_tasks) {
    return InvalidArgument(fmt::format("{} tasks: at most {} per node ({} for this job)", tasks,
                                       kMaxTasksPerNode, most_tasks));
  }
  if (gpus > 1000000) return InvalidArgument("too many GPUs");
  if (tasks_per_node < 0 || tasks_per_node > kMaxTasksPerNode)
    return InvalidArgument(fmt::format("tasks per node: 0 to {}", kMaxTasksPerNode));
  if (cpus_per_task < 0 || cpus_per_task > 100000)
    return InvalidArgument("CPUs per task: 0 to 100000");
  if (gpus_per_task < 0 || gpus_per_task > kMaxGpusPerNode)
    return InvalidArgument(fmt::format("GPUs per task: 0 to {}", kMaxGpusPerNode));
  if (signal < 0 || signal > 64) return InvalidArgument("the signal must be 1 to 64");
  if (signal_before_s < 0 || signal_before_s > 65535)
    return InvalidArgument("the signal's time before the limit: 0 to 65535 seconds");
  SHOAL_RETURN_IF_ERROR(CheckNodeLists(*this));
  return CheckConstraintCounts(*this);
}

int Allocation::TotalGpus() const {
  int total = 0;
  for (const NodeAllocation& n : nodes)
    total += n.GpuCount();
  return total;
}

double Allocation::GpuEquivalents() const {
  double total = 0;
  for (const NodeAllocation& n : nodes) {
    total += n.GpuCount() * static_cast<double>(n.gpu_milli) / kMilliPerGpu;
  }
  return total;
}

std::string FormatGpuMask(uint64_t mask) {
  std::string out;
  int i = 0;
  while (i < 64) {
    if (!(mask >> i & 1)) {
      ++i;
      continue;
    }
    int j = i;
    while (j + 1 < 64 && (mask >> (j + 1) & 1))
      ++j;
    if (!out.empty()) out += ",";
    out += j == i ? fmt::format("{}", i) : fmt::format("{}-{}", i, j);
    i = j + 1;
  }
  return out;
}

}  // namespace shoal
