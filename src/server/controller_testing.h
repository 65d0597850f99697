// What the controller's tests share (header-only; tests only): identities,
// nodes, job specs and a fixture that drives a Controller at fixed times.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "server/controller.h"

namespace shoal::server::testing {

inline const Identity kAlice{"alice", "user"};
inline const Identity kAdmin{"root", "admin"};
inline const Identity kNodeAgent{"nodes", "node"};
inline const Identity kBob{"bob", "user"};

// A node of `gpus` H100s with 64 CPUs and 512 GiB, at a fake address.
inline Node MakeNode(const std::string& name, int gpus = 8) {
  Node n;
  n.name = name;
  n.address = "127.0.0.1:1";
  n.cpu_milli = 64000;
  n.memory_mib = 512 * 1024;
  for (int i = 0; i < gpus; ++i) {
    Gpu g;
    g.index = i;
    g.model = "H100-SXM-80GB";
    g.uuid = "GPU-" + name + "-" + std::to_string(i);
    g.memory_mib = 81920;
    n.gpus.push_back(g);
  }
  return n;
}

inline JobSpec Spec(int gpus, const std::string& command = "train.sh") {
  JobSpec s;
  s.gpus = gpus;
  s.command = command;
  s.time_limit = std::chrono::hours(1);
  return s;
}

// A controller with one default partition 'gpu' (24 h at most) and the
// backfill policy, driven at fixed times At(s).
class ControllerFixture : public ::testing::Test {
 protected:
  ControllerFixture() : c_(Config()) {}

  static ControllerConfig Config() {
    ControllerConfig cfg;
    cfg.policy = "backfill";
    cfg.node_timeout = std::chrono::seconds(30);
    cfg.launch_grace = std::chrono::seconds(15);
    Partition p;
    p.name = "gpu";
    p.is_default = true;
    p.max_time = std::chrono::hours(24);
    cfg.partitions.push_back(p);
    return cfg;
  }

  Time At(int s) const { return kTimeZero + std::chrono::seconds(1000000 + s); }

  void Register(const std::string& name, int gpus = 8, int at = 0) {
    ASSERT_TRUE(c_.RegisterNode(kNodeAgent, MakeNode(name, gpus), At(at)).ok());
  }

  JobId Submit(const Identity& who, JobSpec spec, int at = 0) {
    auto r = c_.Submit(who, std::move(spec), At(at));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? JobId((*r)["jobs"][0].get<uint64_t>()) : JobId(0);
  }

  JobState StateOf(JobId id) {
    auto r = c_.ShowJob(kAdmin, id);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *ParseJobState((*r)["state"].get<std::string>()) : JobState::kPending;
  }

  uint64_t EpochOf(JobId id) { return (*c_.ShowJob(kAdmin, id))["epoch"].get<uint64_t>(); }

  // A heartbeat that reports the jobs the controller believes run on the node.
  void Beat(const std::string& node, int at) {
    Heartbeat hb;
    const api::Json info = *c_.NodeJson(node);
    for (const auto& j : info["jobs"]) {
      const JobId id(j["job"].get<uint64_t>());
      hb.running.push_back({id, EpochOf(id)});
    }
    ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, node, hb, At(at)).ok());
  }

  // A heartbeat with the job's exit, still listing the node's other jobs (as
  // an agent's heartbeat always does).
  void Exit(const std::string& node, JobId id, int code, int at, int signal = 0) {
    Heartbeat hb;
    hb.events.push_back({id, EpochOf(id), 0, JobEvent::kExited, code, signal, ""});
    const api::Json info = *c_.NodeJson(node);
    for (const auto& j : info["jobs"]) {
      const JobId other(j["job"].get<uint64_t>());
      if (other != id) hb.running.push_back({other, EpochOf(other)});
    }
    ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, node, hb, At(at)).ok());
  }

  Controller c_;
};

}  // namespace shoal::server::testing
