#include "sched/request.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "core/constraints.h"
#include "core/strings.h"
#include "sched/snapshot.h"

namespace shoal::sched {

NodeDemand Request::Demand(int gpus_on_node) const {
  NodeDemand d;
  d.gpus = gpus_on_node;
  d.gpu_milli = gpu_milli;
  d.cpu_milli = cpu_base + cpu_per_gpu * gpus_on_node;
  d.mem_mib = mem_base + mem_per_gpu * gpus_on_node;
  d.exclusive = exclusive;
  d.model_mask = model_mask;
  return d;
}

namespace {

bool SameNodes(const std::shared_ptr<const NodeBitset>& a,
               const std::shared_ptr<const NodeBitset>& b) {
  if (a == b) return true;
  return a != nullptr && b != nullptr && a->words() == b->words();
}

// The nodes a job may use by its --nodelist and --exclude; null when it
// names none. Every name must be a node of the cluster.
Result<std::shared_ptr<const NodeBitset>> AllowedNodes(const Inventory& inv, const JobSpec& spec) {
  if (spec.node_list.empty() && spec.exclude.empty()) return std::shared_ptr<const NodeBitset>();
  auto allowed = std::make_shared<NodeBitset>(inv.size());
  auto index_of = [&inv](std::string_view what, const std::string& name) -> Result<NodeIndex> {
    auto i = inv.IndexOfName(name);
    if (!i) return InvalidArgument(fmt::format("{}: no node is named '{}'", what, name));
    return *i;
  };
  if (spec.node_list.empty()) {
    for (NodeIndex n = 0; n < inv.size(); ++n)
      allowed->Set(n);
  }
  for (const std::string& name : spec.node_list) {
    SHOAL_ASSIGN_OR_RETURN(NodeIndex n, index_of("--nodelist", name));
    allowed->Set(n);
  }
  for (const std::string& name : spec.exclude) {
    SHOAL_ASSIGN_OR_RETURN(NodeIndex n, index_of("--exclude", name));
    allowed->Clear(n);
  }
  return std::shared_ptr<const NodeBitset>(std::move(allowed));
}

}  // namespace

Request Request::WithChoice(size_t k) const {
  Request r = *this;
  r.labels.bits[0] |= matching_choices[k].bits[0];
  r.labels.bits[1] |= matching_choices[k].bits[1];
  r.matching_choices.clear();
  return r;
}

bool Request::SameShape(const Request& o) const {
  return shape == o.shape && partition == o.partition && model_mask == o.model_mask &&
         labels == o.labels && label_choices == o.label_choices &&
         matching_choices == o.matching_choices && label_counts == o.label_counts &&
         nodes == o.nodes && gpus_per_node == o.gpus_per_node && total_gpus == o.total_gpus &&
         gpu_milli == o.gpu_milli && cpu_base == o.cpu_base && cpu_per_gpu == o.cpu_per_gpu &&
         mem_base == o.mem_base && mem_per_gpu == o.mem_per_gpu && exclusive == o.exclusive &&
         SameNodes(allowed_nodes, o.allowed_nodes);
}

uint64_t Request::ShapeHash() const {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](uint64_t v) {
    h = (h ^ v) * 0x100000001b3ULL;
    h ^= h >> 29;
  };
  mix(static_cast<uint64_t>(shape));
  mix(static_cast<uint64_t>(partition));
  mix(model_mask);
  mix(labels.bits[0]);
  mix(labels.bits[1]);
  for (const auto* masks : {&label_choices, &matching_choices}) {
    mix(masks->size());
    for (const LabelMask& c : *masks) {
      mix(c.bits[0]);
      mix(c.bits[1]);
    }
  }
  mix(label_counts.size());
  for (const CountedLabel& c : label_counts) {
    mix(c.label.bits[0]);
    mix(c.label.bits[1]);
    mix(static_cast<uint64_t>(c.count));
  }
  mix(static_cast<uint64_t>(nodes));
  mix(static_cast<uint64_t>(gpus_per_node));
  mix(static_cast<uint64_t>(total_gpus));
  mix(static_cast<uint64_t>(gpu_milli));
  mix(static_cast<uint64_t>(cpu_base));
  mix(static_cast<uint64_t>(cpu_per_gpu));
  mix(static_cast<uint64_t>(mem_base));
  mix(static_cast<uint64_t>(mem_per_gpu));
  mix(exclusive ? 1 : 0);
  if (allowed_nodes != nullptr) {
    for (uint64_t w : allowed_nodes->words())
      mix(w);
  }
  return h;
}

Result<Request> CompileRequest(const Inventory& inv, const JobSpec& spec) {
  SHOAL_RETURN_IF_ERROR(spec.Validate());
  Request r;
  r.inventory_version = inv.version();
  if (spec.partition.empty()) {
    r.partition = inv.DefaultPartition();
    if (r.partition < 0) return InvalidArgument("the cluster has no default partition; name one");
  } else {
    r.partition = inv.PartitionIndex(spec.partition);
    if (r.partition < 0)
      return InvalidArgument(fmt::format("unknown partition '{}'", spec.partition));
  }
  SHOAL_ASSIGN_OR_RETURN(r.model_mask, inv.ModelMask(spec.gpu_models));
  if (r.model_mask == 0 && spec.TotalGpus() > 0 && !inv.models().empty()) {
    const std::string& slice = inv.models().front();
    return Unsatisfiable(fmt::format(
        "every GPU of the cluster is a MIG slice: name a profile, as in --gres=gpu:{}:1 (the "
        "cluster has: {})",
        slice.substr(slice.find('/') + 1), inv.ModelNames(~uint64_t{0})));
  }
  SHOAL_ASSIGN_OR_RETURN(r.labels, inv.Labels(spec.constraints));
  SHOAL_ASSIGN_OR_RETURN(r.label_choices, inv.LabelChoices(spec.constraints));
  r.matching_choices = inv.MatchingChoices(spec.constraints);
  SHOAL_ASSIGN_OR_RETURN(const std::optional<ConstraintCounts> counts,
                         ParseConstraintCounts(spec.constraints));
  if (counts) {
    SHOAL_ASSIGN_OR_RETURN(r.label_counts, inv.LabelCounts(*counts));
    if (counts->all_nodes) {
      // Every node of the job has one of the counted labels.
      LabelMask any;
      for (const CountedLabel& c : r.label_counts) {
        any.bits[0] |= c.label.bits[0];
        any.bits[1] |= c.label.bits[1];
      }
      r.label_choices.push_back(any);
    }
  }
  r.gpu_milli = spec.gpu_milli;
  r.cpu_base = spec.cpu_milli_per_node;
  r.cpu_per_gpu = spec.cpu_milli_per_gpu;
  r.mem_base = spec.mem_mib_per_node;
  r.mem_per_gpu = spec.mem_mib_per_gpu;
  r.exclusive = spec.exclusive;
  SHOAL_ASSIGN_OR_RETURN(r.allowed_nodes, AllowedNodes(inv, spec));
  // A job with --nodelist runs on every listed node; without -N, one with
  // node counts on as many as they ask for (Validate checked that they agree).
  int nodes = spec.node_list.empty() ? spec.nodes : static_cast<int>(spec.node_list.size());
  if (nodes == 0 && counts) nodes = counts->Sum();
  if (spec.gpus_per_node > 0) {
    r.shape = Shape::kGang;
    r.nodes = std::max(1, nodes);
    r.gpus_per_node = spec.gpus_per_node;
  } else if (spec.gpus > 0) {
    if (nodes <= 0) {
      r.shape = Shape::kSpread;
      r.nodes = 0;
    } else if (spec.gpus % nodes == 0) {
      r.shape = Shape::kGang;
      r.nodes = nodes;
      r.gpus_per_node = spec.gpus / nodes;
    } else {
      return InvalidArgument(
          fmt::format("{} GPUs do not divide evenly over {} nodes; ask for GPUs per node instead",
                      spec.gpus, nodes));
    }
  } else {
    r.shape = Shape::kCpuOnly;
    r.nodes = std::max(1, nodes);
    if (spec.gpu_milli != kMilliPerGpu) return InvalidArgument("a GPU share needs a GPU count");
  }
  r.total_gpus = r.shape == Shape::kGang ? r.nodes * r.gpus_per_node : spec.TotalGpus();
  const Partition& part = inv.partitions()[r.partition];
  r.time_limit = spec.time_limit.count() > 0 ? spec.time_limit : part.DefaultTimeLimit();
  return r;
}

bool NodeEligible(const InvNode& n, const Request& req) {
  if (!(n.partitions >> req.partition & 1)) return false;
  if (req.allowed_nodes != nullptr && !req.allowed_nodes->Test(n.index)) return false;
  if (!req.LabelsAdmit(n.labels)) return false;
  if (req.shape != Shape::kCpuOnly && (n.models & req.model_mask) == 0) return false;
  return true;
}

int NodeCapacityFor(const InvNode& n, const Request& req, uint64_t unhealthy_gpus) {
  if (!NodeEligible(n, req)) return 0;
  if (req.shape == Shape::kCpuOnly) {
    return n.cpu_milli >= req.cpu_base && n.mem_mib >= req.mem_base ? -1 : 0;
  }
  int k = std::popcount(n.GpusOfModels(req.model_mask) & ~unhealthy_gpus);
  if (req.cpu_per_gpu > 0) {
    k = static_cast<int>(
        std::min<int64_t>(k, std::max<int64_t>(0, (n.cpu_milli - req.cpu_base) / req.cpu_per_gpu)));
  }
  if (req.mem_per_gpu > 0) {
    k = static_cast<int>(
        std::min<int64_t>(k, std::max<int64_t>(0, (n.mem_mib - req.mem_base) / req.mem_per_gpu)));
  }
  if (n.cpu_milli < req.cpu_base || n.mem_mib < req.mem_base) return 0;
  return k;
}

Status CheckSatisfiable(const Inventory& inv, const Request& req) {
  return CheckCapacity(inv, req, {});
}

namespace {

// CheckCapacity for a request without matching choices.
Status CheckChoiceCapacity(const Inventory& inv, const Request& req,
                           const std::vector<NodeStatus>& status) {
  const std::string& part = inv.partitions()[req.partition].name;
  int eligible = 0;
  int64_t max_cpu = 0;
  int64_t max_mem = 0;
  int max_gpus = 0;
  int nodes_ok = 0;
  int64_t gpus_total = 0;
  const int per_node = req.shape == Shape::kGang ? req.gpus_per_node : 1;
  for (size_t i = 0; i < inv.size(); ++i) {
    const InvNode& n = inv.node(static_cast<NodeIndex>(i));
    const NodeStatus st = i < status.size() ? status[i] : NodeStatus{};
    if (!NodeEligible(n, req) || st.state != NodeState::kUp) continue;
    ++eligible;
    max_cpu = std::max(max_cpu, n.cpu_milli);
    max_mem = std::max(max_mem, n.mem_mib);
    const int cap = NodeCapacityFor(n, req, st.unhealthy_gpus);
    max_gpus =
        std::max(max_gpus, std::popcount(n.GpusOfModels(req.model_mask) & ~st.unhealthy_gpus));
    if (req.shape == Shape::kCpuOnly) {
      if (cap != 0) ++nodes_ok;
      continue;
    }
    if (cap >= per_node) ++nodes_ok;
    gpus_total += cap;
  }
  // Name the models only when the job restricts them.
  const bool any_model = inv.models().empty() ||
                         std::popcount(req.model_mask) >= static_cast<int>(inv.models().size());
  std::string models = req.shape == Shape::kCpuOnly || any_model
                           ? ""
                           : " with GPU model " + inv.ModelNames(req.model_mask);
  if (eligible == 0) {
    return Unsatisfiable(fmt::format("no {}node in partition '{}'{}{}",
                                     status.empty() ? "" : "usable ", part, models,
                                     req.labels.empty() ? "" : " and the requested labels"));
  }
  switch (req.shape) {
    case Shape::kCpuOnly:
      if (nodes_ok >= req.nodes) return Status::Ok();
      if (nodes_ok == 0) {
        return Unsatisfiable(
            fmt::format("asks for {} CPUs and {} memory per node; the largest node in partition "
                        "'{}' has {} CPUs and {}",
                        static_cast<double>(req.cpu_base) / 1000, FormatMemoryMib(req.mem_base),
                        part, static_cast<double>(max_cpu) / 1000, FormatMemoryMib(max_mem)));
      }
      return Unsatisfiable(fmt::format("asks for {} nodes; partition '{}' has {} that fit",
                                       req.nodes, part, nodes_ok));
    case Shape::kGang:
      if (nodes_ok >= req.nodes) return Status::Ok();
      if (nodes_ok == 0) {
        if (req.gpus_per_node > max_gpus) {
          return Unsatisfiable(
              fmt::format("asks for {} GPUs per node; the largest node in partition '{}'{} has {}",
                          req.gpus_per_node, part, models, max_gpus));
        }
        return Unsatisfiable(fmt::format(
            "asks for {} GPUs with {} CPUs and {} memory on one node; no node in partition '{}'{} "
            "has that much",
            req.gpus_per_node, static_cast<double>(req.Demand(req.gpus_per_node).cpu_milli) / 1000,
            FormatMemoryMib(req.Demand(req.gpus_per_node).mem_mib), part, models));
      }
      return Unsatisfiable(
          fmt::format("asks for {} nodes with {} GPUs each; partition '{}'{} has {}", req.nodes,
                      req.gpus_per_node, part, models, nodes_ok));
    case Shape::kSpread:
      if (gpus_total >= req.total_gpus) return Status::Ok();
      return Unsatisfiable(
          fmt::format("asks for {} GPUs; partition '{}'{} has {} that fit the request",
                      req.total_gpus, part, models, gpus_total));
  }
  return Status::Ok();
}

// For node counts ([a*2&b*4]): whether, for each counted label, enough usable
// nodes have it that could each hold one node's share of the job. Nodes with
// several counted labels count for each (placement picks distinct ones).
Status CheckCountCapacity(const Inventory& inv, const Request& req,
                          const std::vector<NodeStatus>& status) {
  const int per_node = req.shape == Shape::kGang ? req.gpus_per_node : 0;
  for (const CountedLabel& c : req.label_counts) {
    int fit = 0;
    for (size_t i = 0; i < inv.size(); ++i) {
      const InvNode& n = inv.node(static_cast<NodeIndex>(i));
      const NodeStatus st = i < status.size() ? status[i] : NodeStatus{};
      if (st.state != NodeState::kUp || !n.labels.Intersects(c.label)) continue;
      const int cap = NodeCapacityFor(n, req, st.unhealthy_gpus);
      if (req.shape == Shape::kCpuOnly ? cap != 0 : cap >= per_node) ++fit;
    }
    if (fit >= c.count) continue;
    return Unsatisfiable(fmt::format(
        "asks for {} nodes with label '{}'; partition '{}' has {} {}nodes with it that fit",
        c.count, inv.LabelNames(c.label), inv.partitions()[req.partition].name, fit,
        status.empty() ? "" : "usable "));
  }
  return Status::Ok();
}

}  // namespace

Status CheckCapacity(const Inventory& inv, const Request& req,
                     const std::vector<NodeStatus>& status) {
  if (!req.label_counts.empty()) {
    SHOAL_RETURN_IF_ERROR(CheckChoiceCapacity(inv, req, status));
    return CheckCountCapacity(inv, req, status);
  }
  if (req.matching_choices.empty()) return CheckChoiceCapacity(inv, req, status);
  // [a|b]: enough when one choice is; else what the first lacks.
  Status first;
  for (size_t k = 0; k < req.matching_choices.size(); ++k) {
    Status s = CheckChoiceCapacity(inv, req.WithChoice(k), status);
    if (s.ok()) return s;
    if (k == 0) first = s;
  }
  return Status(first.code(), first.message() +
                                  " (nor with another label of its matching choice: every node "
                                  "needs the same one)");
}

}  // namespace shoal::sched
