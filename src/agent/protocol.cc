#include "agent/protocol.h"

#include <fmt/format.h>

#include <bit>

namespace shoal::agent {

std::string HostOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

Result<StepRequest> StepFromLaunch(const api::Json& j, const std::string& node_name) {
  if (!j.is_object()) return InvalidArgument("launch: the body must be an object");
  StepRequest s;
  try {
    s.job = j.at("job").get<uint64_t>();
    s.epoch = j.at("epoch").get<uint64_t>();
    s.node_rank = j.at("node_rank").get<int>();
    s.master_port = j.value("master_port", 0);
    if (j.contains("not_after")) s.not_after = TimeFromSeconds(j.at("not_after").get<double>());
    const auto nodes = j.at("nodes").get<std::vector<std::string>>();
    const auto addresses = j.at("addresses").get<std::vector<std::string>>();
    if (nodes.empty() || nodes.size() != addresses.size() || s.node_rank < 0 ||
        s.node_rank >= static_cast<int>(nodes.size())) {
      return InvalidArgument("launch: nodes, addresses and node_rank disagree");
    }
    if (nodes[static_cast<size_t>(s.node_rank)] != node_name) {
      return InvalidArgument(fmt::format("launch: for node {}, not this node ({})",
                                         nodes[static_cast<size_t>(s.node_rank)], node_name));
    }
    SHOAL_ASSIGN_OR_RETURN(JobSpec spec, api::JobSpecFromJson(j.at("spec")));
    SHOAL_ASSIGN_OR_RETURN(Allocation alloc,
                           api::AllocationFromJson(api::Json::array({j.at("allocation")})));
    if (alloc.nodes.size() != 1) return InvalidArgument("launch: one node's allocation expected");
    const NodeAllocation& mine = alloc.nodes[0];
    s.user = spec.user;
    s.job_name = spec.name;
    s.command = spec.command;
    s.script = spec.script;
    s.work_dir = spec.work_dir;
    s.stdout_path = spec.stdout_path;
    s.stderr_path = spec.stderr_path;
    for (const auto& [k, v] : spec.env)
      s.env.push_back(k + "=" + v);
    if (j.contains("array_task_id")) {
      s.env.push_back(fmt::format("SHOAL_ARRAY_JOB_ID={}", j.at("array_job_id").get<uint64_t>()));
      s.env.push_back(fmt::format("SHOAL_ARRAY_TASK_ID={}", j.at("array_task_id").get<int>()));
      s.env.push_back(fmt::format("SLURM_ARRAY_JOB_ID={}", j.at("array_job_id").get<uint64_t>()));
      s.env.push_back(fmt::format("SLURM_ARRAY_TASK_ID={}", j.at("array_task_id").get<int>()));
    }
    s.node_name = node_name;
    for (const std::string& a : addresses)
      s.nodes.push_back(HostOf(a));
    s.master_addr = s.nodes[0];
    const int n = static_cast<int>(nodes.size());
    const int tasks = spec.tasks > 0 ? spec.tasks : n;
    if (tasks < n) return InvalidArgument("launch: fewer tasks than nodes");
    for (int k = 0; k < n; ++k)
      s.tasks_per_node.push_back(tasks / n + (k < tasks % n ? 1 : 0));
    for (int g = 0; g < 64; ++g) {
      if (mine.gpu_mask >> g & 1) s.gpus.push_back(g);
    }
    s.cpu_milli = mine.cpu_milli;
    s.memory_mib = mine.mem_mib;
  } catch (const api::Json::exception& e) {
    return InvalidArgument(fmt::format("launch: {}", e.what()));
  }
  return s;
}

Result<KillRequest> KillFromJson(const api::Json& j) {
  KillRequest k;
  try {
    k.job = j.at("job").get<uint64_t>();
    k.epoch = j.at("epoch").get<uint64_t>();
    const double grace_s = j.value("grace_s", 10.0);
    if (grace_s < 0 || grace_s > 3600) return InvalidArgument("kill: grace_s must be 0 to 3600");
    k.grace = DurationFromSeconds(grace_s);
    k.why = j.value("why", std::string());
  } catch (const api::Json::exception& e) {
    return InvalidArgument(fmt::format("kill: {}", e.what()));
  }
  return k;
}

api::Json HeartbeatJson(const std::vector<StepReport>& steps, const std::vector<GpuDevice>& devices,
                        const std::vector<GpuSample>& samples, const std::vector<GpuHealth>& health,
                        bool with_gpus) {
  api::Json running = api::Json::array();
  api::Json events = api::Json::array();
  for (const StepReport& r : steps) {
    if (r.running) {
      running.push_back({{"job", r.job}, {"epoch", r.epoch}});
    } else {
      api::Json e = {{"type", "exited"},
                     {"job", r.job},
                     {"epoch", r.epoch},
                     {"exit_code", r.exit_code},
                     {"signal", r.signal}};
      if (!r.message.empty()) e["message"] = r.message;
      events.push_back(std::move(e));
    }
  }
  if (!with_gpus) return {{"running", running}, {"events", events}};
  api::Json gpus = api::Json::array();
  for (size_t i = 0; i < devices.size(); ++i) {
    api::Json g = {{"index", devices[i].index}};
    const bool healthy = i >= health.size() || health[i].healthy;
    g["healthy"] = healthy;
    if (!healthy) g["reason"] = health[i].reason;
    for (const GpuSample& s : samples) {
      if (s.index != devices[i].index) continue;
      g["util"] = s.util_pct;
      g["mem_copy_util"] = s.mem_copy_util_pct;
      g["fb_used_mib"] = s.fb_used_mib;
      g["fb_free_mib"] = s.fb_free_mib;
      g["power_w"] = s.power_w;
      g["temp_c"] = s.temperature_c;
      g["sm_clock_mhz"] = s.sm_clock_mhz;
      g["energy_j"] = s.energy_j;
      g["ecc_corrected"] = s.ecc_corrected;
      g["ecc_uncorrected"] = s.ecc_uncorrected;
      g["xid_errors"] = s.xid_errors;
      g["last_xid"] = s.last_xid;
      g["clock_events"] = s.clock_event_reasons;
    }
    gpus.push_back(std::move(g));
  }
  return {{"running", running}, {"events", events}, {"gpus", gpus}};
}

}  // namespace shoal::agent
