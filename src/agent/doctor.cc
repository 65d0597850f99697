#include "agent/doctor.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/timex.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "agent/gpu/provider.h"
#include "agent/launch/cgroup.h"
#include "core/files.h"
#include "core/strings.h"

namespace shoal::agent {
namespace {

using Level = DoctorCheck::Level;

DoctorCheck Check(std::string name, Level level, std::string detail, std::string fix = "") {
  return {std::move(name), level, std::move(detail), std::move(fix)};
}

// The names in `dir`, sorted; none when it cannot be read.
std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string Read(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  return text.ok() ? std::string(Trim(*text)) : "";
}

struct Gpus {
  std::vector<GpuDevice> devices;
  std::vector<GpuSample> samples;
  std::string error;  // NVML could not be used
};

Gpus ReadGpus(const DoctorOptions& o) {
  Gpus g;
  auto nvml = OpenNvml(o.nvml_library);
  if (!nvml.ok()) {
    g.error = nvml.status().message();
    return g;
  }
  auto devices = (*nvml)->Discover();
  if (!devices.ok()) {
    g.error = devices.status().message();
    return g;
  }
  g.devices = std::move(*devices);
  if (auto samples = (*nvml)->Sample(); samples.ok()) g.samples = std::move(*samples);
  return g;
}

DoctorCheck DriverCheck(const Gpus& g) {
  if (!g.error.empty()) {
    return Check("NVIDIA driver", Level::kFail, g.error,
                 "install the NVIDIA driver and check that its kernel module is loaded "
                 "(nvidia-smi must list the GPUs)");
  }
  if (g.devices.empty()) {
    return Check("NVIDIA driver", Level::kWarn, "NVML works but sees no GPU",
                 "check that the GPUs are seated and powered (lspci | grep -i nvidia)");
  }
  std::map<std::string, int> models;
  for (const GpuDevice& d : g.devices)
    ++models[d.model];
  std::vector<std::string> parts;
  for (const auto& [model, n] : models)
    parts.push_back(fmt::format("{} {}", n, model));
  const std::string& driver = g.devices[0].driver_version;
  return Check("NVIDIA driver", Level::kPass,
               fmt::format("driver {}, {} GPUs: {}", driver.empty() ? "(version unknown)" : driver,
                           g.devices.size(), Join(parts, ", ")));
}

DoctorCheck HealthCheck(const Gpus& g) {
  std::vector<std::string> hot, ecc, xid;
  for (const GpuSample& s : g.samples) {
    auto d = std::find_if(g.devices.begin(), g.devices.end(),
                          [&](const GpuDevice& x) { return x.index == s.index; });
    if (d != g.devices.end() && d->temperature_limit_c > 0 &&
        s.temperature_c >= d->temperature_limit_c) {
      hot.push_back(fmt::format("GPU {} at {:.0f} °C (slowdown at {:.0f} °C)", s.index,
                                s.temperature_c, d->temperature_limit_c));
    }
    if (s.ecc_uncorrected > 0)
      ecc.push_back(fmt::format("GPU {}: {} uncorrectable ECC errors", s.index, s.ecc_uncorrected));
    if (s.xid_errors > 0) xid.push_back(fmt::format("GPU {}: XID {}", s.index, s.last_xid));
  }
  if (!hot.empty()) {
    return Check("GPU health", Level::kFail, Join(hot, "; "),
                 "check the cooling (fans, airflow, inlet temperature) before running jobs");
  }
  if (!ecc.empty() || !xid.empty()) {
    std::vector<std::string> all = ecc;
    all.insert(all.end(), xid.begin(), xid.end());
    return Check("GPU health", Level::kWarn, Join(all, "; ") + " since the driver loaded",
                 "run `shoal bench node` on this node; if the errors come back, drain it and "
                 "follow NVIDIA's XID and ECC guides (nvidia-smi -q -d ECC)");
  }
  return Check("GPU health", Level::kPass,
               fmt::format("{} GPUs: no uncorrectable ECC error, no XID, below their slowdown "
                           "temperature",
                           g.samples.size()));
}

// Without persistence mode the driver tears a GPU down when no process holds
// it and sets it up again for the next: seconds at each job's start.
DoctorCheck PersistenceCheck(const Gpus& g) {
  std::vector<std::string> off;
  int known = 0;
  for (const GpuDevice& d : g.devices) {
    if (d.persistence_mode >= 0) ++known;
    if (d.persistence_mode == 0) off.push_back(std::to_string(d.index));
  }
  if (!off.empty()) {
    return Check("GPU persistence mode", Level::kWarn,
                 fmt::format("off on GPUs {}: each job's start waits for the driver to set them "
                             "up again",
                             Join(off, ",")),
                 "run nvidia-persistenced (systemctl enable --now nvidia-persistenced)");
  }
  if (known == 0) return Check("GPU persistence mode", Level::kPass, "not reported by this driver");
  return Check("GPU persistence mode", Level::kPass, fmt::format("on for all {} GPUs", known));
}

// NVSwitch systems (HGX/DGX) need NVIDIA's fabric manager before CUDA can
// use the GPUs at all.
DoctorCheck FabricManagerCheck(const DoctorOptions& o) {
  int switches = 0;
  for (const std::string& name : List(o.dev)) {
    if (name.starts_with("nvidia-nvswitch") && name != "nvidia-nvswitchctl") ++switches;
  }
  if (switches == 0)
    return Check("NVSwitch fabric manager", Level::kPass, "no NVSwitch here: not needed");
  bool running = false;
  for (const std::string& pid : List(o.proc)) {
    if (!pid.empty() && std::all_of(pid.begin(), pid.end(), ::isdigit) &&
        Read(o.proc + "/" + pid + "/comm") == "nv-fabricmanager") {
      running = true;
      break;
    }
  }
  if (running) {
    return Check("NVSwitch fabric manager", Level::kPass,
                 fmt::format("{} NVSwitches, nv-fabricmanager running", switches));
  }
  return Check("NVSwitch fabric manager", Level::kFail,
               fmt::format("{} NVSwitches and no nv-fabricmanager: CUDA cannot start on these GPUs",
                           switches),
               "install and start nvidia-fabricmanager, of the driver's exact version "
               "(systemctl enable --now nvidia-fabricmanager)");
}

// A library check: `library` loads (pass), or `missing` with the fix.
DoctorCheck LibraryCheck(std::string name, const std::string& library, Level missing,
                         std::string fix) {
  void* handle = ::dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr)
    return Check(std::move(name), missing, library + " not found on the library path",
                 std::move(fix));
  ::dlclose(handle);
  return Check(std::move(name), Level::kPass, library + " loads");
}

std::vector<DoctorCheck> LibraryChecks(const DoctorOptions& o) {
  return {LibraryCheck("CUDA driver library", o.cuda_library, Level::kFail,
                       "install the driver's CUDA library (Debian: libcuda1 from "
                       "nvidia-driver); jobs' CUDA needs it"),
          LibraryCheck("NCCL", o.nccl_library, Level::kWarn,
                       "frameworks that bring their own (PyTorch's wheels) need nothing; for "
                       "`shoal bench` NCCL tests and MPI jobs install libnccl2")};
}

// A CUDA version as the driver API counts it: 1000 * major + 10 * minor
// ("12.4" and "12.4.1" are 12040); 0 when `text` is not one.
int CudaVersionNumber(std::string_view text) {
  const std::vector<std::string_view> parts = Split(Trim(text), '.');
  if (parts.size() < 2) return 0;
  auto major = ParseInt(parts[0]);
  auto minor = ParseInt(parts[1]);
  if (!major.ok() || !minor.ok() || *major < 1 || *minor < 0 || *minor > 99) return 0;
  return static_cast<int>(*major * 1000 + *minor * 10);
}

std::string CudaVersionText(int v) {
  return fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

// The CUDA jobs need (given, or the installed toolkit's) against the
// newest the driver supports (cuDriverGetVersion). Within one major
// version an older driver still runs newer CUDA through minor version
// compatibility, short of PTX JIT and the newest features (NVIDIA's CUDA
// Compatibility guide); across major versions it does not.
DoctorCheck CudaVersionCheck(const DoctorOptions& o) {
  const std::string name = "CUDA version";
  void* lib = ::dlopen(o.cuda_library.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr)
    return Check(name, Level::kWarn, "cannot tell: " + o.cuda_library + " does not load",
                 "see the CUDA driver library check");
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(::dlsym(lib, "cuDriverGetVersion"));
  int driver = 0;
  const bool known = get != nullptr && get(&driver) == 0 && driver > 0;
  ::dlclose(lib);
  if (!known)
    return Check(name, Level::kWarn, "the driver does not say which CUDA it supports",
                 "check the driver's installation (nvidia-smi shows \"CUDA Version\")");
  std::string source = "--cuda";
  std::string needed_text = o.cuda_needed;
  if (needed_text.empty()) {
    source = o.cuda_home + "/version.json";
    const auto j = nlohmann::json::parse(Read(source), nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("cuda") && j["cuda"].is_object() &&
        j["cuda"].contains("version") && j["cuda"]["version"].is_string())
      needed_text = j["cuda"]["version"].get<std::string>();
  }
  const std::string supports = "the driver supports CUDA " + CudaVersionText(driver);
  if (needed_text.empty()) {
    return Check(name, Level::kPass,
                 supports + "; no CUDA toolkit at " + o.cuda_home +
                     " (jobs bring their own: shoal doctor --cuda X.Y checks one)");
  }
  const int needed = CudaVersionNumber(needed_text);
  if (needed == 0)
    return Check(name, Level::kWarn, "'" + needed_text + "' (" + source + ") is not a CUDA version",
                 "give it as MAJOR.MINOR, e.g. --cuda 12.4");
  const std::string detail =
      fmt::format("{}; jobs need {} ({})", supports, CudaVersionText(needed), source);
  if (driver >= needed) return Check(name, Level::kPass, detail);
  if (driver / 1000 == needed / 1000) {
    return Check(name, Level::kWarn, detail,
                 "it runs through minor version compatibility, except code that JIT-compiles "
                 "PTX or needs the newer driver's features; update the driver to be sure");
  }
  return Check(name, Level::kFail, detail,
               fmt::format("install a driver that supports CUDA {} (NVIDIA's CUDA Compatibility "
                           "guide lists the minimum driver per release), or, on data-center "
                           "GPUs, the cuda-compat forward compatibility package",
                           CudaVersionText(needed)));
}

struct RdmaPort {
  std::string device, port, state, link_layer, rate;
  int numa = -1;
  bool active() const { return state.find("ACTIVE") != std::string::npos; }
};

std::vector<RdmaPort> ReadRdmaPorts(const DoctorOptions& o) {
  std::vector<RdmaPort> ports;
  const std::string base = o.sys + "/class/infiniband";
  for (const std::string& dev : List(base)) {
    const std::string numa = Read(base + "/" + dev + "/device/numa_node");
    Result<int64_t> n = ParseInt(numa);
    for (const std::string& port : List(base + "/" + dev + "/ports")) {
      const std::string p = base + "/" + dev + "/ports/" + port;
      ports.push_back({dev, port, Read(p + "/state"), Read(p + "/link_layer"), Read(p + "/rate"),
                       n.ok() ? static_cast<int>(*n) : -1});
    }
  }
  return ports;
}

DoctorCheck RdmaCheck(const std::vector<RdmaPort>& ports) {
  if (ports.empty()) {
    return Check("InfiniBand/RoCE", Level::kWarn,
                 "no RDMA device: jobs across nodes would talk over TCP",
                 "install the NIC's driver and rdma-core (ibv_devices must list it); a "
                 "single-node cluster needs none");
  }
  std::vector<std::string> lines, down;
  for (const RdmaPort& p : ports) {
    const std::string line =
        fmt::format("{}/{} {} {} {}", p.device, p.port, p.link_layer.empty() ? "?" : p.link_layer,
                    p.rate.empty() ? "?" : p.rate, p.state.empty() ? "?" : p.state);
    lines.push_back(line);
    if (!p.active()) down.push_back(line);
  }
  if (!down.empty()) {
    return Check("InfiniBand/RoCE", Level::kWarn, "not active: " + Join(down, "; "),
                 "check the cable and link (ibstat); on InfiniBand a subnet manager must run "
                 "(the switch's, or opensm)");
  }
  return Check("InfiniBand/RoCE", Level::kPass, Join(lines, "; "));
}

// Each GPU talks to other nodes best through a NIC on its own NUMA node.
DoctorCheck NumaCheck(const Gpus& g, const std::vector<RdmaPort>& ports) {
  std::set<int> nic_nodes;
  for (const RdmaPort& p : ports) {
    if (p.active()) nic_nodes.insert(p.numa);
  }
  if (nic_nodes.count(-1) > 0) {
    return Check("GPU-NIC NUMA affinity", Level::kPass,
                 "the kernel gives no NUMA node for the NICs (one NUMA node, or unknown)");
  }
  std::map<int, std::vector<std::string>> without;  // NUMA node -> its GPUs without a NIC
  for (const GpuDevice& d : g.devices) {
    if (nic_nodes.count(d.numa_node) == 0) without[d.numa_node].push_back(std::to_string(d.index));
  }
  if (without.empty()) {
    return Check(
        "GPU-NIC NUMA affinity", Level::kPass,
        fmt::format("every GPU has an active NIC on its NUMA node ({} nodes)", nic_nodes.size()));
  }
  std::vector<std::string> parts;
  for (const auto& [node, gpus] : without)
    parts.push_back(fmt::format("GPUs {} on NUMA node {}", Join(gpus, ","), node));
  return Check("GPU-NIC NUMA affinity", Level::kWarn,
               Join(parts, "; ") + " have no active NIC there: their traffic crosses sockets",
               "put a NIC on each socket's PCIe root (the server's topology guide; nvidia-smi "
               "topo -m shows the paths)");
}

DoctorCheck CgroupCheck(const DoctorOptions& o) {
  const std::vector<MountEntry> mounts = ParseMountInfo(Read(o.proc + "/self/mountinfo"));
  std::set<std::string> v1;
  for (const MountEntry& m : mounts) {
    if (m.fs_type == "cgroup2") {
      const std::string text = Read(m.mount_point + "/cgroup.controllers");
      const std::vector<std::string_view> controllers = Split(text, ' ');
      const auto has = [&](std::string_view c) {
        return std::find(controllers.begin(), controllers.end(), c) != controllers.end();
      };
      if (has("cpu") && has("memory")) {
        return Check("cgroups", Level::kPass,
                     fmt::format("v2 at {} with cpu and memory", m.mount_point));
      }
    } else if (m.fs_type == "cgroup") {
      v1.insert(m.super_options.begin(), m.super_options.end());
    }
  }
  if (v1.count("cpu") > 0 && v1.count("memory") > 0) {
    return Check("cgroups", Level::kPass,
                 std::string("v1 with cpu and memory") +
                     (v1.count("devices") > 0 ? " (and devices, for GPU fences)" : ""));
  }
  return Check("cgroups", Level::kWarn,
               "no cgroup hierarchy with cpu and memory: jobs' CPU and memory are not limited",
               "boot with the unified hierarchy (systemd.unified_cgroup_hierarchy=1) and the "
               "cpu and memory controllers enabled");
}

// --container-image jobs: the runtime, and (rootless) the user namespaces
// it makes as the job's user. A warning at worst: containers are optional.
DoctorCheck ContainerCheck(const DoctorOptions& o) {
  constexpr char kName[] = "containers";
  const std::string runtime = FindProgram(o.container_runtime, o.path);
  if (runtime.empty()) {
    return Check(kName, Level::kWarn,
                 fmt::format("the runtime '{}' is not installed: --container-image jobs fail "
                             "at launch",
                             o.container_runtime),
                 o.container_rootless ? "apt-get install crun" : "apt-get install runc");
  }
  if (!o.container_rootless)
    return Check(kName, Level::kPass, runtime + ", run as root (container_rootless = false)");
  const std::string sys = o.proc + "/sys/";
  const std::string max = Read(sys + "user/max_user_namespaces");
  const std::string clone = Read(sys + "kernel/unprivileged_userns_clone");
  const std::string apparmor = Read(sys + "kernel/apparmor_restrict_unprivileged_userns");
  std::string refused;
  if (max == "0") refused = "user.max_user_namespaces is 0";
  if (clone == "0") refused = "kernel.unprivileged_userns_clone is 0";
  if (apparmor == "1") refused = "kernel.apparmor_restrict_unprivileged_userns is 1";
  if (!refused.empty()) {
    return Check(kName, Level::kWarn,
                 fmt::format("{}, rootless: unprivileged user namespaces are refused ({}): "
                             "--container-image jobs fail at launch",
                             runtime, refused),
                 "allow them (sysctl, or an AppArmor profile for the runtime), or set the "
                 "agent's container_rootless = false to run the runtime as root");
  }
  return Check(kName, Level::kPass, runtime + ", rootless (unprivileged user namespaces allowed)");
}

DoctorCheck ClockCheck() {
  timex tx{};
  const int state = ::adjtimex(&tx);
  if (state == TIME_ERROR || (tx.status & STA_UNSYNC) != 0) {
    return Check("clock", Level::kWarn, "the system clock is not synchronised",
                 "run chrony or ntpd: launch orders carry a deadline, and a node whose clock is "
                 "off by more than the launch grace refuses them");
  }
  return Check("clock", Level::kPass,
               fmt::format("synchronised, estimated error {:.1f} ms",
                           static_cast<double>(tx.esterror) / 1000.0));
}

DoctorCheck FilesCheck() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return Check("open files", Level::kWarn, "the limit cannot be read");
  const std::string detail = fmt::format("soft {}, hard {}", limit.rlim_cur, limit.rlim_max);
  if (limit.rlim_max < 65536) {
    return Check("open files", Level::kWarn, detail,
                 "raise the hard limit to 65,536 or more (LimitNOFILE= in the agent's unit, "
                 "which the package sets)");
  }
  return Check("open files", Level::kPass, detail);
}

// The nearest folder of `path` that exists: where a folder not made yet
// will be.
std::filesystem::path NearestExisting(const std::string& path) {
  std::filesystem::path at = path;
  std::error_code ec;
  while (!at.empty() && !std::filesystem::exists(at, ec) && at.has_parent_path() &&
         at != at.parent_path())
    at = at.parent_path();
  return at;
}

DoctorCheck DiskCheck(const DoctorOptions& o) {
  const std::filesystem::path at = NearestExisting(o.state_dir);
  struct statvfs fs {};
  if (::statvfs(at.c_str(), &fs) != 0)
    return Check("disk space", Level::kWarn, "cannot read the free space of " + at.string());
  const double free_gib =
      static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) / (1 << 30);
  const std::string detail =
      fmt::format("{:.1f} GiB free for {} (on {})", free_gib, o.state_dir, at.string());
  const char* fix =
      "free space there: the agent keeps the node's certificate and where each finished job's "
      "output went";
  if (free_gib < 0.1) return Check("disk space", Level::kFail, detail, fix);
  if (free_gib < 1) return Check("disk space", Level::kWarn, detail, fix);
  return Check("disk space", Level::kPass, detail);
}

// Each job makes its step's folder and files in steps_dir: on a disk file
// system that has seen many files come and go, that cost more CPU than the
// rest of a job's start (docs/agent.md).
DoctorCheck StepsFolderCheck(const DoctorOptions& o) {
  const std::filesystem::path at = NearestExisting(o.steps_dir);
  struct statfs fs {};
  if (::statfs(at.c_str(), &fs) != 0)
    return Check("steps folder", Level::kWarn, "cannot read the file system of " + at.string());
  if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC)
    return Check("steps folder", Level::kPass, o.steps_dir + " on a tmpfs");
  return Check("steps folder", Level::kWarn,
               fmt::format("{} is not on a tmpfs (file system type {:#x})", o.steps_dir,
                           static_cast<uint64_t>(fs.f_type)),
               "put the agent's steps_dir on a tmpfs (/run on most hosts, the package's "
               "/run/shoal-agent/steps; else /dev/shm): on a disk, making each job's files "
               "costs more CPU than the rest of its start");
}

}  // namespace

std::vector<DoctorCheck> RunDoctor(const DoctorOptions& o) {
  std::vector<DoctorCheck> checks;
  const Gpus gpus = ReadGpus(o);
  checks.push_back(DriverCheck(gpus));
  if (!gpus.devices.empty()) {
    checks.push_back(HealthCheck(gpus));
    checks.push_back(PersistenceCheck(gpus));
  }
  checks.push_back(FabricManagerCheck(o));
  for (DoctorCheck& c : LibraryChecks(o))
    checks.push_back(std::move(c));
  checks.push_back(CudaVersionCheck(o));
  const std::vector<RdmaPort> ports = ReadRdmaPorts(o);
  checks.push_back(RdmaCheck(ports));
  if (!gpus.devices.empty() && !ports.empty()) checks.push_back(NumaCheck(gpus, ports));
  checks.push_back(CgroupCheck(o));
  checks.push_back(ContainerCheck(o));
  checks.push_back(ClockCheck());
  checks.push_back(FilesCheck());
  checks.push_back(DiskCheck(o));
  checks.push_back(StepsFolderCheck(o));
  return checks;
}

const char* LevelName(DoctorCheck::Level level) {
  switch (level) {
    case Level::kPass:
      return "pass";
    case Level::kWarn:
      return "warn";
    case Level::kFail:
      return "fail";
  }
  return "?";
}

namespace {
std::map<Level, int> Counts(const std::vector<DoctorCheck>& checks) {
  std::map<Level, int> n{{Level::kPass, 0}, {Level::kWarn, 0}, {Level::kFail, 0}};
  for (const DoctorCheck& c : checks)
    ++n[c.level];
  return n;
}
}  // namespace

std::string DoctorText(const std::vector<DoctorCheck>& checks) {
  size_t width = 0;
  for (const DoctorCheck& c : checks)
    width = std::max(width, c.name.size());
  std::string out;
  for (const DoctorCheck& c : checks) {
    out += fmt::format("{}  {:<{}}  {}\n", LevelName(c.level), c.name, width, c.detail);
    if (!c.fix.empty()) out += fmt::format("      fix: {}\n", c.fix);
  }
  const auto n = Counts(checks);
  out += fmt::format("{} pass, {} warn, {} fail\n", n.at(Level::kPass), n.at(Level::kWarn),
                     n.at(Level::kFail));
  return out;
}

std::string DoctorJson(const std::vector<DoctorCheck>& checks) {
  nlohmann::json list = nlohmann::json::array();
  for (const DoctorCheck& c : checks) {
    list.push_back(
        {{"name", c.name}, {"level", LevelName(c.level)}, {"detail", c.detail}, {"fix", c.fix}});
  }
  const auto n = Counts(checks);
  return nlohmann::json{{"checks", list},
                        {"pass", n.at(Level::kPass)},
                        {"warn", n.at(Level::kWarn)},
                        {"fail", n.at(Level::kFail)}}
      .dump(2);
}

}  // namespace shoal::agent
