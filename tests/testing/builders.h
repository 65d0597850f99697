// Builders for scheduler tests: a cluster, its inventory, and snapshots with
// running and pending jobs, in a few readable lines.
//
//   ClusterBuilder c;
//   c.Node("n1").Gpus(8, "H100").Islands(2).Leaf("s1/l1");
//   SnapshotBuilder s(c.Inventory());
//   s.Running("r1", Alloc(...)).Pending(JobBuilder("j1").Gpus(4));
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "sched/inventory.h"
#include "sched/snapshot.h"

namespace shoal::testing {

class NodeBuilder {
 public:
  explicit NodeBuilder(Node* node) : node_(node) {}
  // `count` GPUs of `model` (memory 80 GiB), all in one NVLink island.
  NodeBuilder& Gpus(int count, const std::string& model);
  // Splits the GPUs into `islands` NVLink islands of equal size.
  NodeBuilder& Islands(int islands);
  NodeBuilder& Cpus(double cpus);
  NodeBuilder& MemoryMib(int64_t mib);
  NodeBuilder& Leaf(const std::string& place);  // "spine/leaf" or "leaf"
  NodeBuilder& Partitions(std::vector<std::string> partitions);
  NodeBuilder& Labels(std::vector<std::string> labels);
  NodeBuilder& State(NodeState state);
  // Every GPU's rated power (power budgets).
  NodeBuilder& RatedW(double watts);

 private:
  Node* node_;
};

class ClusterBuilder {
 public:
  ClusterBuilder();
  // A node with 8 H100 GPUs, 64 CPUs and 512 GiB unless changed.
  NodeBuilder Node(const std::string& name);
  Partition& AddPartition(const std::string& name, bool is_default = false);
  shoal::Cluster& cluster() { return cluster_; }
  std::shared_ptr<const sched::Inventory> Inventory() const;

 private:
  shoal::Cluster cluster_;
  std::deque<shoal::Node> nodes_;
};

class JobBuilder {
 public:
  explicit JobBuilder(std::string name) { spec_.name = std::move(name); }
  JobBuilder& Gpus(int total) {
    spec_.gpus = total;
    return *this;
  }
  JobBuilder& Gang(int nodes, int gpus_per_node) {
    spec_.nodes = nodes;
    spec_.gpus_per_node = gpus_per_node;
    return *this;
  }
  JobBuilder& Nodes(int nodes) {
    spec_.nodes = nodes;
    return *this;
  }
  JobBuilder& Share(int milli) {
    spec_.gpu_milli = milli;
    return *this;
  }
  JobBuilder& Models(std::vector<std::string> models) {
    spec_.gpu_models = std::move(models);
    return *this;
  }
  JobBuilder& Cpus(double cpus) {
    spec_.cpu_milli_per_node = static_cast<int64_t>(cpus * 1000);
    return *this;
  }
  JobBuilder& CpusPerGpu(double cpus) {
    spec_.cpu_milli_per_gpu = static_cast<int64_t>(cpus * 1000);
    return *this;
  }
  JobBuilder& MemMib(int64_t mib) {
    spec_.mem_mib_per_node = mib;
    return *this;
  }
  JobBuilder& Partition(std::string p) {
    spec_.partition = std::move(p);
    return *this;
  }
  JobBuilder& Account(std::string a) {
    spec_.account = std::move(a);
    return *this;
  }
  JobBuilder& Limit(Duration d) {
    spec_.time_limit = d;
    return *this;
  }
  JobBuilder& Exclusive() {
    spec_.exclusive = true;
    return *this;
  }
  JobBuilder& Labels(std::vector<std::string> l) {
    spec_.constraints = std::move(l);
    return *this;
  }
  JobBuilder& NodeList(std::vector<std::string> nodes) {
    spec_.node_list = std::move(nodes);
    return *this;
  }
  JobBuilder& Exclude(std::vector<std::string> nodes) {
    spec_.exclude = std::move(nodes);
    return *this;
  }
  JobBuilder& Requeue() {
    spec_.requeue = true;
    return *this;
  }
  const JobSpec& spec() const { return spec_; }
  JobSpec& spec() { return spec_; }

 private:
  JobSpec spec_;
};

// Owns the specs, dependencies and allocations a Snapshot points at.
class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(std::shared_ptr<const sched::Inventory> inv);

  // Adds a pending job; returns its id (1, 2, ... in the order added, shared with Running).
  JobId Pending(const JobBuilder& job, Time submit = kTimeZero);
  // Adds a running job with the allocation given as "node:gpus" items, e.g.
  // {"n1:0-3"}; CPUs and memory per node default to the job's request.
  JobId Running(const JobBuilder& job, const std::vector<std::string>& placement, Time start,
                Time expected_end);
  sched::JobInfo& info(JobId id);
  sched::Snapshot& snapshot() { return snapshot_; }
  // Sets a node's state or unhealthy GPUs.
  void SetNode(const std::string& name, NodeState state, uint64_t unhealthy_gpus = 0);
  int AddAccount(const std::string& name, double shares, double usage_gpu_s = 0, int max_gpus = 0);
  // `any`: one satisfied dependency is enough (Slurm's ?).
  void SetDependencies(JobId id, std::vector<Dependency> deps, bool any = false);
  // The snapshot with every pointer in place (call after the last change).
  const sched::Snapshot& Build();
  // "j1" -> id, for jobs added by name.
  JobId IdOf(const std::string& name) const;
  std::string NameOf(JobId id) const;

 private:
  sched::JobInfo& Add(const JobBuilder& job, bool running);
  std::shared_ptr<const sched::Inventory> inv_;
  sched::Snapshot snapshot_;
  std::deque<JobSpec> specs_;
  std::deque<Allocation> allocations_;
  std::deque<std::vector<Dependency>> deps_;
  std::map<uint64_t, std::pair<bool, size_t>> where_;  // id -> (running, index)
  std::map<std::string, JobId> ids_;
  uint64_t next_id_ = 1;
};

// Parses "n1:0-3" against an inventory into a node allocation (GPUs only).
NodeAllocation ParsePlacement(const sched::Inventory& inv, const std::string& item);

}  // namespace shoal::testing
