// `shoal doctor`: whether this host is ready to be a GPU node
// (agent/doctor.h): pass, warn or fail for each check, with the fix.
#include <cstdio>

#include "agent/doctor.h"
#include "cli/app.h"
#include "cli/commands.h"

namespace shoal::cli {

int RunDoctor(const std::vector<std::string>& raw) {
  CLI::App app{
      "Checks that this host is ready to be a GPU node: the NVIDIA driver and its GPUs' health, "
      "the NVSwitch fabric manager, the CUDA and NCCL libraries, InfiniBand/RoCE links and their "
      "NUMA placement beside the GPUs, cgroups, the container runtime, clock sync, open-file "
      "limits, "
      "disk space and whether the running steps' folder is on a tmpfs. "
      "Changes nothing. Exits 1 when a check fails.",
      "shoal doctor"};
  agent::DoctorOptions o;
  bool json = false;
  app.add_flag("--json", json, "the checks as JSON");
  app.add_option("--nvml-library", o.nvml_library, "the NVML library to load")
      ->capture_default_str();
  app.add_option("--cuda", o.cuda_needed,
                 "the CUDA version jobs need (MAJOR.MINOR); default: the toolkit's in "
                 "--cuda-home, if there is one");
  app.add_option("--cuda-home", o.cuda_home, "where the CUDA toolkit is")->capture_default_str();
  app.add_option("--state-dir", o.state_dir, "where the agent keeps its state (for disk space)")
      ->capture_default_str();
  app.add_option("--steps-dir", o.steps_dir,
                 "where the agent keeps its running steps (best on a tmpfs)")
      ->capture_default_str();
  app.add_option("--container-runtime", o.container_runtime,
                 "the agent's container_runtime (for --container-image jobs)")
      ->capture_default_str();
  app.add_option("--container-rootless", o.container_rootless,
                 "the agent's container_rootless: whether the runtime runs as the job's user")
      ->capture_default_str();
  // Other roots for the host's files (tests give fake trees).
  app.add_option("--sys", o.sys, "sysfs")->capture_default_str()->group("");
  app.add_option("--dev", o.dev, "/dev")->capture_default_str()->group("");
  app.add_option("--proc", o.proc, "procfs")->capture_default_str()->group("");
  app.add_option("--cuda-library", o.cuda_library)->capture_default_str()->group("");
  app.add_option("--nccl-library", o.nccl_library)->capture_default_str()->group("");
  if (int code = ParseApp(app, raw, "shoal doctor"); code >= 0) return code;
  const std::vector<agent::DoctorCheck> checks = agent::RunDoctor(o);
  const std::string out = json ? agent::DoctorJson(checks) + "\n" : agent::DoctorText(checks);
  std::fputs(out.c_str(), stdout);
  for (const agent::DoctorCheck& c : checks) {
    if (c.level == agent::DoctorCheck::Level::kFail) return 1;
  }
  return 0;
}

}  // namespace shoal::cli
