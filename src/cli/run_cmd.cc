// shoal run (srun), shoal alloc (salloc) and the scontrol of Shoal jobs.
//
// Inside a job (SHOAL_JOB_ID, with the job's own token in SHOAL_JOB_TOKEN)
// `shoal run` starts a step of N tasks over the job's nodes and waits for
// it, printing what its tasks write; outside a job it first allocates (a job
// that holds the resources), runs the step there, and gives the allocation
// back. `shoal alloc` holds an allocation while a command (a shell) runs
// here with the job's environment, so that `shoal run` inside it starts
// steps. The binary answers to the names `srun` and `scontrol` too (the
// agent puts them first on a job's PATH), so that Slurm scripts and the
// tools that read Slurm's environment work unchanged.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "api/json.h"
#include "cli/app.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/terminal.h"
#include "core/hostlist.h"
#include "core/strings.h"
#include "submit/submit.h"

namespace shoal::cli {

namespace {

using api::Json;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::atomic<int> g_interrupts{0};

extern "C" void OnInterrupt(int) {
  g_interrupts.fetch_add(1);
}

// The options of srun that Shoal gives a meaning to; others that MPI
// launchers and scripts pass are accepted and have none (listed below).
struct RunOptions {
  int tasks = 0;
  std::string nodes;  // "N" or "N-M" (the smaller is taken)
  int tasks_per_node = 0;
  int cpus_per_task = 0;
  int gpus_per_task = 0;
  std::string gpus;           // outside a job: GPUs in total ([type:]N)
  std::string gpus_per_node;  // outside a job
  bool label = false;
  bool kill_on_bad_exit = false;
  std::string nodelist, exclude, name, exported = "ALL", chdir;
  std::string time, partition, account, mem, constraint;
  uint64_t jobid = 0;  // --jobid: a step in this running job of yours
  bool pty = false;
  // pyxis' options: the step's tasks run in this image.
  std::string container_image, container_mounts, container_workdir, container_env;
  bool no_container_mount_home = false;
  std::vector<std::string> ignored;  // options accepted without a meaning in Shoal
  std::vector<std::string> command;
};

void AddRunOptions(CLI::App& app, RunOptions& o) {
  app.add_option("-n,--ntasks", o.tasks, "tasks to run (default: the job's own layout)")
      ->type_name("N");
  app.add_option("-N,--nodes", o.nodes, "nodes to run on (N, or N-M)")->type_name("N");
  app.add_option("--ntasks-per-node", o.tasks_per_node, "tasks on each node")->type_name("N");
  app.add_option("-c,--cpus-per-task", o.cpus_per_task, "CPUs for each task")->type_name("N");
  app.add_option("--gpus-per-task", o.gpus_per_task,
                 "GPUs for each task (each sees its own in CUDA_VISIBLE_DEVICES)")
      ->type_name("N");
  app.add_option("-G,--gpus", o.gpus, "outside a job: GPUs in total ([TYPE:]N)")
      ->type_name("[TYPE:]N");
  app.add_option("--gpus-per-node", o.gpus_per_node, "outside a job: GPUs on each node")
      ->type_name("[TYPE:]N");
  app.add_flag("-l,--label", o.label, "prefix each line of output with its task's rank");
  app.add_flag("-K,--kill-on-bad-exit", o.kill_on_bad_exit, "a task that fails stops the others");
  app.add_option("-w,--nodelist", o.nodelist, "only these of the job's nodes (a host list)")
      ->type_name("LIST");
  app.add_option("-x,--exclude", o.exclude, "not these nodes (a host list)")->type_name("LIST");
  app.add_option("-J,--job-name", o.name, "the step's (or the job's) name")->type_name("NAME");
  app.add_option("--export", o.exported,
                 "which of your variables the tasks get: ALL (default), NONE, or NAME[,NAME...] "
                 "(NAME=value sets one)")
      ->type_name("LIST");
  app.add_option("-D,--chdir", o.chdir, "the tasks' working folder")->type_name("DIR");
  app.add_option("-t,--time", o.time, "outside a job: the time limit")->type_name("LIMIT");
  app.add_option("-p,--partition", o.partition, "outside a job: the partition")->type_name("NAME");
  app.add_option("-A,--account", o.account, "outside a job: the account")->type_name("NAME");
  app.add_option("--mem", o.mem, "outside a job: memory on each node")->type_name("SIZE");
  app.add_option("-C,--constraint", o.constraint, "outside a job: node labels")->type_name("LIST");
  app.add_option("--jobid", o.jobid, "a step in this running job of yours (from anywhere)")
      ->type_name("JOB");
  app.add_flag("--pty", o.pty,
               "task 0 on a terminal that you type into from here: an interactive shell");
  app.add_option("--container-image", o.container_image,
                 "run the tasks in this OCI image (a file on the nodes, or a name in their image "
                 "folder; docs/containers.md)")
      ->type_name("IMAGE");
  app.add_option("--container-mounts", o.container_mounts, "bind node paths into the container")
      ->type_name("SRC:DST[:ro],...");
  app.add_option("--container-workdir", o.container_workdir, "the working folder in the container")
      ->type_name("PATH");
  app.add_option("--container-env", o.container_env,
                 "variables whose values here win over the image's")
      ->type_name("NAME,...");
  app.add_flag("--no-container-mount-home", o.no_container_mount_home,
               "do not mount your home folder in the container");
  app.add_flag_callback(
      "--container-mount-home", [&o] { o.no_container_mount_home = false; },
      "mount your home folder in the container (the default)");
  // What mpirun, torchrun and scripts pass to srun that has no meaning in a
  // Shoal step: accepted, so that they run unchanged.
  for (const char* flag : {"--mpi", "--cpu-bind", "--cpu_bind", "--distribution,-m", "--mem-bind",
                           "--gres", "--mem-per-cpu", "--mem-per-gpu", "--hint", "--threads",
                           "--gpu-bind", "-W,--wait", "--comment", "--accel-bind"}) {
    app.add_option_function<std::string>(
           flag,
           [&o, flag](const std::string& v) { o.ignored.push_back(fmt::format("{}={}", flag, v)); },
           "accepted; no meaning in a Shoal step")
        ->group("Accepted without a meaning in Shoal");
  }
  for (const char* flag : {"--overlap", "--exclusive", "-u,--unbuffered", "-Q,--quiet",
                           "-v,--verbose", "--whole", "--overcommit,-O"}) {
    app.add_flag_callback(
           flag, [&o, flag] { o.ignored.push_back(flag); }, "accepted; no meaning in a Shoal step")
        ->group("Accepted without a meaning in Shoal");
  }
  // The program and its arguments come last: parsing stops at the first
  // word that is not an option, so the program's own options stay its own.
  app.prefix_command();
  app.footer("After the options: the program to run and its arguments.");
}

// Host lists ("n[1-3],m1") as names.
Result<std::vector<std::string>> Hosts(const std::string& list) {
  if (list.empty()) return std::vector<std::string>{};
  return ExpandHostList(list, 100000);
}

// The variables the step's tasks get from here (--export).
Result<std::map<std::string, std::string>> ExportedEnvironment(const std::string& exported) {
  std::map<std::string, std::string> out;
  std::map<std::string, std::string> mine;
  for (char** e = ::environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    mine.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  std::vector<std::string> parts;
  for (std::string_view p : Split(exported, ','))
    parts.emplace_back(Trim(p));
  for (const std::string& p : parts) {
    if (p == "ALL") {
      out.insert(mine.begin(), mine.end());
    } else if (p == "NONE" || p.empty()) {
      continue;
    } else if (const size_t eq = p.find('='); eq != std::string::npos) {
      out[p.substr(0, eq)] = p.substr(eq + 1);
    } else if (auto it = mine.find(p); it != mine.end()) {
      out[p] = it->second;
    }
  }
  // What the step sets itself, per task or for the job, is not carried over.
  for (auto it = out.begin(); it != out.end();) {
    const std::string& k = it->first;
    const bool own = k == "SHOAL_JOB_TOKEN" || k == "_" || k == "PWD" || k == "OLDPWD" ||
                     k == "SHLVL" || k == "CUDA_VISIBLE_DEVICES";
    it = own ? out.erase(it) : std::next(it);
  }
  return out;
}

Result<ContainerSpec> ContainerFromOptions(const RunOptions& o) {
  ContainerSpec c;
  c.image = o.container_image;
  SHOAL_ASSIGN_OR_RETURN(c.mounts, ParseContainerMounts(o.container_mounts));
  c.work_dir = o.container_workdir;
  c.env = ParseContainerEnv(o.container_env);
  c.mount_home = !o.no_container_mount_home;
  SHOAL_RETURN_IF_ERROR(ValidateContainer(c));
  return c;
}

Result<StepSpec> StepFromOptions(const RunOptions& o) {
  StepSpec s;
  s.name = o.name;
  s.argv = o.command;
  s.tasks = o.tasks;
  if (!o.nodes.empty()) {
    auto n = ParseInt(o.nodes.substr(0, o.nodes.find('-')));
    if (!n.ok() || *n <= 0) return InvalidArgument(fmt::format("-N {}: a node count", o.nodes));
    s.nodes = static_cast<int>(*n);
  }
  s.tasks_per_node = o.tasks_per_node;
  s.cpus_per_task = o.cpus_per_task;
  s.gpus_per_task = o.gpus_per_task;
  s.kill_on_bad_exit = o.kill_on_bad_exit;
  if (o.pty) {
    s.pty = true;
    std::tie(s.pty_rows, s.pty_cols) = TerminalSession::WindowSize();
  }
  SHOAL_ASSIGN_OR_RETURN(s.container, ContainerFromOptions(o));
  SHOAL_ASSIGN_OR_RETURN(s.node_list, Hosts(o.nodelist));
  SHOAL_ASSIGN_OR_RETURN(s.exclude, Hosts(o.exclude));
  SHOAL_ASSIGN_OR_RETURN(s.env, ExportedEnvironment(o.exported));
  if (!o.chdir.empty()) {
    std::error_code ec;
    s.work_dir = std::filesystem::absolute(o.chdir, ec).string();
  } else {
    std::error_code ec;
    s.work_dir = std::filesystem::current_path(ec).string();
  }
  return s;
}

// Prints what one task wrote since `offsets`, line by line with a label
// of `label_width` (0: none) as srun -l writes it: the rank right-aligned
// to the widest rank's digits.
class TaskOutput {
 public:
  TaskOutput(int rank, int label_width) : rank_(rank), label_width_(label_width) {}
  // Fetches new bytes of both streams; true when any came.
  bool Poll(ApiClient& c, uint64_t job, uint32_t step) {
    bool any = false;
    for (int s = 0; s < 2; ++s) {
      auto r = c.GetRaw(fmt::format("/v1/jobs/{}/steps/{}/output?task={}&stream={}&offset={}", job,
                                    step, rank_, s == 0 ? "stdout" : "stderr", offset_[s]));
      if (!r.ok() || r->body.empty()) continue;
      offset_[s] += r->body.size();
      Write(s == 0 ? stdout : stderr, pending_[s], r->body);
      any = true;
    }
    return any;
  }
  void Flush() {
    for (int s = 0; s < 2; ++s) {
      if (!pending_[s].empty()) Write(s == 0 ? stdout : stderr, pending_[s], "\n");
    }
  }

 private:
  void Write(FILE* out, std::string& pending, const std::string& bytes) {
    if (label_width_ == 0) {
      std::fwrite(bytes.data(), 1, bytes.size(), out);
      std::fflush(out);
      return;
    }
    pending += bytes;
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
      std::fprintf(out, "%*d: %.*s\n", label_width_, rank_, static_cast<int>(nl - start),
                   pending.data() + start);
    pending.erase(0, start);
    std::fflush(out);
  }

  int rank_;
  int label_width_;
  uint64_t offset_[2] = {0, 0};
  std::string pending_[2];
};

// The step's JSON from the job's record; null when it is not there.
Json StepOf(const Json& job, uint32_t step) {
  for (const Json& s : job.value("steps", Json::array())) {
    if (s.value("id", 0u) == step) return s;
  }
  return Json();
}

// Runs a step of job `job` and follows it: its tasks' output printed here,
// Ctrl-C (or SIGTERM) cancels it; with --pty, what is typed here goes to
// task 0's terminal (over a connection of its own, opened with `flags`).
// Returns srun's exit code: the largest of its tasks', 128 + a signal that
// ended one.
int RunStep(ApiClient& c, const ClientFlags& flags, uint64_t job, const StepSpec& spec,
            bool label) {
  auto created = c.Post(fmt::format("/v1/jobs/{}/steps", job), api::ToJson(spec));
  if (!created.ok()) return Fail("run", created.status());
  const uint32_t step = (*created)["id"].get<uint32_t>();
  std::optional<TerminalSession> terminal;
  if (spec.pty) {
    auto input = ApiClient::Open(flags);
    if (!input.ok()) return Fail("run", input.status());
    terminal.emplace(std::move(*input), job, step);
  }
  int tasks = 0;
  for (const Json& t : (*created)["tasks"])
    tasks += t.get<int>();
  std::vector<TaskOutput> outputs;
  const int width = label ? static_cast<int>(std::to_string(std::max(0, tasks - 1)).size()) : 0;
  for (int r = 0; r < tasks; ++r)
    outputs.emplace_back(r, width);
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  bool cancelled = false;
  auto idle = std::chrono::milliseconds(50);
  Json last;
  while (true) {
    if (g_interrupts.load() > 0 && !cancelled) {
      std::fprintf(stderr, "shoal run: cancelling step %u of job %llu\n", step,
                   static_cast<unsigned long long>(job));
      (void)c.Post(fmt::format("/v1/jobs/{}/steps/{}/cancel", job, step), Json::object());
      cancelled = true;
    }
    bool any = false;
    for (TaskOutput& o : outputs)
      any = o.Poll(c, job, step) || any;
    auto shown = c.Get(fmt::format("/v1/jobs/{}", job));
    if (shown.ok()) last = StepOf(*shown, step);
    const bool ended = !shown.ok() || last.is_null() || last.value("state", "") != "running";
    if (ended) {
      for (TaskOutput& o : outputs) {  // what came after the last look
        o.Poll(c, job, step);
        o.Flush();
      }
      break;
    }
    // Soon after a key was typed its echo is due: look again at once.
    if (terminal && terminal->TypedWithin(std::chrono::milliseconds(500))) {
      idle = std::chrono::milliseconds(20);
    } else if (any) {
      idle = std::chrono::milliseconds(50);
    } else {
      idle = std::min(idle * 2, std::chrono::milliseconds(terminal ? 200 : 500));
    }
    std::this_thread::sleep_for(idle);
  }
  terminal.reset();  // the local terminal as it was, before any message
  if (last.is_null()) {
    std::fprintf(stderr, "shoal run: the job ended before its step did\n");
    return kExitRefused;
  }
  const int code = last.value("exit_code", 0);
  const int signal = last.value("exit_signal", 0);
  const std::string state = last.value("state", "");
  if (state != "completed") {
    std::fprintf(stderr, "shoal run: step %u of job %llu %s%s%s\n", step,
                 static_cast<unsigned long long>(job), state.c_str(),
                 last.contains("reason") ? ": " : "", last.value("reason", std::string()).c_str());
  }
  if (code > 0) return code;
  if (signal > 0) return 128 + signal;
  return state == "completed" ? 0 : 1;
}

// A job that holds an allocation for steps: its script waits until the job
// is cancelled or reaches its time limit.
constexpr char kHoldScript[] =
    "#!/bin/sh\n# shoal run / shoal alloc: holds the allocation while its steps run\n"
    "exec sleep 2147483647\n";

// Submits a holding job with `o`'s resources and waits until it runs.
// Returns its id, 0 with the message printed when it could not be had.
uint64_t Allocate(ApiClient& c, const RunOptions& o, const std::string& who) {
  std::vector<std::string> args;
  auto add = [&](const char* flag, const std::string& value) {
    if (!value.empty()) {
      args.push_back(flag);
      args.push_back(value);
    }
  };
  if (o.tasks > 0) add("-n", std::to_string(o.tasks));
  add("-N", o.nodes);
  if (o.tasks_per_node > 0) add("--ntasks-per-node", std::to_string(o.tasks_per_node));
  if (o.cpus_per_task > 0) add("-c", std::to_string(o.cpus_per_task));
  add("--gpus", o.gpus);
  add("--gpus-per-node", o.gpus_per_node);
  add("-t", o.time);
  add("-p", o.partition);
  add("-A", o.account);
  add("--mem", o.mem);
  add("-C", o.constraint);
  add("-w", o.nodelist);
  add("-x", o.exclude);
  add("-J", o.name.empty() ? (o.command.empty() ? "interactive" : o.command[0]) : o.name);
  args.push_back("--wrap=true");
  auto parsed = submit::ParseSubmit(args, "", "");
  if (!parsed.ok()) {
    UsageError(who, parsed.status().message());
    return 0;
  }
  for (const std::string& note : parsed->notes)
    std::fprintf(stderr, "%s: note: %s\n", who.c_str(), note.c_str());
  JobSpec& spec = parsed->spec;
  spec.script = true;
  spec.command = kHoldScript;
  std::error_code ec;
  spec.work_dir = std::filesystem::current_path(ec).string();
  spec.submit_dir = spec.work_dir;
  auto r = c.Post("/v1/jobs", api::ToJson(spec));
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), r.status().message().c_str());
    return 0;
  }
  const uint64_t job = (*r)["jobs"][0].get<uint64_t>();
  std::fprintf(stderr, "%s: job %llu queued and waiting for resources\n", who.c_str(),
               static_cast<unsigned long long>(job));
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  for (int polls = 0;; ++polls) {
    auto shown = c.Get(fmt::format("/v1/jobs/{}", job));
    if (shown.ok()) {
      const std::string state = shown->value("state", "");
      if (state == "running") {
        std::fprintf(stderr, "%s: job %llu has been allocated resources\n", who.c_str(),
                     static_cast<unsigned long long>(job));
        return job;
      }
      if (state != "pending") {
        std::fprintf(stderr, "%s: job %llu is %s before it started\n", who.c_str(),
                     static_cast<unsigned long long>(job), state.c_str());
        return 0;
      }
    }
    if (g_interrupts.load() > 0) {
      (void)c.Post(fmt::format("/v1/jobs/{}/cancel", job), Json::object());
      std::fprintf(stderr, "%s: job %llu cancelled before it started\n", who.c_str(),
                   static_cast<unsigned long long>(job));
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(polls < 20 ? 50 : 500));
  }
}

void Release(ApiClient& c, uint64_t job) {
  (void)c.Post(fmt::format("/v1/jobs/{}/cancel", job), Json::object());
}

// The client inside a job: its own token and server, from the environment
// the agent gave the job.
ClientFlags InsideJob(ClientFlags flags) {
  if (flags.token.empty()) flags.token = Env("SHOAL_JOB_TOKEN");
  if (flags.server.empty()) flags.server = Env("SHOAL_SERVER");
  if (flags.ca_file.empty()) flags.ca_file = Env("SHOAL_CA_FILE");
  return flags;
}

int RunAs(const std::vector<std::string>& raw, const std::string& who) {
  CLI::App app{
      "Run tasks in an allocation (srun): inside a job, a step over its nodes; outside, "
      "in a new allocation that ends with the step.",
      who};
  ClientFlags flags;
  AddClientFlags(app, flags);
  RunOptions o;
  AddRunOptions(app, o);
  if (int code = ParseApp(app, raw, who); code >= 0) return code;
  o.command = app.remaining();
  if (!o.command.empty() && o.command[0].starts_with('-') && o.command[0] != "--")
    return UsageError(who, fmt::format("unknown option {}", o.command[0]));
  if (!o.command.empty() && o.command[0] == "--") o.command.erase(o.command.begin());
  if (o.command.empty()) return UsageError(who, "nothing to run: give a program after the options");
  auto spec = StepFromOptions(o);
  if (!spec.ok()) return UsageError(who, spec.status().message());
  const std::string inside = Env("SHOAL_JOB_ID");
  uint64_t inside_job = 0;
  if (!inside.empty()) {
    auto job = ParseInt(inside);
    if (!job.ok() || *job <= 0) return UsageError(who, "SHOAL_JOB_ID is not a job id");
    inside_job = static_cast<uint64_t>(*job);
  }
  if (const uint64_t job = o.jobid != 0 ? o.jobid : inside_job; job != 0) {
    // A step of the job it runs in goes with the job's token; --jobid of
    // another job goes with your own credentials.
    const ClientFlags step_flags = job == inside_job ? InsideJob(flags) : flags;
    auto c = ApiClient::Open(step_flags);
    if (!c.ok()) return Fail("run", c.status());
    return RunStep(*c, step_flags, job, *spec, o.label);
  }
  auto c = ApiClient::Open(flags);
  if (!c.ok()) return Fail("run", c.status());
  const uint64_t job = Allocate(*c, o, who);
  if (job == 0) return kExitRefused;
  // The allocation's own layout is the step's: the options made it.
  StepSpec step = *spec;
  step.tasks = 0;
  step.nodes = 0;
  step.tasks_per_node = 0;
  const int code = RunStep(*c, flags, job, step, o.label);
  Release(*c, job);
  return code;
}

}  // namespace

int RunRun(const std::vector<std::string>& raw) {
  return RunAs(raw, "shoal run");
}

int RunSrun(const std::vector<std::string>& raw) {
  return RunAs(raw, "srun");
}

int RunAlloc(const std::vector<std::string>& raw) {
  CLI::App app{
      "Hold an allocation (salloc) while a command runs here (default: your shell); "
      "`shoal run` and `srun` inside it start steps in the allocation.",
      "shoal alloc"};
  ClientFlags flags;
  AddClientFlags(app, flags);
  RunOptions o;
  AddRunOptions(app, o);
  if (int code = ParseApp(app, raw, "shoal alloc"); code >= 0) return code;
  o.command = app.remaining();
  if (!o.command.empty() && o.command[0].starts_with('-') && o.command[0] != "--")
    return UsageError("shoal alloc", fmt::format("unknown option {}", o.command[0]));
  if (!o.command.empty() && o.command[0] == "--") o.command.erase(o.command.begin());
  auto c = ApiClient::Open(flags);
  if (!c.ok()) return Fail("alloc", c.status());
  const uint64_t job = Allocate(*c, o, "shoal alloc");
  if (job == 0) return kExitRefused;
  auto shown = c->Get(fmt::format("/v1/jobs/{}", job));
  std::vector<std::string> nodes;
  if (shown.ok()) {
    for (const Json& a : shown->value("allocation", Json::array()))
      nodes.push_back(a.value("node", ""));
  }
  // What `shoal run` and Slurm's tools look for inside an allocation.
  ::setenv("SHOAL_JOB_ID", std::to_string(job).c_str(), 1);
  ::setenv("SLURM_JOB_ID", std::to_string(job).c_str(), 1);
  ::setenv("SLURM_JOBID", std::to_string(job).c_str(), 1);
  ::setenv("SLURM_JOB_NODELIST", CompressHostList(nodes).c_str(), 1);
  ::setenv("SLURM_NNODES", std::to_string(nodes.size()).c_str(), 1);
  std::vector<std::string> command = o.command;
  if (command.empty()) command = {Env("SHELL").empty() ? "/bin/sh" : Env("SHELL")};
  std::vector<char*> argv;
  for (std::string& a : command)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "shoal alloc: cannot run %s\n", argv[0]);
    ::_exit(127);
  }
  // The command owns the terminal's Ctrl-C; the allocation ends with it.
  ::signal(SIGINT, SIG_IGN);
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  Release(*c, job);
  std::fprintf(stderr, "shoal alloc: relinquishing job allocation %llu\n",
               static_cast<unsigned long long>(job));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

namespace {

// Whether `word` is `full` as scontrol reads its words: any case, and
// abbreviated to no fewer than `least` letters.
bool ScontrolWord(std::string_view word, std::string_view full, size_t least) {
  return word.size() >= least && StartsWith(full, ToLower(word));
}

}  // namespace

// scontrol's host-list commands, as scripts use them inside jobs:
// `scontrol show hostnames [LIST]` (LIST: $SLURM_JOB_NODELIST, else
// $SLURM_NODELIST) prints one name a line; `scontrol show hostlist NAMES`
// compresses. Words abbreviate as scontrol's do (`show hostname`, `sh hostn`).
int RunScontrol(const std::vector<std::string>& raw) {
  CLI::App app{"Slurm's scontrol, as far as Shoal jobs use it: show hostnames|hostlist.",
               "scontrol"};
  std::vector<std::string> words;
  app.add_option("words", words, "show hostnames [LIST] | show hostlist NAMES");
  if (int code = ParseApp(app, raw, "scontrol"); code >= 0) return code;
  const bool show = !words.empty() && ScontrolWord(words[0], "show", 3);
  const bool names = show && words.size() > 1 && ScontrolWord(words[1], "hostnames", 5);
  const bool compress = show && words.size() > 1 && ScontrolWord(words[1], "hostlist", 5);
  if (!names && !compress) {
    return UsageError("scontrol",
                      "Shoal's scontrol knows `show hostnames [LIST]` and "
                      "`show hostlist NAMES`; use shoal for the rest");
  }
  std::string list = words.size() > 2 ? words[2] : Env("SLURM_JOB_NODELIST");
  if (list.empty() && names) list = Env("SLURM_NODELIST");
  if (list.empty()) return UsageError("scontrol", "no host list given and no $SLURM_JOB_NODELIST");
  auto hosts = ExpandHostList(list);
  if (!hosts.ok()) return UsageError("scontrol", hosts.status().message());
  if (compress) {
    std::printf("%s\n", CompressHostList(*hosts).c_str());
  } else {
    for (const std::string& h : *hosts)
      std::printf("%s\n", h.c_str());
  }
  return kExitOk;
}

}  // namespace shoal::cli
