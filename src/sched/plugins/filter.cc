// Which nodes may ever serve a request, and what a blocked job does to the queue.
#include "sched/plugins/plugins.h"

namespace shoal::sched::plugins {

namespace {

class PartitionFilter final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "partition"; }
  bool Admits(const InvNode& n, const Request& req) const override {
    return n.partitions >> req.partition & 1;
  }
};

class LabelsFilter final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "labels"; }
  bool Admits(const InvNode& n, const Request& req) const override {
    return req.LabelsAdmit(n.labels);
  }
};

// A node with at least one GPU of an acceptable model (jobs without GPUs go anywhere).
class GpuModelFilter final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "gpu-model"; }
  bool Admits(const InvNode& n, const Request& req) const override {
    return req.shape == Shape::kCpuOnly || (n.models & req.model_mask) != 0;
  }
};

class QueueModePlugin final : public ReservePlugin {
 public:
  explicit QueueModePlugin(QueueMode mode) : mode_(mode) {}
  std::string_view Name() const override {
    return mode_ == QueueMode::kStrict   ? "strict"
           : mode_ == QueueMode::kGreedy ? "greedy"
                                         : "backfill";
  }
  QueueMode Mode() const override { return mode_; }

 private:
  QueueMode mode_;
};

}  // namespace

std::shared_ptr<const FilterPlugin> MakePartitionFilter() {
  return std::make_shared<PartitionFilter>();
}
std::shared_ptr<const FilterPlugin> MakeLabelsFilter() {
  return std::make_shared<LabelsFilter>();
}
std::shared_ptr<const FilterPlugin> MakeGpuModelFilter() {
  return std::make_shared<GpuModelFilter>();
}
std::shared_ptr<const ReservePlugin> MakeQueueMode(QueueMode mode) {
  return std::make_shared<QueueModePlugin>(mode);
}

}  // namespace shoal::sched::plugins
