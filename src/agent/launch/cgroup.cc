#include "agent/launch/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "agent/launch/device_fence.h"
#include "core/files.h"
#include "core/strings.h"

namespace shoal::agent {
namespace {

// The cgroups right below `dir` (its sub-folders), by name.
std::vector<std::string> ChildDirs(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (e->d_type == DT_DIR && name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(d);
  return names;
}

constexpr int64_t kCpuPeriodUs = 100000;
constexpr int64_t kMinCpuQuotaUs = 1000;  // the kernel's floor for a quota

bool Exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

bool IsCgroupFs(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return false;
  return fs.f_type == CGROUP2_SUPER_MAGIC || fs.f_type == CGROUP_SUPER_MAGIC;
}

// mkdir -p below an existing cgroup mount (each level must be a cgroup).
Status MakeDirs(const std::string& mount, const std::string& relative) {
  std::string path = mount;
  for (std::string_view part : Split(relative, '/')) {
    if (part.empty()) continue;
    path += "/";
    path += part;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return Internal(ErrnoMessage("cannot create " + path));
    }
  }
  return Status::Ok();
}

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view line : Split(text, '\n')) {
    for (std::string_view word : Split(line, ' ')) {
      if (!Trim(word).empty()) out.emplace_back(Trim(word));
    }
  }
  return out;
}

bool Contains(const std::vector<std::string>& words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

struct Mounts {
  std::string v2;
  std::string v1_cpu;
  std::string v1_memory;
  std::string v1_pids;
  std::string v1_devices;
};

Mounts FindMounts(const std::string& configured_root) {
  Mounts m;
  if (!configured_root.empty()) {
    if (Exists(configured_root + "/cgroup.controllers")) {
      m.v2 = configured_root;
      return m;
    }
    for (auto [name, slot] : {std::pair{"cpu", &m.v1_cpu}, std::pair{"memory", &m.v1_memory},
                              std::pair{"pids", &m.v1_pids}, std::pair{"devices", &m.v1_devices}}) {
      std::string dir = configured_root + "/" + name;
      if (IsCgroupFs(dir)) *slot = dir;
    }
    return m;
  }
  Result<std::string> text = ReadFile("/proc/self/mountinfo");
  if (!text.ok()) return m;
  for (const MountEntry& e : ParseMountInfo(*text)) {
    if (e.fs_type == "cgroup2" && m.v2.empty()) m.v2 = e.mount_point;
    if (e.fs_type != "cgroup") continue;
    for (auto [name, slot] : {std::pair{"cpu", &m.v1_cpu}, std::pair{"memory", &m.v1_memory},
                              std::pair{"pids", &m.v1_pids}, std::pair{"devices", &m.v1_devices}}) {
      if (slot->empty() && Contains(e.super_options, name)) *slot = e.mount_point;
    }
  }
  return m;
}

// v2 with cpu and memory for the steps: each level down to the agent's
// folder must hand the controllers on to its children.
Status PrepareV2(const std::string& mount, const std::string& relative, CgroupLayout* layout) {
  SHOAL_ASSIGN_OR_RETURN(std::string controllers, ReadFile(mount + "/cgroup.controllers"));
  std::vector<std::string> available = Words(controllers);
  if (!Contains(available, "cpu") || !Contains(available, "memory")) {
    return FailedPrecondition(fmt::format("{} offers no cpu and memory controllers ({})", mount,
                                          controllers.empty() ? "none" : Trim(controllers)));
  }
  std::string enable = Contains(available, "pids") ? "+cpu +memory +pids" : "+cpu +memory";
  std::string path = mount;
  SHOAL_RETURN_IF_ERROR(WriteFile(path + "/cgroup.subtree_control", enable));
  for (std::string_view part : Split(relative, '/')) {
    path += "/";
    path += part;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return Internal(ErrnoMessage("cannot create " + path));
    }
    SHOAL_RETURN_IF_ERROR(WriteFile(path + "/cgroup.subtree_control", enable));
  }
  layout->v2_dir = path;
  layout->v2_cpu = layout->v2_memory = true;
  return Status::Ok();
}

int ParsePid(std::string_view word) {
  Result<int64_t> pid = ParseInt(word);
  return pid.ok() && *pid > 0 ? static_cast<int>(*pid) : 0;
}

}  // namespace

std::vector<MountEntry> ParseMountInfo(std::string_view text) {
  // "36 25 0:31 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu,cpuacct"
  std::vector<MountEntry> out;
  for (std::string_view line : Split(text, '\n')) {
    std::vector<std::string_view> fields;
    for (std::string_view f : Split(line, ' ')) {
      if (!f.empty()) fields.push_back(f);
    }
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    MountEntry e;
    e.mount_point = std::string(fields[4]);
    e.fs_type = std::string(dash[1]);
    for (std::string_view opt : Split(dash[3], ','))
      e.super_options.emplace_back(opt);
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

CgroupLayout DetectProcessCgroups(const std::string& configured_root, const std::string& tag,
                                  const Mounts& mounts) {
  CgroupLayout layout;
  if (configured_root == "none") {
    layout.description =
        "none: disabled by configuration (cgroup_root = none); process groups only, "
        "no CPU or memory limits";
    return layout;
  }
  const std::string relative = "shoal/" + tag;
  std::vector<std::string> why;  // what each layout lacked, for the "none" line

  if (!mounts.v2.empty()) {
    Status v2 = IsCgroupFs(mounts.v2)
                    ? PrepareV2(mounts.v2, relative, &layout)
                    : FailedPrecondition(mounts.v2 + " is not a cgroup file system");
    if (v2.ok()) {
      layout.version = CgroupVersion::kV2;
      layout.description = fmt::format("cgroup v2 (cpu, memory) at {}", layout.v2_dir);
      return layout;
    }
    why.push_back("v2: " + v2.message());
  }

  std::vector<std::string> v1_used;
  std::vector<std::string> v1_dirs;
  for (auto [name, mount, slot] : {std::tuple{"cpu", &mounts.v1_cpu, &layout.v1_cpu_dir},
                                   std::tuple{"memory", &mounts.v1_memory, &layout.v1_memory_dir},
                                   std::tuple{"pids", &mounts.v1_pids, &layout.v1_pids_dir}}) {
    if (mount->empty()) continue;
    Status made = MakeDirs(*mount, relative);
    if (made.ok()) {
      *slot = *mount + "/" + relative;
      v1_used.push_back(name);
      v1_dirs.push_back(*slot);
    } else {
      why.push_back(fmt::format("v1 {}: {}", name, made.message()));
    }
  }
  if (!v1_used.empty()) {
    layout.version = CgroupVersion::kV1;
    layout.description =
        fmt::format("cgroup v1 ({}) at {}", Join(v1_used, ", "), Join(v1_dirs, " "));
    for (const char* limit : {"cpu", "memory"}) {
      if (!Contains(v1_used, limit)) layout.description += fmt::format("; no {} limits", limit);
    }
    return layout;
  }
  if (mounts.v1_cpu.empty() && mounts.v1_memory.empty() && mounts.v1_pids.empty()) {
    why.push_back("v1: no cpu, memory or pids hierarchy mounted");
  }

  if (!mounts.v2.empty() && IsCgroupFs(mounts.v2)) {
    Status made = MakeDirs(mounts.v2, relative);
    if (made.ok()) {
      layout.version = CgroupVersion::kV2;
      layout.v2_dir = mounts.v2 + "/" + relative;
      layout.description = fmt::format(
          "cgroup v2 (process tracking only: no cpu or memory controller here, so CPU and memory "
          "limits are not enforced) at {}",
          layout.v2_dir);
      return layout;
    }
    why.push_back("v2 tracking: " + made.message());
  } else if (mounts.v2.empty()) {
    why.push_back("v2: no cgroup2 mount");
  }
  layout.description = fmt::format(
      "none: {}; tasks are tracked by process group and by the supervisor as child subreaper, "
      "without CPU or memory limits",
      Join(why, "; "));
  return layout;
}

}  // namespace

CgroupLayout DetectCgroups(const std::string& configured_root, const std::string& tag) {
  const Mounts mounts = configured_root == "none" ? Mounts{} : FindMounts(configured_root);
  CgroupLayout layout = DetectProcessCgroups(configured_root, tag, mounts);
  if (configured_root == "none") return layout;
  // GPUs are fenced with the v1 devices controller wherever it is mounted,
  // as Slurm's ConstrainDevices does, else with a BPF device program on
  // each step's v2 cgroup.
  if (!mounts.v1_devices.empty() && MakeDirs(mounts.v1_devices, "shoal/" + tag).ok()) {
    layout.v1_devices_dir = mounts.v1_devices + "/shoal/" + tag;
    layout.description += "; GPU devices fenced (v1 devices)";
  } else if (layout.version == CgroupVersion::kV2 && CanLoadDevicePrograms()) {
    layout.v2_device_fence = true;
    layout.description += "; GPU devices fenced (cgroup v2 BPF device program)";
  } else {
    layout.description +=
        "; GPU devices not fenced (no v1 devices hierarchy; only CUDA_VISIBLE_DEVICES)";
  }
  return layout;
}

std::vector<GpuDeviceNode> FindGpuDeviceNodes(const std::string& pattern) {
  std::vector<GpuDeviceNode> out;
  if (pattern.find("%d") == std::string::npos) return out;
  for (int i = 0; i < 64; ++i) {
    std::string path = pattern;
    path.replace(path.find("%d"), 2, std::to_string(i));
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) continue;
    out.push_back({i, ::major(st.st_rdev), ::minor(st.st_rdev)});
  }
  return out;
}

std::vector<GpuDeviceNode> DeniedGpus(const std::vector<GpuDeviceNode>& node_gpus,
                                      const std::vector<FencedGpu>& given) {
  std::vector<GpuDeviceNode> denied;
  for (const GpuDeviceNode& d : node_gpus) {
    const bool allowed = std::any_of(given.begin(), given.end(), [&d](const FencedGpu& g) {
      if (g.device != d.index) return false;
      if (d.gi < 0) return true;  // the GPU's own file: every slice of it needs it
      return g.gi == d.gi && (d.ci < 0 || g.ci == d.ci);
    });
    if (!allowed) denied.push_back(d);
  }
  return denied;
}

std::vector<std::string> GpuDenyRules(const std::vector<GpuDeviceNode>& node_gpus,
                                      const std::vector<FencedGpu>& given) {
  std::vector<std::string> rules;
  for (const GpuDeviceNode& d : DeniedGpus(node_gpus, given))
    rules.push_back(fmt::format("c {}:{} rwm", d.major, d.minor));
  return rules;
}

std::vector<GpuDeviceNode> ParseMigMinors(std::string_view text, unsigned major) {
  std::vector<GpuDeviceNode> out;
  for (std::string_view line : Split(text, '\n')) {
    const std::vector<std::string_view> fields = Split(Trim(line), ' ');
    if (fields.size() != 2) continue;
    const std::vector<std::string_view> path = Split(fields[0], '/');
    if (path.size() < 3 || path.size() > 4 || path.back() != "access") continue;
    auto number = [](std::string_view part, std::string_view prefix) -> int {
      if (!StartsWith(part, prefix)) return -1;
      auto n = ParseInt(part.substr(prefix.size()));
      return n.ok() && *n >= 0 && *n < 1 << 20 ? static_cast<int>(*n) : -1;
    };
    auto minor = ParseInt(fields[1]);
    GpuDeviceNode d{.index = number(path[0], "gpu"),
                    .major = major,
                    .minor = minor.ok() && *minor >= 0 ? static_cast<unsigned>(*minor) : 0,
                    .gi = number(path[1], "gi"),
                    .ci = path.size() == 4 ? number(path[2], "ci") : -1};
    if (d.index < 0 || d.gi < 0 || !minor.ok() || *minor < 0 || (path.size() == 4 && d.ci < 0))
      continue;
    out.push_back(d);
  }
  return out;
}

std::vector<GpuDeviceNode> FindMigCapNodes(const std::string& mig_minors,
                                           const std::string& proc_devices) {
  auto minors = ReadFile(mig_minors);
  auto devices = ReadFile(proc_devices);
  if (!minors.ok() || !devices.ok()) return {};
  // "/proc/devices": "Character devices:" then "MAJOR NAME" lines.
  for (std::string_view line : Split(*devices, '\n')) {
    const std::vector<std::string_view> fields = Split(Trim(line), ' ');
    if (fields.size() != 2 || fields[1] != "nvidia-caps") continue;
    auto major = ParseInt(fields[0]);
    if (major.ok() && *major > 0) return ParseMigMinors(*minors, static_cast<unsigned>(*major));
  }
  return {};
}

void RemoveAgentCgroups(const CgroupLayout& layout) {
  for (const std::string* dir : {&layout.v2_dir, &layout.v1_cpu_dir, &layout.v1_memory_dir,
                                 &layout.v1_pids_dir, &layout.v1_devices_dir}) {
    if (!dir->empty()) ::rmdir(dir->c_str());
  }
}

std::vector<CgroupWrite> LimitWrites(CgroupVersion version, int64_t cpu_milli, int64_t memory_mib) {
  std::vector<CgroupWrite> writes;
  // cpu_milli thousandths of a CPU = that many tenths of a period's microseconds.
  const int64_t quota_us = std::max(kMinCpuQuotaUs, cpu_milli * kCpuPeriodUs / 1000);
  const std::string memory_bytes = std::to_string(memory_mib * 1024 * 1024);
  if (version == CgroupVersion::kV2) {
    if (cpu_milli > 0)
      writes.push_back({"", "cpu.max", fmt::format("{} {}", quota_us, kCpuPeriodUs)});
    if (memory_mib > 0) {
      writes.push_back({"", "memory.max", memory_bytes});
      writes.push_back({"", "memory.swap.max", "0", true});
    }
  } else if (version == CgroupVersion::kV1) {
    if (cpu_milli > 0) {
      writes.push_back({"cpu", "cpu.cfs_period_us", std::to_string(kCpuPeriodUs)});
      writes.push_back({"cpu", "cpu.cfs_quota_us", std::to_string(quota_us)});
    }
    if (memory_mib > 0) {
      // memsw (memory + swap) may never be below the memory limit: set it second.
      writes.push_back({"memory", "memory.limit_in_bytes", memory_bytes});
      writes.push_back({"memory", "memory.memsw.limit_in_bytes", memory_bytes, true});
    }
  }
  return writes;
}

// The file a task joins a folder of the step's by, writing "0" (itself)
// into it. Under v1 it is `tasks`, which moves the writing thread alone: the
// task is a vforked child with one thread, so that is the whole process, and
// a thread that moves itself does not take the kernel's
// cgroup_threadgroup_rwsem for writing. Moving a process by its pid through
// cgroup.procs does, and waits for an RCU grace period (7 ms a move on the
// development VM, 0.08 ms through `tasks`; docs/agent.md). A v2 cgroup has
// no `tasks`; there the task is cloned into its cgroup where it can be.
std::string StepCgroup::JoinFile(const std::string& dir) const {
  return dir + (version_ == CgroupVersion::kV1 ? "/tasks" : "/cgroup.procs");
}

StepCgroup::StepCgroup(const CgroupLayout& layout, const std::string& name)
    : version_(layout.version) {
  if (version_ == CgroupVersion::kV2) {
    dirs_.push_back(layout.v2_dir + "/" + name);
    tracking_dir_ = cpu_dir_ = memory_dir_ = dirs_[0];
    if (!layout.v2_cpu) cpu_dir_.clear();
    if (!layout.v2_memory) memory_dir_.clear();
  } else if (version_ == CgroupVersion::kV1) {
    for (const std::string* base :
         {&layout.v1_pids_dir, &layout.v1_memory_dir, &layout.v1_cpu_dir}) {
      if (base->empty()) continue;
      dirs_.push_back(*base + "/" + name);
      if (tracking_dir_.empty()) tracking_dir_ = dirs_.back();
    }
    if (!layout.v1_cpu_dir.empty()) cpu_dir_ = layout.v1_cpu_dir + "/" + name;
    if (!layout.v1_memory_dir.empty()) memory_dir_ = layout.v1_memory_dir + "/" + name;
  }
  for (const std::string& dir : dirs_)
    join_files_.push_back(JoinFile(dir));
  if (!layout.v1_devices_dir.empty()) devices_dir_ = layout.v1_devices_dir + "/" + name;
  v2_device_fence_ = version_ == CgroupVersion::kV2 && layout.v2_device_fence;
}

// Not under ThreadSanitizer: its runtime has a thread of its own, and a
// child made behind its back (not by its fork interceptor) could find one
// of its locks held.
#if defined(__SANITIZE_THREAD__)
constexpr bool kForkInto = false;
#else
constexpr bool kForkInto = true;
#endif

pid_t StepCgroup::ForkInto() const {
  // One v2 folder holds the whole step (no v1 devices cgroup to join too).
  if (!kForkInto || version_ != CgroupVersion::kV2 || join_files_.size() != 1) return -1;
  const int fd = ::open(dirs_[0].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  clone_args args{};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>(fd);
  const auto pid = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
  ::close(fd);
  return pid;
}

Status StepCgroup::Create(int64_t cpu_milli, int64_t memory_mib,
                          const std::vector<GpuDeviceNode>& deny) {
  if (version_ == CgroupVersion::kV1) {
    // A v1 hierarchy is joined only to track the step (the first) or to
    // enforce its limit: each cgroup costs a mkdir and an rmdir per step.
    std::erase_if(dirs_, [&](const std::string& dir) {
      if (dir == tracking_dir_) return false;
      return (dir == cpu_dir_ && cpu_milli <= 0) || (dir == memory_dir_ && memory_mib <= 0);
    });
    join_files_.clear();
    for (const std::string& dir : dirs_)
      join_files_.push_back(JoinFile(dir));
  }
  if (!devices_dir_.empty()) {
    if (deny.empty()) {
      devices_dir_.clear();  // nothing to deny: no cgroup to make and remove
    } else {
      dirs_.push_back(devices_dir_);
      join_files_.push_back(JoinFile(devices_dir_));
    }
  }
  for (const std::string& dir : dirs_) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return Internal(ErrnoMessage("cannot create cgroup " + dir));
    }
    // A plain folder would take the pids written into it and kill nothing.
    if (!IsCgroupFs(dir)) return Internal(dir + " is not in a cgroup file system");
  }
  for (const GpuDeviceNode& d : deny) {
    if (devices_dir_.empty()) break;
    const std::string rule = fmt::format("c {}:{} rwm", d.major, d.minor);
    Status written = WriteFile(devices_dir_ + "/devices.deny", rule);
    if (!written.ok()) return written.WithContext("cannot deny " + rule);
  }
  if (v2_device_fence_ && !deny.empty()) SHOAL_RETURN_IF_ERROR(AttachDeviceDeny(dirs_[0], deny));
  for (const CgroupWrite& w : LimitWrites(version_, cpu_milli, memory_mib)) {
    const bool cpu = w.hierarchy == "cpu" || w.file.starts_with("cpu.");
    const std::string& dir = cpu ? cpu_dir_ : memory_dir_;
    if (dir.empty()) continue;  // the layout has no such controller: described by Isolation()
    const std::string file = dir + "/" + w.file;
    if (w.optional && !Exists(file)) continue;
    Status written = WriteFile(file, w.value);
    if (!written.ok()) return written.WithContext("cannot set " + w.file + " to " + w.value);
  }
  return Status::Ok();
}

std::vector<pid_t> StepCgroup::Pids() const {
  std::vector<pid_t> pids;
  if (tracking_dir_.empty()) return pids;
  // The step's own processes, and those of the cgroups below it (a
  // container's tasks, each in one of its own: container.h).
  std::vector<std::string> dirs = {tracking_dir_};
  for (const std::string& child : ChildDirs(tracking_dir_))
    dirs.push_back(tracking_dir_ + "/" + child);
  for (const std::string& dir : dirs) {
    Result<std::string> text = ReadFile(dir + "/cgroup.procs");
    if (!text.ok()) continue;
    for (std::string_view line : Split(*text, '\n')) {
      if (int pid = ParsePid(line); pid > 0) pids.push_back(pid);
    }
  }
  return pids;
}

std::optional<double> StepCgroup::CpuSeconds() const {
  if (version_ == CgroupVersion::kV2 && !tracking_dir_.empty()) {
    Result<std::string> stat = ReadFile(tracking_dir_ + "/cpu.stat");
    if (!stat.ok()) return std::nullopt;
    for (std::string_view line : Split(*stat, '\n')) {
      if (!StartsWith(line, "usage_usec ")) continue;
      Result<int64_t> usec = ParseInt(Trim(line.substr(11)));
      if (usec.ok()) return static_cast<double>(*usec) / 1e6;
    }
    return std::nullopt;
  }
  if (version_ == CgroupVersion::kV1 && !cpu_dir_.empty()) {
    Result<std::string> text = ReadFile(cpu_dir_ + "/cpuacct.usage");
    Result<int64_t> ns = text.ok() ? ParseInt(Trim(*text)) : Result<int64_t>(text.status());
    if (ns.ok()) return static_cast<double>(*ns) / 1e9;
  }
  return std::nullopt;
}

bool StepCgroup::Signal(int sig) const {
  std::vector<pid_t> pids = Pids();
  if (pids.empty()) return false;
  // cgroup.kill (Linux 5.14) kills atomically, forks in flight included.
  if (sig == SIGKILL && version_ == CgroupVersion::kV2 &&
      WriteFile(tracking_dir_ + "/cgroup.kill", "1").ok()) {
    return true;
  }
  for (pid_t pid : pids)
    ::kill(pid, sig);
  return true;
}

Status StepCgroup::Remove() {
  for (const std::string& dir : dirs_) {
    for (const std::string& child : ChildDirs(dir))
      ::rmdir((dir + "/" + child).c_str());  // what a killed runtime left: empty by now
    if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
      return Internal(ErrnoMessage("cannot remove cgroup " + dir));
    }
  }
  return Status::Ok();
}

}  // namespace shoal::agent
