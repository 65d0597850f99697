// Linux control groups for job steps: which layout this host offers, and
// one step's cgroup (limits, tracking, kill, removal).
//
// Each agent gets one folder, shoal/<tag>, in the hierarchies it uses (the
// tag is a hash of its steps folder, so that the agents of `shoal up` and
// of parallel tests never share a step's cgroup), and each step the cgroup
// shoal/<tag>/<job>.<epoch> in it. Steps' cgroups sit at the top of the
// hierarchies rather than under the agent's own cgroup so that a service
// manager that stops or restarts the agent's unit does not kill its jobs,
// and because cgroup v2 gives no controllers to the children of a cgroup
// that holds processes (the agent's).
//
// Preference, best first:
//   cgroup v2 with the cpu and memory controllers (limits, cgroup.kill);
//   cgroup v1 with any of the cpu, memory and pids hierarchies (limits where
//     cpu and memory are there; pids, else memory, else cpu, to track);
//   cgroup v2 without those controllers (tracking and kill only);
//   none: process groups and the supervisor as child subreaper only.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shoal::agent {

enum class CgroupVersion { kNone, kV1, kV2 };

// Where this host lets Shoal put its steps' cgroups. Decided once by the
// agent (DetectCgroups), then handed to each supervisor in its request so
// that a step keeps the layout it started with.
struct CgroupLayout {
  CgroupVersion version = CgroupVersion::kNone;
  // v2: the agent's folder, and whether its children get cpu and memory.
  std::string v2_dir;
  bool v2_cpu = false;
  bool v2_memory = false;
  // v1: the agent's folder in each hierarchy; empty where there is none.
  std::string v1_cpu_dir;
  std::string v1_memory_dir;
  std::string v1_pids_dir;
  // The agent's folder in the v1 devices hierarchy, where one is mounted
  // (also beside a v2 layout on hybrid hosts): GPUs a step was not given
  // are denied there. Empty: no device fence.
  std::string v1_devices_dir;
  // Without a v1 devices hierarchy, on v2: GPUs a step was not given are
  // denied by a BPF device program on the step's cgroup (device_fence.h).
  bool v2_device_fence = false;
  // For Steps::Isolation: what is enforced, where, or why nothing is.
  std::string description;
};

// A GPU's device file (/dev/nvidiaN) as the kernel numbers it.
// A GPU's device file (/dev/nvidiaN), or with gi >= 0 one of the MIG
// capability files that open a GPU instance (ci -1) or a compute instance
// in it (/dev/nvidia-caps/nvidia-capM; the driver lists their minor numbers
// in /proc/driver/nvidia-caps/mig-minors).
struct GpuDeviceNode {
  int index = 0;  // the physical GPU's driver index
  unsigned major = 0;
  unsigned minor = 0;
  int gi = -1;
  int ci = -1;
  friend bool operator==(const GpuDeviceNode&, const GpuDeviceNode&) = default;
};

// The device files `pattern` names for GPU indices 0..63 ("%d" stands for
// the index, e.g. "/dev/nvidia%d"), those that exist as character devices.
std::vector<GpuDeviceNode> FindGpuDeviceNodes(const std::string& pattern);

// The MIG capability files of /proc/driver/nvidia-caps/mig-minors' text
// ("gpu0/gi3/access 30", "gpu0/gi3/ci0/access 31"; other lines, such as
// "config 1", are not a GPU's), with `major`, the nvidia-caps device's. Pure.
std::vector<GpuDeviceNode> ParseMigMinors(std::string_view text, unsigned major);
// From the driver's files; empty where there is no MIG-capable driver.
std::vector<GpuDeviceNode> FindMigCapNodes(
    const std::string& mig_minors = "/proc/driver/nvidia-caps/mig-minors",
    const std::string& proc_devices = "/proc/devices");

// A GPU a step was given, as the fence sees it: its physical GPU, and for
// a MIG slice its GPU instance and compute instance.
struct FencedGpu {
  int device = 0;
  int gi = -1;
  int ci = -1;
};

// The node's GPU files a step may not open: the GPUs it was not given, and
// the MIG instances it was not given (on a given GPU too: another job's
// slice). Pure.
std::vector<GpuDeviceNode> DeniedGpus(const std::vector<GpuDeviceNode>& node_gpus,
                                      const std::vector<FencedGpu>& given);
// The v1 devices-controller rules ("c MAJOR:MINOR rwm") that deny them. Pure.
std::vector<std::string> GpuDenyRules(const std::vector<GpuDeviceNode>& node_gpus,
                                      const std::vector<FencedGpu>& given);

// One line of /proc/self/mountinfo.
struct MountEntry {
  std::string mount_point;
  std::string fs_type;
  std::vector<std::string> super_options;  // for cgroup v1: the controllers
};
std::vector<MountEntry> ParseMountInfo(std::string_view text);

// Finds and prepares (makes the agent's folders, enables controllers) the
// best layout this host allows. configured_root: empty to look at the
// mounts; "none"; a cgroup2 mount; or a folder holding v1 hierarchies as
// cpu/, memory/, pids/. Never fails: "none" says why.
CgroupLayout DetectCgroups(const std::string& configured_root, const std::string& tag);

// Removes the agent's (empty) folders; for tests, which make many agents.
void RemoveAgentCgroups(const CgroupLayout& layout);

// A value written into a control file to set a limit. `hierarchy` is "cpu"
// or "memory" under v1 and empty under v2; an optional file is skipped
// where the kernel does not have it (swap accounting off).
struct CgroupWrite {
  std::string hierarchy;
  std::string file;
  std::string value;
  bool optional = false;
};
// The writes that set a step's limits, in order; 0 means no limit. Pure.
std::vector<CgroupWrite> LimitWrites(CgroupVersion version, int64_t cpu_milli, int64_t memory_mib);

// One step's cgroup (a folder in each v1 hierarchy). The supervisor owns
// it; the agent only uses it to kill what a lost supervisor left behind.
// Not thread-safe; the paths are fixed at construction, so that a forked
// child can join with JoinFiles without allocating.
class StepCgroup {
 public:
  StepCgroup(const CgroupLayout& layout, const std::string& name);

  bool enabled() const { return !dirs_.empty() || !devices_dir_.empty(); }
  // Makes the cgroup and sets the limits that the layout allows. Under v1,
  // only in the hierarchies that track the step or hold a limit it has.
  // The devices in `deny` (DeniedGpus) are denied: in the v1 devices
  // hierarchy, which the step joins only when there is something to deny,
  // or by a BPF device program on its v2 cgroup.
  Status Create(int64_t cpu_milli, int64_t memory_mib, const std::vector<GpuDeviceNode>& deny = {});
  // The files a task writes "0" (itself) into, before exec, to join the
  // step's cgroup: `tasks` under v1, cgroup.procs under v2 (final once
  // Create has run).
  const std::vector<std::string>& JoinFiles() const { return join_files_; }
  // Starts a child straight inside the cgroup, as fork does (0 in the
  // child, its pid in the parent), so that it never moves between cgroups:
  // clone3 with CLONE_INTO_CGROUP (v2, Linux 5.7). A process moved through
  // v2's cgroup.procs takes the kernel's cgroup_threadgroup_rwsem for
  // writing, which waits for an RCU grace period unless another move came
  // just before: on an idle node that was most of a job's start
  // (docs/agent.md). -1 where it cannot: under v1 (where a task joins by
  // `tasks`, which costs no such wait), before Create, when the kernel
  // refuses, under ThreadSanitizer. The caller then starts the child its
  // own way and joins it by JoinFiles.
  pid_t ForkInto() const;
  // The processes in it now (empty when the cgroup does not exist).
  std::vector<pid_t> Pids() const;
  // The CPU time its processes have used, past ones included, in seconds:
  // v2's cpu.stat, or v1's cpuacct.usage where cpuacct is mounted with cpu;
  // nullopt where the cgroup keeps no such count.
  std::optional<double> CpuSeconds() const;
  // Sends `sig` to every process in it (SIGKILL through cgroup.kill where
  // v2 has it). Returns whether any process was there to signal.
  bool Signal(int sig) const;
  // Removes the cgroup; fails while processes remain in it.
  Status Remove();

 private:
  std::string JoinFile(const std::string& dir) const;

  CgroupVersion version_;
  std::vector<std::string> dirs_;  // the step's folder in each hierarchy used
  std::vector<std::string> join_files_;
  std::string tracking_dir_;  // the folder whose cgroup.procs lists the step's processes
  std::string cpu_dir_;
  std::string memory_dir_;
  std::string devices_dir_;
  bool v2_device_fence_ = false;
};

}  // namespace shoal::agent
