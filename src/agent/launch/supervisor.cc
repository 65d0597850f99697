#include "agent/launch/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <unordered_set>

#include "agent/launch/cgroup.h"
#include "agent/launch/container.h"
#include "agent/launch/launcher.h"
#include "agent/launch/pty_relay.h"
#include "agent/launch/step_files.h"
#include "agent/launch/task_env.h"
#include "core/files.h"
#include "core/strings.h"

namespace shoal::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How long the supervisor waits for processes it SIGKILLed to go, and for
// a full events FIFO to take its line, before it gives up and says so.
constexpr auto kKillWait = std::chrono::seconds(5);
constexpr auto kNotifyWait = std::chrono::seconds(1);
constexpr int kNotStartedExitCode = 127;  // as a shell reports a command it could not run
constexpr int kSetupExitCode = 1;
const std::vector<std::string> kNoCgroupFiles;

// Where a task's child failed before exec; sent to the supervisor through
// a close-on-exec pipe that exec closes when it succeeds.
enum class ChildStage : int {
  kSession,
  kCgroup,
  kStdin,
  kGroups,
  kGid,
  kUid,
  kWorkDir,
  kStdout,
  kStderr,
  kExec,
};
struct ChildFailure {
  int stage = 0;
  int error = 0;
};

// One task, ready to fork: the child reads these and allocates nothing.
struct TaskPlan {
  int local_rank = 0;
  int rank = 0;
  std::vector<std::string> shoal_env;  // TaskEnvironment: what an image may not override
  std::vector<std::string> env;
  std::vector<char*> envp;
  std::string stdout_path;
  std::string stderr_path;
  // --open-mode=truncate: the first task here to open a file empties it
  // (tasks open theirs one after another: StartTasks waits for each exec).
  bool truncate_stdout = false;
  bool truncate_stderr = false;
  // Task 0 of a --pty step runs under the terminal relay (pty_relay.h):
  // its own command line; empty: the step's.
  std::vector<std::string> argv;
  std::vector<char*> argv_pointers;
  // In a container: the runtime's command line that runs this task.
  std::vector<std::string> runtime_argv;
  std::vector<char*> runtime_argv_pointers;
};

struct Task {
  pid_t pid = 0;
  int local_rank = 0;
  int rank = 0;
  bool running = true;
};

std::vector<char*> PointersTo(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The value of PATH in a KEY=VALUE list ("" when there is none).
std::string PathOf(const std::vector<std::string>& env) {
  for (const std::string& e : env) {
    if (e.starts_with("PATH=")) return e.substr(5);
  }
  return "";
}

void PrependToPath(std::vector<std::string>& env, const std::string& dir) {
  for (std::string& e : env) {
    if (e.starts_with("PATH=")) {
      e = "PATH=" + dir + (e.size() > 5 ? ":" + e.substr(5) : "");
      return;
    }
  }
  env.push_back("PATH=" + dir);
}

// `name` as execvp would run it: itself when it has a slash (under
// `work_dir` when relative), else the first executable file of that name on
// `path`; `name` unchanged when there is none (exec then fails with ENOENT,
// reported as the task's failure).
std::string FindExecutable(const std::string& name, const std::string& path,
                           const std::string& work_dir) {
  if (name.find('/') != std::string::npos)
    return name.starts_with('/') ? name : work_dir + "/" + name;
  for (std::string_view dir : Split(path, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0)
      return candidate;
  }
  return name;
}

// A folder owned by the job's user, only theirs.
Status MakeUserDir(const std::string& dir, const UserAccount& user) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Internal(ErrnoMessage("mkdir " + dir));
  if (::geteuid() == 0 && ::chown(dir.c_str(), user.uid, user.gid) != 0)
    return Internal(ErrnoMessage("chown " + dir));
  return Status::Ok();
}

std::string SignalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

class Supervisor {
 public:
  Supervisor(std::string steps_dir, std::string name, Time started)
      : steps_dir_(std::move(steps_dir)), name_(std::move(name)), dir_(steps_dir_ + "/" + name_) {
    record_.started = started;
    sigemptyset(&handled_);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1})
      sigaddset(&handled_, sig);
  }

  int Run() {
    if (::access((dir_ + "/" + kStopFile).c_str(), F_OK) == 0) {
      Fail(128 + SIGTERM, "stopped before its tasks started", SIGTERM);
      return Finish();
    }
    if (Status prepared = Prepare(); !prepared.ok()) {
      Fail(kSetupExitCode, prepared.message());
      return Finish();
    }
    if (Status started = StartTasks(); !started.ok()) {
      Fail(kNotStartedExitCode, started.message());
      for (const Task& t : tasks_)
        ::kill(-t.pid, SIGKILL);  // unreaped leaders: their groups
      Reap();
    } else {
      std::vector<ProcessIdentity> identities;
      for (const Task& t : tasks_) {
        Result<ProcessIdentity> id = IdentityOf(t.pid);
        if (id.ok()) identities.push_back(*id);
      }
      (void)WriteFileAtomic(dir_ + "/" + kTasksFile, EncodeTasksFile(identities), 0644);
      Wait();
    }
    KillLeftovers();
    return Finish();
  }

 private:
  Status Prepare() {
    SHOAL_ASSIGN_OR_RETURN(std::string text, ReadFile(dir_ + "/" + kRequestFile));
    SHOAL_ASSIGN_OR_RETURN(request_, DecodeRequest(text));
    const StepRequest& step = request_.step;
    const UserAccount& user = request_.account;
    SHOAL_RETURN_IF_ERROR(ValidateStepRequest(step));
    SHOAL_RETURN_IF_ERROR(CheckJobUser(user, request_.allow_root_jobs));
    drop_privileges_ = ::geteuid() == 0;
    work_dir_ = step.work_dir.empty() ? user.home : step.work_dir;

    const std::string hostfile = dir_ + "/" + kHostfileFile;
    SHOAL_RETURN_IF_ERROR(WriteFile(hostfile, Hostfile(step), 0644));
    SHOAL_RETURN_IF_ERROR(MakeProgressFile(user));
    if (step.script) {
      // A script with "#!" runs with its interpreter, as the kernel reads
      // it; one without runs with /bin/sh, as Slurm users expect of sbatch.
      const std::string script = dir_ + "/" + kScriptFile;
      SHOAL_RETURN_IF_ERROR(WriteFile(script, step.command, 0700));
      if (drop_privileges_ && ::chown(script.c_str(), user.uid, user.gid) != 0) {
        return Internal(ErrnoMessage("chown " + script));
      }
      argv_ = step.command.starts_with("#!") ? std::vector<std::string>{script}
                                             : std::vector<std::string>{"/bin/sh", script};
      argv_.insert(argv_.end(), step.argv.begin(), step.argv.end());
    } else if (step.argv.empty()) {
      argv_ = {"/bin/sh", "-c", step.command};
    }
    // Steps of `shoal run`: their tasks' output goes to files of their own
    // (read back by `shoal run`), in a folder only the job's user can read.
    if (step.step > 0 && step.stdout_path.find('/') != std::string::npos) {
      SHOAL_RETURN_IF_ERROR(
          MakeUserDir(step.stdout_path.substr(0, step.stdout_path.rfind('/')), user));
    }
    // `srun` and `scontrol` inside the job are Shoal's (the shoal binary,
    // which acts as them by the name it was called by), first on PATH.
    std::string bin_dir;
    if (!step.slurm_commands.empty()) {
      bin_dir = dir_ + "/bin";
      if (::mkdir(bin_dir.c_str(), 0755) != 0 && errno != EEXIST)
        return Internal(ErrnoMessage("mkdir " + bin_dir));
      for (const char* name : {"srun", "scontrol"}) {
        const std::string link = bin_dir + "/" + name;
        if (::symlink(step.slurm_commands.c_str(), link.c_str()) != 0 && errno != EEXIST)
          return Internal(ErrnoMessage("symlink " + link));
      }
    }

    const std::vector<std::string> login = LoginEnvironment(user.name, user.home, user.shell);
    const int tasks = TasksOnNode(step, step.node_rank);
    plans_.resize(static_cast<size_t>(tasks));
    for (int local = 0; local < tasks; ++local) {
      TaskPlan& plan = plans_[static_cast<size_t>(local)];
      plan.local_rank = local;
      plan.rank = FirstRank(step) + local;
      plan.shoal_env = TaskEnvironment(step, local, hostfile, dir_ + "/" + kProgressFile);
      plan.env = MergeEnvironment(login, plan.shoal_env);
      if (!bin_dir.empty()) PrependToPath(plan.env, bin_dir);
      plan.envp = PointersTo(plan.env);
      plan.stdout_path = ResolveOutputPath(step, false, plan.rank);
      plan.stderr_path = StderrJoinsStdout(step) ? "" : ResolveOutputPath(step, true, plan.rank);
    }
    MarkTruncation(step);

    if (!step.script && !step.argv.empty()) {
      // Without a shell, as execvp would find it: on the task's PATH, or
      // relative to its working folder when the name has a slash.
      argv_ = step.argv;
      argv_[0] =
          FindExecutable(step.argv[0], plans_.empty() ? "" : PathOf(plans_[0].env), work_dir_);
    }
    argv_pointers_ = PointersTo(argv_);
    if (step.pty) SHOAL_RETURN_IF_ERROR(PrepareTerminal(step, user));

    cgroup_.emplace(request_.cgroup, name_);
    if (cgroup_->enabled()) {
      // A runtime run as root fences the devices itself, with an allow
      // list on each task's cgroup below this one, which v1 refuses under a
      // parent with exceptions of its own.
      const bool root_runtime = !step.container.image.empty() && !request_.container.rootless;
      Status created =
          cgroup_->Create(step.cpu_milli, step.memory_mib,
                          root_runtime ? std::vector<GpuDeviceNode>{}
                                       : DeniedGpus(request_.gpu_devices, FencedGpusOf(step)));
      if (!created.ok()) return created.WithContext("cgroup");
    }
    if (!step.container.image.empty()) return PrepareContainer(step, hostfile);
    return Status::Ok();
  }

  // The file the tasks write their progress to (step_files.h): empty, the
  // user's, in the step's folder, where the user cannot put anything else
  // in its place for the agent to read.
  Status MakeProgressFile(const UserAccount& user) const {
    const std::string path = dir_ + "/" + kProgressFile;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return Internal(ErrnoMessage("create " + path));
    const bool owned = !drop_privileges_ || ::fchown(fd, user.uid, user.gid) == 0;
    ::close(fd);
    if (!owned) return Internal(ErrnoMessage("chown " + path));
    return Status::Ok();
  }

  // --container-image: every task runs under the OCI runtime (container.h).
  Status PrepareContainer(const StepRequest& step, const std::string& hostfile) {
    std::vector<ContainerBind> files = {{hostfile, hostfile, true}};
    if (step.script) files.push_back({dir_ + "/" + kScriptFile, dir_ + "/" + kScriptFile, true});
    const std::string progress = dir_ + "/" + kProgressFile;
    files.push_back({progress, progress, false});
    SHOAL_ASSIGN_OR_RETURN(container_,
                           StepContainer::Prepare(request_, dir_, name_, work_dir_, files));
    // A program is found on the container's PATH, not the host's.
    const std::vector<std::string>& argv = step.script || step.argv.empty() ? argv_ : step.argv;
    for (TaskPlan& plan : plans_) {
      SHOAL_ASSIGN_OR_RETURN(plan.runtime_argv,
                             container_->TaskCommand(plan.rank, plan.env, plan.shoal_env, argv));
      // --pty: the terminal relay runs the runtime, whose container gets
      // the terminal as its standard files.
      if (!plan.argv.empty())
        plan.runtime_argv.insert(plan.runtime_argv.begin(), relay_.begin(), relay_.end());
      plan.runtime_argv_pointers = PointersTo(plan.runtime_argv);
    }
    runtime_env_ = {std::string("PATH=") + kRuntimeSearchPath};
    runtime_envp_ = PointersTo(runtime_env_);
    return Status::Ok();
  }

  // `shoal run --pty`: task 0 (on the step's first node) runs under the
  // terminal relay, which reads the user's keystrokes from a FIFO in the
  // step's folder that only the job's user (and the agent) may open.
  Status PrepareTerminal(const StepRequest& step, const UserAccount& user) {
    for (TaskPlan& plan : plans_) {
      if (plan.rank != 0) continue;
      const std::string input = dir_ + "/" + kTerminalInputFile;
      if (::mkfifo(input.c_str(), 0600) != 0 && errno != EEXIST)
        return Internal(ErrnoMessage("mkfifo " + input));
      if (drop_privileges_ && ::chown(input.c_str(), user.uid, user.gid) != 0)
        return Internal(ErrnoMessage("chown " + input));
      char self[4096];
      const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
      if (n <= 0) return Internal(ErrnoMessage("readlink /proc/self/exe"));
      relay_ = {std::string(self, static_cast<size_t>(n)),
                "--pty-relay",
                input,
                std::to_string(step.pty_rows),
                std::to_string(step.pty_cols),
                "--"};
      plan.argv = relay_;
      plan.argv.insert(plan.argv.end(), argv_.begin(), argv_.end());
      plan.argv_pointers = PointersTo(plan.argv);
    }
    return Status::Ok();
  }

  // Which tasks empty their output files first (sbatch's default
  // --open-mode=truncate): on the job's first node, and on the others only
  // for files named per node or task (one file that all nodes share is
  // emptied once, not after a node has written to it).
  void MarkTruncation(const StepRequest& step) {
    if (step.append_output) return;
    const auto per_node = OutputNamedPerNode;
    const bool first_node = step.node_rank == 0;
    std::unordered_set<std::string> seen;
    for (TaskPlan& plan : plans_) {
      plan.truncate_stdout =
          (first_node || per_node(step.stdout_path)) && seen.insert(plan.stdout_path).second;
      plan.truncate_stderr = !plan.stderr_path.empty() &&
                             (first_node || per_node(step.stderr_path)) &&
                             seen.insert(plan.stderr_path).second;
    }
  }

  // In the vforked child: system calls only, then exec; on failure it
  // reports the stage and errno through `error_fd` and exits.
  // `in_cgroup`: it started in the step's cgroup (StepCgroup::ForkInto).
  [[noreturn]] void ExecTask(const TaskPlan& plan, int error_fd, bool in_cgroup) {
    auto fail = [error_fd](ChildStage stage) {
      ChildFailure failure{static_cast<int>(stage), errno};
      [[maybe_unused]] ssize_t n = ::write(error_fd, &failure, sizeof failure);
      ::_exit(kNotStartedExitCode);
    };
    if (::setsid() < 0) fail(ChildStage::kSession);
    // A runtime run as root puts the task in a cgroup of its own below the
    // step's, and must not be in the cgroup it empties when the task ends.
    const bool in_container = !plan.runtime_argv.empty();
    const bool root_runtime = in_container && !request_.container.rootless;
    for (const std::string& file :
         root_runtime || in_cgroup ? kNoCgroupFiles : cgroup_->JoinFiles()) {
      int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, "0", 1) < 0) fail(ChildStage::kCgroup);
      ::close(fd);
    }
    // Ignored signals stay ignored across exec: give the job the defaults.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &default_action, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) < 0) fail(ChildStage::kStdin);
    if (drop_privileges_) {
      const UserAccount& user = request_.account;
      if (::setgroups(user.groups.size(), user.groups.data()) != 0) fail(ChildStage::kGroups);
      if (root_runtime) {
        // The runtime runs as root; the files below are still opened with
        // the user's rights (file-system ids), and the task is the user's.
        ::setfsgid(user.gid);
        ::setfsuid(user.uid);
      } else {
        if (::setgid(user.gid) != 0) fail(ChildStage::kGid);
        if (::setuid(user.uid) != 0) fail(ChildStage::kUid);
      }
    }
    // As the user from here on: the work folder and output files are
    // reached with the user's rights, and the files are the user's.
    if (::chdir(work_dir_.c_str()) != 0) fail(ChildStage::kWorkDir);
    const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
    int out = ::open(plan.stdout_path.c_str(), flags | (plan.truncate_stdout ? O_TRUNC : 0), 0644);
    if (out < 0 || ::dup2(out, STDOUT_FILENO) < 0) fail(ChildStage::kStdout);
    if (plan.stderr_path.empty()) {
      if (::dup2(out, STDERR_FILENO) < 0) fail(ChildStage::kStderr);
    } else {
      int err =
          ::open(plan.stderr_path.c_str(), flags | (plan.truncate_stderr ? O_TRUNC : 0), 0644);
      if (err < 0 || ::dup2(err, STDERR_FILENO) < 0) fail(ChildStage::kStderr);
    }
    if (in_container) {
      if (root_runtime && drop_privileges_) {
        ::setfsuid(0);
        ::setfsgid(0);
        if (::setgroups(0, nullptr) != 0) fail(ChildStage::kGroups);
      }
      ::execve(plan.runtime_argv[0].c_str(), plan.runtime_argv_pointers.data(),
               runtime_envp_.data());
      fail(ChildStage::kExec);
    }
    char* const* argv = plan.argv.empty() ? argv_pointers_.data() : plan.argv_pointers.data();
    ::execve(argv[0], argv, plan.envp.data());
    fail(ChildStage::kExec);
    ::_exit(kNotStartedExitCode);  // not reached: fail exits
  }

  std::string DescribeFailure(const TaskPlan& plan, const ChildFailure& f) const {
    const std::string& user = request_.account.name;
    std::string what;
    switch (static_cast<ChildStage>(f.stage)) {
      case ChildStage::kSession:
        what = "cannot start a session";
        break;
      case ChildStage::kCgroup:
        what = "cannot join the step's cgroup";
        break;
      case ChildStage::kStdin:
        what = "cannot open /dev/null";
        break;
      case ChildStage::kGroups:
        what = fmt::format("cannot take the groups of user '{}'", user);
        break;
      case ChildStage::kGid:
        what = fmt::format("cannot take the group of user '{}'", user);
        break;
      case ChildStage::kUid:
        what = fmt::format("cannot become user '{}'", user);
        break;
      case ChildStage::kWorkDir:
        what = fmt::format("cannot enter work folder {} as user '{}'", work_dir_, user);
        break;
      case ChildStage::kStdout:
        what = fmt::format("cannot open output file {} as user '{}'", plan.stdout_path, user);
        break;
      case ChildStage::kStderr:
        what = fmt::format("cannot open error file {} as user '{}'", plan.stderr_path, user);
        break;
      case ChildStage::kExec:
        what = fmt::format("cannot run {}",
                           plan.runtime_argv.empty() ? argv_[0] : plan.runtime_argv[0]);
        break;
    }
    return fmt::format("task {} (rank {}) did not start: {}: {}", plan.local_rank, plan.rank, what,
                       std::strerror(f.error));
  }

  Status StartTasks() {
    for (TaskPlan& plan : plans_) {
      int pipe_fds[2];
      if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Internal(ErrnoMessage("pipe"));
      // Straight into the step's cgroup where v2 allows it; else vfork: the
      // child shares our memory (and we wait) until its exec or exit, so
      // nothing is copied for a process that execs at once. Safe here
      // because ExecTask only makes system calls on what is prepared,
      // never returns, and we are single-threaded.
      const bool root_runtime = !plan.runtime_argv.empty() && !request_.container.rootless;
      pid_t pid = root_runtime ? -1 : cgroup_->ForkInto();
      if (pid == 0) {
        ::close(pipe_fds[0]);
        ExecTask(plan, pipe_fds[1], /*in_cgroup=*/true);
      }
      if (pid < 0) {
        pid = ::vfork();
        if (pid == 0) {
          ::close(pipe_fds[0]);
          ExecTask(plan, pipe_fds[1], /*in_cgroup=*/false);
        }
      }
      ::close(pipe_fds[1]);
      if (pid < 0) {
        ::close(pipe_fds[0]);
        return Internal(ErrnoMessage("fork"));
      }
      // The pipe closes at exec (success) or carries the child's failure.
      ChildFailure failure;
      ssize_t n;
      do {
        n = ::read(pipe_fds[0], &failure, sizeof failure);
      } while (n < 0 && errno == EINTR);
      ::close(pipe_fds[0]);
      if (n == static_cast<ssize_t>(sizeof failure)) {
        ::waitpid(pid, nullptr, 0);
        return Internal(DescribeFailure(plan, failure));
      }
      tasks_.push_back({pid, plan.local_rank, plan.rank, true});
      ++running_;
    }
    return Status::Ok();
  }

  void Fail(int exit_code, std::string message, int sig = 0) {
    if (failed_) return;
    failed_ = true;
    record_.exit_code = exit_code;
    record_.signal = sig;
    record_.message = std::move(message);
  }

  // Reaps every child that has ended (tasks and orphans the job left to
  // the subreaper); the first task to fail gives the step its status.
  void Reap() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (Task& t : tasks_) {
        if (t.pid != pid || !t.running) continue;
        t.running = false;
        --running_;
        std::string who = fmt::format("task {} (rank {})", t.local_rank, t.rank);
        if (WIFSIGNALED(status)) {
          int sig = WTERMSIG(status);
          Fail(128 + sig, fmt::format("{} was killed by {}", who, SignalName(sig)), sig);
        } else if (WEXITSTATUS(status) != 0) {
          Fail(WEXITSTATUS(status), fmt::format("{} exited with {}", who, WEXITSTATUS(status)));
        }
      }
    }
  }

  // SIGTERM or SIGKILL to the whole step: each running task's process
  // group (its leader is not reaped yet, so the group id is still ours),
  // and every process in the cgroup, or without one every descendant.
  void SignalStep(int sig) {
    for (const Task& t : tasks_) {
      if (t.running) ::kill(-t.pid, sig);
    }
    if (cgroup_ && cgroup_->enabled()) {
      cgroup_->Signal(sig);
    } else {
      for (pid_t pid : Descendants(::getpid()))
        ::kill(pid, sig);
    }
  }

  // A signal the agent asked for (sbatch --signal, shoal cancel --signal):
  // to every task's process (leader_only) or to everything of the step.
  void ForwardSignal() {
    Result<std::string> text = ReadFile(dir_ + "/" + kSignalFile);
    if (!text.ok()) return;
    int sig = 0;
    int leader_only = 0;
    if (std::sscanf(text->c_str(), "%d %d", &sig, &leader_only) != 2 || sig <= 0 || sig > 64)
      return;
    if (leader_only != 0) {
      for (const Task& t : tasks_) {
        if (t.running) ::kill(t.pid, sig);
      }
      return;
    }
    // The cgroup holds every process of the step once; without one, each
    // task's process group.
    if (cgroup_ && cgroup_->enabled()) {
      cgroup_->Signal(sig);
      return;
    }
    for (const Task& t : tasks_) {
      if (t.running) ::kill(-t.pid, sig);
    }
  }

  Duration StopGrace() const {
    Result<std::string> text = ReadFile(dir_ + "/" + kStopFile);
    if (text.ok()) {
      Result<int64_t> ms = ParseInt(*text);
      if (ms.ok() && *ms >= 0) return Duration(*ms);
    }
    return request_.step.grace;
  }

  void Wait() {
    std::optional<SteadyClock::time_point> kill_at;
    Duration grace{0};
    bool killed = false;
    Reap();
    while (running_ > 0) {
      timespec timeout{};
      timespec* wait_for = nullptr;
      if (kill_at) {
        auto left = *kill_at - SteadyClock::now();
        if (left <= SteadyClock::duration::zero()) {
          if (killed) break;  // processes that SIGKILL could not end: said in the record
          SignalStep(SIGKILL);
          killed = true;
          kill_at = SteadyClock::now() + kKillWait;
          continue;
        }
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        timeout.tv_sec = static_cast<time_t>(ns / 1000000000);
        timeout.tv_nsec = static_cast<long>(ns % 1000000000);
        wait_for = &timeout;
      }
      siginfo_t info;
      int sig = ::sigtimedwait(&handled_, &info, wait_for);
      if (sig == SIGCHLD) {
        Reap();
      } else if ((sig == SIGTERM || sig == SIGINT) && !stopping_) {
        stopping_ = true;
        grace = StopGrace();
        SignalStep(SIGTERM);
        kill_at = SteadyClock::now() + grace;
      } else if (sig == SIGUSR1) {
        ForwardSignal();
      }
      // SIGHUP, a second SIGTERM, a timeout or EINTR: go round again.
    }
    if (stopping_) {
      stop_note_ = killed ? fmt::format("stopped: SIGTERM, then SIGKILL after the {} ms grace",
                                        grace.count())
                          : fmt::format("stopped: SIGTERM; every task ended within the {} ms grace",
                                        grace.count());
      if (running_ > 0) stop_note_ += fmt::format("; {} task(s) did not die", running_);
    }
  }

  // Reaps what has ended; true while children remain (alive or exiting).
  bool ReapHasChildren() {
    Reap();
    siginfo_t info{};
    return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
  }

  // The step ends with its tasks: whatever they left running (daemons,
  // background jobs) is killed, so that nothing of the job outlives it.
  void KillLeftovers() {
    auto give_up_at = SteadyClock::now() + kKillWait;
    size_t killed = 0;
    while (true) {
      bool any = cgroup_ && cgroup_->enabled() && cgroup_->Signal(SIGKILL);
      if (ReapHasChildren()) {
        for (pid_t pid : Descendants(::getpid()))
          killed += ::kill(pid, SIGKILL) == 0;
        any = true;
      }
      if (!any) break;
      if (SteadyClock::now() > give_up_at) {
        leftover_note_ = "processes of the job were still there after SIGKILL";
        return;
      }
      sigset_t child;
      sigemptyset(&child);
      sigaddset(&child, SIGCHLD);
      timespec tick{0, 2000000};  // 2 ms: a killed process is usually gone by then
      ::sigtimedwait(&child, nullptr, &tick);
    }
    if (killed > 0)
      leftover_note_ = fmt::format("killed {} process(es) the tasks left behind", killed);
  }

  void Notify() {
    const std::string fifo = steps_dir_ + "/" + kEventsFifo;
    // No reader (the agent is down) fails at once with ENXIO: the next
    // agent finds the record when it scans.
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;
    const std::string line = name_ + "\n";
    auto give_up_at = SteadyClock::now() + kNotifyWait;
    while (::write(fd, line.data(), line.size()) < 0 && errno == EAGAIN) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(give_up_at - SteadyClock::now());
      pollfd p{fd, POLLOUT, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    }
    ::close(fd);
  }

  int Finish() {
    record_.ended = WallNow();
    if (!failed_) {
      record_.message = fmt::format("{} task(s) exited with 0", tasks_.size());
    }
    for (const std::string& note : {stop_note_, leftover_note_}) {
      if (!note.empty()) record_.message += "; " + note;
    }
    (void)WriteFileAtomic(dir_ + "/" + kResultFile, EncodeRecord(record_), 0644);
    Notify();
    if (cgroup_ && cgroup_->enabled()) {
      // A cgroup whose last process has just exited can be busy for a moment.
      for (int attempt = 0; attempt < 50 && !cgroup_->Remove().ok(); ++attempt) {
        timespec pause{0, 2000000};
        ::nanosleep(&pause, nullptr);
      }
    }
    return 0;
  }

  const std::string steps_dir_;
  const std::string name_;
  const std::string dir_;
  sigset_t handled_;
  SupervisorRequest request_;
  bool drop_privileges_ = false;
  std::string work_dir_;
  std::vector<std::string> argv_;
  std::vector<char*> argv_pointers_;
  std::unique_ptr<StepContainer> container_;  // --container-image
  std::vector<std::string> relay_;            // --pty: the terminal relay's command line
  std::vector<std::string> runtime_env_;      // the runtime's own environment
  std::vector<char*> runtime_envp_;
  std::vector<TaskPlan> plans_;
  std::optional<StepCgroup> cgroup_;
  std::vector<Task> tasks_;
  int running_ = 0;
  bool stopping_ = false;
  bool failed_ = false;
  StepRecord record_;
  std::string stop_note_;
  std::string leftover_note_;
};

}  // namespace

void SanitizeDescriptors() {
  const unsigned first = ::fcntl(kReadyFd, F_GETFD) >= 0 ? kReadyFd + 1 : kReadyFd;
  if (::syscall(SYS_close_range, first, ~0u, 0u) != 0) {
    // Kernels before 5.9: close what /proc says is open.
    std::vector<int> open_fds;
    if (DIR* d = ::opendir("/proc/self/fd")) {
      while (dirent* e = ::readdir(d)) {
        Result<int64_t> fd = ParseInt(e->d_name);
        if (fd.ok() && *fd >= static_cast<int64_t>(first) && *fd != ::dirfd(d)) {
          open_fds.push_back(static_cast<int>(*fd));
        }
      }
      ::closedir(d);
    }
    for (int fd : open_fds)
      ::close(fd);
  }
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0) {
      int null_fd = ::open("/dev/null", O_RDWR);
      if (null_fd >= 0 && null_fd != fd) {
        ::dup2(null_fd, fd);
        ::close(null_fd);
      }
    }
  }
  if (first > kReadyFd) ::fcntl(kReadyFd, F_SETFD, FD_CLOEXEC);  // never into a task
}

bool SettleProcess() {
  // Nothing of the agent's may stay busy because of us: not its folder.
  if (::chdir("/") != 0) return false;
  ::umask(022);
  // Signals are taken synchronously (sigtimedwait, signalfd); blocked from
  // the start, so a stop sent as soon as the pid file exists waits for us.
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1})
    sigaddset(&handled, sig);
  ::sigprocmask(SIG_BLOCK, &handled, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}

int RunSupervisor(const std::string& steps_dir, const std::string& name, int ready_fd) {
  if (!SettleProcess()) return 1;
  // A session of our own (the launcher's child is not in one yet).
  ::setsid();
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const Time started = WallNow();
  const std::string dir = steps_dir + "/" + name;
  Result<ProcessIdentity> self = IdentityOf(::getpid());
  if (!self.ok() ||
      !WriteFileAtomic(dir + "/" + kPidFile, EncodePidFile(*self, started), 0644).ok()) {
    return 1;
  }
  // Up: the agent, reading the other end, may answer its launch now.
  if (::fcntl(ready_fd, F_GETFD) >= 0) {
    [[maybe_unused]] ssize_t n = ::write(ready_fd, &kSupervisorUp, 1);
    ::close(ready_fd);
  }
  return Supervisor(steps_dir, name, started).Run();
}

}  // namespace shoal::agent
