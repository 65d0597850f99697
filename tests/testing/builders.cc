#include "testing/builders.h"

#include <stdexcept>

#include "core/strings.h"
#include "sched/request.h"

namespace shoal::testing {

NodeBuilder& NodeBuilder::Gpus(int count, const std::string& model) {
  node_->gpus.clear();
  for (int i = 0; i < count; ++i) {
    Gpu g;
    g.index = i;
    g.model = model;
    g.memory_mib = 80 * 1024;
    g.uuid = node_->name + "-gpu" + std::to_string(i);
    node_->gpus.push_back(g);
  }
  return *this;
}

NodeBuilder& NodeBuilder::RatedW(double watts) {
  for (Gpu& g : node_->gpus)
    g.rated_w = watts;
  return *this;
}

NodeBuilder& NodeBuilder::Islands(int islands) {
  const int per = std::max(1, static_cast<int>(node_->gpus.size()) / std::max(1, islands));
  for (Gpu& g : node_->gpus)
    g.nvlink_island = g.index / per;
  return *this;
}

NodeBuilder& NodeBuilder::Cpus(double cpus) {
  node_->cpu_milli = static_cast<int64_t>(cpus * 1000);
  return *this;
}

NodeBuilder& NodeBuilder::MemoryMib(int64_t mib) {
  node_->memory_mib = mib;
  return *this;
}

NodeBuilder& NodeBuilder::Leaf(const std::string& place) {
  auto p = NetworkPlace::Parse(place);
  if (!p.ok()) throw std::invalid_argument(p.status().message());
  node_->place = *p;
  return *this;
}

NodeBuilder& NodeBuilder::Partitions(std::vector<std::string> partitions) {
  node_->partitions = std::move(partitions);
  return *this;
}

NodeBuilder& NodeBuilder::Labels(std::vector<std::string> labels) {
  node_->labels = std::move(labels);
  return *this;
}

NodeBuilder& NodeBuilder::State(NodeState state) {
  node_->state = state;
  return *this;
}

ClusterBuilder::ClusterBuilder() {
  cluster_.name = "test";
}

NodeBuilder ClusterBuilder::Node(const std::string& name) {
  shoal::Node& n = nodes_.emplace_back();
  n.id = NodeId(static_cast<uint32_t>(nodes_.size()));
  n.name = name;
  n.cpu_milli = 64000;
  n.memory_mib = 512 * 1024;
  NodeBuilder b(&n);
  b.Gpus(8, "H100");
  return b;
}

Partition& ClusterBuilder::AddPartition(const std::string& name, bool is_default) {
  Partition& p = cluster_.partitions.emplace_back();
  p.name = name;
  p.is_default = is_default;
  return p;
}

std::shared_ptr<const sched::Inventory> ClusterBuilder::Inventory() const {
  shoal::Cluster c = cluster_;
  c.nodes.assign(nodes_.begin(), nodes_.end());
  auto inv = sched::Inventory::Build(c);
  if (!inv.ok()) throw std::invalid_argument(inv.status().ToString());
  return *inv;
}

SnapshotBuilder::SnapshotBuilder(std::shared_ptr<const sched::Inventory> inv)
    : inv_(std::move(inv)) {
  snapshot_.inventory = inv_;
  snapshot_.nodes.assign(inv_->size(), sched::NodeStatus{});
}

sched::JobInfo& SnapshotBuilder::Add(const JobBuilder& job, bool running) {
  JobSpec& spec = specs_.emplace_back(job.spec());
  auto req = sched::CompileRequest(*inv_, spec);
  if (!req.ok()) throw std::invalid_argument("job " + spec.name + ": " + req.status().ToString());
  auto& list = running ? snapshot_.running : snapshot_.pending;
  sched::JobInfo& info = list.emplace_back();
  info.id = JobId(next_id_++);
  info.spec = &spec;
  info.request = *req;
  info.preemptible = spec.requeue;
  where_[info.id.value()] = {running, list.size() - 1};
  if (!spec.name.empty()) ids_[spec.name] = info.id;
  for (size_t a = 0; a < snapshot_.accounts.size(); ++a) {
    if (snapshot_.accounts[a].name == spec.account) info.account = static_cast<int>(a);
  }
  return info;
}

JobId SnapshotBuilder::Pending(const JobBuilder& job, Time submit) {
  sched::JobInfo& info = Add(job, false);
  info.submit = submit;
  info.queued_since = submit;
  return info.id;
}

JobId SnapshotBuilder::Running(const JobBuilder& job, const std::vector<std::string>& placement,
                               Time start, Time expected_end) {
  sched::JobInfo& info = Add(job, true);
  info.submit = start;
  info.start = start;
  info.expected_end = expected_end;
  Allocation& a = allocations_.emplace_back();
  for (const std::string& item : placement) {
    NodeAllocation na = ParsePlacement(*inv_, item);
    const sched::NodeDemand d = info.request.Demand(na.GpuCount());
    na.gpu_milli = d.gpu_milli;
    na.cpu_milli = d.cpu_milli;
    na.mem_mib = d.mem_mib;
    na.exclusive = d.exclusive;
    a.nodes.push_back(na);
  }
  info.allocation = &a;
  return info.id;
}

sched::JobInfo& SnapshotBuilder::info(JobId id) {
  auto [running, index] = where_.at(id.value());
  return running ? snapshot_.running[index] : snapshot_.pending[index];
}

void SnapshotBuilder::SetNode(const std::string& name, NodeState state, uint64_t unhealthy_gpus) {
  auto idx = inv_->IndexOfName(name);
  if (!idx) throw std::invalid_argument("no node " + name);
  snapshot_.nodes[*idx] = sched::NodeStatus{state, unhealthy_gpus};
}

int SnapshotBuilder::AddAccount(const std::string& name, double shares, double usage_gpu_s,
                                int max_gpus) {
  snapshot_.accounts.push_back({name, shares, usage_gpu_s, max_gpus});
  return static_cast<int>(snapshot_.accounts.size()) - 1;
}

void SnapshotBuilder::SetDependencies(JobId id, std::vector<Dependency> deps, bool any) {
  info(id).dependencies = &deps_.emplace_back(std::move(deps));
  info(id).dependency_any = any;
}

const sched::Snapshot& SnapshotBuilder::Build() {
  // Accounts may be added after jobs: resolve them now.
  for (auto* list : {&snapshot_.running, &snapshot_.pending}) {
    for (sched::JobInfo& j : *list) {
      for (size_t a = 0; a < snapshot_.accounts.size(); ++a) {
        if (j.spec != nullptr && snapshot_.accounts[a].name == j.spec->account)
          j.account = static_cast<int>(a);
      }
    }
  }
  return snapshot_;
}

JobId SnapshotBuilder::IdOf(const std::string& name) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) throw std::invalid_argument("no job " + name);
  return it->second;
}

std::string SnapshotBuilder::NameOf(JobId id) const {
  for (const auto& [name, jid] : ids_) {
    if (jid == id) return name;
  }
  return ToString(id);
}

NodeAllocation ParsePlacement(const sched::Inventory& inv, const std::string& item) {
  const size_t colon = item.find(':');
  const std::string node = item.substr(0, colon);
  auto idx = inv.IndexOfName(node);
  if (!idx) throw std::invalid_argument("no node " + node);
  NodeAllocation na;
  na.node = inv.node(*idx).id;
  if (colon != std::string::npos) {
    auto gpus = ParseIntRanges(item.substr(colon + 1));
    if (!gpus.ok()) throw std::invalid_argument(gpus.status().message());
    for (int g : *gpus)
      na.gpu_mask |= uint64_t{1} << g;
  }
  return na;
}

}  // namespace shoal::testing
