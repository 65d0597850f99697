#include "agent/launch/container.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "agent/launch/image_store.h"
#include "agent/launch/step_files.h"
#include "core/files.h"
#include "core/strings.h"

namespace shoal::agent {
namespace {

using Json = nlohmann::json;

// The control files every CUDA process opens besides its GPUs' own.
constexpr const char* kControlDevices[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
                                           "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"};
// The writable layer over the image (a tmpfs: its pages count against the
// job's memory, and it goes with the step).
constexpr int64_t kDefaultOverlayMib = 4096;

std::string VariableName(const std::string& entry) {
  return entry.substr(0, entry.find('='));
}

// The job's user's file-system rights for this thread (the supervisor has
// one) while it lives: opens and lookups are checked as the user's, while
// the supervisor stays root for what follows.
class AsUser {
 public:
  explicit AsUser(const UserAccount& user) {
    ok_ = ::setgroups(user.groups.size(), user.groups.data()) == 0;
    ::setfsgid(user.gid);
    ::setfsuid(user.uid);
  }
  ~AsUser() {
    ::setfsuid(0);
    ::setfsgid(0);
    ::setgroups(0, nullptr);
  }
  AsUser(const AsUser&) = delete;
  AsUser& operator=(const AsUser&) = delete;
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

Json Mount(std::string destination, std::string type, std::string source,
           std::vector<std::string> options) {
  return {{"destination", std::move(destination)},
          {"type", std::move(type)},
          {"source", std::move(source)},
          {"options", std::move(options)}};
}

Json BaseMounts(bool rootless) {
  Json mounts = Json::array();
  // The host's PID namespace: a user namespace may not mount its proc
  // afresh, only bind it.
  mounts.push_back(rootless
                       ? Mount("/proc", "bind", "/proc", {"rbind", "nosuid", "noexec", "nodev"})
                       : Mount("/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}));
  mounts.push_back(
      Mount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}));
  mounts.push_back(Mount("/dev/pts", "devpts", "devpts",
                         {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}));
  // The host's: NCCL and MPI share memory between the tasks of a node.
  mounts.push_back(Mount("/dev/shm", "bind", "/dev/shm", {"rbind", "nosuid", "nodev"}));
  mounts.push_back(Mount("/sys", "bind", "/sys", {"rbind", "nosuid", "noexec", "nodev", "ro"}));
  for (const char* file : {"/etc/hosts", "/etc/resolv.conf"}) {
    if (::access(file, R_OK) == 0)
      mounts.push_back(Mount(file, "bind", file, {"bind", "nosuid", "nodev", "ro"}));
  }
  return mounts;
}

Json NoCapabilities() {
  const Json none = Json::array();
  return {{"bounding", none},
          {"effective", none},
          {"inheritable", none},
          {"permitted", none},
          {"ambient", none}};
}

// A CDI mount's options, as a bind mount that carries no set-uid files or
// devices whatever the spec says.
std::vector<std::string> HardenedBindOptions(std::vector<std::string> options) {
  auto has = [&options](std::string_view o) {
    return std::find(options.begin(), options.end(), o) != options.end();
  };
  if (!has("bind") && !has("rbind")) options.push_back("rbind");
  for (const char* flag : {"nosuid", "nodev"})
    if (!has(flag)) options.push_back(flag);
  return options;
}

Result<ContainerDevice> HostDevice(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode))
    return NotFound(path + " is not a character device");
  return ContainerDevice{path, major(st.st_rdev), minor(st.st_rdev), ""};
}

// Runs shoal-image on the open image; its one-line message on failure.
// With `owner` ("UID:GID"), every file is that user's (a rootless runtime).
Status RunImageTool(const ContainerHost& host, const std::string& key, int image_fd,
                    const std::string& owner) {
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) return Internal(ErrnoMessage("pipe"));
  const std::string limit = std::to_string(host.cache_mib);
  std::vector<const char*> argv = {host.image_tool.c_str(), "unpack",     "--cache",
                                   host.cache_dir.c_str(),  "--key",      key.c_str(),
                                   "--limit-mib",           limit.c_str()};
  if (!owner.empty()) argv.insert(argv.end(), {"--owner", owner.c_str()});
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(image_fd, STDIN_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execv(argv[0], const_cast<char* const*>(argv.data()));
    ::_exit(127);
  }
  ::close(err[1]);
  if (pid < 0) {
    ::close(err[0]);
    return Internal(ErrnoMessage("fork"));
  }
  std::string message;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(err[0], buffer, sizeof buffer)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (message.size() < 4096) message.append(buffer, static_cast<size_t>(n));
  }
  ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  message = std::string(Trim(message));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && message.empty())
    message = "cannot run " + host.image_tool;
  if (message.starts_with("shoal-image: ")) message.erase(0, 13);
  return FailedPrecondition(message.empty() ? "unpacking failed" : message);
}

}  // namespace

std::string RuntimeConfigJson(const RuntimeSpec& s) {
  Json mounts = BaseMounts(s.rootless);
  for (const ContainerBind& b : s.binds) {
    std::vector<std::string> options = {"rbind", "nosuid", "nodev"};
    if (b.read_only) options.push_back("ro");
    mounts.push_back(Mount(b.target, "bind", b.source, std::move(options)));
  }
  Json devices = Json::array();
  Json allowed = Json::array({{{"allow", false}, {"access", "rwm"}}});
  for (const ContainerDevice& d : s.devices) {
    if (s.rootless) {
      // Bound from the host: the step's cgroup fences what may be opened.
      mounts.push_back(Mount(d.path, "bind", d.host_path.empty() ? d.path : d.host_path,
                             {"bind", "nosuid", "noexec"}));
      continue;
    }
    devices.push_back({{"path", d.path},
                       {"type", "c"},
                       {"major", d.major},
                       {"minor", d.minor},
                       {"fileMode", 0666},
                       {"uid", 0},
                       {"gid", 0}});
    allowed.push_back({{"allow", true},
                       {"type", "c"},
                       {"major", d.major},
                       {"minor", d.minor},
                       {"access", "rwm"}});
  }
  // Rootless, the groups are those the runtime was started with: a user
  // namespace may not set them.
  Json user = {{"uid", s.uid}, {"gid", s.gid}};
  if (!s.rootless) user["additionalGids"] = s.groups;
  Json process = {
      {"terminal", false},
      {"user", std::move(user)},
      {"args", s.argv},
      {"env", s.env},
      {"cwd", s.cwd.empty() ? "/" : s.cwd},
      {"capabilities", NoCapabilities()},
      {"noNewPrivileges", true},
  };
  Json linux = {
      {"namespaces", Json::array({{{"type", "mount"}}})},
      {"maskedPaths",
       {"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
        "/proc/sched_debug", "/proc/scsi", "/sys/firmware"}},
      {"readonlyPaths",
       {"/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}},
  };
  if (s.rootless) {
    linux["namespaces"].push_back({{"type", "user"}});
    linux["uidMappings"] = Json::array({{{"containerID", s.uid}, {"hostID", s.uid}, {"size", 1}}});
    linux["gidMappings"] = Json::array({{{"containerID", s.gid}, {"hostID", s.gid}, {"size", 1}}});
  } else {
    linux["devices"] = std::move(devices);
    linux["resources"] = {{"devices", std::move(allowed)}};
    linux["cgroupsPath"] = s.cgroups_path;
  }
  for (const CdiEdits::Mount& m : s.cdi_mounts)
    mounts.push_back(Mount(m.container_path, "bind", m.host_path, HardenedBindOptions(m.options)));
  Json config = {{"ociVersion", "1.0.2"},
                 {"process", std::move(process)},
                 {"root", {{"path", s.root}, {"readonly", false}}},
                 {"mounts", std::move(mounts)},
                 {"linux", std::move(linux)}};
  for (const CdiEdits::Hook& h : s.hooks) {
    Json hook = {{"path", h.path}};
    if (!h.args.empty()) hook["args"] = h.args;
    if (!h.env.empty()) hook["env"] = h.env;
    config["hooks"][h.stage].push_back(std::move(hook));
  }
  return config.dump(1);
}

std::vector<std::string> ContainerEnvironment(const std::vector<std::string>& task_env,
                                              const std::vector<std::string>& image_env,
                                              const std::vector<std::string>& job_wins,
                                              const std::vector<std::string>& shoal_env) {
  std::set<std::string> keep(job_wins.begin(), job_wins.end());
  for (const std::string& e : shoal_env)
    keep.insert(VariableName(e));
  keep.insert({"HOME", "USER", "LOGNAME"});
  std::vector<std::string> env = task_env;
  for (const std::string& entry : image_env) {
    const std::string name = VariableName(entry);
    if (name.empty() || name.size() == entry.size() || keep.contains(name)) continue;
    auto same = std::find_if(env.begin(), env.end(),
                             [&name](const std::string& e) { return VariableName(e) == name; });
    if (same != env.end()) {
      *same = entry;
    } else {
      env.push_back(entry);
    }
  }
  return env;
}

std::string RuntimeCgroupPath(const CgroupLayout& layout, const std::string& step_name) {
  for (const std::string* dir : {&layout.v2_dir, &layout.v1_memory_dir, &layout.v1_cpu_dir,
                                 &layout.v1_pids_dir, &layout.v1_devices_dir}) {
    if (layout.version == CgroupVersion::kV2 && dir != &layout.v2_dir) break;
    const size_t at = dir->rfind("/shoal/");
    if (!dir->empty() && at != std::string::npos) return dir->substr(at) + "/" + step_name;
  }
  return "/shoal/containers/" + step_name;
}

std::vector<ContainerDevice> StepGpuDevices(const std::vector<GpuDeviceNode>& node_gpus,
                                            const std::vector<FencedGpu>& given) {
  const std::vector<GpuDeviceNode> denied = DeniedGpus(node_gpus, given);
  std::vector<ContainerDevice> devices;
  for (const GpuDeviceNode& d : node_gpus) {
    if (std::find(denied.begin(), denied.end(), d) != denied.end()) continue;
    devices.push_back({d.gi < 0 ? fmt::format("/dev/nvidia{}", d.index)
                                : fmt::format("/dev/nvidia-caps/nvidia-cap{}", d.minor),
                       d.major, d.minor, ""});
  }
  return devices;
}

UserEntries MissingUserEntries(std::string_view passwd, std::string_view group,
                               const UserAccount& user, const std::string& group_name) {
  // Field `index` of each line (name:x:id:...), as the file has them.
  auto has = [](std::string_view file, size_t index, std::string_view value) {
    for (std::string_view line : Split(file, '\n')) {
      std::vector<std::string_view> fields = Split(line, ':');
      if (fields.size() > index && fields[index] == value) return true;
    }
    return false;
  };
  UserEntries out;
  const std::string uid = std::to_string(user.uid);
  const std::string gid = std::to_string(user.gid);
  if (!has(passwd, 0, user.name) && !has(passwd, 2, uid)) {
    out.passwd = fmt::format("{}:x:{}:{}:{}:{}:/bin/sh\n", user.name, uid, gid, user.name,
                             user.home.empty() ? "/" : user.home);
  }
  if (!has(group, 2, gid)) out.group = fmt::format("{}:x:{}:\n", group_name, gid);
  return out;
}

Result<std::unique_ptr<StepContainer>> StepContainer::Prepare(
    const SupervisorRequest& request, const std::string& step_dir, const std::string& step_name,
    const std::string& work_dir, const std::vector<ContainerBind>& step_files) {
  if (::geteuid() != 0) return FailedPrecondition("containers need the agent to run as root");
  if (request.step.pty && !request.container.rootless) {
    return InvalidArgument(
        "--pty runs in a container only under the rootless runtime (the node's "
        "container_rootless)");
  }
  std::unique_ptr<StepContainer> c(new StepContainer());
  c->request_ = &request;
  c->dir_ = step_dir + "/ctr";
  c->work_dir_ = work_dir;
  SHOAL_RETURN_IF_ERROR(c->FindRuntime());
  SHOAL_RETURN_IF_ERROR(c->TakeImage());
  SHOAL_RETURN_IF_ERROR(c->MountRoot());
  c->AddUserEntries();
  SHOAL_RETURN_IF_ERROR(c->StageBinds(step_files));
  c->devices_ = StepGpuDevices(request.gpu_devices, FencedGpusOf(request.step));
  if (!c->devices_.empty()) {
    for (const char* path : kControlDevices) {
      if (Result<ContainerDevice> d = HostDevice(path); d.ok()) c->devices_.push_back(*d);
    }
  }
  SHOAL_RETURN_IF_ERROR(c->AddCdiDevices());
  if (c->rootless()) SHOAL_RETURN_IF_ERROR(c->StageDevices());
  c->cgroups_path_ = RuntimeCgroupPath(request.cgroup, step_name);
  return c;
}

bool StepContainer::rootless() const {
  return request_->container.rootless;
}

// A rootless runtime cannot make device files: they are made here, on a
// tmpfs of their own (the container's root is nodev), for it to bind.
Status StepContainer::StageDevices() {
  if (devices_.empty()) return Status::Ok();
  const std::string dir = dir_ + "/dev";
  if (::mkdir(dir.c_str(), 0711) != 0) return Internal(ErrnoMessage("mkdir " + dir));
  if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0711,size=64k") != 0)
    return Internal(ErrnoMessage("mount tmpfs on " + dir));
  for (size_t i = 0; i < devices_.size(); ++i) {
    ContainerDevice& d = devices_[i];
    d.host_path = fmt::format("{}/{}", dir, i);
    if (::mknod(d.host_path.c_str(), S_IFCHR | 0666, makedev(d.major, d.minor)) != 0 ||
        ::chmod(d.host_path.c_str(), 0666) != 0) {
      return Internal(ErrnoMessage("mknod " + d.host_path));
    }
  }
  return Status::Ok();
}

// The CDI specs' device files, as the host has them.
Status StepContainer::AddCdiDevices() {
  for (const CdiEdits::DeviceNode& node : request_->cdi.devices) {
    Result<ContainerDevice> d = HostDevice(node.host_path.empty() ? node.path : node.host_path);
    if (!d.ok())
      return FailedPrecondition(fmt::format("CDI device {}: {}", node.path, d.status().message()));
    d->path = node.path;
    const bool known = std::any_of(devices_.begin(), devices_.end(),
                                   [&d](const ContainerDevice& e) { return e.path == d->path; });
    if (!known) devices_.push_back(*d);
  }
  return Status::Ok();
}

StepContainer::~StepContainer() {
  if (image_lock_ >= 0) ::close(image_lock_);
}

Status StepContainer::FindRuntime() {
  const std::string& name = request_->container.runtime;
  runtime_ = FindProgram(name, kRuntimeSearchPath);
  if (runtime_.empty()) {
    return FailedPrecondition(
        fmt::format("the container runtime '{}' is not installed on this node (the agent's "
                    "container_runtime)",
                    name));
  }
  // runc runs rootless only with the container's root mapped to the user
  // (or subordinate ids); Shoal's rootless containers keep the user's uid.
  if (rootless() && runtime_.substr(runtime_.rfind('/') + 1) == "runc") {
    return FailedPrecondition(
        "runc does not run rootless containers here: set the agent's container_runtime to crun, "
        "or container_rootless to false");
  }
  return Status::Ok();
}

Status StepContainer::TakeImage() {
  const ContainerHost& host = request_->container;
  const std::string& image = request_->step.container.image;
  SHOAL_ASSIGN_OR_RETURN(const std::string file, ImageFileFor(image, host.image_dir));
  int fd;
  {
    // A path the job names is read with the user's rights; the node's
    // image folder is the admins', read as root.
    std::optional<AsUser> as_user;
    if (image.starts_with('/')) as_user.emplace(request_->account);
    fd = as_user && !as_user->ok()
             ? -1
             : ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  }
  if (fd < 0) {
    return FailedPrecondition(fmt::format("container image {}: {} (as user '{}')", file,
                                          std::strerror(errno), request_->account.name));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return FailedPrecondition(fmt::format("container image {}: not a file", file));
  }
  // Rootless, each user has the image unpacked as their own files.
  const std::string owner =
      rootless() ? fmt::format("{}:{}", request_->account.uid, request_->account.gid) : "";
  const std::string key =
      rootless() ? fmt::format("{}-u{}", ImageKey(st), request_->account.uid) : ImageKey(st);
  const ImagePaths paths = PathsOf(host.cache_dir, key);
  if (::mkdir(host.cache_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    ::close(fd);
    return Internal(ErrnoMessage("mkdir " + host.cache_dir));
  }
  image_lock_ = ::open(paths.lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (image_lock_ < 0 || ::flock(image_lock_, LOCK_SH) != 0) {
    ::close(fd);
    return Internal(ErrnoMessage("lock " + paths.lock));
  }
  Status unpacked =
      ::access(paths.ready.c_str(), F_OK) == 0 ? Status::Ok() : RunImageTool(host, key, fd, owner);
  ::close(fd);
  if (!unpacked.ok()) return unpacked.WithContext("container image " + image);
  ::utimensat(AT_FDCWD, paths.ready.c_str(), nullptr, 0);  // recently used: evicted last
  SHOAL_ASSIGN_OR_RETURN(const std::string text, ReadFile(paths.config));
  SHOAL_ASSIGN_OR_RETURN(const ImageConfig config, ParseImageConfig(text));
  image_env_ = config.env;
  image_work_dir_ = config.work_dir;
  rootfs_ = paths.rootfs;
  return Status::Ok();
}

Status StepContainer::MountRoot() {
  // A mount namespace of the supervisor's own, which receives the host's
  // mounts and gives none back.
  if (::unshare(CLONE_NEWNS) != 0) return Internal(ErrnoMessage("unshare(CLONE_NEWNS)"));
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)
    return Internal(ErrnoMessage("mount --make-rslave /"));
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
    return Internal(ErrnoMessage("mkdir " + dir_));
  const int64_t mib =
      request_->step.memory_mib > 0 ? request_->step.memory_mib : kDefaultOverlayMib;
  // Rootless, the runtime (the user) passes through to the root, the
  // staged mounts and the bundles, and keeps its state in a folder of its
  // own. Only the supervisor and its children see this tmpfs.
  const std::string tmpfs_options =
      fmt::format("mode={},size={}m", rootless() ? "0711" : "0700", mib);
  if (::mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_options.c_str()) != 0)
    return Internal(ErrnoMessage("mount tmpfs on " + dir_));
  for (const char* sub : {"upper", "work", "root", "mnt", "state"}) {
    const std::string path = dir_ + "/" + sub;
    const bool passed = rootless() && std::string_view(sub) == "mnt";
    if (::mkdir(path.c_str(), passed ? 0711 : 0700) != 0)
      return Internal(ErrnoMessage("mkdir " + path));
  }
  const UserAccount& user = request_->account;
  if (rootless() && ::chown((dir_ + "/state").c_str(), user.uid, user.gid) != 0)
    return Internal(ErrnoMessage("chown " + dir_ + "/state"));
  if (rootless()) SHOAL_RETURN_IF_ERROR(HideCgroupV2());
  // The overlay's root takes its owner and mode from the upper folder's:
  // give it the image's.
  struct stat image_root {};
  if (::stat(rootfs_.c_str(), &image_root) != 0) return Internal(ErrnoMessage("stat " + rootfs_));
  const std::string upper = dir_ + "/upper";
  if (::chmod(upper.c_str(), image_root.st_mode & 07777) != 0 ||
      ::chown(upper.c_str(), image_root.st_uid, image_root.st_gid) != 0) {
    return Internal(ErrnoMessage("chmod " + upper));
  }
  const std::string overlay =
      fmt::format("lowerdir={},upperdir={}/upper,workdir={}/work", rootfs_, dir_, dir_);
  if (::mount("overlay", (dir_ + "/root").c_str(), "overlay", MS_NOSUID | MS_NODEV,
              overlay.c_str()) != 0) {
    return Internal(ErrnoMessage("mount the image's overlay"));
  }
  return Status::Ok();
}

namespace {

// Opens `path` inside the tree at `root` as if it were "/": its symbolic
// links and ".." never lead out of it, nor onto another mount (an image
// is untrusted, and this runs as root).
int OpenInRoot(int root, const char* path, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) != 0 ? 0644 : 0;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  return static_cast<int>(::syscall(SYS_openat2, root, path, &how, sizeof how));
}

// Appends `wanted(contents)` to the regular file `path` in the container's
// root, made if missing (in the step's overlay: the cache never sees it).
// Best effort (an image without /etc gets nothing): whether it was written.
template <typename Wanted>
bool AppendInRoot(int root, const char* path, Wanted&& wanted) {
  const int fd = OpenInRoot(root, path, O_RDWR | O_APPEND | O_CREAT | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  constexpr off_t kMaxBytes = 16 << 20;
  bool written = false;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= kMaxBytes) {
    std::string contents(static_cast<size_t>(st.st_size), '\0');
    const ssize_t n = ::pread(fd, contents.data(), contents.size(), 0);
    contents.resize(n > 0 ? static_cast<size_t>(n) : 0);
    std::string text = wanted(contents);
    if (!contents.empty() && contents.back() != '\n' && !text.empty()) text.insert(0, "\n");
    // One write: O_APPEND puts it at the end whole.
    written = text.empty() || ::write(fd, text.data(), text.size()) == std::ssize(text);
  }
  ::close(fd);
  return written;
}

}  // namespace

void StepContainer::AddUserEntries() const {
  const UserAccount& user = request_->account;
  const int root = ::open((dir_ + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return;
  std::string group_name = user.name;
  std::vector<char> buffer(16384);
  group grp{};
  group* found = nullptr;
  if (::getgrgid_r(user.gid, &grp, buffer.data(), buffer.size(), &found) == 0 && found != nullptr)
    group_name = found->gr_name;
  AppendInRoot(root, "/etc/passwd", [&](const std::string& passwd) {
    return MissingUserEntries(passwd, "", user, group_name).passwd;
  });
  AppendInRoot(root, "/etc/group", [&](const std::string& groups) {
    return MissingUserEntries("", groups, user, group_name).group;
  });
  ::close(root);
}

// crun refuses the hybrid cgroup layout (v1 controllers beside a v2
// hierarchy that holds one, such as hugetlb), even with no cgroup manager.
// Shoal uses the v1 hierarchies there; the runtime is shown an empty folder
// where the v2 one is, in this mount namespace only.
Status StepContainer::HideCgroupV2() {
  constexpr char kUnified[] = "/sys/fs/cgroup/unified";
  if (request_->cgroup.version == CgroupVersion::kV2) return Status::Ok();
  Result<std::string> controllers = ReadFile(std::string(kUnified) + "/cgroup.controllers");
  if (!controllers.ok() || Trim(*controllers).empty()) return Status::Ok();
  if (::mount("tmpfs", kUnified, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0555,size=4k") != 0) {
    return Internal(ErrnoMessage(std::string("hide ") + kUnified));
  }
  return Status::Ok();
}

Status StepContainer::StageBinds(const std::vector<ContainerBind>& step_files) {
  const UserAccount& user = request_->account;
  const ContainerSpec& spec = request_->step.container;
  std::vector<ContainerMount> wanted;
  if (spec.mount_home && !user.home.empty()) wanted.push_back({user.home, user.home, false});
  // The work folder, unless the home holds it or is not to be mounted.
  const bool in_home = work_dir_ == user.home || work_dir_.starts_with(user.home + "/");
  work_dir_mounted_ = !work_dir_.empty() && (in_home ? spec.mount_home : true);
  if (work_dir_mounted_ && !(in_home && spec.mount_home))
    wanted.push_back({work_dir_, work_dir_, false});
  wanted.insert(wanted.end(), spec.mounts.begin(), spec.mounts.end());
  for (size_t i = 0; i < wanted.size(); ++i) {
    const ContainerMount& m = wanted[i];
    int fd;
    {
      AsUser as_user(user);
      fd = as_user.ok() ? ::open(m.source.c_str(), O_PATH | O_CLOEXEC) : -1;
    }
    if (fd < 0) {
      return FailedPrecondition(fmt::format("container mount {}: {} (as user '{}')", m.source,
                                            std::strerror(errno), user.name));
    }
    struct stat st {};
    ::fstat(fd, &st);
    const std::string staged = fmt::format("{}/mnt/{}", dir_, i);
    const int made = S_ISDIR(st.st_mode)
                         ? ::mkdir(staged.c_str(), 0700)
                         : ::close(::open(staged.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
    const std::string from = fmt::format("/proc/self/fd/{}", fd);
    const int bound =
        made == 0 ? ::mount(from.c_str(), staged.c_str(), nullptr, MS_BIND | MS_REC, nullptr) : -1;
    const int error = errno;
    ::close(fd);
    if (bound != 0) {
      return Internal(
          fmt::format("container mount {}: staging: {}", m.source, std::strerror(error)));
    }
    binds_.push_back({staged, m.target, m.read_only});
  }
  binds_.insert(binds_.end(), step_files.begin(), step_files.end());
  return Status::Ok();
}

Result<std::vector<std::string>> StepContainer::TaskCommand(
    int rank, const std::vector<std::string>& task_env, const std::vector<std::string>& shoal_env,
    const std::vector<std::string>& argv) const {
  const UserAccount& user = request_->account;
  const ContainerSpec& spec = request_->step.container;
  RuntimeSpec s;
  s.root = dir_ + "/root";
  s.uid = user.uid;
  s.gid = user.gid;
  s.groups = user.groups;
  s.argv = argv;
  // The CDI specs' variables count as the image's: Shoal's own win.
  std::vector<std::string> image_env = image_env_;
  image_env.insert(image_env.end(), request_->cdi.env.begin(), request_->cdi.env.end());
  s.env = ContainerEnvironment(task_env, image_env, spec.env, shoal_env);
  s.cdi_mounts = request_->cdi.mounts;
  s.hooks = request_->cdi.hooks;
  s.cwd = !spec.work_dir.empty() ? spec.work_dir : work_dir_mounted_ ? work_dir_ : image_work_dir_;
  s.binds = binds_;
  s.devices = devices_;
  s.rootless = rootless();
  // As root, each task in a cgroup of its own below the step's (whose
  // limits and device fence hold for it): the runtime empties it when the
  // task ends. Rootless, the task is in the step's own cgroup already.
  s.cgroups_path = fmt::format("{}/task{}", cgroups_path_, rank);
  const std::string bundle = fmt::format("{}/task{}", dir_, rank);
  if (::mkdir(bundle.c_str(), s.rootless ? 0711 : 0700) != 0 && errno != EEXIST)
    return Internal(ErrnoMessage("mkdir " + bundle));
  // The runtime's own warnings go to a log beside the bundle, not into the
  // job's output; why a task could not start still reaches its stderr.
  const std::string config = bundle + "/config.json";
  const std::string log = bundle + "/runtime.log";
  SHOAL_RETURN_IF_ERROR(WriteFile(config, RuntimeConfigJson(s), 0600));
  if (s.rootless) {
    SHOAL_RETURN_IF_ERROR(WriteFile(log, "", 0600));
    for (const std::string& file : {config, log}) {
      if (::chown(file.c_str(), user.uid, user.gid) != 0)
        return Internal(ErrnoMessage("chown " + file));
    }
  }
  const StepRequest& step = request_->step;
  std::vector<std::string> command = {runtime_, "--root", dir_ + "/state", "--log", log};
  if (s.rootless) command.push_back("--cgroup-manager=disabled");
  command.insert(command.end(),
                 {"run", "--bundle", bundle,
                  fmt::format("shoal-{}.{}.{}.{}", step.job, step.epoch, step.step, rank)});
  return command;
}

}  // namespace shoal::agent
