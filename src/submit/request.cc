#include "submit/request.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/constraints.h"

namespace shoal::submit {

namespace {

template <typename T>
void Take(const std::optional<T>& high, std::optional<T>& low) {
  if (high.has_value()) low = high;
}

// The job's node count when it is known before placement: a gang and a
// CPU-only job run on `nodes` nodes (1 when not given); a total of GPUs
// without -N spreads over as many nodes as placement picks.
std::optional<int64_t> KnownNodeCount(const JobSpec& spec) {
  if (spec.gpus_per_node > 0 || spec.gpus == 0) return std::max(1, spec.nodes);
  if (spec.nodes > 0) return spec.nodes;
  return std::nullopt;
}

// Slurm's node counts of --constraint ([a*2&b*4], a*2) without -N or
// --nodelist: the job has as many nodes as they ask for. Counts that do not
// parse, or disagree with -N, are the spec's Validate()'s to explain.
void ResolveCountedNodes(JobSpec& spec) {
  if (spec.nodes > 0 || !spec.node_list.empty()) return;
  Result<std::optional<ConstraintCounts>> counts = ParseConstraintCounts(spec.constraints);
  if (counts.ok() && counts->has_value()) spec.nodes = (*counts)->Sum();
}

int64_t CeilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

Status ResolveGpus(const Request& r, JobSpec& spec) {
  if (r.gpu) {
    if (r.gpu->per_node) {
      spec.gpus_per_node = r.gpu->count;
      spec.gpus = 0;
    } else {
      spec.gpus = r.gpu->count;
      spec.gpus_per_node = 0;
    }
    spec.gpu_models.clear();
    if (!r.gpu->model.empty() && r.gpu->count > 0) spec.gpu_models.push_back(r.gpu->model);
  }
  if (r.gpu_milli) spec.gpu_milli = *r.gpu_milli;
  if (spec.gpus > 0 && spec.nodes > 0) {
    if (spec.gpus < spec.nodes) {
      return InvalidArgument(
          fmt::format("{} GPUs in total is fewer than the {} nodes asked for; give --gpus-per-node "
                      "or fewer nodes",
                      spec.gpus, spec.nodes));
    }
    if (spec.gpus % spec.nodes != 0) {
      return InvalidArgument(fmt::format(
          "{} GPUs in total do not divide evenly over {} nodes; give --gpus-per-node instead",
          spec.gpus, spec.nodes));
    }
  }
  if (r.gpu_milli && spec.gpu_milli != kMilliPerGpu && spec.TotalGpus() == 0) {
    return InvalidArgument(
        "--gpu-share needs a GPU count to share (e.g. --gpus=1 --gpu-share=500 for half of one "
        "GPU)");
  }
  return Status::Ok();
}

// --gpus-per-task (GPUs in total: tasks x N) and --ntasks-per-gpu (tasks:
// GPUs x N), before the CPUs are worked out from the tasks.
Status ResolveTaskGpus(const Request& r, JobSpec& spec) {
  if (r.gpus_per_task) {
    if (r.gpu) {
      return InvalidArgument(
          fmt::format("--gpus-per-task conflicts with {}: ask for GPUs one way", r.gpu->option));
    }
    if (spec.tasks == 0) return InvalidArgument("--gpus-per-task needs a task count (-n)");
    spec.gpus = spec.tasks * *r.gpus_per_task;
    spec.gpus_per_node = 0;
    spec.gpus_per_task = *r.gpus_per_task;
    if (spec.nodes > 0 && spec.gpus % spec.nodes != 0) {
      return InvalidArgument(fmt::format("{} tasks x {} GPUs do not divide evenly over {} nodes",
                                         spec.tasks, *r.gpus_per_task, spec.nodes));
    }
  }
  if (r.tasks_per_gpu) {
    if (spec.TotalGpus() == 0) return InvalidArgument("--ntasks-per-gpu needs GPUs");
    if (r.tasks) return InvalidArgument("give -n or --ntasks-per-gpu, not both");
    spec.tasks = spec.TotalGpus() * *r.tasks_per_gpu;
  }
  return Status::Ok();
}

// See "CPUs" in submit.h for the rules this implements.
Status ResolveCpus(const Request& r, JobSpec& spec) {
  if (!r.cpu && !r.tasks && !r.tasks_per_node) return Status::Ok();
  const std::optional<int64_t> nodes = KnownNodeCount(spec);
  int64_t tasks_per_node = 1;
  if (r.tasks_per_node) {
    if (!nodes) {
      return InvalidArgument(
          "--ntasks-per-node needs a node count: add -N, or use --gpus-per-node (with --gpus alone "
          "the nodes are chosen at placement)");
    }
    tasks_per_node = *r.tasks_per_node;
    const int64_t fit = *nodes * tasks_per_node;
    if (spec.tasks == 0) {
      if (fit > kMaxTasks) {
        return InvalidArgument(fmt::format("{} nodes x {} tasks per node is more than {} tasks",
                                           *nodes, tasks_per_node, kMaxTasks));
      }
      spec.tasks = static_cast<int>(fit);
    } else if (spec.tasks > fit) {
      return InvalidArgument(fmt::format("{} tasks do not fit {} nodes x --ntasks-per-node={}",
                                         spec.tasks, *nodes, tasks_per_node));
    }
  } else if (spec.tasks > 0 && nodes) {
    if (spec.tasks < *nodes) {
      return InvalidArgument(fmt::format(
          "{} tasks cannot use {} nodes: give at least one task per node", spec.tasks, *nodes));
    }
    tasks_per_node = CeilDiv(spec.tasks, *nodes);
  }

  if (r.cpu && r.cpu->per_gpu) {
    if (spec.TotalGpus() == 0) {
      return InvalidArgument(
          fmt::format("{} needs GPUs (--gpus, --gpus-per-node or --gres=gpu)", r.cpu->option));
    }
    spec.cpu_milli_per_gpu = int64_t{r.cpu->cpus} * 1000;
    spec.cpu_milli_per_node = 0;
    return Status::Ok();
  }
  // Slurm gives a task one CPU unless -c says otherwise.
  const int64_t cpus_per_task = r.cpu ? r.cpu->cpus : 1;
  if (nodes || spec.tasks == 0) {
    const int64_t cpus = tasks_per_node * cpus_per_task;
    if (cpus > kMaxCpus) {
      return InvalidArgument(
          fmt::format("{} tasks per node x {} CPUs per task is {} CPUs per node, more than "
                      "any node has (at most {})",
                      tasks_per_node, cpus_per_task, cpus, kMaxCpus));
    }
    spec.cpu_milli_per_node = cpus * 1000;
    spec.cpu_milli_per_gpu = 0;
    return Status::Ok();
  }
  // Tasks over GPUs whose nodes placement picks: the CPUs go with the GPUs,
  // the job's total shared evenly (in thousandths, rounded up) over them.
  const int64_t per_gpu = CeilDiv(int64_t{spec.tasks} * cpus_per_task * 1000, spec.gpus);
  if (per_gpu > int64_t{kMaxCpus} * 1000) {
    return InvalidArgument(
        fmt::format("{} tasks x {} CPUs over {} GPUs is more than {} CPUs per GPU", spec.tasks,
                    cpus_per_task, spec.gpus, kMaxCpus));
  }
  spec.cpu_milli_per_gpu = per_gpu;
  spec.cpu_milli_per_node = 0;
  return Status::Ok();
}

Status ResolveMemory(const Request& r, JobSpec& spec) {
  if (!r.mem) return Status::Ok();
  if (r.mem->whole_node) {
    // Slurm's --mem=0: all of each node's memory, so no other job's fits
    // beside it; Shoal gives such jobs whole nodes.
    spec.exclusive = true;
    spec.mem_mib_per_node = 0;
    spec.mem_mib_per_gpu = 0;
    return Status::Ok();
  }
  if (r.mem->per_cpu) {
    // Per CPU: the node's CPUs (or the GPUs' CPUs) times the size.
    if (spec.cpu_milli_per_node > 0) {
      spec.mem_mib_per_node = CeilDiv(spec.cpu_milli_per_node * r.mem->mib, int64_t{1000});
      spec.mem_mib_per_gpu = 0;
    } else if (spec.cpu_milli_per_gpu > 0) {
      spec.mem_mib_per_gpu = CeilDiv(spec.cpu_milli_per_gpu * r.mem->mib, int64_t{1000});
      spec.mem_mib_per_node = 0;
    } else {
      spec.mem_mib_per_node = r.mem->mib;  // one CPU, as Slurm counts a task without -c
      spec.mem_mib_per_gpu = 0;
    }
    return Status::Ok();
  }
  if (r.mem->per_gpu) {
    if (spec.TotalGpus() == 0) {
      return InvalidArgument(
          fmt::format("{} needs GPUs (--gpus, --gpus-per-node or --gres=gpu)", r.mem->option));
    }
    spec.mem_mib_per_gpu = r.mem->mib;
    spec.mem_mib_per_node = 0;
  } else {
    spec.mem_mib_per_node = r.mem->mib;
    spec.mem_mib_per_gpu = 0;
  }
  return Status::Ok();
}

}  // namespace

void Overlay(const Request& high, Request& low) {
  Take(high.name, low.name);
  Take(high.account, low.account);
  Take(high.partition, low.partition);
  Take(high.qos, low.qos);
  Take(high.reservation, low.reservation);
  Take(high.mail_types, low.mail_types);
  Take(high.mail_user, low.mail_user);
  Take(high.work_dir, low.work_dir);
  Take(high.stdout_path, low.stdout_path);
  Take(high.stderr_path, low.stderr_path);
  Take(high.wrap, low.wrap);
  Take(high.nodes, low.nodes);
  Take(high.tasks, low.tasks);
  Take(high.tasks_per_node, low.tasks_per_node);
  Take(high.gpu_milli, low.gpu_milli);
  Take(high.gpu, low.gpu);
  Take(high.cpu, low.cpu);
  Take(high.mem, low.mem);
  Take(high.time_limit, low.time_limit);
  Take(high.array, low.array);
  Take(high.dependencies, low.dependencies);
  Take(high.requeue, low.requeue);
  Take(high.exclusive, low.exclusive);
  Take(high.hold, low.hold);
  Take(high.begin_time, low.begin_time);
  Take(high.constraints, low.constraints);
  Take(high.node_list, low.node_list);
  Take(high.exclude, low.exclude);
  Take(high.signal, low.signal);
  Take(high.exported, low.exported);
  Take(high.export_file, low.export_file);
  Take(high.get_user_env, low.get_user_env);
  Take(high.gpus_per_task, low.gpus_per_task);
  Take(high.tasks_per_gpu, low.tasks_per_gpu);
  Take(high.comment, low.comment);
  Take(high.container_image, low.container_image);
  Take(high.container_mounts, low.container_mounts);
  Take(high.container_workdir, low.container_workdir);
  Take(high.container_env, low.container_env);
  Take(high.container_mount_home, low.container_mount_home);
  Take(high.gpu_speeds, low.gpu_speeds);
  Take(high.gpu_power_cap_w, low.gpu_power_cap_w);
  Take(high.append_output, low.append_output);
  Take(high.strict, low.strict);
  Take(high.parsable, low.parsable);
  Take(high.wait, low.wait);
  Take(high.test_only, low.test_only);
  low.ignored.insert(low.ignored.end(), high.ignored.begin(), high.ignored.end());
}

Status Resolve(const Request& r, JobSpec& spec) {
  if (r.name) spec.name = *r.name;
  if (r.account) spec.account = *r.account;
  if (r.partition) spec.partition = *r.partition;
  if (r.qos) spec.qos = *r.qos;
  if (r.reservation) spec.reservation = *r.reservation;
  if (r.mail_types) spec.mail_types = *r.mail_types;
  if (r.mail_user) spec.mail_user = *r.mail_user;
  if (r.work_dir) spec.work_dir = *r.work_dir;
  if (r.stdout_path) spec.stdout_path = *r.stdout_path;
  if (r.stderr_path) spec.stderr_path = *r.stderr_path;
  if (r.wrap) {
    spec.command = *r.wrap;
    spec.script = false;
  }
  if (r.nodes) spec.nodes = *r.nodes;
  if (r.constraints) spec.constraints = *r.constraints;
  if (r.node_list) spec.node_list = *r.node_list;
  ResolveCountedNodes(spec);
  if (r.tasks) spec.tasks = *r.tasks;
  if (r.tasks_per_node) spec.tasks_per_node = *r.tasks_per_node;
  if (r.cpu && !r.cpu->per_gpu) spec.cpus_per_task = r.cpu->cpus;
  SHOAL_RETURN_IF_ERROR(ResolveGpus(r, spec));
  SHOAL_RETURN_IF_ERROR(ResolveTaskGpus(r, spec));
  SHOAL_RETURN_IF_ERROR(ResolveCpus(r, spec));
  SHOAL_RETURN_IF_ERROR(ResolveMemory(r, spec));
  if (r.time_limit) spec.time_limit = *r.time_limit;
  if (r.array) spec.array = std::make_shared<const ArraySpec>(*r.array);
  if (r.dependencies) {
    spec.dependencies = r.dependencies->deps;
    spec.dependency_any = r.dependencies->any;
  }
  if (r.requeue) spec.requeue = *r.requeue;
  if (r.exclusive) spec.exclusive = *r.exclusive;
  if (r.hold) spec.hold = *r.hold;
  if (r.begin_time) spec.begin_time = *r.begin_time;
  if (r.exclude) spec.exclude = *r.exclude;
  if (r.signal) {
    spec.signal = r.signal->signal;
    spec.signal_before_s = r.signal->before_s;
    spec.signal_batch_only = r.signal->batch_only;
  }
  if (r.exported) spec.env = r.exported->values;
  if (r.comment) spec.comment = *r.comment;
  if (r.container_image) spec.container.image = *r.container_image;
  if (r.container_mounts) spec.container.mounts = *r.container_mounts;
  if (r.container_workdir) spec.container.work_dir = *r.container_workdir;
  if (r.container_env) spec.container.env = *r.container_env;
  if (r.container_mount_home) spec.container.mount_home = *r.container_mount_home;
  if (r.gpu_speeds) spec.gpu_speeds = *r.gpu_speeds;
  if (r.gpu_power_cap_w) spec.gpu_power_cap_w = *r.gpu_power_cap_w;
  if (r.append_output) spec.append_output = *r.append_output;
  return Status::Ok();
}

}  // namespace shoal::submit
