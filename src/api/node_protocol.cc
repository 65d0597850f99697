#include "api/node_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "api/json.h"
#include "api/json_reader.h"

namespace shoal::api {

namespace {

// Seconds since 1970 beyond the year 2286 are a mistake (and would overflow
// the clock's milliseconds).
constexpr double kMaxUnixSeconds = 1e10;

// A GPU entry's telemetry fields: all of them or none.
constexpr std::array<const char*, 13> kTelemetryKeys = {
    "util",       "mem_copy_util", "fb_used_mib", "fb_free_mib",   "power_w",
    "temp_c",     "sm_clock_mhz",  "energy_j",    "ecc_corrected", "ecc_uncorrected",
    "xid_errors", "last_xid",      "clock_events"};

Result<JobEvent> EventFromJson(const Json& j, const std::string& path) {
  ObjectReader f(j, path);
  JobEvent e;
  uint64_t job = 0, step = 0;
  std::string type;
  f.Required("type", &type);
  f.Required("job", &job);
  f.Required("epoch", &e.epoch);
  f.Optional("step", &step);
  f.Optional("exit_code", &e.exit_code);
  f.Optional("signal", &e.signal);
  f.Optional("message", &e.message);
  double ended = 0;
  f.Optional("ended", &ended);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (ended < 0 || ended > 1e11)
    return InvalidArgument(fmt::format("{}.ended must be Unix seconds", path));
  if (ended > 0) e.ended = TimeFromJson(ended);
  if (type != "started" && type != "exited") {
    return InvalidArgument(
        fmt::format("{}.type must be \"started\" or \"exited\", not \"{}\"", path, type));
  }
  if (e.signal < 0 || e.signal > 127)
    return InvalidArgument(fmt::format("{}.signal must be 0 to 127", path));
  if (step > UINT32_MAX) return InvalidArgument(fmt::format("{}.step is out of range", path));
  e.kind = type == "started" ? JobEvent::kStarted : JobEvent::kExited;
  e.job = JobId(job);
  e.step = static_cast<uint32_t>(step);
  return e;
}

Result<RunningStep> RunningFromJson(const Json& j, const std::string& path) {
  ObjectReader f(j, path);
  uint64_t job = 0, epoch = 0, step = 0;
  f.Required("job", &job);
  f.Required("epoch", &epoch);
  f.Optional("step", &step);
  double progress = 0;
  f.Optional("progress", &progress);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (step > UINT32_MAX) return InvalidArgument(fmt::format("{}.step is out of range", path));
  if (!(progress >= 0 && progress <= kMaxProgressRate)) {
    return InvalidArgument(
        fmt::format("{}.progress must be 0 to {:g} (units a second)", path, kMaxProgressRate));
  }
  return RunningStep{JobId(job), epoch, static_cast<uint32_t>(step), progress};
}

Status CheckTelemetry(const GpuTelemetry& t, const std::string& path) {
  auto out_of_range = [&](const char* key, const char* range) {
    return InvalidArgument(fmt::format("{}.{} must be {}", path, key, range));
  };
  if (t.util_pct < 0 || t.util_pct > 100) return out_of_range("util", "0 to 100");
  if (t.mem_copy_util_pct < 0 || t.mem_copy_util_pct > 100)
    return out_of_range("mem_copy_util", "0 to 100");
  if (t.fb_used_mib < 0) return out_of_range("fb_used_mib", "at least 0");
  if (t.fb_free_mib < 0) return out_of_range("fb_free_mib", "at least 0");
  if (t.power_w < 0) return out_of_range("power_w", "at least 0");
  if (t.sm_clock_mhz < 0) return out_of_range("sm_clock_mhz", "at least 0");
  if (t.energy_j < 0) return out_of_range("energy_j", "at least 0");
  if (t.last_xid < 0) return out_of_range("last_xid", "at least 0");
  return Status::Ok();
}

Result<GpuReport> GpuReportFromJson(const Json& j, const std::string& path) {
  ObjectReader f(j, path);
  GpuReport g;
  f.Required("index", &g.index);
  f.Optional("healthy", &g.healthy);
  f.Optional("reason", &g.health_reason);
  // Telemetry is all or nothing: a key present makes every key required, so
  // that a renamed or missing one is an error, never a silent 0.
  bool any = false;
  if (j.is_object()) {
    for (const char* key : kTelemetryKeys)
      any = any || j.contains(key);
  }
  if (any) {
    GpuTelemetry& t = g.telemetry;
    t.present = true;
    f.Required("util", &t.util_pct);
    f.Required("mem_copy_util", &t.mem_copy_util_pct);
    f.Required("fb_used_mib", &t.fb_used_mib);
    f.Required("fb_free_mib", &t.fb_free_mib);
    f.Required("power_w", &t.power_w);
    f.Required("temp_c", &t.temperature_c);
    f.Required("sm_clock_mhz", &t.sm_clock_mhz);
    f.Required("energy_j", &t.energy_j);
    f.Required("ecc_corrected", &t.ecc_corrected);
    f.Required("ecc_uncorrected", &t.ecc_uncorrected);
    f.Required("xid_errors", &t.xid_errors);
    f.Required("last_xid", &t.last_xid);
    f.Required("clock_events", &t.clock_events);
  }
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (g.index < 0 || g.index >= kMaxGpusPerNode) {
    return InvalidArgument(
        fmt::format("{}.index must be 0 to {}, not {}", path, kMaxGpusPerNode - 1, g.index));
  }
  if (any) SHOAL_RETURN_IF_ERROR(CheckTelemetry(g.telemetry, path));
  return g;
}

Json ToJson(const JobEvent& e) {
  Json j = {{"type", e.kind == JobEvent::kStarted ? "started" : "exited"},
            {"job", e.job.value()},
            {"epoch", e.epoch},
            {"exit_code", e.exit_code},
            {"signal", e.signal}};
  if (e.step != 0) j["step"] = e.step;
  if (!e.message.empty()) j["message"] = e.message;
  if (e.ended != Time{}) j["ended"] = TimeToJson(e.ended);
  return j;
}

Json ToJson(const GpuReport& g) {
  Json j = {{"index", g.index}, {"healthy", g.healthy}};
  if (!g.health_reason.empty()) j["reason"] = g.health_reason;
  const GpuTelemetry& t = g.telemetry;
  if (!t.present) return j;
  j["util"] = t.util_pct;
  j["mem_copy_util"] = t.mem_copy_util_pct;
  j["fb_used_mib"] = t.fb_used_mib;
  j["fb_free_mib"] = t.fb_free_mib;
  j["power_w"] = t.power_w;
  j["temp_c"] = t.temperature_c;
  j["sm_clock_mhz"] = t.sm_clock_mhz;
  j["energy_j"] = t.energy_j;
  j["ecc_corrected"] = t.ecc_corrected;
  j["ecc_uncorrected"] = t.ecc_uncorrected;
  j["xid_errors"] = t.xid_errors;
  j["last_xid"] = t.last_xid;
  j["clock_events"] = t.clock_events;
  return j;
}

// A launch's step part: step 0 has none of `run`, `step_nodes` and
// `step_tasks`; a later step has all three, consistent with the job's nodes.
Status StepPartFromJson(uint64_t step, const Json& run, const Json& step_nodes,
                        const Json& step_tasks, LaunchMessage& m) {
  if (step > UINT32_MAX) return InvalidArgument("launch.step is out of range");
  m.step = static_cast<uint32_t>(step);
  if (m.step == 0) {
    if (!run.is_null() || !step_nodes.is_null() || !step_tasks.is_null())
      return InvalidArgument("launch: step 0 is the job's own: no run, step_nodes or step_tasks");
    return Status::Ok();
  }
  if (m.batch) return InvalidArgument("launch: only step 0 is a batch step");
  if (run.is_null()) return InvalidArgument("launch.run (what the step runs) is missing");
  auto spec = StepSpecFromJson(run);
  if (!spec.ok()) return spec.status().WithContext("launch.run");
  m.run = std::move(spec).value();
  auto ints = [](const Json& list, const char* name, std::vector<int>* out) -> Status {
    if (!list.is_array() || list.empty() || list.size() > kMaxLaunchNodes)
      return InvalidArgument(
          fmt::format("launch.{} must list 1 to {} numbers", name, kMaxLaunchNodes));
    for (const Json& v : list) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
        return InvalidArgument(fmt::format("launch.{} must list numbers", name));
      out->push_back(v.get<int>());
    }
    return Status::Ok();
  };
  SHOAL_RETURN_IF_ERROR(ints(step_nodes, "step_nodes", &m.step_nodes));
  SHOAL_RETURN_IF_ERROR(ints(step_tasks, "step_tasks", &m.step_tasks));
  if (m.step_tasks.size() != m.step_nodes.size())
    return InvalidArgument("launch.step_tasks must have one count for each of step_nodes");
  bool here = false;
  for (size_t i = 0; i < m.step_nodes.size(); ++i) {
    if (static_cast<size_t>(m.step_nodes[i]) >= m.nodes.size())
      return InvalidArgument("launch.step_nodes names a node the job does not have");
    if (m.step_tasks[i] < 1 || m.step_tasks[i] > kMaxTasksPerNode)
      return InvalidArgument(
          fmt::format("launch.step_tasks: 1 to {} on each node", kMaxTasksPerNode));
    here = here || m.step_nodes[i] == m.node_rank;
  }
  if (!here) return InvalidArgument("launch.step_nodes does not include this node (node_rank)");
  return Status::Ok();
}

}  // namespace

Duration SessionDelay(std::string_view node, Duration heartbeat_interval) {
  uint32_t h = 2166136261u;  // FNV-1a: the same spread on every build
  for (const char c : node)
    h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return heartbeat_interval * kSessionSpreadBeats * (h % 1024) / 1024;
}

int WholeCpus(int64_t cpu_milli) {
  return static_cast<int>(std::clamp<int64_t>(cpu_milli / 1000, 1, INT32_MAX));
}

std::vector<int> NodeCpus(const Allocation& allocation) {
  std::vector<int> out;
  for (const NodeAllocation& na : allocation.nodes)
    out.push_back(WholeCpus(na.cpu_milli));
  return out;
}

Json ToJson(const LaunchMessage& m) {
  Json j = {{"job", m.job.value()},     {"epoch", m.epoch},
            {"spec", ToJson(m.spec)},   {"allocation", ToJson(m.allocation)},
            {"node_rank", m.node_rank}, {"nodes", m.nodes},
            {"addresses", m.addresses}, {"master_port", m.master_port},
            {"protocol", kNodeProtocol}};
  if (m.not_after != Time{}) j["not_after"] = ToSeconds(m.not_after);
  if (!m.node_cpus.empty()) j["node_cpus"] = m.node_cpus;
  if (m.array_task_id >= 0) {
    j["array_job_id"] = m.array_job_id;
    j["array_task_id"] = m.array_task_id;
  }
  if (m.step != 0) j["step"] = m.step;
  if (m.batch) j["batch"] = true;
  if (m.restarts != 0) j["restarts"] = m.restarts;
  if (!m.job_token.empty()) j["job_token"] = m.job_token;
  if (m.run) {
    j["run"] = ToJson(*m.run);
    j["step_nodes"] = m.step_nodes;
    j["step_tasks"] = m.step_tasks;
  }
  return j;
}

Result<LaunchMessage> LaunchFromJson(const Json& j) {
  SHOAL_ASSIGN_OR_RETURN(const int protocol, MessageProtocol(j));
  TolerateUnknownFields newer(protocol > kNodeProtocol);
  ObjectReader f(j, "launch");
  (void)f.Has("protocol");
  LaunchMessage m;
  uint64_t job = 0;
  Json spec, allocation;
  double not_after = 0;
  f.Required("job", &job);
  f.Required("epoch", &m.epoch);
  f.Required("spec", &spec);
  f.Required("allocation", &allocation);
  f.Required("node_rank", &m.node_rank);
  f.Required("nodes", &m.nodes);
  f.Required("addresses", &m.addresses);
  f.Optional("master_port", &m.master_port);
  f.List(
      "node_cpus", false,
      [](const Json& v, const std::string& path) -> Result<int> {
        if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > INT32_MAX)
          return InvalidArgument(path + " must be a CPU count of at least one");
        return v.get<int>();
      },
      &m.node_cpus, kMaxLaunchNodes);
  f.Optional("not_after", &not_after);
  // An array task names both its array and its index.
  const bool array_task = f.Has("array_task_id") || f.Has("array_job_id");
  if (array_task) {
    f.Required("array_job_id", &m.array_job_id);
    f.Required("array_task_id", &m.array_task_id);
  }
  uint64_t step = 0;
  Json run, step_nodes, step_tasks;
  f.Optional("step", &step);
  f.Optional("batch", &m.batch);
  f.Optional("restarts", &m.restarts);
  f.Optional("job_token", &m.job_token);
  f.Optional("run", &run);
  f.Optional("step_nodes", &step_nodes);
  f.Optional("step_tasks", &step_tasks);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  SHOAL_RETURN_IF_ERROR(StepPartFromJson(step, run, step_nodes, step_tasks, m));
  if (m.nodes.empty() || m.nodes.size() > kMaxLaunchNodes) {
    return InvalidArgument(fmt::format("launch.nodes must name 1 to {} nodes, not {}",
                                       kMaxLaunchNodes, m.nodes.size()));
  }
  if (m.addresses.size() != m.nodes.size()) {
    return InvalidArgument(fmt::format("launch.addresses has {} entries for {} nodes",
                                       m.addresses.size(), m.nodes.size()));
  }
  if (!m.node_cpus.empty() && m.node_cpus.size() != m.nodes.size()) {
    return InvalidArgument(fmt::format("launch.node_cpus has {} entries for {} nodes",
                                       m.node_cpus.size(), m.nodes.size()));
  }
  if (m.node_rank < 0 || static_cast<size_t>(m.node_rank) >= m.nodes.size()) {
    return InvalidArgument(
        fmt::format("launch.node_rank must be 0 to {}, not {}", m.nodes.size() - 1, m.node_rank));
  }
  if (m.master_port < 0 || m.master_port > 65535)
    return InvalidArgument("launch.master_port must be 0 to 65535");
  if (array_task && m.array_task_id < 0)
    return InvalidArgument("launch.array_task_id cannot be negative");
  if (not_after < 0 || not_after > kMaxUnixSeconds)
    return InvalidArgument("launch.not_after must be Unix seconds, before the year 2286");
  if (not_after > 0) m.not_after = TimeFromSeconds(not_after);
  m.job = JobId(job);
  auto s = JobSpecFromJson(spec);
  if (!s.ok()) return s.status().WithContext("launch.spec");
  m.spec = std::move(s).value();
  SHOAL_ASSIGN_OR_RETURN(m.allocation, NodeAllocationFromJson(allocation, "launch.allocation"));
  return m;
}

Json ToJson(const KillMessage& m) {
  Json j = {{"job", m.job.value()},
            {"epoch", m.epoch},
            {"grace_s", ToSeconds(m.grace)},
            {"why", m.why},
            {"protocol", kNodeProtocol}};
  if (m.step) j["step"] = *m.step;
  if (m.signal != 0) j["signal"] = m.signal;
  if (m.leader_only) j["leader_only"] = true;
  return j;
}

Json ToJson(const MigOrder& m) {
  Json j{{"layout", m.layout}};
  if (!m.gpus.empty()) j["gpus"] = m.gpus;
  return j;
}

Result<MigOrder> MigOrderFromJson(const Json& j) {
  ObjectReader f(j, "mig");
  MigOrder m;
  f.Required("layout", &m.layout);
  f.List(
      "gpus", false,
      [](const Json& g, const std::string& path) -> Result<int> {
        if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() >= kMaxGpusPerNode)
          return InvalidArgument(
              fmt::format("{} is a GPU number, 0 to {}", path, kMaxGpusPerNode - 1));
        return g.get<int>();
      },
      &m.gpus, kMaxGpusPerNode);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (m.layout.empty() || m.layout.size() > 256)
    return InvalidArgument("mig.layout is one GPU's layout, such as 7x1g.10gb, or none");
  return m;
}

Result<KillMessage> KillFromJson(const Json& j) {
  SHOAL_ASSIGN_OR_RETURN(const int protocol, MessageProtocol(j));
  TolerateUnknownFields newer(protocol > kNodeProtocol);
  ObjectReader f(j, "kill");
  (void)f.Has("protocol");
  KillMessage m;
  uint64_t job = 0;
  double grace_s = ToSeconds(m.grace);
  f.Required("job", &job);
  f.Required("epoch", &m.epoch);
  f.Optional("grace_s", &grace_s);
  f.Optional("why", &m.why);
  f.Optional("signal", &m.signal);
  f.Optional("leader_only", &m.leader_only);
  if (f.Has("step")) {
    uint64_t step = 0;
    f.Required("step", &step);
    if (step > UINT32_MAX) return InvalidArgument("kill.step is out of range");
    m.step = static_cast<uint32_t>(step);
  }
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (m.signal < 0 || m.signal > 64)
    return InvalidArgument(fmt::format("kill.signal must be 1 to 64, not {}", m.signal));
  if (grace_s < 0 || grace_s > kMaxKillGraceS) {
    return InvalidArgument(
        fmt::format("kill.grace_s must be 0 to {}, not {}", kMaxKillGraceS, grace_s));
  }
  m.job = JobId(job);
  m.grace = DurationFromSeconds(grace_s);
  return m;
}

Json ToJson(const Heartbeat& hb) {
  Json running = Json::array();
  for (const RunningStep& r : hb.running) {
    Json one = {{"job", r.job.value()}, {"epoch", r.epoch}};
    if (r.step != 0) one["step"] = r.step;
    if (r.progress > 0) one["progress"] = r.progress;
    running.push_back(std::move(one));
  }
  Json events = Json::array();
  for (const JobEvent& e : hb.events)
    events.push_back(ToJson(e));
  Json j = {
      {"running", std::move(running)}, {"events", std::move(events)}, {"protocol", kNodeProtocol}};
  if (hb.has_gpus) {
    Json gpus = Json::array();
    for (const GpuReport& g : hb.gpus)
      gpus.push_back(ToJson(g));
    j["gpus"] = std::move(gpus);
  }
  return j;
}

Result<Heartbeat> HeartbeatFromJson(const Json& j) {
  SHOAL_ASSIGN_OR_RETURN(const int protocol, MessageProtocol(j));
  TolerateUnknownFields newer(protocol > kNodeProtocol);
  ObjectReader f(j, "heartbeat");
  (void)f.Has("protocol");
  Heartbeat hb;
  f.List("events", false, EventFromJson, &hb.events, kMaxHeartbeatSteps);
  f.List("running", false, RunningFromJson, &hb.running, kMaxHeartbeatSteps);
  hb.has_gpus = f.Has("gpus");
  f.List("gpus", false, GpuReportFromJson, &hb.gpus, kMaxGpusPerNode);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  uint64_t seen = 0;
  for (size_t i = 0; i < hb.gpus.size(); ++i) {
    const uint64_t bit = uint64_t{1} << hb.gpus[i].index;
    if (seen & bit) {
      return InvalidArgument(
          fmt::format("heartbeat.gpus[{}]: GPU {} is reported twice", i, hb.gpus[i].index));
    }
    seen |= bit;
  }
  return hb;
}

Json RegistrationToJson(const Node& node) {
  Json j = ToJson(node);
  j["protocol"] = kNodeProtocol;
  return j;
}

Result<int> MessageProtocol(const Json& j) {
  if (!j.is_object()) return 1;  // the decoder says what is wrong with it
  auto it = j.find("protocol");
  if (it == j.end() || it->is_null()) return 1;
  if (!it->is_number_integer()) return InvalidArgument("protocol must be an integer");
  const int64_t v = it->get<int64_t>();
  if (v < kNodeProtocol - 1 || v > kNodeProtocol + 1) {
    return InvalidArgument(fmt::format(
        "the peer speaks node protocol {} and this shoal speaks {}: only adjacent versions work "
        "together (upgrade the controller first, then the agents)",
        v, kNodeProtocol));
  }
  return static_cast<int>(v);
}

Result<Node> RegistrationFromJson(const Json& j) {
  SHOAL_ASSIGN_OR_RETURN(const int protocol, MessageProtocol(j));
  TolerateUnknownFields newer(protocol > kNodeProtocol);
  // The node's own decoder (json.h) knows no "protocol".
  Json node = j;
  if (node.is_object()) node.erase("protocol");
  SHOAL_ASSIGN_OR_RETURN(Node n, NodeFromJson(node));
  if (n.address.empty())
    return InvalidArgument("node.address (where the agent listens) is missing");
  return n;
}

Json ToJson(const JoinRequest& m) {
  return {{"name", m.name}, {"csr", m.csr}, {"names", m.names}};
}

Result<JoinRequest> JoinRequestFromJson(const Json& j) {
  ObjectReader f(j, "join");
  JoinRequest m;
  f.Optional("name", &m.name);
  f.Required("csr", &m.csr);
  f.Optional("names", &m.names);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (m.csr.size() > 64 * 1024) return InvalidArgument("join.csr is over 64 KiB");
  if (m.names.size() > 32) return InvalidArgument("join.names has more than 32 names");
  return m;
}

Json ToJson(const JoinAnswer& m) {
  return {{"name", m.name}, {"certificate", m.certificate}, {"ca", m.ca}};
}

Result<JoinAnswer> JoinAnswerFromJson(const Json& j) {
  ObjectReader f(j, "join answer");
  JoinAnswer m;
  f.Required("name", &m.name);
  f.Required("certificate", &m.certificate);
  f.Required("ca", &m.ca);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  return m;
}

}  // namespace shoal::api
