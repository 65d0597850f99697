#include "agent/config.h"

#include <fmt/format.h>

#include "agent/gpu/simulated_provider.h"
#include "agent/launch/step_files.h"
#include "catalog/profiles.h"
#include "config/server_file.h"
#include "core/log.h"
#include "core/strings.h"

namespace shoal::agent {

namespace {

std::vector<std::string> List(const std::string& value) {
  std::vector<std::string> out;
  for (std::string_view item : Split(value, ',')) {
    if (!Trim(item).empty()) out.emplace_back(Trim(item));
  }
  return out;
}

}  // namespace

Status ApplyAgentSetting(const std::string& key, const std::string& value, AgentConfig& c) {
  SHOAL_ASSIGN_OR_RETURN(const bool logs, log::ApplySetting(key, value, c.log));
  if (logs) return Status::Ok();
  AgentOptions& o = c.agent;
  if (key == "server") {
    o.server = value;
  } else if (key == "token") {
    o.token = value;
  } else if (key == "token_file") {
    c.token_file = value;
  } else if (key == "join_token") {
    o.join.join_token = value;
  } else if (key == "join_token_file") {
    c.join_token_file = value;
  } else if (key == "ca_file") {
    o.join.ca_file = value;
  } else if (key == "ca_fingerprint") {
    o.join.ca_fingerprint = value;
  } else if (key == "name") {
    o.name = value;
  } else if (key == "listen") {
    o.listen = value;
  } else if (key == "advertise") {
    o.advertise = value;
  } else if (key == "state_dir") {
    c.state_dir = value;
  } else if (key == "steps_dir") {
    if (!value.starts_with('/')) return InvalidArgument("steps_dir: an absolute path");
    c.steps_dir = value;
  } else if (key == "gpus") {
    if (value != "nvml" && !StartsWith(value, "simulated:")) {
      return InvalidArgument(fmt::format("gpus: 'nvml' or 'simulated:<profile>', not '{}'", value));
    }
    c.gpus = value;
  } else if (key == "nvml_library") {
    c.nvml_library = value;
  } else if (key == "labels") {
    o.labels = List(value);
  } else if (key == "partitions") {
    o.partitions = List(value);
  } else if (key == "place") {
    SHOAL_RETURN_IF_ERROR(NetworkPlace::Parse(value).status().WithContext("place"));
    o.place = value;
  } else if (key == "heartbeat") {
    auto d = ParseDuration(value);
    if (!d.ok() || d->count() < 50 || *d > std::chrono::minutes(5)) {
      return InvalidArgument("heartbeat: a duration from 50ms to 5m, such as 1s");
    }
    o.heartbeat = *d;
  } else if (key == "cpus") {
    auto v = ParseDouble(value);
    if (!v.ok() || *v <= 0 || *v > 100000) return InvalidArgument("cpus: a positive number");
    o.cpu_milli = static_cast<int64_t>(*v * 1000);
  } else if (key == "memory") {
    auto v = ParseMemoryMib(value);
    if (!v.ok() || *v <= 0) return InvalidArgument("memory: a size such as 512G");
    o.memory_mib = *v;
  } else if (key == "allow_root_jobs") {
    if (value != "true" && value != "false")
      return InvalidArgument("allow_root_jobs: true or false");
    c.allow_root_jobs = value == "true";
  } else if (key == "metrics_public") {
    if (value != "true" && value != "false")
      return InvalidArgument("metrics_public: true or false");
    o.metrics_public = value == "true";
  } else if (key == "slurm_commands") {
    if (value != "true" && value != "false")
      return InvalidArgument("slurm_commands: true or false");
    c.slurm_commands = value == "true";
  } else if (key == "cgroup_root") {
    c.cgroup_root = value;

  } else if (key == "gpu_device_path") {
    if (value.find("%d") == std::string::npos) {
      return InvalidArgument(
          "gpu_device_path: a path with %d for the GPU's index, such as /dev/nvidia%d");
    }
    c.gpu_device_path = value;
  } else if (key == "container_runtime") {
    if (value.empty() || value.find_first_of(" \t\n") != std::string::npos)
      return InvalidArgument("container_runtime: a command such as crun or /usr/bin/runc");
    c.container.runtime = value;
  } else if (key == "container_rootless") {
    if (value != "true" && value != "false")
      return InvalidArgument("container_rootless: true or false");
    c.container.rootless = value == "true";
  } else if (key == "image_dir" || key == "image_cache") {
    if (!value.starts_with('/')) return InvalidArgument(key + ": an absolute path");
    (key == "image_dir" ? c.container.image_dir : c.container.cache_dir) = value;
  } else if (key == "cdi_dirs") {
    c.container.cdi_dirs = List(value);
    for (const std::string& dir : c.container.cdi_dirs)
      if (!dir.starts_with('/')) return InvalidArgument("cdi_dirs: absolute paths");
  } else if (key == "image_cache_size") {
    auto v = ParseMemoryMib(value);
    if (!v.ok() || *v < 64)
      return InvalidArgument("image_cache_size: a size of 64M or more, such as 20G");
    c.container.cache_mib = *v;
  } else if (key == "sim_faults") {
    c.sim_faults = List(value);
    for (const std::string& f : c.sim_faults)
      SHOAL_RETURN_IF_ERROR(SimFault::Parse(f).status().WithContext("sim_faults"));
  } else if (key == "temperature_limit") {
    auto v = ParseDouble(value);
    if (!v.ok() || *v < 40 || *v > 120)
      return InvalidArgument("temperature_limit: degrees C, 40 to 120");
    o.health.default_temperature_limit_c = *v;
  } else {
    return InvalidArgument(
        fmt::format("unknown agent setting '{}' (server, token, token_file, join_token, "
                    "join_token_file, ca_file, ca_fingerprint, name, listen, "
                    "advertise, state_dir, steps_dir, gpus, "
                    "nvml_library, labels, partitions, place, heartbeat, cpus, memory, "
                    "allow_root_jobs, slurm_commands, metrics_public, cgroup_root, "
                    "gpu_device_path, temperature_limit, sim_faults, container_runtime, "
                    "container_rootless, image_dir, image_cache, image_cache_size, cdi_dirs, "
                    "log_level, log_format)",
                    key));
  }
  return Status::Ok();
}

Status LoadAgentConfig(const std::string& path, AgentConfig& config) {
  SHOAL_ASSIGN_OR_RETURN(shoal::config::Settings settings,
                         shoal::config::LoadSettingsFile(path, "agent"));
  for (const auto& [key, value] : settings) {
    SHOAL_RETURN_IF_ERROR(ApplyAgentSetting(key, value, config).WithContext(path));
  }
  return Status::Ok();
}

Result<std::unique_ptr<GpuProvider>> OpenGpus(AgentConfig& c, const Clock& clock) {
  if (c.gpus == "nvml") {
    if (!c.sim_faults.empty()) return InvalidArgument("sim_faults: only for simulated GPUs");
    return OpenNvml(c.nvml_library);
  }
  const std::string profile = c.gpus.substr(std::string_view("simulated:").size());
  const catalog::NodeProfile* p = catalog::FindProfile(profile);
  if (p == nullptr) {
    return InvalidArgument(fmt::format("gpus: no node profile '{}' (known: {})", profile,
                                       Join(catalog::ProfileNames(), ", ")));
  }
  if (c.agent.cpu_milli == 0) c.agent.cpu_milli = p->cpu_milli;
  if (c.agent.memory_mib == 0) c.agent.memory_mib = p->memory_mib;
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<SimulatedProvider> gpus,
                         SimulatedProvider::Create(profile, c.agent.name, c.seed, clock));
  for (const std::string& text : c.sim_faults) {
    SHOAL_ASSIGN_OR_RETURN(const SimFault fault, SimFault::Parse(text));
    SHOAL_RETURN_IF_ERROR(gpus->Schedule(fault).WithContext("sim_faults"));
  }
  return std::unique_ptr<GpuProvider>(std::move(gpus));
}

Result<std::unique_ptr<Steps>> OpenSteps(const AgentConfig& c, const std::string& supervisor) {
  if (c.state_dir.empty())
    return InvalidArgument("the agent needs a state directory (--state-dir)");
  StepsOptions o;
  o.dir = c.steps_dir.empty() ? c.state_dir + "/steps" : c.steps_dir;
  o.outputs_dir = c.state_dir + "/steps/" + kOutputsDir;
  o.state_dir = c.state_dir;
  o.supervisor = supervisor;
  o.allow_root_jobs = c.allow_root_jobs;
  o.cgroup_root = c.cgroup_root;
  o.gpu_devices = FindGpuDeviceNodes(c.gpu_device_path);
  o.container = c.container;
  if (o.container.cache_dir.empty()) o.container.cache_dir = c.state_dir + "/images";
  // shoal-image unpacks images; it is installed beside shoal-step.
  o.container.image_tool = supervisor.substr(0, supervisor.rfind('/') + 1) + "shoal-image";
  // MIG instances' capability files: only where the GPUs are the host's own.
  if (c.gpus == "nvml") {
    std::vector<GpuDeviceNode> caps = FindMigCapNodes();
    o.gpu_devices.insert(o.gpu_devices.end(), caps.begin(), caps.end());
  }
  return Steps::Open(o);
}

}  // namespace shoal::agent
