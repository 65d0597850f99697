// `shoal agent`'s configuration: a TOML file with an [agent] table, and the
// same settings as command-line flags (which win).
//
//   [agent]
//   server = "https://10.0.0.1:6820"  # http:// only for a one-host cluster
//   ca_file = "/etc/shoal/ca.crt"      # or ca_fingerprint = "AB:CD:..."
//   join_token_file = "/etc/shoal/join.token"  # until the node has joined
//   name = "gpu01"
//   listen = "0.0.0.0:6821"
//   advertise = "10.0.0.11:6821"
//   state_dir = "/var/lib/shoal-agent"
//   steps_dir = "/run/shoal-agent/steps"  # running steps; a tmpfs is best
//   gpus = "nvml"                  # or "simulated:dgx-h100"
//   labels = ["ib", "nvme"]
//   partitions = ["gpu"]
//   place = "spine1/leaf3"
//   heartbeat = "1s"
//   gpu_device_path = "/dev/nvidia%d"  # fenced per step by the devices cgroup
//   sim_faults = ["ecc:1:14", "xid:5:79@30s"]  # simulated GPUs: injected faults
//   metrics_public = false         # true: GET /metrics without credentials
#pragma once

#include <string>
#include <vector>

#include "agent/agent.h"
#include "core/log.h"
#include "core/status.h"

namespace shoal::agent {

struct AgentConfig {
  AgentOptions agent;
  std::string gpus = "nvml";  // "nvml", "simulated:<profile>"
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string state_dir;  // the node's key and certificate, finished steps' outputs
  // The running steps' folders (empty: <state_dir>/steps). They live as long
  // as their jobs, so a tmpfs (/run) suits them: on a disk file system that
  // has seen many files come and go, making a step's few files cost more CPU
  // than the rest of its start (docs/agent.md).
  std::string steps_dir;
  std::string token_file;       // plain HTTP: the node token
  std::string join_token_file;  // TLS: a one-time join token, until the node has joined
  bool allow_root_jobs = false;
  std::string cgroup_root;  // empty: detect
  // The GPUs' device files, "%d" for the index: each step may open only its
  // own (the devices cgroup), whatever it does to CUDA_VISIBLE_DEVICES.
  std::string gpu_device_path = "/dev/nvidia%d";
  uint64_t seed = 0;  // simulated telemetry's noise
  // Simulated GPUs only: faults to inject (SimFault's text form, e.g.
  // "xid:5:79@30s"), so that health checks and the dashboard can be seen
  // reacting without broken hardware.
  std::vector<std::string> sim_faults;
  // Whether jobs get Shoal's `srun` and `scontrol` first on their PATH
  // (agent.slurm_commands is then the shoal binary).
  bool slurm_commands = true;
  // Containers: the runtime, the image folder, the unpacked images' cache.
  ContainerHost container;
  log::Options log{.program = "agent"};  // level and format (core/log.h)
};

// One setting; unknown settings are errors that list the known ones.
Status ApplyAgentSetting(const std::string& key, const std::string& value, AgentConfig& config);

// Every setting of a file's [agent] table.
Status LoadAgentConfig(const std::string& path, AgentConfig& config);

// The GPU provider the configuration names (NVML, or a simulated profile
// whose CPUs and memory then describe the node unless set). `clock` must
// outlive the provider.
Result<std::unique_ptr<GpuProvider>> OpenGpus(AgentConfig& config, const Clock& clock);

// The node's steps in steps_dir (else <state_dir>/steps), supervised by
// `supervisor` (the shoal-step binary); finished steps' output records in
// <state_dir>/steps/outputs either way.
Result<std::unique_ptr<Steps>> OpenSteps(const AgentConfig& config, const std::string& supervisor);

}  // namespace shoal::agent
