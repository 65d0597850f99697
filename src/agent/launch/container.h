// A step's container (the job's --container-image), set up by the step's
// supervisor, as root, before its tasks start (docs/containers.md):
//
//  - the image is found (a file the job's user can read, or a name in the
//    node's image folder), unpacked once into the node's cache by
//    shoal-image, and held (a shared lock) so that the cache never evicts
//    it under a running step;
//  - the supervisor enters a mount namespace of its own (the host never sees
//    its mounts, and they go when the step does) and mounts there the
//    container's root: the cached image under a writable overlay on a tmpfs;
//  - each bind mount's source (home, the work folder, --container-mounts) is
//    opened with the job user's rights and staged under a root-only folder,
//    so that the runtime (root) binds what the user could reach when it was
//    checked, whatever the user swaps into the path after;
//  - each task runs under the OCI runtime with a config of its own: the
//    user's uid, gids and no capabilities (no_new_privs), the job's GPU
//    device files and no other, the host's network, PID and IPC namespaces
//    (as pyxis runs containers, so that NCCL, MPI and signals work as they
//    do outside);
//  - rootless (the node's default, ContainerHost::rootless): the runtime
//    (crun) runs as the job's user, in a user namespace that maps only that
//    user, with no cgroup manager: Shoal puts the task in the step's cgroup
//    (its limits and device fence) before the runtime starts, and unpacks
//    the image as the user's (so the runtime can make its mount points);
//  - otherwise the runtime (runc) runs as root and puts each task in a
//    cgroup of its own below the step's (runc kills what is left in it when
//    the task ends), with an allow list of the job's devices.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "agent/launch/cgroup.h"
#include "agent/launch/steps.h"
#include "core/status.h"

namespace shoal::agent {

// Where a runtime named without a slash is looked for, and the runtime's own
// PATH (the agent's may be a service manager's minimal one).
inline constexpr char kRuntimeSearchPath[] =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct SupervisorRequest;

struct ContainerBind {
  std::string source;  // on the host (staged, or root's own files)
  std::string target;  // in the container
  bool read_only = false;
};

struct ContainerDevice {
  std::string path;  // in the container
  unsigned major = 0;
  unsigned minor = 0;
  std::string host_path;  // rootless: the file the runtime binds (StageDevices)
};

// One task's OCI runtime configuration, before it is JSON.
struct RuntimeSpec {
  // Rootless: a user namespace that maps only the job's user (uid and gid to
  // themselves), the device files bound from the host (no mknod there) and
  // no cgroups (the task is already in the step's). Otherwise the runtime is
  // root: it makes the device files and the task's cgroup.
  bool rootless = false;
  std::string root;  // the container's root folder on the host
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string cwd;
  std::vector<ContainerBind> binds;
  std::vector<ContainerDevice> devices;
  std::string cgroups_path;  // relative to the hierarchies' roots
  // From the node's CDI specs: the driver's files, and hooks the runtime runs.
  std::vector<CdiEdits::Mount> cdi_mounts;
  std::vector<CdiEdits::Hook> hooks;
};

// The config.json of an OCI bundle for `s`. Pure.
std::string RuntimeConfigJson(const RuntimeSpec& s);

// A task's environment in its container: the task's own, with the image's
// variables over it, except Shoal's (`shoal_env`: CUDA_VISIBLE_DEVICES,
// RANK, SLURM_*, ...), HOME, USER and LOGNAME, and those the job names in
// --container-env (`job_wins`). Pure.
std::vector<std::string> ContainerEnvironment(const std::vector<std::string>& task_env,
                                              const std::vector<std::string>& image_env,
                                              const std::vector<std::string>& job_wins,
                                              const std::vector<std::string>& shoal_env);

// Where the runtime puts the step's processes: the step's own cgroup,
// relative to the hierarchies' roots. Pure.
std::string RuntimeCgroupPath(const CgroupLayout& layout, const std::string& step_name);

// The device files of a step's GPUs as the container sees them: its GPUs'
// /dev/nvidiaN and MIG capability files, none of the others. Pure.
std::vector<ContainerDevice> StepGpuDevices(const std::vector<GpuDeviceNode>& node_gpus,
                                            const std::vector<FencedGpu>& given);

// What an image's /etc/passwd and /etc/group lack for the job's user to
// have a name inside (whoami, Python's getpass, ssh, as enroot adds it):
// a line for the user unless `passwd` has their name or uid, one for their
// group unless `group` has its gid. Pure.
struct UserEntries {
  std::string passwd;
  std::string group;
};
UserEntries MissingUserEntries(std::string_view passwd, std::string_view group,
                               const UserAccount& user, const std::string& group_name);

class StepContainer {
 public:
  // Everything the tasks share: the runtime, the image, the mount namespace
  // with the root and the staged mounts. `step_files` are the step's own
  // files in its folder (its script and hostfile, read-only; its progress
  // file, the user's to write), bound at their paths.
  // Errors say what the job's user can do about them.
  static Result<std::unique_ptr<StepContainer>> Prepare(
      const SupervisorRequest& request, const std::string& step_dir, const std::string& step_name,
      const std::string& work_dir, const std::vector<ContainerBind>& step_files);
  ~StepContainer();

  bool rootless() const;  // the node's ContainerHost::rootless

  // Writes task `rank`'s bundle; returns the command line that runs it.
  Result<std::vector<std::string>> TaskCommand(int rank, const std::vector<std::string>& task_env,
                                               const std::vector<std::string>& shoal_env,
                                               const std::vector<std::string>& argv) const;

 private:
  StepContainer() = default;
  Status FindRuntime();
  Status TakeImage();
  Status MountRoot();
  Status HideCgroupV2();
  void AddUserEntries() const;
  Status StageBinds(const std::vector<ContainerBind>& step_files);
  Status AddCdiDevices();
  Status StageDevices();

  const SupervisorRequest* request_ = nullptr;
  std::string dir_;  // <step>/ctr: a tmpfs in the supervisor's mount namespace
  std::string work_dir_;
  bool work_dir_mounted_ = false;
  std::string runtime_;
  std::string rootfs_;  // the cached image
  std::vector<std::string> image_env_;
  std::string image_work_dir_;
  std::vector<ContainerBind> binds_;
  std::vector<ContainerDevice> devices_;
  std::string cgroups_path_;
  int image_lock_ = -1;  // LOCK_SH on the image for the step's life
};

}  // namespace shoal::agent
