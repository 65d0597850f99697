#include "api/json.h"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <string>

#include "api/json_reader.h"

namespace shoal::api {

int64_t MilliFromCpus(double cpus) {
  return static_cast<int64_t>(std::llround(cpus * 1000));
}
double CpusFromMilli(int64_t milli) {
  return static_cast<double>(milli) / 1000.0;
}

namespace {

// An array's tasks are encoded and decoded one after another, each naming
// the same array: a one-entry cache per thread on each side makes that one
// expansion (decoding) or one formatting (encoding) per array, and the
// decoded tasks share their ArraySpec as the controller's own do. The cache
// keeps its last entry alive; an entry is never changed.
Result<std::shared_ptr<const ArraySpec>> SharedArraySpec(const std::string& text) {
  thread_local std::string last_text;
  thread_local std::shared_ptr<const ArraySpec> last;
  if (last == nullptr || text != last_text) {
    SHOAL_ASSIGN_OR_RETURN(ArraySpec parsed, ParseArraySpec(text));
    last = std::make_shared<const ArraySpec>(std::move(parsed));
    last_text = text;
  }
  return last;
}

// The same for a spec's large parts: a decoded value equal to the last one
// decoded on this thread becomes that one, shared.
template <typename T>
void ShareWithTheLastDecoded(Shared<T>& value) {
  thread_local Shared<T> last;
  if (value == last) {
    value = last;
  } else {
    last = value;
  }
}

std::string ArrayText(const std::shared_ptr<const ArraySpec>& array) {
  thread_local std::shared_ptr<const ArraySpec> last;
  thread_local std::string last_text;
  if (array != last) {
    last_text = FormatArraySpec(*array);
    last = array;
  }
  return last_text;
}

}  // namespace

Result<Json> Parse(std::string_view text) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Parse again for the position of the error.
    try {
      [[maybe_unused]] Json again = Json::parse(text.begin(), text.end());
    } catch (const Json::parse_error& e) {
      return InvalidArgument(fmt::format("malformed JSON at byte {}", e.byte));
    } catch (const Json::exception& e) {
      // Such as a number too large for any JSON number type (found by fuzzing).
      return InvalidArgument(fmt::format("malformed JSON: {}", e.what()));
    }
    return InvalidArgument("malformed JSON");
  }
  return j;
}

double TimeToJson(Time t) {
  return ToSeconds(t);
}
Time TimeFromJson(double seconds) {
  return TimeFromSeconds(seconds);
}

Json ContainerToJson(const ContainerSpec& c) {
  Json j = {{"image", c.image}};
  if (!c.mounts.empty()) {
    Json mounts = Json::array();
    for (const ContainerMount& m : c.mounts)
      mounts.push_back(FormatContainerMount(m));
    j["mounts"] = std::move(mounts);
  }
  if (!c.work_dir.empty()) j["workdir"] = c.work_dir;
  if (!c.env.empty()) j["env"] = c.env;
  if (!c.mount_home) j["mount_home"] = false;
  return j;
}

Result<ContainerSpec> ContainerFromJson(const Json& j) {
  ContainerSpec c;
  ObjectReader f(j, "job.container");
  std::vector<std::string> mounts;
  f.Optional("image", &c.image);
  f.Optional("mounts", &mounts);
  f.Optional("workdir", &c.work_dir);
  f.Optional("env", &c.env);
  f.Optional("mount_home", &c.mount_home);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (mounts.size() > kMaxContainerMounts) {
    return InvalidArgument(fmt::format("job.container.mounts: {} mounts; at most {}", mounts.size(),
                                       kMaxContainerMounts));
  }
  for (const std::string& text : mounts) {
    auto parsed = ParseContainerMounts(text);
    if (!parsed.ok()) return parsed.status().WithContext("job.container.mounts");
    c.mounts.insert(c.mounts.end(), parsed->begin(), parsed->end());
  }
  return c;
}

Json ToJson(const JobSpec& s) {
  Json j;
  j["name"] = s.name;
  if (!s.user.empty()) j["user"] = s.user;
  j["account"] = s.account;
  j["partition"] = s.partition;
  if (!s.qos.empty()) j["qos"] = s.qos;
  if (!s.reservation.empty()) j["reservation"] = s.reservation;
  if (s.mail_types != 0) j["mail_type"] = FormatMailTypes(s.mail_types);
  if (!s.mail_user.empty()) j["mail_user"] = s.mail_user;
  j["command"] = s.command.get();
  j["script"] = s.script;
  if (!s.script_args.empty()) j["script_args"] = s.script_args;
  if (!s.argv.empty()) j["argv"] = s.argv;
  if (!s.env.empty()) j["env"] = s.env.get();
  j["work_dir"] = s.work_dir;
  if (!s.stdout_path.empty()) j["stdout"] = s.stdout_path;
  if (!s.stderr_path.empty()) j["stderr"] = s.stderr_path;
  j["nodes"] = s.nodes;
  j["gpus_per_node"] = s.gpus_per_node;
  j["gpus"] = s.gpus;
  j["gpu_share"] = s.gpu_milli;
  j["gpu_models"] = s.gpu_models;
  if (!s.gpu_speeds.empty()) {
    Json speeds = Json::object();
    for (const auto& [model, speed] : s.gpu_speeds)
      speeds[model] = speed;
    j["gpu_speeds"] = std::move(speeds);
  }
  if (s.gpu_power_cap_w > 0) j["gpu_power_cap_w"] = s.gpu_power_cap_w;
  j["cpus_per_gpu"] = CpusFromMilli(s.cpu_milli_per_gpu);
  j["mem_per_gpu_mib"] = s.mem_mib_per_gpu;
  j["cpus_per_node"] = CpusFromMilli(s.cpu_milli_per_node);
  j["mem_per_node_mib"] = s.mem_mib_per_node;
  j["constraints"] = s.constraints;
  if (!s.node_list.empty()) j["node_list"] = s.node_list;
  if (!s.exclude.empty()) j["exclude"] = s.exclude;
  j["exclusive"] = s.exclusive;
  j["time_limit_s"] = ToSeconds(s.time_limit);
  Json deps = Json::array();
  for (const Dependency& d : s.dependencies) {
    Json dep = {{"type", std::string(DependencyTypeName(d.type))}};
    if (d.type != DependencyType::kSingleton) dep["job"] = d.job.value();
    deps.push_back(std::move(dep));
  }
  j["dependencies"] = deps;
  if (s.dependency_any) j["dependency_any"] = true;
  j["requeue"] = s.requeue;
  j["hold"] = s.hold;
  if (s.begin_time) j["begin_time"] = TimeToJson(*s.begin_time);
  j["tasks"] = s.tasks;
  if (s.tasks_per_node > 0) j["tasks_per_node"] = s.tasks_per_node;
  if (s.cpus_per_task > 0) j["cpus_per_task"] = s.cpus_per_task;
  if (!s.submit_dir.empty()) j["submit_dir"] = s.submit_dir;
  if (!s.submit_host.empty()) j["submit_host"] = s.submit_host;
  if (s.gpus_per_task > 0) j["gpus_per_task"] = s.gpus_per_task;
  if (!s.comment.empty()) j["comment"] = s.comment;
  if (s.append_output) j["append_output"] = true;
  if (s.signal != 0) {
    j["signal"] = s.signal;
    j["signal_before_s"] = s.signal_before_s;
    if (s.signal_batch_only) j["signal_batch_only"] = true;
  }
  if (s.array) j["array"] = ArrayText(s.array);
  if (!s.acceptance_node.empty()) j["acceptance_node"] = s.acceptance_node;
  if (!s.container.image.empty()) j["container"] = ContainerToJson(s.container);
  return j;
}

Result<JobSpec> JobSpecFromJson(const Json& j) {
  JobSpec s;
  ObjectReader f(j, "job");
  double cpus_per_gpu = 0, cpus_per_node = 0, time_limit_s = 0, begin = -1;
  std::string array;
  Json deps;
  f.Optional("name", &s.name);
  f.Optional("user", &s.user);
  f.Optional("account", &s.account);
  f.Optional("partition", &s.partition);
  f.Optional("qos", &s.qos);
  f.Optional("reservation", &s.reservation);
  std::string mail_type;
  f.Optional("mail_type", &mail_type);
  f.Optional("mail_user", &s.mail_user);
  f.Optional("command", &s.command);
  f.Optional("script", &s.script);
  f.Optional("script_args", &s.script_args);
  f.Optional("argv", &s.argv);
  f.Optional("env", &s.env);
  f.Optional("work_dir", &s.work_dir);
  f.Optional("stdout", &s.stdout_path);
  f.Optional("stderr", &s.stderr_path);
  f.Optional("nodes", &s.nodes);
  f.Optional("gpus_per_node", &s.gpus_per_node);
  f.Optional("gpus", &s.gpus);
  f.Optional("gpu_share", &s.gpu_milli);
  f.Optional("gpu_models", &s.gpu_models);
  Json speeds;
  f.Optional("gpu_speeds", &speeds);
  f.Optional("gpu_power_cap_w", &s.gpu_power_cap_w);
  f.Optional("cpus_per_gpu", &cpus_per_gpu);
  f.Optional("mem_per_gpu_mib", &s.mem_mib_per_gpu);
  f.Optional("cpus_per_node", &cpus_per_node);
  f.Optional("mem_per_node_mib", &s.mem_mib_per_node);
  f.Optional("constraints", &s.constraints);
  f.Optional("node_list", &s.node_list);
  f.Optional("exclude", &s.exclude);
  f.Optional("exclusive", &s.exclusive);
  f.Optional("time_limit_s", &time_limit_s);
  f.Optional("dependencies", &deps);
  f.Optional("dependency_any", &s.dependency_any);
  f.Optional("requeue", &s.requeue);
  f.Optional("hold", &s.hold);
  f.Optional("begin_time", &begin);
  f.Optional("tasks", &s.tasks);
  f.Optional("tasks_per_node", &s.tasks_per_node);
  f.Optional("cpus_per_task", &s.cpus_per_task);
  f.Optional("submit_dir", &s.submit_dir);
  f.Optional("submit_host", &s.submit_host);
  f.Optional("gpus_per_task", &s.gpus_per_task);
  f.Optional("comment", &s.comment);
  f.Optional("append_output", &s.append_output);
  f.Optional("signal", &s.signal);
  f.Optional("signal_before_s", &s.signal_before_s);
  f.Optional("signal_batch_only", &s.signal_batch_only);
  f.Optional("array", &array);
  f.Optional("acceptance_node", &s.acceptance_node);
  Json container;
  f.Optional("container", &container);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (!container.is_null()) {
    SHOAL_ASSIGN_OR_RETURN(s.container, ContainerFromJson(container));
  }
  if (!mail_type.empty()) {
    auto types = ParseMailTypes(mail_type);
    if (!types.ok()) return InvalidArgument("job.mail_type: " + types.status().message());
    s.mail_types = *types;
  }
  if (cpus_per_gpu < 0 || cpus_per_node < 0 || time_limit_s < 0 || cpus_per_gpu > 1e6 ||
      cpus_per_node > 1e6 || time_limit_s > 1e10) {
    return InvalidArgument("job: CPUs and time limits must be non-negative and not absurd");
  }
  s.cpu_milli_per_gpu = MilliFromCpus(cpus_per_gpu);
  s.cpu_milli_per_node = MilliFromCpus(cpus_per_node);
  s.time_limit = DurationFromSeconds(time_limit_s);
  // Seconds since the epoch; beyond the year 2286 is a mistake, not a plan
  // (and would overflow the clock's milliseconds).
  if (begin > 1e10)
    return InvalidArgument("job: begin_time must be seconds since 1970, before the year 2286");
  if (begin >= 0) s.begin_time = TimeFromJson(begin);
  if (!speeds.is_null()) {
    if (!speeds.is_object())
      return InvalidArgument("job: field 'gpu_speeds' must be an object of model: speed");
    for (const auto& [model, speed] : speeds.items()) {
      if (!speed.is_number())
        return InvalidArgument(fmt::format("job: gpu_speeds.{} must be a number", model));
      s.gpu_speeds.emplace_back(model, speed.get<double>());
    }
  }
  if (!deps.is_null()) {
    if (!deps.is_array()) return InvalidArgument("job: field 'dependencies' must be a list");
    for (const Json& d : deps) {
      ObjectReader df(d, "dependency");
      std::string type;
      uint64_t id = 0;
      df.Optional("type", &type);
      df.Optional("job", &id);
      SHOAL_RETURN_IF_ERROR(df.Finish());
      SHOAL_ASSIGN_OR_RETURN(
          DependencyList parsed,
          ParseDependencies(type == "singleton" ? type : fmt::format("{}:{}", type, id)));
      s.dependencies.insert(s.dependencies.end(), parsed.deps.begin(), parsed.deps.end());
    }
  }
  if (!array.empty()) {
    SHOAL_ASSIGN_OR_RETURN(s.array, SharedArraySpec(array));
  }
  SHOAL_RETURN_IF_ERROR(s.Validate().WithContext("job"));
  ShareWithTheLastDecoded(s.command);
  ShareWithTheLastDecoded(s.env);
  return s;
}

Json ToJson(const NodeAllocation& na, const NodeNames* names) {
  Json n;
  n["node_id"] = na.node.value();
  if (names != nullptr) n["node"] = names->name_of(na.node);
  Json gpus = Json::array();
  for (int g = 0; g < kMaxGpusPerNode; ++g) {
    if (na.gpu_mask >> g & 1) gpus.push_back(g);
  }
  n["gpus"] = gpus;
  n["gpu_share"] = na.gpu_milli;
  n["cpus"] = CpusFromMilli(na.cpu_milli);
  n["mem_mib"] = na.mem_mib;
  if (na.exclusive) n["exclusive"] = true;
  return n;
}

Result<NodeAllocation> NodeAllocationFromJson(const Json& j, const std::string& path,
                                              const NodeNames* names) {
  ObjectReader f(j, path);
  NodeAllocation na;
  uint64_t id = 0;
  std::string name;
  Json gpus;
  double cpus = 0;
  f.Optional("node_id", &id);
  f.Optional("node", &name);
  f.Optional("gpus", &gpus);
  f.Optional("gpu_share", &na.gpu_milli);
  f.Optional("cpus", &cpus);
  f.Optional("mem_mib", &na.mem_mib);
  f.Optional("exclusive", &na.exclusive);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (id > UINT32_MAX) return InvalidArgument(fmt::format("{}.node_id is out of range", path));
  na.node = NodeId(static_cast<uint32_t>(id));
  if (!name.empty() && names != nullptr) {
    auto found = names->id_of(name);
    if (!found) return NotFound(fmt::format("{}: unknown node '{}'", path, name));
    na.node = *found;
  }
  if (!gpus.is_null()) {
    if (!gpus.is_array()) return InvalidArgument(fmt::format("{}.gpus must be a list", path));
    for (const Json& g : gpus) {
      if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() >= kMaxGpusPerNode) {
        return InvalidArgument(fmt::format("{}.gpus: a GPU index is out of range", path));
      }
      na.gpu_mask |= uint64_t{1} << g.get<int>();
    }
  }
  if (cpus < 0 || cpus > 1e6 || na.mem_mib < 0 || na.gpu_milli < 0 || na.gpu_milli > kMilliPerGpu)
    return InvalidArgument(fmt::format("{}: cpus, mem_mib or gpu_share is out of range", path));
  na.cpu_milli = MilliFromCpus(cpus);
  return na;
}

Json ToJson(const Allocation& a, const NodeNames* names) {
  Json out = Json::array();
  for (const NodeAllocation& na : a.nodes)
    out.push_back(ToJson(na, names));
  return out;
}

Result<Allocation> AllocationFromJson(const Json& j, const NodeNames* names) {
  if (!j.is_array()) return InvalidArgument("allocation must be a list");
  Allocation a;
  for (size_t i = 0; i < j.size(); ++i) {
    SHOAL_ASSIGN_OR_RETURN(NodeAllocation na,
                           NodeAllocationFromJson(j[i], fmt::format("allocation[{}]", i), names));
    a.nodes.push_back(na);
  }
  return a;
}

Json ToJson(const StepSpec& s) {
  Json j{{"argv", s.argv}};
  if (!s.name.empty()) j["name"] = s.name;
  if (s.tasks > 0) j["tasks"] = s.tasks;
  if (s.nodes > 0) j["nodes"] = s.nodes;
  if (s.tasks_per_node > 0) j["tasks_per_node"] = s.tasks_per_node;
  if (!s.node_list.empty()) j["nodelist"] = s.node_list;
  if (!s.exclude.empty()) j["exclude"] = s.exclude;
  if (s.gpus_per_task > 0) j["gpus_per_task"] = s.gpus_per_task;
  if (s.cpus_per_task > 0) j["cpus_per_task"] = s.cpus_per_task;
  if (s.kill_on_bad_exit) j["kill_on_bad_exit"] = true;
  if (s.pty) j["pty"] = Json{{"rows", s.pty_rows}, {"cols", s.pty_cols}};
  if (!s.env.empty()) j["env"] = s.env;
  if (!s.work_dir.empty()) j["work_dir"] = s.work_dir;
  if (!s.container.image.empty()) j["container"] = ContainerToJson(s.container);
  return j;
}

Result<StepSpec> StepSpecFromJson(const Json& j) {
  StepSpec s;
  ObjectReader f(j, "step");
  f.Optional("name", &s.name);
  f.Required("argv", &s.argv);
  f.Optional("tasks", &s.tasks);
  f.Optional("nodes", &s.nodes);
  f.Optional("tasks_per_node", &s.tasks_per_node);
  f.Optional("nodelist", &s.node_list);
  f.Optional("exclude", &s.exclude);
  f.Optional("gpus_per_task", &s.gpus_per_task);
  f.Optional("cpus_per_task", &s.cpus_per_task);
  f.Optional("kill_on_bad_exit", &s.kill_on_bad_exit);
  const bool pty = f.Has("pty");
  f.Optional("env", &s.env);
  f.Optional("work_dir", &s.work_dir);
  Json container;
  f.Optional("container", &container);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (!container.is_null()) {
    SHOAL_ASSIGN_OR_RETURN(s.container, ContainerFromJson(container));
    SHOAL_RETURN_IF_ERROR(ValidateContainer(s.container).WithContext("step"));
  }
  if (pty) {
    // {"rows": R, "cols": C}: the terminal's size (0: its default).
    if (!j.at("pty").is_object()) return InvalidArgument("step.pty must be an object");
    ObjectReader t(j.at("pty"), "step.pty");
    t.Optional("rows", &s.pty_rows);
    t.Optional("cols", &s.pty_cols);
    SHOAL_RETURN_IF_ERROR(t.Finish());
    if (s.pty_rows < 0 || s.pty_rows > 0xffff || s.pty_cols < 0 || s.pty_cols > 0xffff)
      return InvalidArgument("step.pty: rows and cols are 0 to 65535");
    s.pty = true;
  }
  if (s.argv.empty() || s.argv[0].empty()) return InvalidArgument("step.argv: nothing to run");
  if (s.argv.size() > static_cast<size_t>(kMaxArgvEntries))
    return InvalidArgument(fmt::format("step.argv: more than {} words", kMaxArgvEntries));
  size_t bytes = 0;
  for (const std::string& a : s.argv) {
    bytes += a.size();
    if (a.find('\0') != std::string::npos) return InvalidArgument("step.argv: a NUL byte");
  }
  if (bytes > kMaxScriptBytes) return InvalidArgument("step.argv: over 4 MiB");
  if (s.tasks < 0 || s.nodes < 0 || s.tasks_per_node < 0 || s.gpus_per_task < 0 ||
      s.cpus_per_task < 0 || s.tasks > 100000 || s.tasks_per_node > kMaxTasksPerNode) {
    return InvalidArgument(
        "step: tasks, nodes, tasks_per_node, gpus_per_task and "
        "cpus_per_task are counts (tasks at most 100000, per node 512)");
  }
  for (const auto& [k, v] : s.env) {
    if (k.empty() || k.find_first_of("=\0") != std::string::npos ||
        v.find('\0') != std::string::npos)
      return InvalidArgument(fmt::format("step.env: '{}' is not an environment variable", k));
  }
  return s;
}

Json ToJson(const JobStep& st) {
  Json j{{"id", st.id},
         {"spec", ToJson(st.spec)},
         {"nodes", st.nodes},
         {"tasks", st.tasks},
         {"state", std::string(StepStateName(st.state))},
         {"exit_code", st.exit_code},
         {"exit_signal", st.exit_signal},
         {"start_time", TimeToJson(st.start_time)}};
  if (!st.reason.empty()) j["reason"] = st.reason;
  if (st.master_port > 0) j["master_port"] = st.master_port;
  if (st.end_time != Time{}) j["end_time"] = TimeToJson(st.end_time);
  return j;
}

Result<JobStep> JobStepFromJson(const Json& j) {
  JobStep st;
  ObjectReader f(j, "job step");
  Json spec, tasks;
  std::string state;
  double start = 0, end = 0;
  uint64_t id = 0;
  f.Required("id", &id);
  f.Required("spec", &spec);
  f.Optional("nodes", &st.nodes);
  f.Optional("tasks", &tasks);
  f.Required("state", &state);
  f.Optional("exit_code", &st.exit_code);
  f.Optional("exit_signal", &st.exit_signal);
  f.Optional("reason", &st.reason);
  f.Optional("master_port", &st.master_port);
  f.Optional("start_time", &start);
  f.Optional("end_time", &end);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (id == 0 || id > UINT32_MAX) return InvalidArgument("job step: id is 1 to 2^32-1");
  st.id = static_cast<uint32_t>(id);
  if (!tasks.is_null()) {
    if (!tasks.is_array()) return InvalidArgument("job step: tasks is a list of counts");
    for (const Json& t : tasks) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > kMaxTasksPerNode)
        return InvalidArgument("job step: tasks is a list of counts");
      st.tasks.push_back(t.get<int>());
    }
  }
  SHOAL_ASSIGN_OR_RETURN(st.spec, StepSpecFromJson(spec));
  SHOAL_ASSIGN_OR_RETURN(st.state, ParseStepState(state));
  st.start_time = TimeFromJson(start);
  if (end != 0) st.end_time = TimeFromJson(end);
  return st;
}

Json ToJson(const Job& job, const NodeNames* names) {
  Json j;
  j["id"] = job.id.value();
  j["spec"] = ToJson(job.spec);
  j["state"] = std::string(JobStateName(job.state));
  j["reason"] = std::string(PendingReasonName(job.reason));
  if (!job.reason_detail.empty()) j["reason_detail"] = job.reason_detail;
  j["submit_time"] = TimeToJson(job.submit_time);
  if (job.start_time != Time{}) j["start_time"] = TimeToJson(job.start_time);
  if (job.end_time != Time{}) j["end_time"] = TimeToJson(job.end_time);
  j["time_limit_s"] = ToSeconds(job.time_limit);
  j["allocation"] = ToJson(job.allocation, names);
  j["epoch"] = job.epoch;
  j["restarts"] = job.restarts;
  j["exit_code"] = job.exit_code;
  j["exit_signal"] = job.exit_signal;
  j["priority"] = job.priority;
  if (job.master_port > 0) j["master_port"] = job.master_port;
  if (job.array_task_id >= 0) {
    j["array_job_id"] = job.array_job_id.value();
    j["array_task_id"] = job.array_task_id;
  }
  j["gpu_seconds"] = job.gpu_seconds;
  if (job.gpu_seconds_at_start > 0) j["gpu_seconds_at_start"] = job.gpu_seconds_at_start;
  if (job.requeued_at != Time{}) j["requeued_at"] = TimeToJson(job.requeued_at);
  if (job.efficiency.samples > 0 || job.efficiency.progress_samples > 0)
    j["efficiency"] = ToJson(job.efficiency);
  if (job.idle) {
    j["idle"] = true;
    j["idle_since"] = TimeToJson(job.idle_since);
  }
  if (!job.steps.empty()) {
    Json steps = Json::array();
    for (const JobStep& st : job.steps)
      steps.push_back(ToJson(st));
    j["steps"] = std::move(steps);
  }
  if (job.next_step > 1) j["next_step"] = job.next_step;
  return j;
}

Json ToJson(const JobEfficiency& e) {
  Json j = {{"samples", e.samples},
            {"util_mean_pct", e.util_mean_pct},
            {"util_peak_pct", e.util_peak_pct},
            {"mem_mean_mib", e.mem_mean_mib},
            {"mem_peak_mib", e.mem_peak_mib},
            {"energy_wh", e.energy_wh}};
  if (e.progress_samples > 0) {
    j["progress_samples"] = e.progress_samples;
    j["progress_rate"] = e.progress_rate;
  }
  return j;
}

Result<JobEfficiency> JobEfficiencyFromJson(const Json& j) {
  JobEfficiency e;
  ObjectReader f(j, "efficiency");
  f.Optional("samples", &e.samples);
  f.Optional("util_mean_pct", &e.util_mean_pct);
  f.Optional("util_peak_pct", &e.util_peak_pct);
  f.Optional("mem_mean_mib", &e.mem_mean_mib);
  f.Optional("mem_peak_mib", &e.mem_peak_mib);
  f.Optional("energy_wh", &e.energy_wh);
  f.Optional("progress_samples", &e.progress_samples);
  f.Optional("progress_rate", &e.progress_rate);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (!std::isfinite(e.progress_rate) || e.progress_rate < 0)
    return InvalidArgument("efficiency.progress_rate must be a number of at least 0");
  return e;
}

Result<Job> JobFromJson(const Json& j, const NodeNames* names) {
  Job job;
  ObjectReader f(j, "job record");
  uint64_t id = 0, array_job = 0;
  Json spec, alloc, efficiency;
  std::string state, reason;
  double submit = 0, start = 0, end = 0, limit = 0, idle_since = 0;
  f.Optional("id", &id);
  f.Optional("spec", &spec);
  f.Optional("state", &state);
  f.Optional("reason", &reason);
  f.Optional("reason_detail", &job.reason_detail);
  f.Optional("submit_time", &submit);
  f.Optional("start_time", &start);
  f.Optional("end_time", &end);
  f.Optional("time_limit_s", &limit);
  f.Optional("allocation", &alloc);
  f.Optional("epoch", &job.epoch);
  f.Optional("restarts", &job.restarts);
  f.Optional("exit_code", &job.exit_code);
  f.Optional("exit_signal", &job.exit_signal);
  f.Optional("priority", &job.priority);
  f.Optional("master_port", &job.master_port);
  f.Optional("array_job_id", &array_job);
  f.Optional("array_task_id", &job.array_task_id);
  f.Optional("gpu_seconds", &job.gpu_seconds);
  f.Optional("gpu_seconds_at_start", &job.gpu_seconds_at_start);
  double requeued_at = 0;
  f.Optional("requeued_at", &requeued_at);
  f.Optional("efficiency", &efficiency);
  f.Optional("idle", &job.idle);
  f.Optional("idle_since", &idle_since);
  f.List(
      "steps", false, [](const Json& item, const std::string&) { return JobStepFromJson(item); },
      &job.steps, kMaxKeptSteps);
  uint64_t next_step = 1;
  f.Optional("next_step", &next_step);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (next_step == 0 || next_step > UINT32_MAX) return InvalidArgument("job record: bad next_step");
  job.next_step = static_cast<uint32_t>(next_step);
  if (!efficiency.is_null()) {
    SHOAL_ASSIGN_OR_RETURN(job.efficiency, JobEfficiencyFromJson(efficiency));
  }
  if (idle_since != 0) job.idle_since = TimeFromJson(idle_since);
  job.id = JobId(id);
  SHOAL_ASSIGN_OR_RETURN(job.spec, JobSpecFromJson(spec));
  SHOAL_ASSIGN_OR_RETURN(job.state, ParseJobState(state));
  job.reason = PendingReason::kNone;
  for (int r = 0; r <= static_cast<int>(PendingReason::kPlanConflict); ++r) {
    if (PendingReasonName(static_cast<PendingReason>(r)) == reason)
      job.reason = static_cast<PendingReason>(r);
  }
  job.submit_time = TimeFromJson(submit);
  if (start != 0) job.start_time = TimeFromJson(start);
  if (end != 0) job.end_time = TimeFromJson(end);
  if (requeued_at != 0) job.requeued_at = TimeFromJson(requeued_at);
  job.time_limit = DurationFromSeconds(limit);
  if (!alloc.is_null()) {
    SHOAL_ASSIGN_OR_RETURN(job.allocation, AllocationFromJson(alloc, names));
  }
  job.array_job_id = JobId(array_job);
  return job;
}

Json ErrorBody(const Status& s) {
  return {{"error", std::string(StatusCodeName(s.code()))}, {"detail", s.message()}};
}

int HttpStatus(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnsatisfiable:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kResourceExhausted:
      return 413;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

}  // namespace shoal::api
