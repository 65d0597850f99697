// Small clusters, trace jobs and a runner for the simulator's unit tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sim/engine.h"

namespace shoal::sim {

inline Cluster OneNode(int gpus = 8, const std::string& model = "H100") {
  Cluster c;
  c.name = "one";
  Node n;
  n.id = NodeId(1);
  n.name = "n1";
  n.cpu_milli = 64000;
  n.memory_mib = 512 * 1024;
  for (int i = 0; i < gpus; ++i) {
    Gpu& g = n.gpus.emplace_back();
    g.index = i;
    g.model = model;
  }
  c.nodes.push_back(n);
  return c;
}

// `count` nodes n1, n2, ... like OneNode's.
inline Cluster Nodes(int count, int gpus = 8) {
  Cluster c = OneNode(gpus);
  for (int k = 2; k <= count; ++k) {
    Node n = c.nodes[0];
    n.id = NodeId(static_cast<uint32_t>(k));
    n.name = "n" + std::to_string(k);
    c.nodes.push_back(n);
  }
  return c;
}

inline trace::TraceJob Job(const std::string& name, double submit_s, double duration_s, int gpus) {
  trace::TraceJob j;
  j.name = name;
  j.submit = TimeFromSeconds(submit_s);
  j.duration = DurationFromSeconds(duration_s);
  j.gpus = gpus;
  return j;
}

// `jobs` jobs arriving every 20 s, of 1 to 16 GPUs (gangs past one node), a
// GPU share every 11th job where it asks for one GPU, and CPU-only jobs: on
// Nodes(3) a queue that stays hundreds deep.
inline trace::Trace MixedQueue(int jobs, bool whole_gpus_only = false) {
  trace::Trace t;
  constexpr int kSizes[] = {1, 1, 2, 4, 8, 16, 1, 0};
  for (int i = 0; i < jobs; ++i) {
    const int gpus = kSizes[i % 8] == 0 && whole_gpus_only ? 3 : kSizes[i % 8];
    trace::TraceJob j = Job("j" + std::to_string(i), i * 20, 100 + (i * 53) % 3000, gpus);
    if (i % 11 == 0 && j.gpus == 1 && !whole_gpus_only) j.gpu_milli = 500;
    t.jobs.push_back(j);
  }
  return t;
}

inline SimResult RunSim(const Cluster& c, const trace::Trace& t, const std::string& policy,
                        SimOptions opts = {}) {
  auto params = sched::Policy::Preset(policy);
  EXPECT_TRUE(params.ok()) << params.status().ToString();
  auto r = Simulate(c, t, *params, opts);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimResult{};
}

inline const JobRecord& Find(const SimResult& r, const std::string& name) {
  for (const JobRecord& j : r.jobs) {
    if (j.name == name) return j;
  }
  static JobRecord none;
  ADD_FAILURE() << "no job " << name;
  return none;
}

}  // namespace shoal::sim
