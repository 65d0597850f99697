#include "agent/launch/task_env.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/hostlist.h"
#include "core/strings.h"

namespace shoal::agent {
namespace {

constexpr int kMaxPort = 65535;
// sbatch's default output names, in the job's working directory.
constexpr std::string_view kDefaultOutput = "slurm-%j.out";
constexpr std::string_view kDefaultArrayOutput = "slurm-%A_%a.out";

std::string_view NameOf(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

const std::string& NodeHost(const StepRequest& step, int node_rank) {
  static const std::string kLocalhost = "localhost";
  if (step.nodes.empty()) return step.node_name.empty() ? kLocalhost : step.node_name;
  return step.nodes[static_cast<size_t>(node_rank)];
}

std::string Var(std::string_view name, const auto& value) {
  return fmt::format("{}={}", name, value);
}

}  // namespace

int NodeCount(const StepRequest& step) {
  return step.nodes.empty() ? 1 : static_cast<int>(step.nodes.size());
}

int TasksOnNode(const StepRequest& step, int node_rank) {
  if (step.tasks_per_node.empty()) return 1;
  return step.tasks_per_node[static_cast<size_t>(node_rank)];
}

int WorldSize(const StepRequest& step) {
  int world = 0;
  for (int n = 0; n < NodeCount(step); ++n)
    world += TasksOnNode(step, n);
  return world;
}

int FirstRank(const StepRequest& step) {
  int rank = 0;
  for (int n = 0; n < step.node_rank; ++n)
    rank += TasksOnNode(step, n);
  return rank;
}

Status ValidateStepRequest(const StepRequest& step) {
  if (step.user.empty()) return InvalidArgument("the step names no user");
  if (step.command.empty() && step.argv.empty())
    return InvalidArgument("the step has no command or script");
  if (step.batch && (step.step != 0 || WorldSize(step) != 1))
    return InvalidArgument("a batch step is step 0, with one task");
  if (step.gpus_per_task < 0 ||
      (step.gpus_per_task > 0 && static_cast<size_t>(step.gpus_per_task) *
                                         static_cast<size_t>(TasksOnNode(step, step.node_rank)) >
                                     step.gpus.size())) {
    return InvalidArgument(
        fmt::format("{} task(s) with {} GPU(s) each need more than the {} GPU(s) here",
                    TasksOnNode(step, step.node_rank), step.gpus_per_task, step.gpus.size()));
  }
  const int nodes = NodeCount(step);
  if (step.node_rank < 0 || step.node_rank >= nodes) {
    return InvalidArgument(
        fmt::format("node rank {} is outside the step's {} node(s)", step.node_rank, nodes));
  }
  if (!step.tasks_per_node.empty() && static_cast<int>(step.tasks_per_node.size()) != nodes) {
    return InvalidArgument(fmt::format("tasks_per_node has {} entries for {} node(s)",
                                       step.tasks_per_node.size(), nodes));
  }
  for (int n = 0; n < nodes; ++n) {
    if (TasksOnNode(step, n) < 0 || (n == step.node_rank && TasksOnNode(step, n) < 1)) {
      return InvalidArgument(fmt::format("node {} has {} task(s)", n, TasksOnNode(step, n)));
    }
  }
  if (step.master_port < 0 || step.master_port > kMaxPort ||
      (step.master_port > 0 && step.master_port + WorldSize(step) > kMaxPort)) {
    return InvalidArgument(fmt::format("master port {} leaves no room for {} task ports",
                                       step.master_port, WorldSize(step)));
  }
  for (const std::string& entry : step.env) {
    if (entry.find('=') == std::string::npos || NameOf(entry).empty()) {
      return InvalidArgument(fmt::format("environment entry '{}' is not KEY=VALUE", entry));
    }
  }
  if (!step.gpu_units.empty() && step.gpu_units.size() != step.gpus.size())
    return InvalidArgument("the step's GPU units do not match its GPUs");
  for (int gpu : step.gpus) {
    if (gpu < 0) return InvalidArgument(fmt::format("GPU index {} is negative", gpu));
  }
  if (step.cpu_milli < 0 || step.memory_mib < 0) {
    return InvalidArgument("CPU and memory limits cannot be negative");
  }
  return Status::Ok();
}

namespace {

// What CUDA_VISIBLE_DEVICES names the step's i-th GPU by.
std::string CudaName(const StepRequest& step, size_t i) {
  return i < step.gpu_units.size() ? step.gpu_units[i].cuda_name : std::to_string(step.gpus[i]);
}

}  // namespace

std::string SlurmTaskCounts(const std::vector<int>& counts) {
  std::string out;
  for (size_t i = 0; i < counts.size();) {
    size_t run = 1;
    while (i + run < counts.size() && counts[i + run] == counts[i])
      ++run;
    if (!out.empty()) out += ',';
    out += run == 1 ? std::to_string(counts[i]) : fmt::format("{}(x{})", counts[i], run);
    i += run;
  }
  return out;
}

int SlurmStepId(const StepRequest& step) {
  // Slurm numbers srun steps from 0 beside its "batch" step; Shoal's step 0
  // is the batch script, so the first `shoal run` of a batch job is Slurm's 0.
  return step.has_batch_step ? static_cast<int>(step.step) - 1 : static_cast<int>(step.step);
}

std::vector<FencedGpu> FencedGpusOf(const StepRequest& step) {
  std::vector<FencedGpu> out;
  if (!step.gpu_units.empty()) {
    for (const StepGpu& g : step.gpu_units)
      out.push_back(g.fence);
    return out;
  }
  for (int gpu : step.gpus)
    out.push_back({.device = gpu});
  return out;
}

std::vector<std::string> TaskEnvironment(const StepRequest& step, int local_rank,
                                         const std::string& hostfile,
                                         const std::string& progress_file) {
  const int nodes = NodeCount(step);
  const int world = WorldSize(step);
  const int rank = FirstRank(step) + local_rank;
  const int local_world = TasksOnNode(step, step.node_rank);
  std::vector<std::string> hosts;
  for (int n = 0; n < nodes; ++n)
    hosts.push_back(NodeHost(step, n));
  const std::string& master = step.master_addr.empty() ? hosts[0] : step.master_addr;
  // The task's GPUs: its share with --gpus-per-task, else all of the step's here.
  std::vector<std::string> gpus;
  for (size_t i = 0; i < step.gpus.size(); ++i) {
    const size_t per = static_cast<size_t>(step.gpus_per_task);
    if (per == 0 || (i >= static_cast<size_t>(local_rank) * per &&
                     i < static_cast<size_t>(local_rank + 1) * per)) {
      gpus.push_back(CudaName(step, i));
    }
  }
  std::vector<std::string> step_gpus;
  for (size_t i = 0; i < step.gpus.size(); ++i)
    step_gpus.push_back(CudaName(step, i));

  std::vector<std::string> shoal = {
      Var("SHOAL_JOB_ID", step.job),           Var("SHOAL_JOB_NAME", step.job_name),
      Var("SHOAL_NODE_RANK", step.node_rank),  Var("SHOAL_NNODES", nodes),
      Var("SHOAL_NODELIST", Join(hosts, ",")), Var("SHOAL_STEP_ID", step.step),
  };
  if (!hostfile.empty()) shoal.push_back(Var("SHOAL_HOSTFILE", hostfile));
  if (!progress_file.empty()) shoal.push_back(Var("SHOAL_PROGRESS_FILE", progress_file));
  if (!step.node_name.empty()) {
    // The node's name, as Slurm's slurmd sets it for everything it starts.
    shoal.push_back(Var("SLURMD_NODENAME", step.node_name));
    shoal.push_back(Var("SHOAL_NODE_NAME", step.node_name));
  }
  // A rendezvous the user set (exported into the step, as srun carries the
  // batch script's variables) is theirs; else Shoal's.
  auto given = [&step](std::string_view name) {
    return std::any_of(step.env.begin(), step.env.end(), [name](const std::string& e) {
      return e.size() > name.size() && e.compare(0, name.size(), name) == 0 &&
             e[name.size()] == '=';
    });
  };
  if (!given("MASTER_ADDR")) shoal.push_back(Var("MASTER_ADDR", master));
  if (step.master_port > 0 && !given("MASTER_PORT"))
    shoal.push_back(Var("MASTER_PORT", step.master_port));
  // An empty list hides every GPU from a job that asked for none; PCI bus
  // order makes CUDA's indices the same as NVML's (and nvidia-smi's).
  shoal.push_back(Var("CUDA_VISIBLE_DEVICES", Join(gpus, ",")));
  shoal.push_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
  if (step.batch) {
    // The batch script: one process, as Slurm runs it; the job's layout
    // (SLURM_NTASKS, SLURM_NNODES, ...) is in its environment already, and
    // the per-task variables of distributed training belong to its steps.
    for (auto var : {Var("SLURM_PROCID", 0), Var("SLURM_LOCALID", 0), Var("SLURM_NODEID", 0),
                     Var("SLURM_GTIDS", 0)}) {
      shoal.push_back(std::move(var));
    }
    return MergeEnvironment(step.env, shoal);
  }
  for (auto var : {Var("WORLD_SIZE", world), Var("RANK", rank), Var("LOCAL_RANK", local_rank),
                   Var("LOCAL_WORLD_SIZE", local_world), Var("NODE_RANK", step.node_rank),
                   Var("GROUP_RANK", step.node_rank)}) {
    shoal.push_back(std::move(var));
  }
  if (step.master_port > 0) {
    // Every task of the step is a MultiWorkerMirroredStrategy worker; the
    // workers' ports follow MASTER_PORT so that they never collide with it.
    nlohmann::json workers = nlohmann::json::array();
    int worker_rank = 0;
    for (int n = 0; n < nodes; ++n) {
      for (int t = 0; t < TasksOnNode(step, n); ++t, ++worker_rank) {
        workers.push_back(fmt::format("{}:{}", hosts[static_cast<size_t>(n)],
                                      step.master_port + 1 + worker_rank));
      }
    }
    nlohmann::json tf = {{"cluster", {{"worker", workers}}},
                         {"task", {{"type", "worker"}, {"index", rank}}}};
    shoal.push_back(Var("TF_CONFIG", tf.dump()));
  }
  // A step's own layout, as srun sets it (checked against Slurm 22.05).
  std::vector<int> counts;
  for (int n = 0; n < nodes; ++n)
    counts.push_back(TasksOnNode(step, n));
  const std::string step_nodes = CompressHostList(hosts);
  const std::string step_counts = SlurmTaskCounts(counts);
  for (auto var :
       {Var("SLURM_PROCID", rank), Var("SLURM_LOCALID", local_rank),
        Var("SLURM_NODEID", step.node_rank), Var("SLURM_NTASKS", world), Var("SLURM_NPROCS", world),
        Var("SLURM_NNODES", nodes), Var("SLURM_TASKS_PER_NODE", step_counts),
        Var("SLURM_STEP_ID", SlurmStepId(step)), Var("SLURM_STEPID", SlurmStepId(step)),
        Var("SLURM_STEP_NODELIST", step_nodes), Var("SLURM_STEP_NUM_NODES", nodes),
        Var("SLURM_STEP_NUM_TASKS", world), Var("SLURM_STEP_TASKS_PER_NODE", step_counts),
        Var("SLURM_STEP_GPUS", Join(step_gpus, ","))}) {
    shoal.push_back(std::move(var));
  }
  return MergeEnvironment(step.env, shoal);
}

std::string Hostfile(const StepRequest& step) {
  // A host named twice (several simulated nodes on one machine) gets one
  // line with the sum of its slots: OpenMPI refuses a repeated host line.
  std::vector<std::pair<std::string, int>> lines;
  for (int n = 0; n < NodeCount(step); ++n) {
    const std::string& host = NodeHost(step, n);
    auto it =
        std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.first == host; });
    if (it == lines.end()) {
      lines.emplace_back(host, TasksOnNode(step, n));
    } else {
      it->second += TasksOnNode(step, n);
    }
  }
  std::string out;
  for (const auto& [host, slots] : lines)
    out += fmt::format("{} slots={}\n", host, slots);
  return out;
}

bool StderrJoinsStdout(const StepRequest& step) {
  return step.stderr_path.empty() || step.stderr_path == step.stdout_path;
}

namespace {

// Slurm's NO_VAL, which sbatch writes for %a of a job that is not an array.
constexpr uint64_t kSlurmNoValue = 4294967294;

// One %-sequence's value: numeric ones may be zero-padded, text ones not.
// nullopt: not a pattern letter (the sequence stays as written).
std::optional<std::string> PatternValue(const StepRequest& step, char letter, int rank,
                                        size_t width) {
  auto number = [width](uint64_t v) { return fmt::format("{:0{}}", v, width); };
  switch (letter) {
    case 'j':
      return number(step.job);
    case 'A':
      return number(step.array_job_id != 0 ? step.array_job_id : step.job);
    case 'a':
      return number(step.array_task_id >= 0 ? static_cast<uint64_t>(step.array_task_id)
                                            : kSlurmNoValue);
    case 'n':
      return number(static_cast<uint64_t>(step.node_rank));
    case 't':
      return number(static_cast<uint64_t>(rank));
    case 'x':
      return step.job_name;
    case 'u':
      return step.user;
    case 'N':
      return step.node_name;
    case 's':
      return std::string("batch");
    default:
      return std::nullopt;
  }
}

}  // namespace

bool OutputNamedPerNode(std::string_view pattern) {
  for (size_t i = pattern.find('%'); i != std::string_view::npos; i = pattern.find('%', i + 1)) {
    size_t letter = i + 1;
    if (letter < pattern.size() && pattern[letter] == '%') {
      i = letter;  // "%%" is a plain %
      continue;
    }
    while (letter < pattern.size() && pattern[letter] >= '0' && pattern[letter] <= '9')
      ++letter;
    if (letter < pattern.size() &&
        std::string_view("Nnt").find(pattern[letter]) != std::string_view::npos)
      return true;
  }
  return false;
}

std::string ResolveOutputPath(const StepRequest& step, bool stderr_stream, int rank) {
  std::string_view pattern = step.stdout_path;
  if (stderr_stream && !step.stderr_path.empty()) pattern = step.stderr_path;
  if (pattern.empty()) pattern = step.array_task_id >= 0 ? kDefaultArrayOutput : kDefaultOutput;
  std::string path;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      path += pattern[i];
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '%') {
      path += '%';
      ++i;
      continue;
    }
    size_t end = i + 1;  // past the optional width
    size_t width = 0;
    while (end < pattern.size() && end - i <= 2 && pattern[end] >= '0' && pattern[end] <= '9') {
      width = width * 10 + static_cast<size_t>(pattern[end] - '0');
      ++end;
    }
    std::optional<std::string> value;
    if (end < pattern.size()) value = PatternValue(step, pattern[end], rank, width);
    if (!value) {
      path += '%';  // not a pattern: kept as written
      continue;
    }
    path += *value;
    i = end;
  }
  if (!path.starts_with('/')) {
    path = step.work_dir.ends_with('/') ? step.work_dir + path : step.work_dir + "/" + path;
  }
  return path;
}

std::vector<std::string> LoginEnvironment(const std::string& user, const std::string& home,
                                          const std::string& shell) {
  return {
      "PATH=/usr/local/bin:/usr/bin:/bin",
      "HOME=" + home,
      "USER=" + user,
      "LOGNAME=" + user,
      "SHELL=" + (shell.empty() ? std::string("/bin/sh") : shell),
      "LANG=C.UTF-8",
  };
}

std::vector<std::string> MergeEnvironment(std::vector<std::string> base,
                                          const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  std::unordered_map<std::string, size_t> index;  // variable name -> its place in `out`
  auto set = [&](std::string entry) {
    if (entry.find('=') == std::string::npos) return;
    auto [it, inserted] = index.emplace(std::string(NameOf(entry)), out.size());
    if (inserted) {
      out.push_back(std::move(entry));
    } else {
      out[it->second] = std::move(entry);
    }
  };
  for (std::string& entry : base)
    set(std::move(entry));
  for (const std::string& entry : overrides)
    set(entry);
  return out;
}

}  // namespace shoal::agent
