#include "agent/protocol.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>

#include "agent/launch/task_env.h"
#include "api/node_protocol.h"
#include "core/hostlist.h"
#include "core/log.h"
#include "core/strings.h"

namespace shoal::agent {

void NoteServerProtocol(const api::Json& answer) {
  const auto it = answer.find("protocol");
  const int theirs = it != answer.end() && it->is_number_integer() ? it->get<int>() : 1;
  if (theirs == api::kNodeProtocol) return;
  log::Warning("protocol.mismatch", {{"server", theirs},
                                     {"agent", api::kNodeProtocol},
                                     {"works", std::abs(theirs - api::kNodeProtocol) <= 1}});
}

std::string HostOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::vector<Gpu> NodeGpus(const std::vector<GpuDevice>& devices) {
  std::vector<Gpu> gpus;
  gpus.reserve(devices.size());
  for (const GpuDevice& d : devices) {
    Gpu g;
    g.index = d.index;
    g.device = d.device;
    g.uuid = d.uuid;
    g.model = d.model;
    g.memory_mib = d.memory_mib;
    g.nvlink_island = d.nvlink_island;
    g.numa_node = d.numa_node;
    g.rated_w = d.power_limit_w;
    g.mig_profile = d.mig_profile;
    g.mig_gi = d.mig_gi;
    g.mig_ci = d.mig_ci;
    gpus.push_back(std::move(g));
  }
  return gpus;
}

Status DescribeStepGpus(StepRequest& step, const std::vector<GpuDevice>& devices) {
  step.gpu_units.clear();
  for (int index : step.gpus) {
    auto d = std::find_if(devices.begin(), devices.end(),
                          [index](const GpuDevice& g) { return g.index == index; });
    if (d == devices.end()) {
      return FailedPrecondition(
          fmt::format("this node has no GPU {} (its GPUs changed; {} now)", index, devices.size()));
    }
    step.gpu_units.push_back(
        {.fence = {.device = d->device, .gi = d->mig_gi, .ci = d->mig_ci},
         .cuda_name = d->mig_profile.empty() ? std::to_string(d->device) : d->uuid,
         .uuid = d->uuid,
         .mig_index = d->mig_index});
  }
  return Status::Ok();
}

namespace {

// Tasks of the job on each of its nodes, in blocks (the first `tasks % n`
// nodes get one more), one per node when the job names no task count.
std::vector<int> JobTasksPerNode(const JobSpec& spec, int n) {
  std::vector<int> out;
  const int tasks = spec.tasks > 0 ? spec.tasks : n;
  for (int k = 0; k < n; ++k)
    out.push_back(tasks / n + (k < tasks % n ? 1 : 0));
  return out;
}

// The job's own SLURM_* variables, as sbatch sets them in the batch script
// (checked against Slurm 22.05); a step's tasks get the step's on top
// (task_env.cc).
std::vector<std::string> SlurmJobEnvironment(const api::LaunchMessage& m,
                                             const std::vector<std::string>& hosts,
                                             const std::vector<int>& job_tasks) {
  const JobSpec& spec = m.spec;
  const std::string nodelist = CompressHostList(hosts);
  int tasks = 0;
  for (int t : job_tasks)
    tasks += t;
  std::vector<std::string> gpus;
  for (int g = 0; g < kMaxGpusPerNode; ++g) {
    if (m.allocation.gpu_mask >> g & 1) gpus.push_back(std::to_string(g));
  }
  std::vector<std::string> env = {
      fmt::format("SLURM_JOB_ID={}", m.job.value()),
      fmt::format("SLURM_JOBID={}", m.job.value()),
      fmt::format("SLURM_JOB_NAME={}", spec.name),
      fmt::format("SLURM_JOB_NODELIST={}", nodelist),
      fmt::format("SLURM_NODELIST={}", nodelist),
      fmt::format("SLURM_JOB_NUM_NODES={}", hosts.size()),
      fmt::format("SLURM_NNODES={}", hosts.size()),
      fmt::format("SLURM_TASKS_PER_NODE={}", SlurmTaskCounts(job_tasks)),
      fmt::format("SLURM_GPUS_ON_NODE={}", gpus.size()),
      fmt::format("SLURM_JOB_GPUS={}", Join(gpus, ",")),
      fmt::format("SLURM_CPUS_ON_NODE={}", api::WholeCpus(m.allocation.cpu_milli)),
      fmt::format("SLURM_JOB_USER={}", spec.user),
      fmt::format("SLURM_JOB_PARTITION={}", spec.partition),
      fmt::format("SLURM_RESTART_COUNT={}", m.restarts),
      fmt::format("SLURM_CLUSTER_NAME={}", "shoal"),
      // A Shoal job's srun is Shoal's: a Slurm installed on the node must
      // never hear from it, so its own commands find no configuration.
      "SLURM_CONF=/nonexistent/shoal-job-has-no-slurm.conf",
  };
  if (!m.node_cpus.empty()) {
    env.push_back(fmt::format("SLURM_JOB_CPUS_PER_NODE={}", SlurmTaskCounts(m.node_cpus)));
  }
  if (spec.tasks > 0) {
    env.push_back(fmt::format("SLURM_NTASKS={}", tasks));
    env.push_back(fmt::format("SLURM_NPROCS={}", tasks));
  }
  if (spec.tasks_per_node > 0)
    env.push_back(fmt::format("SLURM_NTASKS_PER_NODE={}", spec.tasks_per_node));
  if (spec.cpus_per_task > 0)
    env.push_back(fmt::format("SLURM_CPUS_PER_TASK={}", spec.cpus_per_task));
  if (spec.gpus_per_node > 0)
    env.push_back(fmt::format("SLURM_GPUS_PER_NODE={}", spec.gpus_per_node));
  if (!spec.account.empty()) env.push_back(fmt::format("SLURM_JOB_ACCOUNT={}", spec.account));
  if (!spec.qos.empty()) env.push_back(fmt::format("SLURM_JOB_QOS={}", spec.qos));
  if (!spec.reservation.empty())
    env.push_back(fmt::format("SLURM_JOB_RESERVATION={}", spec.reservation));
  if (!spec.submit_dir.empty()) env.push_back(fmt::format("SLURM_SUBMIT_DIR={}", spec.submit_dir));
  if (!spec.submit_host.empty())
    env.push_back(fmt::format("SLURM_SUBMIT_HOST={}", spec.submit_host));
  if (m.array_task_id >= 0) {
    env.push_back(fmt::format("SHOAL_ARRAY_JOB_ID={}", m.array_job_id));
    env.push_back(fmt::format("SHOAL_ARRAY_TASK_ID={}", m.array_task_id));
    env.push_back(fmt::format("SLURM_ARRAY_JOB_ID={}", m.array_job_id));
    env.push_back(fmt::format("SLURM_ARRAY_TASK_ID={}", m.array_task_id));
    if (spec.array && !spec.array->indices.empty()) {
      const auto& ix = spec.array->indices;
      env.push_back(fmt::format("SLURM_ARRAY_TASK_COUNT={}", ix.size()));
      env.push_back(
          fmt::format("SLURM_ARRAY_TASK_MIN={}", *std::min_element(ix.begin(), ix.end())));
      env.push_back(
          fmt::format("SLURM_ARRAY_TASK_MAX={}", *std::max_element(ix.begin(), ix.end())));
      if (ix.size() > 1) {
        env.push_back(fmt::format("SLURM_ARRAY_TASK_STEP={}", std::max(1, ix[1] - ix[0])));
      }
    }
  }
  return env;
}

}  // namespace

Result<StepRequest> StepFromLaunch(const api::Json& j, const std::string& node_name,
                                   const StepContext& context) {
  SHOAL_ASSIGN_OR_RETURN(const api::LaunchMessage m, api::LaunchFromJson(j));
  const std::string& for_node = m.nodes[static_cast<size_t>(m.node_rank)];
  if (for_node != node_name) {
    return InvalidArgument(
        fmt::format("launch: for node {}, not this node ({})", for_node, node_name));
  }
  const JobSpec& spec = m.spec;
  const int n = static_cast<int>(m.nodes.size());
  if (m.step == 0 && spec.tasks > 0 && spec.tasks < n)
    return InvalidArgument("launch: fewer tasks than nodes");
  std::vector<std::string> hosts;
  for (const std::string& a : m.addresses)
    hosts.push_back(HostOf(a));
  const std::vector<int> job_tasks = JobTasksPerNode(spec, n);

  StepRequest s;
  s.job = m.job.value();
  s.epoch = m.epoch;
  s.step = m.step;
  s.batch = m.batch;
  s.has_batch_step = spec.script;
  s.master_port = m.master_port;
  s.not_after = m.not_after;
  s.user = spec.user;
  s.job_account = spec.account;
  s.job_name = spec.name;
  s.gpu_power_cap_w = spec.gpu_power_cap_w;
  s.container = spec.container;
  s.command = spec.command;
  s.script = spec.script && m.step == 0;
  s.work_dir = spec.work_dir;
  s.array_job_id = m.array_task_id >= 0 ? m.array_job_id : 0;  // for %A and %a in output paths
  s.array_task_id = m.array_task_id;
  s.node_name = node_name;
  s.master_addr = hosts[0];
  s.slurm_commands = context.slurm_commands;
  s.requeueable = spec.requeue;
  // The job's environment, Slurm's view of the job, then the step's own
  // variables (a `shoal run` step may add to it), then how to reach Shoal
  // from inside (`shoal run`, `srun`).
  // Each layer overrides the one before (MergeEnvironment): a name is set once.
  for (const auto& [k, v] : spec.env)
    s.env.push_back(k + "=" + v);
  s.env = MergeEnvironment(std::move(s.env), SlurmJobEnvironment(m, hosts, job_tasks));
  std::vector<std::string> shoal;
  if (!context.server.empty()) shoal.push_back("SHOAL_SERVER=" + context.server);
  if (!context.ca_file.empty()) shoal.push_back("SHOAL_CA_FILE=" + context.ca_file);
  if (!m.job_token.empty()) shoal.push_back("SHOAL_JOB_TOKEN=" + m.job_token);
  if (spec.gpus_per_task > 0)
    shoal.push_back(fmt::format("SLURM_GPUS_PER_TASK={}", spec.gpus_per_task));

  if (m.step == 0) {
    s.argv = s.script ? spec.script_args : spec.argv;
    // A requeued job adds to what its earlier runs wrote.
    s.append_output = spec.append_output || m.restarts > 0;
    s.stdout_path = spec.stdout_path;
    s.stderr_path = spec.stderr_path;
    s.node_rank = m.node_rank;
    s.nodes = hosts;
    s.tasks_per_node = job_tasks;
    if (m.batch) {
      // The batch script: one task, on the job's first node.
      s.nodes = {hosts[0]};
      s.tasks_per_node = {1};
      s.node_rank = 0;
      if (m.node_rank != 0) return InvalidArgument("launch: a batch step runs on the first node");
    }
  } else {
    const StepSpec& run = *m.run;
    s.argv = run.argv;
    s.append_output = true;  // each step's files are its own (a folder of the step's)
    s.gpus_per_task = run.gpus_per_task;
    s.pty = run.pty;
    s.pty_rows = run.pty_rows;
    s.pty_cols = run.pty_cols;
    if (!run.work_dir.empty()) s.work_dir = run.work_dir;
    if (!run.container.image.empty()) s.container = run.container;
    for (size_t i = 0; i < m.step_nodes.size(); ++i) {
      s.nodes.push_back(hosts[static_cast<size_t>(m.step_nodes[i])]);
      s.tasks_per_node.push_back(m.step_tasks[i]);
      if (m.step_nodes[i] == m.node_rank) s.node_rank = static_cast<int>(i);
    }
    s.master_addr = s.nodes[0];
    std::vector<std::string> step_env;
    for (const auto& [k, v] : run.env)
      step_env.push_back(k + "=" + v);
    if (run.cpus_per_task > 0)
      step_env.push_back(fmt::format("SLURM_CPUS_PER_TASK={}", run.cpus_per_task));
    s.env = MergeEnvironment(std::move(s.env), step_env);
  }
  s.env = MergeEnvironment(std::move(s.env), shoal);
  for (int g = 0; g < kMaxGpusPerNode; ++g) {
    if (m.allocation.gpu_mask >> g & 1) s.gpus.push_back(g);
  }
  s.cpu_milli = m.allocation.cpu_milli;
  s.memory_mib = m.allocation.mem_mib;
  return s;
}

Result<KillRequest> KillFromJson(const api::Json& j) {
  SHOAL_ASSIGN_OR_RETURN(const api::KillMessage m, api::KillFromJson(j));
  return KillRequest{.job = m.job.value(),
                     .epoch = m.epoch,
                     .step = m.step,
                     .grace = m.grace,
                     .why = m.why,
                     .signal = m.signal,
                     .leader_only = m.leader_only};
}

api::GpuTelemetry TelemetryOf(const GpuSample& s) {
  return {.present = true,
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

api::Heartbeat HeartbeatFrom(const std::vector<StepReport>& steps,
                             const std::vector<GpuDevice>& devices,
                             const std::vector<GpuSample>& samples,
                             const std::vector<GpuHealth>& health, bool with_gpus) {
  api::Heartbeat hb;
  for (const StepReport& r : steps) {
    if (r.running) {
      hb.running.push_back({JobId(r.job), r.epoch, r.step, r.progress});
    } else {
      hb.events.push_back({.job = JobId(r.job),
                           .epoch = r.epoch,
                           .step = r.step,
                           .kind = api::JobEvent::kExited,
                           .exit_code = r.exit_code,
                           .signal = r.signal,
                           .message = r.message,
                           .ended = r.ended});
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
      if (s.index == devices[i].index) g.telemetry = TelemetryOf(s);
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
