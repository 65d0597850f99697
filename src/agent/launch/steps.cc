#include "agent/launch/steps.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "agent/launch/cdi.h"
#include "agent/launch/cgroup.h"
#include "agent/launch/launcher.h"
#include "agent/launch/pty_relay.h"
#include "agent/launch/step_files.h"
#include "agent/launch/supervisor.h"
#include "agent/launch/task_env.h"
#include "agent/launch/users.h"
#include "core/files.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/strings.h"

namespace shoal::agent {
namespace {

// A step folder with neither a supervisor nor a record this long after it
// was made belongs to a launch that never finished (the agent died inside
// Launch, or the host rebooted): lost. Launch itself returns only once the
// supervisor's pid file exists, so a live launch is far younger.
constexpr auto kStartingTimeout = std::chrono::seconds(60);
constexpr int kEventsPipeBytes = 1 << 20;

// Where a supervised step's rank-0 output goes, and whose it is.
StepOutput OutputOf(const SupervisorRequest& request) {
  return {ResolveOutputPath(request.step, false, 0), ResolveOutputPath(request.step, true, 0),
          request.account};
}

// The steps on this node, one folder each (see step_files.h), with a
// supervisor process per live step. Every method may run on any thread:
// the only shared state besides the folder is the events FIFO's reader.
class DirSteps final : public Steps {
 public:
  DirSteps(StepsOptions options, std::string dir, CgroupLayout layout, int events_fd)
      : options_(std::move(options)),
        dir_(std::move(dir)),
        layout_(std::move(layout)),
        events_fd_(events_fd) {}
  ~DirSteps() override {
    StopLauncher();
    ::close(events_fd_);
  }

  Result<StepOutput> Launch(const StepRequest& request) override {
    SHOAL_RETURN_IF_ERROR(ValidateStepRequest(request));
    SHOAL_ASSIGN_OR_RETURN(UserAccount account,
                           LookUpJobUser(request.user, options_.allow_root_jobs));
    SupervisorRequest supervised{request,
                                 std::move(account),
                                 options_.allow_root_jobs,
                                 layout_,
                                 options_.gpu_devices,
                                 options_.container,
                                 request.container.image.empty() ? CdiEdits{} : CdiFor(request)};
    std::string& work_dir = supervised.step.work_dir;
    if (work_dir.empty()) {
      work_dir = supervised.account.home;
    } else if (!work_dir.starts_with('/')) {
      work_dir = supervised.account.home + "/" + work_dir;
    }
    if (request.step > 0) {
      // The tasks' output of a `shoal run` step, read back by it; kept
      // until the job's own step is forgotten (StepOutputFiles).
      const std::string out = StepOutputFolder(request.job, request.epoch, request.step);
      supervised.step.stdout_path = out + "/task-%t.out";
      supervised.step.stderr_path = out + "/task-%t.err";
    }
    const std::string name = StepDirName({request.job, request.epoch, request.step});
    const std::string dir = dir_ + "/" + name;
    // mkdir is the once-only gate: of two launches of one (job, epoch), at
    // the same time or years apart, exactly one makes the folder.
    if (::mkdir(dir.c_str(), 0711) != 0) {
      if (errno == EEXIST) {
        return Status(StatusCode::kAlreadyExists,
                      fmt::format("job {} epoch {} step {} was launched on this node before; a "
                                  "step never starts twice",
                                  request.job, request.epoch, request.step));
      }
      return Internal(ErrnoMessage("cannot create " + dir));
    }
    // The user reaches the hostfile and script inside by name; the umask
    // must not take that away.
    ::chmod(dir.c_str(), 0711);
    Status launched = WriteFile(dir + "/" + kRequestFile, EncodeRequest(supervised), 0600);
    if (launched.ok()) launched = StartSupervisor(name);
    if (!launched.ok()) {
      // A record, so that the folder never looks like a launch in progress.
      StepRecord record;
      record.exit_code = 1;
      record.message = "the step's supervisor did not start: " + launched.message();
      record.started = record.ended = WallNow();
      (void)WriteFileAtomic(dir + "/" + kResultFile, EncodeRecord(record), 0644);
      return Internal(record.message);
    }
    return OutputOf(supervised);
  }

  Status Stop(StepKey key, Duration grace) override {
    Result<StepState> state = ReadState(key);
    if (!state.ok() || state->phase == StepPhase::kExited) return Status::Ok();
    const std::string dir = StepDir(key);
    // The file first, then the signal: a supervisor that has not written
    // its pid file yet reads the file once it has (see supervisor.cc).
    SHOAL_RETURN_IF_ERROR(WriteFileAtomic(
        dir + "/" + kStopFile, std::to_string(std::max<int64_t>(0, grace.count())), 0644));
    Result<std::string> pid_text = ReadFile(dir + "/" + kPidFile);
    if (!pid_text.ok()) return Status::Ok();  // starting: the supervisor will see the stop file
    Result<std::pair<ProcessIdentity, Time>> pid = DecodePidFile(*pid_text);
    if (pid.ok() && SignalIfAlive(pid->first, SIGTERM)) return Status::Ok();
    if (!ReadFile(dir + "/" + kResultFile).ok()) KillLostStep(key);
    return Status::Ok();
  }

  Status Signal(StepKey key, int sig, bool leader_only) override {
    Result<StepState> state = ReadState(key);
    if (!state.ok() || state->phase != StepPhase::kRunning) return Status::Ok();
    const std::string dir = StepDir(key);
    SHOAL_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kSignalFile,
                                          fmt::format("{} {}\n", sig, leader_only ? 1 : 0), 0644));
    Result<std::string> pid_text = ReadFile(dir + "/" + kPidFile);
    if (!pid_text.ok()) return Status::Ok();
    Result<std::pair<ProcessIdentity, Time>> pid = DecodePidFile(*pid_text);
    if (pid.ok()) SignalIfAlive(pid->first, SIGUSR1);
    return Status::Ok();
  }

  std::vector<StepState> Scan() override {
    std::vector<StepState> out;
    DIR* d = ::opendir(dir_.c_str());
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d)) {
      std::optional<StepKey> key = ParseStepDirName(e->d_name);
      if (!key) continue;
      Result<StepState> state = ReadState(*key);
      if (state.ok()) out.push_back(std::move(state).value());
    }
    ::closedir(d);
    std::sort(out.begin(), out.end(),
              [](const StepState& a, const StepState& b) { return a.key() < b.key(); });
    return out;
  }

  Result<StepState> Get(StepKey key) override { return ReadState(key); }

  std::optional<double> CpuSeconds(StepKey key) const override {
    std::vector<pid_t> pids;
    if (const std::optional<StepCgroup> cgroup = CgroupOf(key)) {
      if (std::optional<double> counted = cgroup->CpuSeconds()) return counted;
      pids = cgroup->Pids();
    }
    if (pids.empty()) {  // no cgroup: the tasks' leaders, and the children they waited for
      Result<std::string> tasks = ReadFile(StepDir(key) + "/" + kTasksFile);
      if (!tasks.ok()) return std::nullopt;
      for (const ProcessIdentity& task : DecodeTasksFile(*tasks)) {
        if (IsAlive(task)) pids.push_back(task.pid);
      }
    }
    if (pids.empty()) return std::nullopt;
    double seconds = 0;
    for (pid_t pid : pids)
      seconds += ProcessCpuSeconds(pid).value_or(0);
    return seconds;
  }

  std::optional<double> Progress(StepKey key) const override {
    return ReadProgressFile(StepDir(key) + "/" + kProgressFile);
  }

  void Forget(StepKey key) override {
    Result<StepState> state = ReadState(key);
    if (!state.ok() || state->phase == StepPhase::kRunning ||
        state->phase == StepPhase::kStarting) {
      return;
    }
    // Its output stays readable: a small record of where it went and whose
    // it is outlives the folder (the request, with the job's environment,
    // does not). The job's output is its own step's (0).
    if (key.step == 0) {
      if (Result<StepOutput> output = Output(key); output.ok())
        KeepOutput(key.job, EncodeOutput(key.epoch, *output));
    }
    std::error_code ignored;
    std::filesystem::remove_all(StepDir(key), ignored);
    if (key.step == 0) RemoveStepOutputs(key.job, key.epoch);
  }

  std::map<uint64_t, std::pair<uint64_t, StepOutput>> FinishedOutputs() override {
    std::lock_guard lock(outputs_mu_);
    return LoadOutputs();
  }

  std::string Isolation() const override { return layout_.description; }

  Result<StepOutput> Output(StepKey key) const override {
    SHOAL_ASSIGN_OR_RETURN(SupervisorRequest request, ReadRequest(key));
    return OutputOf(request);
  }

  Result<StepRequest> Request(StepKey key) const override {
    SHOAL_ASSIGN_OR_RETURN(SupervisorRequest request, ReadRequest(key));
    return request.step;
  }

  Result<StepOutput> TaskOutput(StepKey key, int rank) const override {
    if (key.step == 0 || rank < 0)
      return InvalidArgument("task outputs are those of shoal run steps");
    const std::string folder = StepOutputFolder(key.job, key.epoch, key.step);
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0)
      return NotFound(
          fmt::format("no output of step {} of job {} on this node", key.step, key.job));
    passwd pw{};
    passwd* found = nullptr;
    char buffer[4096];
    if (::getpwuid_r(st.st_uid, &pw, buffer, sizeof buffer, &found) != 0 || found == nullptr)
      return NotFound(fmt::format("the owner of {} is no user", folder));
    SHOAL_ASSIGN_OR_RETURN(UserAccount owner, LookUpJobUser(pw.pw_name, /*allow_root_jobs=*/true));
    return StepOutput{fmt::format("{}/task-{}.out", folder, rank),
                      fmt::format("{}/task-{}.err", folder, rank), std::move(owner)};
  }

  Result<std::string> TerminalInput(StepKey key) const override {
    Result<SupervisorRequest> request = ReadRequest(key);
    // A step whose launch has not reached this node yet (ask again soon),
    // or one that ended and was forgotten.
    if (!request.ok()) {
      return Status(StatusCode::kUnavailable,
                    fmt::format("step {} of job {} is not running here (not yet, or no more)",
                                key.step, key.job));
    }
    if (!request->step.pty)
      return NotFound(fmt::format("step {} of job {} has no terminal", key.step, key.job));
    return StepDir(key) + "/" + kTerminalInputFile;
  }

  Result<SupervisorRequest> ReadRequest(StepKey key) const {
    SHOAL_ASSIGN_OR_RETURN(std::string text, ReadFile(StepDir(key) + "/" + kRequestFile));
    return DecodeRequest(text);
  }

  int ChangeFd() const override { return events_fd_; }
  const std::string& dir() const override { return dir_; }
  const std::string& state_dir() const override { return options_.state_dir; }

  std::vector<StepKey> WaitForChanges(Duration timeout) override {
    // A launcher that left when it was idle is collected on the next wait,
    // not only after the next step event (it stays a zombie until then).
    ReapChildren();
    if (timeout.count() > 0) {
      pollfd p{events_fd_, POLLIN, 0};
      int ms = static_cast<int>(std::min<int64_t>(timeout.count(), INT_MAX));
      if (::poll(&p, 1, ms) <= 0) return {};
    }
    std::lock_guard lock(events_mu_);
    char buffer[8192];
    ssize_t n;
    while ((n = ::read(events_fd_, buffer, sizeof buffer)) > 0) {
      partial_.append(buffer, static_cast<size_t>(n));
    }
    std::vector<StepKey> changed;
    size_t start = 0;
    for (size_t end; (end = partial_.find('\n', start)) != std::string::npos; start = end + 1) {
      std::optional<StepKey> key =
          ParseStepDirName(std::string_view(partial_).substr(start, end - start));
      if (key && std::find(changed.begin(), changed.end(), *key) == changed.end()) {
        changed.push_back(*key);
      }
    }
    partial_.erase(0, start);
    return changed;
  }

 private:
  std::string StepDir(StepKey key) const { return dir_ + "/" + StepDirName(key); }

  std::string Journal() const { return options_.outputs_dir + "/" + kOutputsJournal; }

  // Appends a finished job's output record to the journal (step_files.h).
  void KeepOutput(uint64_t job, const std::string& record) {
    const std::string line = fmt::format("{} {}\n", job, record);
    std::lock_guard lock(outputs_mu_);
    const int fd =
        ::open(Journal().c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    if (written && ++journal_lines_ > 2 * kKeptOutputs) (void)LoadOutputs();
  }

  // The newest kKeptOutputs jobs' records, from the journal and from the
  // files a job of earlier releases; rewrites the journal with just those
  // when it held more, or when such files were there (which then go).
  // Holds outputs_mu_.
  std::map<uint64_t, std::pair<uint64_t, StepOutput>> LoadOutputs() {
    std::map<uint64_t, std::pair<uint64_t, StepOutput>> out;
    std::vector<std::string> legacy;
    auto take = [&](std::string_view job_text, std::string_view record) {
      Result<int64_t> job = ParseInt(job_text);
      if (!job.ok() || *job <= 0) return false;
      Result<std::pair<uint64_t, StepOutput>> output = DecodeOutput(record);
      if (!output.ok()) return false;
      out.insert_or_assign(static_cast<uint64_t>(*job), std::move(output).value());
      return true;
    };
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(options_.outputs_dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name == kOutputsJournal) continue;
      if (Result<std::string> text = ReadFile(entry.path().string());
          text.ok() && take(name, *text))
        legacy.push_back(entry.path().string());
    }
    size_t lines = 0;
    if (Result<std::string> text = ReadFile(Journal()); text.ok()) {
      for (std::string_view line : Split(*text, '\n')) {
        const size_t space = line.find(' ');
        lines +=
            space != std::string_view::npos && take(line.substr(0, space), line.substr(space + 1));
      }
    }
    // Job ids grow: the oldest jobs' records go first.
    while (out.size() > kKeptOutputs)
      out.erase(out.begin());
    journal_lines_ = lines;
    if (lines > out.size() || !legacy.empty()) {
      std::string text;
      for (const auto& [job, output] : out)
        text += fmt::format("{} {}\n", job, EncodeOutput(output.first, output.second));
      if (WriteFileAtomic(Journal(), text, 0600).ok()) {
        journal_lines_ = out.size();
        for (const std::string& path : legacy)
          std::filesystem::remove(path, ec);
      }
    }
    return out;
  }

  // What the node's CDI specs add to a container for the step's GPUs.
  CdiEdits CdiFor(const StepRequest& request) const {
    std::vector<std::string> problems;
    const std::vector<CdiSpec> specs = LoadCdiSpecs(options_.container.cdi_dirs, problems);
    for (const std::string& problem : problems)
      log::Warning("cdi.spec_skipped", {{"why", problem}});
    std::vector<StepGpu> gpus = request.gpu_units;
    if (gpus.empty()) {
      for (int index : request.gpus)
        gpus.push_back({.fence = {.device = index, .gi = -1, .ci = -1},
                        .cuda_name = "",
                        .uuid = "",
                        .mig_index = -1});
    }
    return CdiEditsFor(specs, gpus);
  }

  std::string StepOutputFolder(uint64_t job, uint64_t epoch, uint32_t step) const {
    return fmt::format("{}/{}/{}.{}.{}", dir_, kStepOutputsDir, job, epoch, step);
  }

  // The job's steps' outputs go with its own step: nothing reads them after.
  void RemoveStepOutputs(uint64_t job, uint64_t epoch) const {
    const std::string prefix = fmt::format("{}.{}.", job, epoch);
    std::error_code ec;
    for (const auto& entry :
         std::filesystem::directory_iterator(dir_ + "/" + kStepOutputsDir, ec)) {
      if (entry.path().filename().string().starts_with(prefix))
        std::filesystem::remove_all(entry.path(), ec);
    }
  }

  Result<StepState> ReadState(StepKey key) const {
    const std::string dir = StepDir(key);
    StepState state;
    state.job = key.job;
    state.epoch = key.epoch;
    state.step = key.step;
    auto from_record = [&](const std::string& text) {
      Result<StepRecord> record = DecodeRecord(text);
      if (!record.ok()) {
        state.phase = StepPhase::kLost;
        state.message = record.status().message();
        return state;
      }
      state.phase = StepPhase::kExited;
      state.exit_code = record->exit_code;
      state.signal = record->signal;
      state.message = record->message;
      state.started = record->started;
      state.ended = record->ended;
      return state;
    };
    if (Result<std::string> record = ReadFile(dir + "/" + kResultFile); record.ok()) {
      return from_record(*record);
    }
    Result<std::string> pid_text = ReadFile(dir + "/" + kPidFile);
    if (pid_text.ok()) {
      Result<std::pair<ProcessIdentity, Time>> pid = DecodePidFile(*pid_text);
      if (pid.ok()) {
        state.started = pid->second;
        if (IsAlive(pid->first)) {
          state.phase = StepPhase::kRunning;
          return state;
        }
      }
      // Gone: it may have written its record since we looked.
      if (Result<std::string> record = ReadFile(dir + "/" + kResultFile); record.ok()) {
        return from_record(*record);
      }
      // Its tasks may live on, on GPUs the server frees once it hears of
      // this: they go too (again on each look, until the step is forgotten;
      // only processes that are still the step's own are signalled).
      KillLostStep(key);
      state.phase = StepPhase::kLost;
      state.message =
          "the step's supervisor ended without recording how the step ended "
          "(killed, or the node restarted); what was left of its tasks was killed";
      return state;
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      return NotFound(fmt::format("no step {} on this node", StepDirName(key)));
    }
    const auto made = std::chrono::system_clock::from_time_t(st.st_mtime);
    if (std::chrono::system_clock::now() - made > kStartingTimeout) {
      state.phase = StepPhase::kLost;
      state.message = "the step's supervisor never started";
    } else {
      state.phase = StepPhase::kStarting;
    }
    return state;
  }

  // Has the launcher fork the step's supervisor, and waits until the
  // supervisor says that its pid file is written. Starts a launcher first
  // where none answers; asks again where one ended (idle, upgraded) before
  // it took the request, which it acknowledges before it forks.
  Status StartSupervisor(const std::string& name) {
    constexpr int kAttempts = 4;
    for (int attempt = 1;; ++attempt) {
      int fd = ConnectLauncher();
      if (fd < 0) {
        const int error = errno;
        if ((error != ENOENT && error != ECONNREFUSED) || attempt == kAttempts) {
          return Internal(
              fmt::format("cannot reach the step launcher in {}: {}", dir_, std::strerror(error)));
        }
        SHOAL_RETURN_IF_ERROR(StartLauncher());
        continue;
      }
      const std::string request = "launch " + name + "\n";
      const bool sent = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
                        static_cast<ssize_t>(request.size());
      const char taken = sent ? ReadByte(fd) : 0;
      const char up = taken == kLauncherTook ? ReadByte(fd) : 0;
      ::close(fd);
      if (up == kSupervisorUp) return Status::Ok();
      if (taken != kLauncherTook) {
        if (attempt < kAttempts) continue;
        return Internal(fmt::format("the step launcher in {} did not take the launch", dir_));
      }
      // Forked: the pid file says whether it came up (its word may be lost).
      if (::access((dir_ + "/" + name + "/" + kPidFile).c_str(), F_OK) == 0) return Status::Ok();
      return Internal("the step's supervisor did not start");
    }
  }

  static char ReadByte(int fd) {
    char byte = 0;
    ssize_t n;
    do {
      n = ::recv(fd, &byte, 1, 0);
    } while (n < 0 && errno == EINTR);
    return n == 1 ? byte : 0;
  }

  // A connected socket to the launcher, or -1 with errno set.
  int ConnectLauncher() const {
    const std::optional<sockaddr_un> address = LauncherAddress(dir_);
    if (!address) {  // Steps::Open refuses such a folder
      errno = ENAMETOOLONG;
      return -1;
    }
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0) {
      const int error = errno;
      ::close(fd);
      errno = error;
      return -1;
    }
    return fd;
  }

  // Starts `shoal-step --launcher` in a session of its own and waits until
  // it listens (a byte on its descriptor 3). posix_spawn, not fork: nothing
  // of the agent's memory is copied. It stays our child while we run;
  // ReapChildren collects it when it exits.
  Status StartLauncher() {
    std::lock_guard lock(children_mu_);
    if (int fd = ConnectLauncher(); fd >= 0) {  // another thread started one meanwhile
      ::close(fd);
      return Status::Ok();
    }
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return Internal(ErrnoMessage("pipe"));
    // A pipe end that is already descriptor 3 would keep its close-on-exec
    // flag through dup2 onto itself: go through a descriptor above it.
    int ready_w = ready[1];
    if (ready_w <= kReadyFd) {
      ready_w = ::fcntl(ready[1], F_DUPFD_CLOEXEC, kReadyFd + 1);
      ::close(ready[1]);
      if (ready_w < 0) {
        ::close(ready[0]);
        return Internal(ErrnoMessage("dup"));
      }
    }
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t actions;
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    sigset_t none;
    sigset_t all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_adddup2(&actions, ready_w, kReadyFd);
    // The agent's sockets must not reach the launcher, even those opened
    // without O_CLOEXEC (shoal-step closes what is left too).
    posix_spawn_file_actions_addclosefrom_np(&actions, kReadyFd + 1);
    std::string path = options_.supervisor;
    std::string flag = "--launcher";
    std::string steps_dir = dir_;
    char* argv[] = {path.data(), flag.data(), steps_dir.data(), nullptr};
    char env_path[] = "PATH=/usr/local/bin:/usr/bin:/bin";
    char* envp[] = {env_path, nullptr};
    pid_t pid = 0;
    int rc = ::posix_spawn(&pid, path.c_str(), &actions, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(ready_w);
    if (rc != 0) {
      ::close(ready[0]);
      return Internal(fmt::format("cannot run {}: {}", path, std::strerror(rc)));
    }
    children_.push_back(pid);
    char byte = 0;
    ssize_t n;
    do {
      n = ::read(ready[0], &byte, 1);
    } while (n < 0 && errno == EINTR);
    ::close(ready[0]);
    if (n == 1) return Status::Ok();
    return Internal(fmt::format("{} --launcher {} did not start", path, dir_));
  }

  // Collects launchers that have exited (they stay zombies until their
  // parent, the agent, waits for them).
  void ReapChildren() {
    std::lock_guard lock(children_mu_);
    std::erase_if(children_, [](pid_t pid) {
      pid_t waited = ::waitpid(pid, nullptr, WNOHANG);
      return waited == pid || (waited < 0 && errno == ECHILD);
    });
  }

  // Tells the launcher that the agent stops, so that it does not wait out
  // its idle time (running supervisors are not its to stop).
  // A launcher we started is waited for (briefly), so that it does not
  // stay a zombie where no init reaps re-parented processes.
  void StopLauncher() {
    int fd = ConnectLauncher();
    if (fd < 0) return;
    (void)!::send(fd, "quit\n", 5, MSG_NOSIGNAL);
    ::close(fd);
    std::lock_guard lock(children_mu_);
    for (pid_t pid : children_) {
      for (int waited = 0; waited < 200 && ::waitpid(pid, nullptr, WNOHANG) == 0; ++waited) {
        ::usleep(5000);
      }
    }
    children_.clear();
  }

  // The step's cgroup, as its supervisor was told it (nullopt without a
  // readable request).
  std::optional<StepCgroup> CgroupOf(StepKey key) const {
    Result<std::string> text = ReadFile(StepDir(key) + "/" + kRequestFile);
    Result<SupervisorRequest> request =
        text.ok() ? DecodeRequest(*text) : Result<SupervisorRequest>(text.status());
    if (!request.ok()) return std::nullopt;
    return StepCgroup(request->cgroup, StepDirName(key));
  }

  // A step whose supervisor died without a record (SIGKILL, OOM) may have
  // left its tasks running: kill what its cgroup holds and the process
  // groups of its tasks that are still the same processes.
  void KillLostStep(StepKey key) const {
    const std::string dir = StepDir(key);
    std::optional<StepCgroup> cgroup = CgroupOf(key);
    if (cgroup) cgroup->Signal(SIGKILL);
    if (Result<std::string> tasks = ReadFile(dir + "/" + kTasksFile); tasks.ok()) {
      for (const ProcessIdentity& task : DecodeTasksFile(*tasks)) {
        SignalIfAlive(task, SIGKILL, /*group=*/true);
      }
    }
    if (cgroup) (void)cgroup->Remove();  // fails while the killed are still exiting; harmless
  }

  const StepsOptions options_;
  const std::string dir_;
  const CgroupLayout layout_;
  const int events_fd_;
  std::mutex events_mu_;
  std::string partial_;          // the events FIFO's last line, when read in part
  std::mutex outputs_mu_;        // the output records' journal
  size_t journal_lines_ = 0;     // lines in it (LoadOutputs counts them)
  std::mutex children_mu_;       // also: one thread starts a launcher
  std::vector<pid_t> children_;  // launchers started here, not yet reaped
};

}  // namespace

Result<std::unique_ptr<Steps>> Steps::Open(StepsOptions options) {
  if (options.dir.empty()) return InvalidArgument("no steps folder given");
  if (options.supervisor.empty()) return InvalidArgument("no step supervisor (shoal-step) given");
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) return Internal(fmt::format("cannot create {}: {}", options.dir, ec.message()));
  std::string dir = std::filesystem::canonical(options.dir, ec).string();
  if (ec) return Internal(fmt::format("cannot resolve {}: {}", options.dir, ec.message()));
  // Users open their step's hostfile and script by name: they may pass
  // through the folder, not list it.
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) ::chmod(dir.c_str(), (st.st_mode & 07777) | S_IXGRP | S_IXOTH);
  // The launcher listens on a unix socket in the folder.
  if (!LauncherAddress(dir)) {
    return FailedPrecondition(fmt::format(
        "the steps folder {} is too long a path for the step launcher's socket "
        "({} bytes, at most {}): choose a shorter --state-dir",
        dir, dir.size() + 1 + std::strlen(kLauncherSocket), sizeof(sockaddr_un::sun_path) - 1));
  }
  if (::access(options.supervisor.c_str(), X_OK) != 0) {
    return FailedPrecondition(ErrnoMessage("no step supervisor at " + options.supervisor));
  }
  // Finished steps' output records: the agent's alone (they name users' files).
  if (options.outputs_dir.empty()) options.outputs_dir = dir + "/" + kOutputsDir;
  if (options.state_dir.empty())
    options.state_dir = std::filesystem::path(dir).parent_path().string();
  const std::filesystem::path outputs = options.outputs_dir;
  std::filesystem::create_directories(outputs.parent_path(), ec);
  if (ec) return Internal(fmt::format("cannot create {}: {}", outputs.string(), ec.message()));
  if (::mkdir(outputs.c_str(), 0700) != 0 && errno != EEXIST) {
    return Internal(ErrnoMessage("cannot create " + outputs.string()));
  }
  // `shoal run` steps' output folders: users pass through to their own.
  const std::string step_outputs = dir + "/" + kStepOutputsDir;
  if (::mkdir(step_outputs.c_str(), 0711) != 0 && errno != EEXIST) {
    return Internal(ErrnoMessage("cannot create " + step_outputs));
  }
  const std::string fifo = dir + "/" + kEventsFifo;
  if (::mkfifo(fifo.c_str(), 0600) != 0 && errno != EEXIST) {
    return Internal(ErrnoMessage("cannot create " + fifo));
  }
  // O_RDWR: the FIFO never reads as closed, whoever writes or stops writing.
  int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Internal(ErrnoMessage("cannot open " + fifo));
  if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    ::close(fd);
    return FailedPrecondition(fifo + " exists and is not a FIFO");
  }
  ::fcntl(fd, F_SETPIPE_SZ, kEventsPipeBytes);  // best effort: room for a burst of endings
  CgroupLayout layout = DetectCgroups(options.cgroup_root, fmt::format("{:016x}", Fnv1a(dir)));
  return std::unique_ptr<Steps>(
      std::make_unique<DirSteps>(options, std::move(dir), std::move(layout), fd));
}

}  // namespace shoal::agent
