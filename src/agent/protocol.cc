#include "agent/protocol.h"

#include <fmt/format.h>

#include <bit>

#include "api/node_protocol.h"

namespace shoal::agent {

std::string HostOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

Result<StepRequest> StepFromLaunch(const api::Json& j, const std::string& node_name) {
  SHOAL_ASSIGN_OR_RETURN(const api::LaunchMessage m, api::LaunchFromJson(j));
  const std::string& for_node = m.nodes[static_cast<size_t>(m.node_rank)];
  if (for_node != node_name) {
    return InvalidArgument(
        fmt::format("launch: for node {}, not this node ({})", for_node, node_name));
  }
  const JobSpec& spec = m.spec;
  StepRequest s;
  s.job = m.job.value();
  s.epoch = m.epoch;
  s.node_rank = m.node_rank;
  s.master_port = m.master_port;
  s.not_after = m.not_after;
  s.user = spec.user;
  s.job_name = spec.name;
  s.command = spec.command;
  s.script = spec.script;
  s.work_dir = spec.work_dir;
  s.stdout_path = spec.stdout_path;
  s.stderr_path = spec.stderr_path;
  for (const auto& [k, v] : spec.env)
    s.env.push_back(k + "=" + v);
  if (m.array_task_id >= 0) {
    s.array_job_id = m.array_job_id;  // for %A and %a in output paths
    s.array_task_id = m.array_task_id;
    s.env.push_back(fmt::format("SHOAL_ARRAY_JOB_ID={}", m.array_job_id));
    s.env.push_back(fmt::format("SHOAL_ARRAY_TASK_ID={}", m.array_task_id));
    s.env.push_back(fmt::format("SLURM_ARRAY_JOB_ID={}", m.array_job_id));
    s.env.push_back(fmt::format("SLURM_ARRAY_TASK_ID={}", m.array_task_id));
  }
  s.node_name = node_name;
  for (const std::string& a : m.addresses)
    s.nodes.push_back(HostOf(a));
  s.master_addr = s.nodes[0];
  const int n = static_cast<int>(m.nodes.size());
  const int tasks = spec.tasks > 0 ? spec.tasks : n;
  if (tasks < n) return InvalidArgument("launch: fewer tasks than nodes");
  for (int k = 0; k < n; ++k)
    s.tasks_per_node.push_back(tasks / n + (k < tasks % n ? 1 : 0));
  for (int g = 0; g < kMaxGpusPerNode; ++g) {
    if (m.allocation.gpu_mask >> g & 1) s.gpus.push_back(g);
  }
  s.cpu_milli = m.allocation.cpu_milli;
  s.memory_mib = m.allocation.mem_mib;
  s.requeueable = spec.requeue;
  return s;
}

Result<KillRequest> KillFromJson(const api::Json& j) {
  SHOAL_ASSIGN_OR_RETURN(const api::KillMessage m, api::KillFromJson(j));
  return KillRequest{.job = m.job.value(), .epoch = m.epoch, .grace = m.grace, .why = m.why};
}

api::Heartbeat HeartbeatFrom(const std::vector<StepReport>& steps,
                             const std::vector<GpuDevice>& devices,
                             const std::vector<GpuSample>& samples,
                             const std::vector<GpuHealth>& health, bool with_gpus) {
  api::Heartbeat hb;
  for (const StepReport& r : steps) {
    if (r.running) {
      hb.running.emplace_back(JobId(r.job), r.epoch);
    } else {
      hb.events.push_back({.job = JobId(r.job),
                           .epoch = r.epoch,
                           .kind = api::JobEvent::kExited,
                           .exit_code = r.exit_code,
                           .signal = r.signal,
                           .message = r.message});
    }
  }
  hb.has_gpus = with_gpus;
  if (!with_gpus) return hb;
  for (size_t i = 0; i < devices.size(); ++i) {
    api::GpuReport g;
    g.index = devices[i].index;
    g.healthy = i >= health.size() || health[i].healthy;
    if (!g.healthy) g.health_reason = health[i].reason;
    for (const GpuSample& s : samples) {
      if (s.index != devices[i].index) continue;
      g.telemetry = {.present = true,
                     .util_pct = s.util_pct,
                     .mem_copy_util_pct = s.mem_copy_util_pct,
                     .fb_used_mib = s.fb_used_mib,
                     .fb_free_mib = s.fb_free_mib,
                     .power_w = s.power_w,
                     .temperature_c = s.temperature_c,
                     .sm_clock_mhz = s.sm_clock_mhz,
                     .energy_j = s.energy_j,
                     .ecc_corrected = s.ecc_corrected,
                     .ecc_uncorrected = s.ecc_uncorrected,
                     .xid_errors = s.xid_errors,
                     .last_xid = s.last_xid,
                     .clock_events = s.clock_event_reasons};
    }
    hb.gpus.push_back(std::move(g));
  }
  return hb;
}

api::Json HeartbeatJson(const std::vector<StepReport>& steps, const std::vector<GpuDevice>& devices,
                        const std::vector<GpuSample>& samples, const std::vector<GpuHealth>& health,
                        bool with_gpus) {
  return api::ToJson(HeartbeatFrom(steps, devices, samples, health, with_gpus));
}

}  // namespace shoal::agent
