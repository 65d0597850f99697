#include "api/json.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

namespace shoal::api {

namespace {

// Reads the fields of one JSON object strictly: each Get marks its field as
// known; Finish reports the first unknown one.
class Fields {
 public:
  Fields(const Json& j, std::string_view what) : j_(j), what_(what) {
    if (!j.is_object()) status_ = InvalidArgument(fmt::format("{} must be a JSON object", what));
  }

  template <typename T>
  void Get(const char* key, T* out) {
    known_.insert(key);
    if (!status_.ok()) return;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return;
    if (!Convert(*it, key, out)) return;
  }

  Status Finish() {
    if (!status_.ok()) return status_;
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (!known_.count(it.key()))
        return InvalidArgument(fmt::format("{}: unknown field '{}'", what_, it.key()));
    }
    return Status::Ok();
  }

  void Fail(std::string message) {
    if (status_.ok()) status_ = InvalidArgument(fmt::format("{}: {}", what_, message));
  }

 private:
  bool Wrong(const char* key, const char* type) {
    Fail(fmt::format("field '{}' must be {}", key, type));
    return false;
  }
  bool Convert(const Json& v, const char* key, std::string* out) {
    if (!v.is_string()) return Wrong(key, "a string");
    *out = v.get<std::string>();
    return true;
  }
  bool Convert(const Json& v, const char* key, bool* out) {
    if (!v.is_boolean()) return Wrong(key, "true or false");
    *out = v.get<bool>();
    return true;
  }
  bool Convert(const Json& v, const char* key, int* out) {
    if (!v.is_number_integer()) return Wrong(key, "an integer");
    const int64_t x = v.get<int64_t>();
    if (x < INT32_MIN || x > INT32_MAX) return Wrong(key, "a smaller integer");
    *out = static_cast<int>(x);
    return true;
  }
  bool Convert(const Json& v, const char* key, int64_t* out) {
    if (!v.is_number_integer()) return Wrong(key, "an integer");
    *out = v.get<int64_t>();
    return true;
  }
  bool Convert(const Json& v, const char* key, uint64_t* out) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) return Wrong(key, "a non-negative integer");
    *out = v.get<uint64_t>();
    return true;
  }
  bool Convert(const Json& v, const char* key, double* out) {
    if (!v.is_number()) return Wrong(key, "a number");
    *out = v.get<double>();
    if (!std::isfinite(*out)) return Wrong(key, "a finite number");
    return true;
  }
  bool Convert(const Json& v, const char* key, std::vector<std::string>* out) {
    if (!v.is_array()) return Wrong(key, "a list of strings");
    out->clear();
    for (const Json& e : v) {
      if (!e.is_string()) return Wrong(key, "a list of strings");
      out->push_back(e.get<std::string>());
    }
    return true;
  }
  bool Convert(const Json& v, const char* key, std::map<std::string, std::string>* out) {
    if (!v.is_object()) return Wrong(key, "an object of strings");
    out->clear();
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it->is_string()) return Wrong(key, "an object of strings");
      (*out)[it.key()] = it->get<std::string>();
    }
    return true;
  }
  bool Convert(const Json& v, const char*, Json* out) {
    *out = v;
    return true;
  }

  const Json& j_;
  std::string what_;
  std::set<std::string> known_;
  Status status_;
};

int64_t MilliFromCpus(double cpus) {
  return static_cast<int64_t>(std::llround(cpus * 1000));
}
double CpusFromMilli(int64_t milli) {
  return static_cast<double>(milli) / 1000.0;
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

Json ToJson(const JobSpec& s) {
  Json j;
  j["name"] = s.name;
  if (!s.user.empty()) j["user"] = s.user;
  j["account"] = s.account;
  j["partition"] = s.partition;
  if (!s.qos.empty()) j["qos"] = s.qos;
  j["command"] = s.command;
  j["script"] = s.script;
  if (!s.env.empty()) j["env"] = s.env;
  j["work_dir"] = s.work_dir;
  if (!s.stdout_path.empty()) j["stdout"] = s.stdout_path;
  if (!s.stderr_path.empty()) j["stderr"] = s.stderr_path;
  j["nodes"] = s.nodes;
  j["gpus_per_node"] = s.gpus_per_node;
  j["gpus"] = s.gpus;
  j["gpu_share"] = s.gpu_milli;
  j["gpu_models"] = s.gpu_models;
  j["cpus_per_gpu"] = CpusFromMilli(s.cpu_milli_per_gpu);
  j["mem_per_gpu_mib"] = s.mem_mib_per_gpu;
  j["cpus_per_node"] = CpusFromMilli(s.cpu_milli_per_node);
  j["mem_per_node_mib"] = s.mem_mib_per_node;
  j["constraints"] = s.constraints;
  j["exclusive"] = s.exclusive;
  j["time_limit_s"] = ToSeconds(s.time_limit);
  Json deps = Json::array();
  for (const Dependency& d : s.dependencies) {
    deps.push_back({{"type", d.type == DependencyType::kAfterOk    ? "afterok"
                             : d.type == DependencyType::kAfterAny ? "afterany"
                                                                   : "afternotok"},
                    {"job", d.job.value()}});
  }
  j["dependencies"] = deps;
  j["requeue"] = s.requeue;
  j["hold"] = s.hold;
  if (s.begin_time) j["begin_time"] = TimeToJson(*s.begin_time);
  j["tasks"] = s.tasks;
  if (s.array) j["array"] = FormatArraySpec(*s.array);
  if (!s.acceptance_node.empty()) j["acceptance_node"] = s.acceptance_node;
  return j;
}

Result<JobSpec> JobSpecFromJson(const Json& j) {
  JobSpec s;
  Fields f(j, "job");
  double cpus_per_gpu = 0, cpus_per_node = 0, time_limit_s = 0, begin = -1;
  std::string array;
  Json deps;
  f.Get("name", &s.name);
  f.Get("user", &s.user);
  f.Get("account", &s.account);
  f.Get("partition", &s.partition);
  f.Get("qos", &s.qos);
  f.Get("command", &s.command);
  f.Get("script", &s.script);
  f.Get("env", &s.env);
  f.Get("work_dir", &s.work_dir);
  f.Get("stdout", &s.stdout_path);
  f.Get("stderr", &s.stderr_path);
  f.Get("nodes", &s.nodes);
  f.Get("gpus_per_node", &s.gpus_per_node);
  f.Get("gpus", &s.gpus);
  f.Get("gpu_share", &s.gpu_milli);
  f.Get("gpu_models", &s.gpu_models);
  f.Get("cpus_per_gpu", &cpus_per_gpu);
  f.Get("mem_per_gpu_mib", &s.mem_mib_per_gpu);
  f.Get("cpus_per_node", &cpus_per_node);
  f.Get("mem_per_node_mib", &s.mem_mib_per_node);
  f.Get("constraints", &s.constraints);
  f.Get("exclusive", &s.exclusive);
  f.Get("time_limit_s", &time_limit_s);
  f.Get("dependencies", &deps);
  f.Get("requeue", &s.requeue);
  f.Get("hold", &s.hold);
  f.Get("begin_time", &begin);
  f.Get("tasks", &s.tasks);
  f.Get("array", &array);
  f.Get("acceptance_node", &s.acceptance_node);
  SHOAL_RETURN_IF_ERROR(f.Finish());
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
  if (!deps.is_null()) {
    if (!deps.is_array()) return InvalidArgument("job: field 'dependencies' must be a list");
    for (const Json& d : deps) {
      Fields df(d, "dependency");
      std::string type;
      uint64_t id = 0;
      df.Get("type", &type);
      df.Get("job", &id);
      SHOAL_RETURN_IF_ERROR(df.Finish());
      SHOAL_ASSIGN_OR_RETURN(std::vector<Dependency> parsed,
                             ParseDependencies(fmt::format("{}:{}", type, id)));
      s.dependencies.insert(s.dependencies.end(), parsed.begin(), parsed.end());
    }
  }
  if (!array.empty()) {
    SHOAL_ASSIGN_OR_RETURN(ArraySpec a, ParseArraySpec(array));
    s.array = a;
  }
  SHOAL_RETURN_IF_ERROR(s.Validate().WithContext("job"));
  return s;
}

Json ToJson(const Allocation& a, const NodeNames* names) {
  Json out = Json::array();
  for (const NodeAllocation& na : a.nodes) {
    Json n;
    n["node_id"] = na.node.value();
    if (names != nullptr) n["node"] = names->name_of(na.node);
    Json gpus = Json::array();
    for (int g = 0; g < 64; ++g) {
      if (na.gpu_mask >> g & 1) gpus.push_back(g);
    }
    n["gpus"] = gpus;
    n["gpu_share"] = na.gpu_milli;
    n["cpus"] = CpusFromMilli(na.cpu_milli);
    n["mem_mib"] = na.mem_mib;
    if (na.exclusive) n["exclusive"] = true;
    out.push_back(n);
  }
  return out;
}

Result<Allocation> AllocationFromJson(const Json& j, const NodeNames* names) {
  if (!j.is_array()) return InvalidArgument("allocation must be a list");
  Allocation a;
  for (const Json& n : j) {
    Fields f(n, "allocation");
    NodeAllocation na;
    uint64_t id = 0;
    std::string name;
    Json gpus;
    double cpus = 0;
    f.Get("node_id", &id);
    f.Get("node", &name);
    f.Get("gpus", &gpus);
    f.Get("gpu_share", &na.gpu_milli);
    f.Get("cpus", &cpus);
    f.Get("mem_mib", &na.mem_mib);
    f.Get("exclusive", &na.exclusive);
    SHOAL_RETURN_IF_ERROR(f.Finish());
    na.node = NodeId(static_cast<uint32_t>(id));
    if (!name.empty() && names != nullptr) {
      auto found = names->id_of(name);
      if (!found) return NotFound(fmt::format("allocation: unknown node '{}'", name));
      na.node = *found;
    }
    if (!gpus.is_null()) {
      if (!gpus.is_array()) return InvalidArgument("allocation: gpus must be a list");
      for (const Json& g : gpus) {
        if (!g.is_number_integer() || g.get<int>() < 0 || g.get<int>() >= 64) {
          return InvalidArgument("allocation: a GPU index is out of range");
        }
        na.gpu_mask |= uint64_t{1} << g.get<int>();
      }
    }
    na.cpu_milli = MilliFromCpus(cpus);
    a.nodes.push_back(na);
  }
  return a;
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
  if (job.array_task_id >= 0) {
    j["array_job_id"] = job.array_job_id.value();
    j["array_task_id"] = job.array_task_id;
  }
  j["gpu_seconds"] = job.gpu_seconds;
  if (job.efficiency.samples > 0) j["efficiency"] = ToJson(job.efficiency);
  if (job.idle) {
    j["idle"] = true;
    j["idle_since"] = TimeToJson(job.idle_since);
  }
  return j;
}

Json ToJson(const JobEfficiency& e) {
  return {{"samples", e.samples},
          {"util_mean_pct", e.util_mean_pct},
          {"util_peak_pct", e.util_peak_pct},
          {"mem_mean_mib", e.mem_mean_mib},
          {"mem_peak_mib", e.mem_peak_mib},
          {"energy_wh", e.energy_wh}};
}

Result<JobEfficiency> JobEfficiencyFromJson(const Json& j) {
  JobEfficiency e;
  Fields f(j, "efficiency");
  f.Get("samples", &e.samples);
  f.Get("util_mean_pct", &e.util_mean_pct);
  f.Get("util_peak_pct", &e.util_peak_pct);
  f.Get("mem_mean_mib", &e.mem_mean_mib);
  f.Get("mem_peak_mib", &e.mem_peak_mib);
  f.Get("energy_wh", &e.energy_wh);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  return e;
}

Result<Job> JobFromJson(const Json& j, const NodeNames* names) {
  Job job;
  Fields f(j, "job record");
  uint64_t id = 0, array_job = 0;
  Json spec, alloc, efficiency;
  std::string state, reason;
  double submit = 0, start = 0, end = 0, limit = 0, idle_since = 0;
  f.Get("id", &id);
  f.Get("spec", &spec);
  f.Get("state", &state);
  f.Get("reason", &reason);
  f.Get("reason_detail", &job.reason_detail);
  f.Get("submit_time", &submit);
  f.Get("start_time", &start);
  f.Get("end_time", &end);
  f.Get("time_limit_s", &limit);
  f.Get("allocation", &alloc);
  f.Get("epoch", &job.epoch);
  f.Get("restarts", &job.restarts);
  f.Get("exit_code", &job.exit_code);
  f.Get("exit_signal", &job.exit_signal);
  f.Get("priority", &job.priority);
  f.Get("array_job_id", &array_job);
  f.Get("array_task_id", &job.array_task_id);
  f.Get("gpu_seconds", &job.gpu_seconds);
  f.Get("efficiency", &efficiency);
  f.Get("idle", &job.idle);
  f.Get("idle_since", &idle_since);
  SHOAL_RETURN_IF_ERROR(f.Finish());
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
  job.time_limit = DurationFromSeconds(limit);
  if (!alloc.is_null()) {
    SHOAL_ASSIGN_OR_RETURN(job.allocation, AllocationFromJson(alloc, names));
  }
  job.array_job_id = JobId(array_job);
  return job;
}

Json ToJson(const Node& n) {
  Json j;
  j["id"] = n.id.value();
  j["name"] = n.name;
  j["address"] = n.address;
  j["state"] = std::string(NodeStateName(n.state));
  if (!n.state_reason.empty()) j["state_reason"] = n.state_reason;
  j["cpus"] = CpusFromMilli(n.cpu_milli);
  j["memory_mib"] = n.memory_mib;
  Json gpus = Json::array();
  for (const Gpu& g : n.gpus) {
    gpus.push_back({{"index", g.index},
                    {"uuid", g.uuid},
                    {"model", g.model},
                    {"memory_mib", g.memory_mib},
                    {"nvlink_island", g.nvlink_island},
                    {"numa_node", g.numa_node},
                    {"pcie_switch", g.pcie_switch},
                    {"healthy", g.healthy}});
  }
  j["gpus"] = gpus;
  j["labels"] = n.labels;
  j["partitions"] = n.partitions;
  j["place"] = n.place.spine.empty() && n.place.leaf.empty() ? "" : n.place.ToString();
  if (n.acceptance) j["acceptance"] = ToJson(*n.acceptance);
  return j;
}

Json ToJson(const AcceptanceResult& a) {
  Json j = {{"passed", a.passed},
            {"summary", a.summary},
            {"time", TimeToJson(a.time)},
            {"failures", a.failures}};
  if (a.job != 0) j["job"] = a.job;
  return j;
}

Result<AcceptanceResult> AcceptanceFromJson(const Json& j) {
  AcceptanceResult a;
  Fields f(j, "acceptance");
  Json passed;
  double time = 0;
  Json failures, report;
  f.Get("passed", &passed);
  f.Get("summary", &a.summary);
  f.Get("time", &time);
  f.Get("failures", &failures);
  f.Get("job", &a.job);
  f.Get("report", &report);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (!passed.is_boolean())
    return InvalidArgument("acceptance: field 'passed' (true or false) is required");
  a.passed = passed.get<bool>();
  if (time < 0 || time > 1e11) return InvalidArgument("acceptance: 'time' must be Unix seconds");
  a.time = TimeFromJson(time);
  if (failures.is_null() && report.is_object()) failures = report.value("failures", Json());
  if (!failures.is_null()) {
    if (!failures.is_array())
      return InvalidArgument("acceptance: 'failures' must be a list of strings");
    for (const Json& line : failures) {
      if (!line.is_string())
        return InvalidArgument("acceptance: 'failures' must be a list of strings");
      if (a.failures.size() == kMaxAcceptanceFailures) break;
      a.failures.push_back(line.get<std::string>().substr(0, 1000));
    }
  }
  if (a.summary.size() > 4000) a.summary.resize(4000);
  return a;
}

Result<Node> NodeFromJson(const Json& j) {
  Node n;
  Fields f(j, "node");
  uint64_t id = 0;
  std::string state = "up", place;
  double cpus = 0;
  Json gpus;
  f.Get("id", &id);
  f.Get("name", &n.name);
  f.Get("address", &n.address);
  f.Get("state", &state);
  f.Get("state_reason", &n.state_reason);
  f.Get("cpus", &cpus);
  f.Get("memory_mib", &n.memory_mib);
  f.Get("gpus", &gpus);
  f.Get("labels", &n.labels);
  f.Get("partitions", &n.partitions);
  f.Get("place", &place);
  Json acceptance;
  f.Get("acceptance", &acceptance);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (n.name.empty()) return InvalidArgument("node: a name is required");
  if (!acceptance.is_null()) {
    SHOAL_ASSIGN_OR_RETURN(AcceptanceResult a, AcceptanceFromJson(acceptance));
    n.acceptance = std::move(a);
  }
  if (cpus < 0 || n.memory_mib < 0)
    return InvalidArgument("node: CPUs and memory cannot be negative");
  n.id = NodeId(static_cast<uint32_t>(id));
  SHOAL_ASSIGN_OR_RETURN(n.state, ParseNodeState(state));
  n.cpu_milli = MilliFromCpus(cpus);
  if (!place.empty()) {
    SHOAL_ASSIGN_OR_RETURN(n.place, NetworkPlace::Parse(place));
  }
  if (!gpus.is_null()) {
    if (!gpus.is_array()) return InvalidArgument("node: gpus must be a list");
    if (gpus.size() > kMaxGpusPerNode)
      return InvalidArgument(fmt::format("node: at most {} GPUs", kMaxGpusPerNode));
    for (const Json& g : gpus) {
      Fields gf(g, "gpu");
      Gpu gpu;
      gf.Get("index", &gpu.index);
      gf.Get("uuid", &gpu.uuid);
      gf.Get("model", &gpu.model);
      gf.Get("memory_mib", &gpu.memory_mib);
      gf.Get("nvlink_island", &gpu.nvlink_island);
      gf.Get("numa_node", &gpu.numa_node);
      gf.Get("pcie_switch", &gpu.pcie_switch);
      gf.Get("healthy", &gpu.healthy);
      SHOAL_RETURN_IF_ERROR(gf.Finish());
      if (gpu.index != static_cast<int>(n.gpus.size()))
        return InvalidArgument("node: GPU indices must be 0, 1, 2, ...");
      if (gpu.model.empty()) return InvalidArgument("node: every GPU needs a model");
      n.gpus.push_back(gpu);
    }
  }
  return n;
}

Json ToJson(const Partition& p) {
  return {{"name", p.name},
          {"default", p.is_default},
          {"up", p.up},
          {"max_time_s", ToSeconds(p.max_time)},
          {"default_time_s", ToSeconds(p.default_time)},
          {"max_nodes_per_job", p.max_nodes_per_job},
          {"max_gpus_per_job", p.max_gpus_per_job},
          {"allowed_accounts", p.allowed_accounts},
          {"priority_tier", p.priority_tier},
          {"idle_util_pct", p.idle_util_pct},
          {"idle_minutes", p.idle_minutes},
          {"idle_action", p.idle_action},
          {"require_acceptance", p.require_acceptance}};
}

Result<Partition> PartitionFromJson(const Json& j) {
  Partition p;
  Fields f(j, "partition");
  double max_time = 0, default_time = 0;
  f.Get("name", &p.name);
  f.Get("default", &p.is_default);
  f.Get("up", &p.up);
  f.Get("max_time_s", &max_time);
  f.Get("default_time_s", &default_time);
  f.Get("max_nodes_per_job", &p.max_nodes_per_job);
  f.Get("max_gpus_per_job", &p.max_gpus_per_job);
  f.Get("allowed_accounts", &p.allowed_accounts);
  f.Get("priority_tier", &p.priority_tier);
  f.Get("idle_util_pct", &p.idle_util_pct);
  f.Get("idle_minutes", &p.idle_minutes);
  f.Get("idle_action", &p.idle_action);
  f.Get("require_acceptance", &p.require_acceptance);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (p.name.empty()) return InvalidArgument("partition: a name is required");
  if (p.idle_util_pct < 0 || p.idle_util_pct > 100)
    return InvalidArgument("partition: idle_util_pct is 0 to 100");
  if (p.idle_minutes < 0) return InvalidArgument("partition: idle_minutes cannot be negative");
  if (p.idle_action != "notify" && p.idle_action != "cancel") {
    return InvalidArgument("partition: idle_action is notify or cancel");
  }
  if (max_time < 0 || default_time < 0)
    return InvalidArgument("partition: times cannot be negative");
  p.max_time = DurationFromSeconds(max_time);
  p.default_time = DurationFromSeconds(default_time);
  return p;
}

Json ToJson(const Account& a) {
  return {{"name", a.name}, {"shares", a.shares}, {"max_gpus", a.max_gpus}};
}

Result<Account> AccountFromJson(const Json& j) {
  Account a;
  Fields f(j, "account");
  f.Get("name", &a.name);
  f.Get("shares", &a.shares);
  f.Get("max_gpus", &a.max_gpus);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (a.name.empty()) return InvalidArgument("account: a name is required");
  if (!(a.shares > 0) || a.max_gpus < 0)
    return InvalidArgument("account: shares must be > 0 and max_gpus >= 0");
  return a;
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
