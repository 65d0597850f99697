// `shoal doctor`: whether this host is ready to be a GPU node, checked the
// way an admin would before the agent runs (step 4 of building a cluster:
// OS, driver, libraries, fabric). Each check passes, warns or fails, and
// says what to do about anything short of a pass. Read-only: it makes no
// cgroup, starts no service and changes no setting.
//
// The host's files are read under configurable roots, so that the tests
// can point the checks at fake sysfs and /dev trees and a fake NVML.
#pragma once

#include <string>
#include <vector>

#include "agent/launch/container.h"

namespace shoal::agent {

struct DoctorOptions {
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string sys = "/sys";    // sysfs: class/infiniband
  std::string dev = "/dev";    // nvidia-nvswitch*
  std::string proc = "/proc";  // self/mountinfo, */comm
  // Where the agent keeps its state: the disk it is on needs room.
  std::string state_dir = "/var/lib/shoal-agent";
  // Where it keeps its running steps (steps_dir): best on a tmpfs.
  std::string steps_dir = "/run/shoal-agent/steps";
  // The CUDA driver library and NCCL, looked for with dlopen.
  std::string cuda_library = "libcuda.so.1";
  std::string nccl_library = "libnccl.so.2";
  // The CUDA version jobs need ("12.4"), checked against what the driver
  // supports; empty: the toolkit's at <cuda_home>/version.json, if any.
  std::string cuda_needed;
  std::string cuda_home = "/usr/local/cuda";
  // The agent's container runtime (its container_runtime, rootless by
  // default: it then needs unprivileged user namespaces, read under proc).
  std::string container_runtime = "crun";
  bool container_rootless = true;
  std::string path = kRuntimeSearchPath;
};

struct DoctorCheck {
  enum class Level { kPass, kWarn, kFail };
  std::string name;  // "NVIDIA driver"
  Level level = Level::kPass;
  std::string detail;  // what was found
  std::string fix;     // what to do (empty on a pass)
};

// Every check, in the order a node is built: driver and GPUs, fabric,
// libraries, network, kernel, host.
std::vector<DoctorCheck> RunDoctor(const DoctorOptions& options);

const char* LevelName(DoctorCheck::Level level);  // "pass", "warn", "fail"
// One line per check ("pass  NVIDIA driver  550.54.15, 8 GPUs"), each fix
// indented below its line, then a summary line.
std::string DoctorText(const std::vector<DoctorCheck>& checks);
// {"checks":[{"name","level","detail","fix"}...],"pass":N,"warn":N,"fail":N}
std::string DoctorJson(const std::vector<DoctorCheck>& checks);

}  // namespace shoal::agent
