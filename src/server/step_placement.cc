#include "server/step_placement.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/strings.h"

namespace shoal::server {

namespace {

bool Names(const StepNode& node, const std::vector<std::string>& list) {
  return std::find(list.begin(), list.end(), node.name) != list.end() ||
         std::find(list.begin(), list.end(), node.host) != list.end();
}

int Slots(const StepNode& node) {
  return std::max({1, node.job_tasks, node.cpus});
}

}  // namespace

Result<StepPlacement> PlaceStep(const StepSpec& step, const std::vector<StepNode>& job_nodes) {
  // The nodes it may use, in the job's order.
  std::vector<int> candidates;
  for (const std::string& name : step.node_list) {
    if (std::none_of(job_nodes.begin(), job_nodes.end(),
                     [&](const StepNode& n) { return n.name == name || n.host == name; })) {
      return InvalidArgument(fmt::format("--nodelist: {} is not one of the job's nodes", name));
    }
  }
  for (size_t i = 0; i < job_nodes.size(); ++i) {
    if (!step.node_list.empty() && !Names(job_nodes[i], step.node_list)) continue;
    if (Names(job_nodes[i], step.exclude)) continue;
    candidates.push_back(static_cast<int>(i));
  }
  if (candidates.empty()) return InvalidArgument("no node of the job is left for the step");
  const int available = static_cast<int>(candidates.size());
  if (step.nodes > available) {
    return InvalidArgument(
        fmt::format("{} nodes asked for; the job has {} to give this step", step.nodes, available));
  }
  StepPlacement p;
  auto use = [&](int count, auto tasks_on) {
    for (int k = 0; k < count; ++k) {
      p.nodes.push_back(candidates[static_cast<size_t>(k)]);
      p.tasks.push_back(tasks_on(k));
    }
  };
  const int n = step.nodes > 0 ? step.nodes : available;
  if (step.tasks > 0 && step.tasks_per_node > 0) {
    const int needed = (step.tasks + step.tasks_per_node - 1) / step.tasks_per_node;
    if (step.nodes > 0 && needed > step.nodes) {
      return InvalidArgument(fmt::format("{} tasks at {} per node need {} nodes, not {}",
                                         step.tasks, step.tasks_per_node, needed, step.nodes));
    }
    if (needed > available)
      return InvalidArgument(fmt::format("{} tasks at {} per node need {} nodes; the job has {}",
                                         step.tasks, step.tasks_per_node, needed, available));
    int left = step.tasks;
    use(needed, [&](int) {
      const int t = std::min(left, step.tasks_per_node);
      left -= t;
      return t;
    });
  } else if (step.tasks_per_node > 0) {
    use(n, [&](int) { return step.tasks_per_node; });
  } else if (step.tasks > 0 && step.nodes > 0) {
    if (step.tasks < step.nodes)
      return InvalidArgument(fmt::format("{} tasks cannot run on {} nodes (one at least on each)",
                                         step.tasks, step.nodes));
    use(n, [&](int k) { return step.tasks / n + (k < step.tasks % n ? 1 : 0); });
  } else if (step.tasks > 0) {
    // Block: fill each node's slots in turn, as few nodes as it takes.
    int left = step.tasks;
    for (int c : candidates) {
      if (left == 0) break;
      const int t = std::min(left, Slots(job_nodes[static_cast<size_t>(c)]));
      p.nodes.push_back(c);
      p.tasks.push_back(t);
      left -= t;
    }
    if (left > 0) {
      int slots = 0;
      for (int c : candidates)
        slots += Slots(job_nodes[static_cast<size_t>(c)]);
      return InvalidArgument(fmt::format(
          "{} tasks asked for; the job has {} task slots on the nodes it gives this step",
          step.tasks, slots));
    }
  } else {
    use(n, [&](int k) { return job_nodes[static_cast<size_t>(candidates[k])].job_tasks; });
  }
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    const StepNode& node = job_nodes[static_cast<size_t>(p.nodes[k])];
    if (p.tasks[k] > Slots(node)) {
      return InvalidArgument(
          fmt::format("{} tasks on {}: more than the job's {} there (its tasks, or CPUs)",
                      p.tasks[k], node.name, Slots(node)));
    }
    if (step.gpus_per_task > 0 && p.tasks[k] * step.gpus_per_task > node.gpus) {
      return InvalidArgument(fmt::format("{} tasks x {} GPUs on {}: the job has {} GPUs there",
                                         p.tasks[k], step.gpus_per_task, node.name, node.gpus));
    }
  }
  return p;
}

}  // namespace shoal::server
