// A job's resource request compiled against an Inventory: names become masks,
// the three request shapes of JobSpec become one of Shape, and the time limit
// is resolved against the partition's default.
#pragma once

#include <cstdint>
#include <memory>

#include "core/job.h"
#include "core/status.h"
#include "core/time.h"
#include "sched/bitset.h"
#include "sched/inventory.h"

namespace shoal::sched {

enum class Shape : uint8_t {
  kGang,     // `nodes` nodes with `gpus_per_node` GPUs each, started together
  kSpread,   // `total_gpus` GPUs on one node if any node can hold them, else over the fewest nodes
  kCpuOnly,  // `nodes` nodes with CPUs and memory only
};

// What one node must provide.
struct NodeDemand {
  int gpus = 0;
  int gpu_milli = kMilliPerGpu;
  int64_t cpu_milli = 0;
  int64_t mem_mib = 0;
  bool exclusive = false;
  uint64_t model_mask = ~uint64_t{0};
};

struct Request {
  uint64_t inventory_version = 0;
  Shape shape = Shape::kGang;
  int partition = 0;
  uint64_t model_mask = ~uint64_t{0};
  LabelMask labels;                      // every node has all of these
  std::vector<LabelMask> label_choices;  // and one of each of these (--constraint a|b)
  // --constraint [a|b]: every node has the same one of these, the first of
  // them (in the job's order) that the job fits on, as Slurm tries them.
  // Each is in label_choices as well, so that a node with either is eligible.
  std::vector<LabelMask> matching_choices;
  // --constraint [a*2&b*4] (Slurm's node counts): `count` distinct nodes of
  // the job have each label, in this order, and they are all of its nodes
  // (label_choices holds their union); a*2: at least so many, the rest any
  // eligible node.
  std::vector<CountedLabel> label_counts;
  int nodes = 1;
  int gpus_per_node = 0;
  int total_gpus = 0;
  int gpu_milli = kMilliPerGpu;
  int64_t cpu_base = 0;
  int64_t cpu_per_gpu = 0;
  int64_t mem_base = 0;
  int64_t mem_per_gpu = 0;
  bool exclusive = false;
  // The nodes the job may use (--nodelist, --exclude); null: any. Shared by
  // the request's copies.
  std::shared_ptr<const NodeBitset> allowed_nodes;
  Duration time_limit{0};

  NodeDemand Demand(int gpus_on_node) const;
  // This request with matching choice k made a label every node needs.
  Request WithChoice(size_t k) const;
  // Whether a node with these labels meets the job's constraints.
  bool LabelsAdmit(const LabelMask& node) const {
    if (!node.Contains(labels)) return false;
    for (const LabelMask& choice : label_choices) {
      if (!node.Intersects(choice)) return false;
    }
    return true;
  }
  // Whether it needs at least one whole GPU (not none, not a share of one).
  bool NeedsWholeGpus() const {
    return shape != Shape::kCpuOnly && gpu_milli >= kMilliPerGpu && total_gpus >= 1;
  }
  // GPUs weighted by share.
  double GpuEquivalents() const {
    return total_gpus * static_cast<double>(gpu_milli) / kMilliPerGpu;
  }
  // Requests with the same shape fit in exactly the same places.
  bool SameShape(const Request& o) const;
  uint64_t ShapeHash() const;
};

Result<Request> CompileRequest(const Inventory& inv, const JobSpec& spec);

struct NodeStatus;

// Whether some state of the cluster (every node up and idle) could run the
// request; if not, a message that says what is missing.
Status CheckSatisfiable(const Inventory& inv, const Request& req);

// Like CheckSatisfiable, counting only nodes that are up and their healthy
// GPUs (`status` parallel to the inventory's nodes; empty: all up).
Status CheckCapacity(const Inventory& inv, const Request& req,
                     const std::vector<NodeStatus>& status);

// The most GPUs of the request's kind that node `n` could ever give it (0 when
// the node is not eligible at all); -1 when the request has no GPUs and the node fits.
int NodeCapacityFor(const InvNode& n, const Request& req, uint64_t unhealthy_gpus = 0);

// Whether node `n` is eligible for the request by partition, labels, model
// and the job's node lists.
bool NodeEligible(const InvNode& n, const Request& req);

}  // namespace shoal::sched
