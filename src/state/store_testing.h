// Builders and a scratch directory for the state module's tests. Records are
// compared through their JSON forms, which cover every stored field.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "api/json.h"
#include "core/cluster.h"
#include "core/job.h"
#include "state/store.h"

namespace shoal::state {

// A fresh directory under the test temporary directory, removed with its
// contents when the object goes.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / "shoal_state_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const {
    return (std::filesystem::path(path_) / name).string();
  }

 private:
  std::string path_;
};

// A Unix time in late 2025, `seconds` after a fixed origin. Times this large
// survive the JSON form's seconds exactly to the millisecond.
inline Time At(double seconds) {
  return TimeFromSeconds(1'764'000'000.0) + DurationFromSeconds(seconds);
}

// A job of alice's in account "ml" with the times its state implies: running
// jobs have started on node 3, finished ones ended at At(id).
inline Job TestJob(uint64_t id, JobState state = JobState::kPending) {
  Job job;
  job.id = JobId(id);
  job.spec.name = "train-" + std::to_string(id);
  job.spec.user = "alice";
  job.spec.account = "ml";
  job.spec.partition = "gpu";
  job.spec.command = "python train.py --epochs 3";
  job.spec.env = {{"SEED", std::to_string(id)}};
  job.spec.nodes = 1;
  job.spec.gpus_per_node = 2;
  job.spec.time_limit = Duration(3'600'000);
  job.state = state;
  job.reason = state == JobState::kPending ? PendingReason::kResources : PendingReason::kNone;
  job.submit_time = At(0.5);
  job.time_limit = Duration(3'600'000);
  if (state != JobState::kPending) {
    job.start_time = At(1.25);
    job.allocation.nodes.push_back(
        NodeAllocation{.node = NodeId(3), .gpu_mask = 0b0110, .cpu_milli = 4000, .mem_mib = 8192});
    job.epoch = 1;
  }
  if (IsTerminal(state)) {
    job.end_time = At(static_cast<double>(id));
    job.gpu_seconds = 2.0 * static_cast<double>(id);
  }
  return job;
}

inline Node TestNode(const std::string& name, uint32_t id = 1, int gpus = 2) {
  Node node;
  node.id = NodeId(id);
  node.name = name;
  node.address = name + ":7070";
  node.cpu_milli = 64'000;
  node.memory_mib = 512 * 1024;
  for (int i = 0; i < gpus; ++i) {
    Gpu& g = node.gpus.emplace_back();
    g.index = i;
    g.uuid = "GPU-" + name + "-" + std::to_string(i);
    g.model = "H100-SXM-80GB";
    g.memory_mib = 81'559;
    g.numa_node = i / 4;
    g.pcie_switch = i / 2;
  }
  node.labels = {"ib", "rack=r1"};
  node.partitions = {"gpu"};
  node.place = NetworkPlace{.spine = "s1", .leaf = "l2"};
  return node;
}

inline std::string JsonText(const Job& job) {
  return api::ToJson(job).dump();
}
inline std::string JsonText(const Node& node) {
  return api::ToJson(node).dump();
}
inline std::string JsonText(const Partition& p) {
  return api::ToJson(p).dump();
}
inline std::string JsonText(const Account& a) {
  return api::ToJson(a).dump();
}

}  // namespace shoal::state
