// GPU fencing on cgroup v2: v2 has no devices.deny file; a cgroup's device
// access is decided by BPF programs of type BPF_PROG_TYPE_CGROUP_DEVICE
// attached to it (what runc and systemd's DeviceAllow= load). Shoal's
// program denies the character devices of the GPUs a step was not given and
// allows everything else, as its v1 rules do (cgroup.h, GpuDenyRules).
//
// The program is written here as BPF instructions (no compiler, no libbpf),
// loaded with bpf(2) and attached to the step's cgroup by its supervisor,
// which runs as root; the attachment keeps the program alive until the
// cgroup is removed.
#pragma once

#include <linux/bpf.h>

#include <string>
#include <vector>

#include "agent/launch/cgroup.h"
#include "core/status.h"

namespace shoal::agent {

// The program: for each device in `deny`, a character device with its
// major and minor number is refused (the program returns 0); anything else
// is allowed (1). Pure.
std::vector<bpf_insn> DeviceDenyProgram(const std::vector<GpuDeviceNode>& deny);

// Loads the program for `deny` and attaches it to the cgroup v2 folder
// `cgroup_dir` (with BPF_F_ALLOW_MULTI, beside any program the host's
// service manager attached above). Needs CAP_SYS_ADMIN (CAP_BPF).
Status AttachDeviceDeny(const std::string& cgroup_dir, const std::vector<GpuDeviceNode>& deny);

// Whether this process may load such programs (the agent asks once, to say
// in its isolation line whether GPUs are fenced).
bool CanLoadDevicePrograms();

}  // namespace shoal::agent
