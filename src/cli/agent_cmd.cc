// shoal agent: the node agent.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/config.h"
#include "cli/app.h"
#include "cli/commands.h"
#include "cli/paths.h"
#include "core/log.h"
#include "core/strings.h"
#include "net/http_client.h"

namespace shoal::cli {

namespace {

std::string ReadToken(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(Trim(line));
}

// --print-gpus: what the provider finds and reads, as JSON (for checking a
// host's GPUs against nvidia-smi; see scripts/nvml-compare.sh).
// With csv, one line per GPU in nvidia-smi's --query-gpu order: index, uuid,
// name, memory.total, utilization.gpu, memory.used, power.draw,
// temperature.gpu, clocks.sm (MiB, %, W, degC, MHz; no header).
int PrintGpus(agent::GpuProvider& gpus, bool csv) {
  auto devices = gpus.Discover();
  if (!devices.ok()) {
    std::cerr << "shoal agent: " << devices.status().message() << "\n";
    return 1;
  }
  auto samples = gpus.Sample();
  if (!samples.ok()) {
    std::cerr << "shoal agent: " << samples.status().message() << "\n";
    return 1;
  }
  if (csv) {
    for (const agent::GpuDevice& d : *devices) {
      for (const agent::GpuSample& s : *samples) {
        if (s.index != d.index) continue;
        std::cout << fmt::format("{}, {}, {}, {}, {:.0f}, {}, {:.2f}, {:.0f}, {:.0f}\n", d.index,
                                 d.uuid, d.name, d.memory_mib, s.util_pct, s.fb_used_mib, s.power_w,
                                 s.temperature_c, s.sm_clock_mhz);
      }
    }
    return 0;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const agent::GpuDevice& d : *devices) {
    nlohmann::json g = {{"index", d.index},
                        {"uuid", d.uuid},
                        {"name", d.name},
                        {"model", d.model},
                        {"memory_mib", d.memory_mib},
                        {"nvlink_island", d.nvlink_island},
                        {"numa_node", d.numa_node},
                        {"pci_bus_id", d.pci_bus_id},
                        {"mig", d.mig_enabled}};
    for (const agent::GpuSample& s : *samples) {
      if (s.index != d.index) continue;
      g["util"] = s.util_pct;
      g["fb_used_mib"] = s.fb_used_mib;
      g["power_w"] = s.power_w;
      g["temp_c"] = s.temperature_c;
      g["sm_clock_mhz"] = s.sm_clock_mhz;
      g["ecc_uncorrected"] = s.ecc_uncorrected;
    }
    out.push_back(g);
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

int RunAgent(const std::vector<std::string>& raw) {
  CLI::App app{"The Shoal node agent: GPUs, telemetry, job launch.", "shoal agent"};
  std::string config_file;
  std::map<std::string, std::string> flags;
  std::vector<std::string> labels, partitions;
  bool allow_root = false, print_gpus = false, csv = false, metrics_public = false;
  app.add_option("--config", config_file, "configuration file (TOML, an [agent] table)");
  for (const auto& [flag, help] : std::vector<std::pair<std::string, std::string>>{
           {"server",
            "the server's address (default 127.0.0.1:6820); TLS unless it starts with http://"},
           {"join-token", "TLS: a one-time join token, until this node has its certificate"},
           {"join-token-file", "TLS: a file holding the join token"},
           {"ca-file", "TLS: the cluster CA's certificate (the server's <state>/tls/ca.crt)"},
           {"ca-fingerprint",
            "TLS: instead of --ca-file, the CA's SHA-256 fingerprint printed by `shoal server`"},
           {"token", "plain HTTP (http://): a node token"},
           {"token-file",
            "plain HTTP: a file holding a node token (default <state dir>/node.token)"},
           {"name", "this node's name (default: the host name)"},
           {"listen", "where the server reaches this agent (default 127.0.0.1:6821)"},
           {"advertise", "the address to give the server, when it differs from --listen"},
           {"state-dir",
            "the node's key, certificate and finished jobs' output records (default <state "
            "dir>/agents/<name>)"},
           {"steps-dir",
            "where running job steps are kept: best on a tmpfs such as /run (default <state "
            "dir>/steps)"},
           {"gpus", "nvml (this host's GPUs) or simulated:<profile>, e.g. simulated:dgx-h100"},
           {"nvml-library", "the NVML library to load (default libnvidia-ml.so.1)"},
           {"place", "the node's network place, spine/leaf"},
           {"heartbeat", "telemetry and heartbeat interval (default 1s)"},
           {"cpus", "CPUs to offer (default: this host's)"},
           {"memory", "memory to offer, e.g. 512G (default: this host's)"},
           {"gpu-device-path",
            "the GPUs' device files, %d for the index (default /dev/nvidia%d); each job may "
            "open only its own"},
           {"sim-faults",
            "simulated GPUs: faults to inject, e.g. ecc:1:14,xid:5:79@30s (docs/agent-gpus.md)"},
           {"cgroup-root",
            "where job cgroups go: a cgroup2 mount or a folder of v1 hierarchies (default: "
            "detect; none: process groups only)"},
           {"container-runtime", "the OCI runtime for --container-image jobs (default crun)"},
           {"container-rootless",
            "true (the default): the runtime runs as the job's user; false: as root "
            "(docs/containers.md)"},
           {"image-dir",
            "where container images are found by name (default /var/lib/shoal/images)"},
           {"image-cache", "where unpacked images are kept (default <state dir>/images)"},
           {"image-cache-size", "the unpacked images' size limit (default 20G)"},
           {"cdi-dirs",
            "where the NVIDIA container toolkit's CDI specs are (default /etc/cdi,/var/run/cdi)"},
           {"log-level", "debug, info (the default), warning or error"},
           {"log-format", "text (the default) or json, one event a line"},
       }) {
    app.add_option("--" + flag, flags[flag], help);
  }
  app.add_option("--label", labels, "a node label (repeatable)");
  app.add_option("--partition", partitions, "a partition the node belongs to (repeatable)");
  app.add_flag("--allow-root-jobs", allow_root,
               "run jobs whose user is root (single-user machines only)");
  app.add_flag("--metrics-public", metrics_public,
               "serve GET /metrics (this node's GPUs) without credentials (default: the node "
               "token)");
  app.add_flag("--print-gpus", print_gpus,
               "print the GPUs found and one reading of each (JSON), then exit");
  app.add_flag(
      "--csv", csv,
      "with --print-gpus: CSV in nvidia-smi's --query-gpu order (scripts/nvml-compare.sh)");
  if (int code = ParseApp(app, raw, "shoal agent"); code >= 0) return code;
  agent::AgentConfig config;
  if (!config_file.empty()) {
    if (Status s = agent::LoadAgentConfig(config_file, config); !s.ok()) {
      std::cerr << "shoal agent: " << s.message() << "\n";
      return 2;
    }
  }
  for (const auto& [flag, value] : flags) {
    if (value.empty()) continue;
    std::string key = flag;
    std::replace(key.begin(), key.end(), '-', '_');
    if (Status s = agent::ApplyAgentSetting(key, value, config); !s.ok()) {
      std::cerr << "shoal agent: " << s.message() << "\n";
      return 2;
    }
  }
  if (!labels.empty()) config.agent.labels = labels;
  if (!partitions.empty()) config.agent.partitions = partitions;
  if (allow_root) config.allow_root_jobs = true;
  if (metrics_public) config.agent.metrics_public = true;
  log::Configure(config.log);
  SystemClock clock;
  auto gpus = agent::OpenGpus(config, clock);
  if (!gpus.ok()) {
    std::cerr << "shoal agent: " << gpus.status().message() << "\n";
    return 1;
  }
  if (print_gpus) return PrintGpus(**gpus, csv);
  if (config.state_dir.empty()) {
    config.state_dir =
        DefaultStateDir() + "/agents/" + (config.agent.name.empty() ? "local" : config.agent.name);
  }
  // TLS unless the server's address says http://: the node acts by its own
  // certificate, joining for it first (agent/join.h).
  config.agent.tls = net::SchemeOf(config.agent.server) != "http";
  if (config.agent.tls) {
    config.agent.join.dir = config.state_dir + "/tls";
    if (config.agent.join.join_token.empty() && !config.join_token_file.empty())
      config.agent.join.join_token = ReadToken(config.join_token_file);
  } else if (config.agent.token.empty()) {
    config.agent.token = ReadToken(config.token_file.empty() ? DefaultStateDir() + "/node.token"
                                                             : config.token_file);
  }
  auto steps = agent::OpenSteps(config, CompanionPath("shoal-step"));
  if (!steps.ok()) {
    std::cerr << "shoal agent: " << steps.status().message() << "\n";
    return 1;
  }
  if (config.slurm_commands) config.agent.slurm_commands = CompanionPath("shoal");
  const std::string isolation = (*steps)->Isolation();
  auto a = agent::Agent::Start(config.agent, std::move(*gpus), std::move(*steps), clock);
  if (!a.ok()) {
    std::cerr << "shoal agent: " << a.status().message() << "\n";
    return 1;
  }
  std::printf("shoal agent %s listening on %s, reporting to %s\n", (*a)->name().c_str(),
              (*a)->address().c_str(), config.agent.server.c_str());
  std::printf("job isolation: %s\n", isolation.c_str());
  std::fflush(stdout);
  WaitForStopSignal();
  (*a)->Stop();
  std::printf("shoal agent stopped (running jobs keep running under their supervisors)\n");
  return 0;
}

}  // namespace shoal::cli
