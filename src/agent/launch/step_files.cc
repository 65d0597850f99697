#include "agent/launch/step_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "api/node_protocol.h"
#include "core/files.h"
#include "core/strings.h"

namespace shoal::agent {
namespace {

using Json = nlohmann::json;

int64_t MsOf(Time t) {
  return t.time_since_epoch().count();
}
Time TimeOfMs(int64_t ms) {
  return Time(Duration(ms));
}

std::optional<uint64_t> ParseU64(std::string_view s) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// [[device, gi, ci, cuda name], ...]
Json GpuUnitsJson(const std::vector<StepGpu>& units) {
  Json out = Json::array();
  for (const StepGpu& u : units)
    out.push_back({u.fence.device, u.fence.gi, u.fence.ci, u.cuda_name});
  return out;
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  for (std::string_view f : Split(Trim(line), ' ')) {
    if (!f.empty()) out.push_back(f);
  }
  return out;
}

// Our own files, read back: nlohmann's exceptions (a field of the wrong
// type in a damaged file) become a Status here and go no further.
template <typename T, typename F>
Result<T> ParseJson(std::string_view text, std::string_view what, F&& from_json) {
  try {
    return from_json(Json::parse(text));
  } catch (const Json::exception& e) {
    return Internal(fmt::format("unreadable {}: {}", what, e.what()));
  }
}

Json ContainerJson(const ContainerSpec& c) {
  Json mounts = Json::array();
  for (const ContainerMount& m : c.mounts)
    mounts.push_back({m.source, m.target, m.read_only});
  return {{"image", c.image},
          {"mounts", mounts},
          {"work_dir", c.work_dir},
          {"env", c.env},
          {"mount_home", c.mount_home}};
}

Json CdiJson(const CdiEdits& e) {
  Json devices = Json::array(), mounts = Json::array(), hooks = Json::array();
  for (const CdiEdits::DeviceNode& d : e.devices)
    devices.push_back({d.path, d.host_path});
  for (const CdiEdits::Mount& m : e.mounts)
    mounts.push_back({m.host_path, m.container_path, m.options});
  for (const CdiEdits::Hook& h : e.hooks)
    hooks.push_back({h.stage, h.path, h.args, h.env});
  return {{"devices", devices}, {"mounts", mounts}, {"env", e.env}, {"hooks", hooks}};
}

CdiEdits DecodeCdi(const Json& j) {
  CdiEdits e;
  for (const Json& d : j.at("devices"))
    e.devices.push_back({d.at(0).get<std::string>(), d.at(1).get<std::string>()});
  for (const Json& m : j.at("mounts")) {
    e.mounts.push_back({m.at(0).get<std::string>(), m.at(1).get<std::string>(),
                        m.at(2).get<std::vector<std::string>>()});
  }
  e.env = j.at("env").get<std::vector<std::string>>();
  for (const Json& h : j.at("hooks")) {
    e.hooks.push_back({h.at(0).get<std::string>(), h.at(1).get<std::string>(),
                       h.at(2).get<std::vector<std::string>>(),
                       h.at(3).get<std::vector<std::string>>()});
  }
  return e;
}

void DecodeContainer(const Json& j, SupervisorRequest& r) {
  const auto found = j.find("container");
  if (found == j.end()) return;
  const Json& c = *found;
  ContainerSpec& spec = r.step.container;
  spec.image = c.at("image").get<std::string>();
  for (const Json& m : c.at("mounts"))
    spec.mounts.push_back(
        {m.at(0).get<std::string>(), m.at(1).get<std::string>(), m.at(2).get<bool>()});
  spec.work_dir = c.at("work_dir").get<std::string>();
  spec.env = c.at("env").get<std::vector<std::string>>();
  spec.mount_home = c.at("mount_home").get<bool>();
  const Json& h = j.at("container_host");
  r.container.runtime = h.at("runtime").get<std::string>();
  r.container.rootless = h.at("rootless").get<bool>();
  r.container.image_dir = h.at("image_dir").get<std::string>();
  r.container.cache_dir = h.at("cache_dir").get<std::string>();
  r.container.cache_mib = h.at("cache_mib").get<int64_t>();
  r.container.image_tool = h.at("image_tool").get<std::string>();
  r.cdi = DecodeCdi(j.at("cdi"));
}

// The parent of `pid` from /proc/<pid>/stat; 0 when it is gone.
pid_t ParentOf(pid_t pid) {
  Result<std::string> stat = ReadFile(fmt::format("/proc/{}/stat", pid));
  if (!stat.ok()) return 0;
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string_view> fields;
  for (std::string_view f : Split(std::string_view(*stat).substr(close + 2), ' ')) {
    fields.push_back(f);
    if (fields.size() == 2) break;
  }
  if (fields.size() < 2) return 0;
  Result<int64_t> ppid = ParseInt(fields[1]);
  return ppid.ok() ? static_cast<pid_t>(*ppid) : 0;
}

}  // namespace

std::string StepDirName(StepKey key) {
  if (key.step == 0) return fmt::format("{}.{}", key.job, key.epoch);
  return fmt::format("{}.{}.{}", key.job, key.epoch, key.step);
}

std::optional<StepKey> ParseStepDirName(std::string_view name) {
  size_t dot = name.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::optional<uint64_t> job = ParseU64(name.substr(0, dot));
  std::string_view rest = name.substr(dot + 1);
  std::optional<uint64_t> step = 0;
  if (size_t second = rest.find('.'); second != std::string_view::npos) {
    step = ParseU64(rest.substr(second + 1));
    rest = rest.substr(0, second);
    if (step && *step == 0) return std::nullopt;  // step 0 has the two-part name
  }
  std::optional<uint64_t> epoch = ParseU64(rest);
  if (!job || !epoch || !step || *step > UINT32_MAX) return std::nullopt;
  return StepKey{*job, *epoch, static_cast<uint32_t>(*step)};
}

std::string EncodeRequest(const SupervisorRequest& request) {
  const StepRequest& s = request.step;
  const CgroupLayout& c = request.cgroup;
  Json j = {
      {"job", s.job},
      {"epoch", s.epoch},
      {"user", s.user},
      {"job_account", s.job_account},
      {"job_name", s.job_name},
      {"gpu_power_cap_w", s.gpu_power_cap_w},
      {"command", s.command},
      {"script", s.script},
      {"work_dir", s.work_dir},
      {"stdout_path", s.stdout_path},
      {"stderr_path", s.stderr_path},
      {"env", s.env},
      {"array_job_id", s.array_job_id},
      {"array_task_id", s.array_task_id},
      {"requeueable", s.requeueable},
      {"step", s.step},
      {"batch", s.batch},
      {"has_batch_step", s.has_batch_step},
      {"append_output", s.append_output},
      {"argv", s.argv},
      {"gpus_per_task", s.gpus_per_task},
      {"pty", s.pty},
      {"pty_rows", s.pty_rows},
      {"pty_cols", s.pty_cols},
      {"slurm_commands", s.slurm_commands},
      {"node_name", s.node_name},
      {"node_rank", s.node_rank},
      {"nodes", s.nodes},
      {"tasks_per_node", s.tasks_per_node},
      {"master_addr", s.master_addr},
      {"master_port", s.master_port},
      {"gpus", s.gpus},
      {"gpu_units", GpuUnitsJson(s.gpu_units)},
      {"cpu_milli", s.cpu_milli},
      {"memory_mib", s.memory_mib},
      {"grace_ms", s.grace.count()},
      {"account",
       {{"name", request.account.name},
        {"uid", request.account.uid},
        {"gid", request.account.gid},
        {"home", request.account.home},
        {"shell", request.account.shell},
        {"groups", request.account.groups}}},
      {"allow_root_jobs", request.allow_root_jobs},
      {"cgroup",
       {{"version", static_cast<int>(c.version)},
        {"v2_dir", c.v2_dir},
        {"v2_cpu", c.v2_cpu},
        {"v2_memory", c.v2_memory},
        {"v1_cpu_dir", c.v1_cpu_dir},
        {"v1_memory_dir", c.v1_memory_dir},
        {"v1_pids_dir", c.v1_pids_dir},
        {"v1_devices_dir", c.v1_devices_dir},
        {"v2_device_fence", c.v2_device_fence},
        {"description", c.description}}},
  };
  Json devices = Json::array();
  for (const GpuDeviceNode& d : request.gpu_devices)
    devices.push_back({d.index, d.major, d.minor, d.gi, d.ci});
  j["gpu_devices"] = std::move(devices);
  if (!s.container.image.empty()) {
    j["container"] = ContainerJson(s.container);
    const ContainerHost& h = request.container;
    j["container_host"] = {{"runtime", h.runtime},     {"rootless", h.rootless},
                           {"image_dir", h.image_dir}, {"cache_dir", h.cache_dir},
                           {"cache_mib", h.cache_mib}, {"image_tool", h.image_tool}};
    j["cdi"] = CdiJson(request.cdi);
  }
  return j.dump();
}

Result<SupervisorRequest> DecodeRequest(std::string_view text) {
  return ParseJson<SupervisorRequest>(text, "step request", [](const Json& j) {
    SupervisorRequest r;
    StepRequest& s = r.step;
    // at() and get<>() throw on a missing field or a wrong type: caught above.
    s.job = j.at("job").get<uint64_t>();
    s.epoch = j.at("epoch").get<uint64_t>();
    s.user = j.at("user").get<std::string>();
    s.job_name = j.at("job_name").get<std::string>();
    s.command = j.at("command").get<std::string>();
    s.script = j.at("script").get<bool>();
    s.work_dir = j.at("work_dir").get<std::string>();
    s.stdout_path = j.at("stdout_path").get<std::string>();
    s.stderr_path = j.at("stderr_path").get<std::string>();
    s.env = j.at("env").get<std::vector<std::string>>();
    // Absent in the folders of steps an older agent started.
    s.array_job_id = j.value("array_job_id", uint64_t{0});
    s.array_task_id = j.value("array_task_id", -1);
    s.requeueable = j.value("requeueable", false);
    s.job_account = j.value("job_account", std::string());
    s.gpu_power_cap_w = j.value("gpu_power_cap_w", 0);
    s.step = j.value("step", uint32_t{0});
    s.batch = j.value("batch", false);
    s.has_batch_step = j.value("has_batch_step", false);
    s.append_output = j.value("append_output", false);
    s.argv = j.value("argv", std::vector<std::string>());
    s.gpus_per_task = j.value("gpus_per_task", 0);
    s.pty = j.value("pty", false);
    s.pty_rows = j.value("pty_rows", 0);
    s.pty_cols = j.value("pty_cols", 0);
    s.slurm_commands = j.value("slurm_commands", std::string());
    s.node_name = j.at("node_name").get<std::string>();
    s.node_rank = j.at("node_rank").get<int>();
    s.nodes = j.at("nodes").get<std::vector<std::string>>();
    s.tasks_per_node = j.at("tasks_per_node").get<std::vector<int>>();
    s.master_addr = j.at("master_addr").get<std::string>();
    s.master_port = j.at("master_port").get<int>();
    s.gpus = j.at("gpus").get<std::vector<int>>();
    if (auto units = j.find("gpu_units"); units != j.end()) {
      for (const Json& u : *units) {
        s.gpu_units.push_back({.fence = {.device = u.at(0).get<int>(),
                                         .gi = u.at(1).get<int>(),
                                         .ci = u.at(2).get<int>()},
                               .cuda_name = u.at(3).get<std::string>(),
                               .uuid = "",
                               .mig_index = -1});
      }
    }
    s.cpu_milli = j.at("cpu_milli").get<int64_t>();
    s.memory_mib = j.at("memory_mib").get<int64_t>();
    s.grace = Duration(j.at("grace_ms").get<int64_t>());
    const Json& a = j.at("account");
    r.account.name = a.at("name").get<std::string>();
    r.account.uid = a.at("uid").get<uid_t>();
    r.account.gid = a.at("gid").get<gid_t>();
    r.account.home = a.at("home").get<std::string>();
    r.account.shell = a.at("shell").get<std::string>();
    r.account.groups = a.at("groups").get<std::vector<gid_t>>();
    r.allow_root_jobs = j.at("allow_root_jobs").get<bool>();
    const Json& c = j.at("cgroup");
    int version = c.at("version").get<int>();
    if (version < 0 || version > static_cast<int>(CgroupVersion::kV2)) {
      return Result<SupervisorRequest>(Internal(fmt::format("unknown cgroup version {}", version)));
    }
    r.cgroup.version = static_cast<CgroupVersion>(version);
    r.cgroup.v2_dir = c.at("v2_dir").get<std::string>();
    r.cgroup.v2_cpu = c.at("v2_cpu").get<bool>();
    r.cgroup.v2_memory = c.at("v2_memory").get<bool>();
    r.cgroup.v1_cpu_dir = c.at("v1_cpu_dir").get<std::string>();
    r.cgroup.v1_memory_dir = c.at("v1_memory_dir").get<std::string>();
    r.cgroup.v1_pids_dir = c.at("v1_pids_dir").get<std::string>();
    r.cgroup.description = c.at("description").get<std::string>();
    // Absent from the requests of agents before the device fence.
    r.cgroup.v1_devices_dir = c.value("v1_devices_dir", std::string());
    r.cgroup.v2_device_fence = c.value("v2_device_fence", false);
    if (auto d = j.find("gpu_devices"); d != j.end()) {
      for (const Json& e : *d) {
        r.gpu_devices.push_back({.index = e.at(0).get<int>(),
                                 .major = e.at(1).get<unsigned>(),
                                 .minor = e.at(2).get<unsigned>(),
                                 .gi = e.size() > 4 ? e.at(3).get<int>() : -1,
                                 .ci = e.size() > 4 ? e.at(4).get<int>() : -1});
      }
    }
    DecodeContainer(j, r);
    return Result<SupervisorRequest>(std::move(r));
  });
}

std::string EncodeOutput(uint64_t epoch, const StepOutput& o) {
  Json j = {{"epoch", epoch},
            {"stdout_path", o.stdout_path},
            {"stderr_path", o.stderr_path},
            {"owner",
             {{"name", o.owner.name},
              {"uid", o.owner.uid},
              {"gid", o.owner.gid},
              {"groups", o.owner.groups}}}};
  return j.dump();
}

Result<std::pair<uint64_t, StepOutput>> DecodeOutput(std::string_view text) {
  return ParseJson<std::pair<uint64_t, StepOutput>>(text, "step output", [](const Json& j) {
    StepOutput o;
    o.stdout_path = j.at("stdout_path").get<std::string>();
    o.stderr_path = j.at("stderr_path").get<std::string>();
    const Json& a = j.at("owner");
    o.owner.name = a.at("name").get<std::string>();
    o.owner.uid = a.at("uid").get<uid_t>();
    o.owner.gid = a.at("gid").get<gid_t>();
    o.owner.groups = a.at("groups").get<std::vector<gid_t>>();
    return Result<std::pair<uint64_t, StepOutput>>(
        std::pair(j.at("epoch").get<uint64_t>(), std::move(o)));
  });
}

std::string EncodeRecord(const StepRecord& record) {
  Json j = {{"exit_code", record.exit_code},
            {"signal", record.signal},
            {"message", record.message},
            {"started_ms", MsOf(record.started)},
            {"ended_ms", MsOf(record.ended)}};
  return j.dump() + "\n";
}

Result<StepRecord> DecodeRecord(std::string_view text) {
  return ParseJson<StepRecord>(text, "step record", [](const Json& j) {
    StepRecord r;
    r.exit_code = j.at("exit_code").get<int>();
    r.signal = j.at("signal").get<int>();
    r.message = j.at("message").get<std::string>();
    r.started = TimeOfMs(j.at("started_ms").get<int64_t>());
    r.ended = TimeOfMs(j.at("ended_ms").get<int64_t>());
    return Result<StepRecord>(std::move(r));
  });
}

namespace {

// The fields of /proc/<pid>/stat from field 3 (state) on: comm may hold
// spaces and parentheses, so they are counted from the last ')'. NotFound
// for a process that is gone or a zombie.
Result<std::vector<std::string>> StatFields(pid_t pid) {
  Result<std::string> stat = ReadFile(fmt::format("/proc/{}/stat", pid));
  if (!stat.ok()) return NotFound(fmt::format("no process {}", pid));
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return Internal(fmt::format("unreadable /proc/{}/stat", pid));
  std::vector<std::string> fields;
  for (std::string_view f : Fields(std::string_view(*stat).substr(close + 1)))
    fields.emplace_back(f);
  // Up to starttime, field 22 (fields[19]).
  if (fields.size() < 20) return Internal(fmt::format("unreadable /proc/{}/stat", pid));
  if (fields[0] == "Z" || fields[0] == "X")
    return NotFound(fmt::format("process {} has exited", pid));
  return fields;
}

}  // namespace

Result<ProcessIdentity> IdentityOf(pid_t pid) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> fields, StatFields(pid));
  std::optional<uint64_t> ticks = ParseU64(fields[19]);  // starttime, field 22
  if (!ticks) return Internal(fmt::format("unreadable /proc/{}/stat", pid));
  return ProcessIdentity{pid, *ticks};
}

std::optional<double> ProcessCpuSeconds(pid_t pid) {
  Result<std::vector<std::string>> fields = StatFields(pid);
  if (!fields.ok()) return std::nullopt;
  // utime, stime, cutime, cstime: fields 14 to 17, in clock ticks.
  uint64_t ticks = 0;
  for (size_t i = 11; i <= 14; ++i) {
    std::optional<uint64_t> t = ParseU64((*fields)[i]);
    if (!t) return std::nullopt;
    ticks += *t;
  }
  return static_cast<double>(ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

bool IsAlive(const ProcessIdentity& process) {
  if (process.pid <= 0) return false;
  Result<ProcessIdentity> now = IdentityOf(process.pid);
  return now.ok() && now->start_ticks == process.start_ticks;
}

bool SignalIfAlive(const ProcessIdentity& process, int sig, bool group) {
  // A pidfd pins the process we checked: signalling through it can never
  // reach a process that reused the pid in between.
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, process.pid, 0));
  if (fd < 0 && errno != ENOSYS) return false;
  bool sent = false;
  if (IsAlive(process)) {
    if (group) {
      // A group has no pidfd; its leader, alive and checked, keeps its pid
      // from being reused meanwhile.
      sent = ::kill(-process.pid, sig) == 0;
    } else if (fd >= 0) {
      sent = ::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0) == 0;
    } else {
      sent = ::kill(process.pid, sig) == 0;
    }
  }
  if (fd >= 0) ::close(fd);
  return sent;
}

std::string EncodePidFile(const ProcessIdentity& supervisor, Time started) {
  return fmt::format("{} {} {}\n", supervisor.pid, supervisor.start_ticks, MsOf(started));
}

std::optional<double> ReadProgressFile(const std::string& path) {
  constexpr off_t kTail = 256;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  char buf[kTail];
  off_t from = 0;
  ssize_t got = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    from = std::max<off_t>(0, st.st_size - kTail);
    got = ::pread(fd, buf, sizeof buf, from);
  }
  ::close(fd);
  if (got <= 0) return std::nullopt;
  std::string_view tail(buf, static_cast<size_t>(got));
  // The last complete line: a writer may be part-way through the next one.
  const size_t end = tail.rfind('\n');
  if (end == std::string_view::npos) return std::nullopt;
  tail = tail.substr(0, end);
  const size_t newline = tail.rfind('\n');
  if (newline == std::string_view::npos && from > 0) return std::nullopt;  // began before the tail
  const std::string_view line =
      Trim(newline == std::string_view::npos ? tail : tail.substr(newline + 1));
  double rate = 0;
  const auto [next, error] = std::from_chars(line.data(), line.data() + line.size(), rate);
  const bool whole_word = next == line.data() + line.size() || *next == ' ' || *next == '\t';
  if (error != std::errc() || !whole_word || !(rate > 0 && rate <= api::kMaxProgressRate))
    return std::nullopt;
  return rate;
}

Result<std::pair<ProcessIdentity, Time>> DecodePidFile(std::string_view text) {
  std::vector<std::string_view> f = Fields(text);
  std::optional<uint64_t> pid, ticks, ms;
  if (f.size() == 3) pid = ParseU64(f[0]), ticks = ParseU64(f[1]), ms = ParseU64(f[2]);
  if (!pid || !ticks || !ms || *pid == 0)
    return Internal(fmt::format("unreadable pid file '{}'", text));
  return std::pair{ProcessIdentity{static_cast<pid_t>(*pid), *ticks},
                   TimeOfMs(static_cast<int64_t>(*ms))};
}

std::string EncodeTasksFile(const std::vector<ProcessIdentity>& tasks) {
  std::string out;
  for (const ProcessIdentity& t : tasks)
    out += fmt::format("{} {}\n", t.pid, t.start_ticks);
  return out;
}

std::vector<ProcessIdentity> DecodeTasksFile(std::string_view text) {
  std::vector<ProcessIdentity> out;
  for (std::string_view line : Split(text, '\n')) {
    std::vector<std::string_view> f = Fields(line);
    if (f.size() != 2) continue;
    std::optional<uint64_t> pid = ParseU64(f[0]);
    std::optional<uint64_t> ticks = ParseU64(f[1]);
    if (pid && ticks && *pid > 0) out.push_back({static_cast<pid_t>(*pid), *ticks});
  }
  return out;
}

Time WallNow() {
  return SystemClock().Now();
}

// Every process below `root`. Read from /proc as a whole, so it costs a
// read per process on the host: used only when something was left behind.
std::vector<pid_t> Descendants(pid_t root) {
  std::unordered_multimap<pid_t, pid_t> children;
  if (DIR* proc = ::opendir("/proc")) {
    while (dirent* e = ::readdir(proc)) {
      Result<int64_t> pid = ParseInt(e->d_name);
      if (!pid.ok()) continue;
      if (pid_t parent = ParentOf(static_cast<pid_t>(*pid)); parent > 0) {
        children.emplace(parent, static_cast<pid_t>(*pid));
      }
    }
    ::closedir(proc);
  }
  std::vector<pid_t> out;
  std::vector<pid_t> todo = {root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    auto [begin, end] = children.equal_range(p);
    for (auto it = begin; it != end; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

}  // namespace shoal::agent
