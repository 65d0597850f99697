#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <string_view>
#include <unordered_map>

namespace shoal::server {

namespace {

using api::prometheus::Buffer;
using api::prometheus::Family;
using api::prometheus::Labels;
using api::prometheus::Sample;

// The running jobs that hold each GPU of the view's nodes.
class GpuHolders {
 public:
  explicit GpuHolders(const MetricsView& v) {
    const std::vector<Node>& nodes = *v.nodes;
    // Where each node's GPUs start in one flat array.
    std::unordered_map<uint64_t, size_t> node_pos;
    offset_.assign(nodes.size() + 1, 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      node_pos[nodes[i].id.value()] = i;
      offset_[i + 1] = offset_[i] + nodes[i].gpus.size();
    }
    holders_.resize(offset_.back());
    for (const auto& job : v.jobs) {
      if (job->state != JobState::kRunning) continue;
      for (const NodeAllocation& na : job->allocation.nodes) {
        auto p = node_pos.find(na.node.value());
        if (p == node_pos.end()) continue;
        for (uint64_t mask = na.gpu_mask; mask != 0; mask &= mask - 1) {
          const size_t index = static_cast<size_t>(std::countr_zero(mask));
          if (index < nodes[p->second].gpus.size())
            holders_[offset_[p->second] + index].push_back(job.get());
        }
      }
    }
  }

  size_t gpus() const { return offset_.back(); }
  // The jobs on GPU `index` (< the node's GPU count) of the view's node `node`.
  const std::vector<const Job*>& Of(size_t node, size_t index) const {
    return holders_[offset_[node] + index];
  }

 private:
  std::vector<size_t> offset_;
  std::vector<std::vector<const Job*>> holders_;
};

// Whether the view's node `i` has current readings: a node that stopped
// answering has none (as a dcgm-exporter that is down has none); its last
// ones would mislead.
bool Reporting(const MetricsView& v, size_t i) {
  return v.now[i].gpus != nullptr && v.now[i].state != NodeState::kDown;
}

// The GPU a report is of, or null for a report without telemetry or of no
// GPU the node registered.
const Gpu* ReportedGpu(const Node& node, const GpuReport& g) {
  if (!g.telemetry.present || g.index < 0 || static_cast<size_t>(g.index) >= node.gpus.size())
    return nullptr;
  return &node.gpus[static_cast<size_t>(g.index)];
}

// Every GPU with telemetry, as the agents' own /metrics show them (the same
// renderer), for a cluster that scrapes only the controller.
std::vector<api::prometheus::DcgmLine> DcgmLines(const MetricsView& v, const GpuHolders& holders) {
  const std::vector<Node>& nodes = *v.nodes;
  std::vector<api::prometheus::DcgmLine> lines;
  lines.reserve(holders.gpus());
  std::vector<api::prometheus::GpuJob> jobs;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!Reporting(v, i)) continue;
    const Node& node = nodes[i];
    for (const GpuReport& g : *v.now[i].gpus) {
      const Gpu* gpu = ReportedGpu(node, g);
      if (gpu == nullptr) continue;
      jobs.clear();
      for (const Job* j : holders.Of(i, static_cast<size_t>(g.index)))
        jobs.push_back({j->id.value(), j->spec.user, j->spec.account});
      // The controller knows no PCI address or driver version: those labels are the agents'.
      lines.push_back({api::prometheus::DcgmLabels({.index = gpu->Device(),
                                                    .uuid = gpu->uuid,
                                                    .pci_bus_id = {},
                                                    .model = gpu->model,
                                                    .hostname = node.name,
                                                    .driver_version = {},
                                                    .mig_profile = gpu->mig_profile,
                                                    .mig_gi = gpu->mig_gi,
                                                    .jobs = jobs}),
                       &g.telemetry});
    }
  }
  return lines;
}

// Jobs by state and partition; the queue.
void AppendJobs(Buffer& out, const MetricsView& v, Time now) {
  std::map<std::pair<std::string, std::string>, int> by_state;
  int pending = 0;
  double oldest_s = 0;
  for (const auto& job : v.jobs) {
    const std::string& part =
        job->spec.partition.empty() ? v.default_partition : job->spec.partition;
    ++by_state[{part, std::string(JobStateName(job->state))}];
    if (job->state == JobState::kPending) {
      ++pending;
      oldest_s = std::max(oldest_s, ToSeconds(now - job->submit_time));
    }
  }
  Family(out, "shoal_jobs", "gauge", "Jobs by state (pending, running) and partition.");
  for (const auto& [key, n] : by_state) {
    Sample(out, "shoal_jobs", Labels({{"partition", key.first}, {"state", key.second}}), n);
  }
  Family(out, "shoal_queue_depth", "gauge", "Pending jobs.");
  Sample(out, "shoal_queue_depth", "", pending);
  Family(out, "shoal_queue_oldest_pending_age_seconds", "gauge",
         "How long the oldest pending job has waited.");
  Sample(out, "shoal_queue_oldest_pending_age_seconds", "", oldest_s);
  Family(out, "shoal_job_submissions_total", "counter", "Jobs submitted since the server started.");
  Sample(out, "shoal_job_submissions_total", "", static_cast<double>(v.submissions));
  Family(out, "shoal_job_wait_seconds", "histogram",
         "How long jobs waited from submission (or their begin time) to their first start, by "
         "partition, since the server started.");
  for (const auto& [partition, h] : v.waits) {
    uint64_t cumulative = 0;
    for (size_t b = 0; b < WaitHistogram::kBounds.size(); ++b) {
      cumulative += h.buckets[b];
      Sample(
          out, "shoal_job_wait_seconds_bucket",
          Labels({{"partition", partition}, {"le", fmt::format("{}", WaitHistogram::kBounds[b])}}),
          static_cast<double>(cumulative));
    }
    Sample(out, "shoal_job_wait_seconds_bucket", Labels({{"partition", partition}, {"le", "+Inf"}}),
           static_cast<double>(h.count));
    Sample(out, "shoal_job_wait_seconds_sum", Labels({{"partition", partition}}), h.sum_s);
    Sample(out, "shoal_job_wait_seconds_count", Labels({{"partition", partition}}),
           static_cast<double>(h.count));
  }
}

// Scheduling passes.
void AppendPasses(Buffer& out, const MetricsView& v, const LoopStats& loop) {
  Family(out, "shoal_scheduling_pass_duration_seconds", "histogram",
         "How long scheduling passes took.");
  uint64_t cumulative = 0;
  for (size_t b = 0; b < kPassBuckets; ++b) {
    cumulative += loop.pass_buckets[b];
    Sample(out, "shoal_scheduling_pass_duration_seconds_bucket",
           Labels({{"le", fmt::format("{}", kPassBucketsMs[b] / 1000.0)}}),
           static_cast<double>(cumulative));
  }
  Sample(out, "shoal_scheduling_pass_duration_seconds_bucket", "le=\"+Inf\"",
         static_cast<double>(loop.passes));
  Sample(out, "shoal_scheduling_pass_duration_seconds_sum", "", loop.pass_ms_total / 1000.0);
  Sample(out, "shoal_scheduling_pass_duration_seconds_count", "", static_cast<double>(loop.passes));
  Family(out, "shoal_scheduling_phase_seconds_total", "counter",
         "Time scheduling passes spent in each phase: inventory (rebuilt after nodes changed), "
         "snapshot (gathering jobs), schedule (the policy), apply (checking and starting).");
  for (size_t p = 0; p < PassPhases::kNames.size(); ++p) {
    Sample(out, "shoal_scheduling_phase_seconds_total", Labels({{"phase", PassPhases::kNames[p]}}),
           v.pass_phases.seconds[p]);
  }
  // Each one is a scheduler bug the commit's check caught: alert on any increase.
  Family(out, "shoal_scheduler_plan_starts_dropped_total", "counter",
         "Starts from a scheduling plan that failed the check before commit and were dropped.");
  Sample(out, "shoal_scheduler_plan_starts_dropped_total", "",
         static_cast<double>(v.plan_starts_dropped));
}

// Each power budget (docs/power.md): its cap, the draw the scheduler counts,
// and what its GPUs measured.
void AppendPowerBudgetLines(Buffer& out, const MetricsView& v) {
  if (v.power_budgets.empty()) return;
  const struct {
    const char* name;
    const char* help;
    double TelemetryStore::PowerBudgetNow::*value;
  } kFamilies[] = {
      {"shoal_power_budget_watts", "Each power budget's cap.",
       &TelemetryStore::PowerBudgetNow::cap_w},
      {"shoal_power_budget_expected_watts",
       "The draw the scheduler counts against each power budget: its nodes idle, and the "
       "running jobs' GPUs at their expected power.",
       &TelemetryStore::PowerBudgetNow::expected_w},
      {"shoal_power_budget_gpu_watts",
       "What the GPUs under each power budget drew in their last heartbeats.",
       &TelemetryStore::PowerBudgetNow::gpu_measured_w},
  };
  for (const auto& f : kFamilies) {
    Family(out, f.name, "gauge", f.help);
    for (const TelemetryStore::PowerBudgetNow& b : v.power_budgets)
      Sample(out, f.name, Labels({{"budget", b.name}}), b.*f.value);
  }
}

// Nodes by state, GPUs by model and state.
void AppendNodes(Buffer& out, const MetricsView& v, const GpuHolders& holders) {
  const std::vector<Node>& nodes = *v.nodes;
  std::array<int, 4> node_states{};  // up, draining, drained, down
  std::map<std::string, std::array<int, 4>>
      gpus;  // model -> allocated, idle, unhealthy, unavailable
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeState st = v.now[i].state;
    const int s = st == NodeState::kUp         ? 0
                  : st == NodeState::kDraining ? 1
                  : st == NodeState::kDrained  ? 2
                                               : 3;
    ++node_states[static_cast<size_t>(s)];
    for (const Gpu& g : nodes[i].gpus) {
      const size_t index = static_cast<size_t>(g.index);
      auto& counts = gpus[g.model];
      if (index < nodes[i].gpus.size() && !holders.Of(i, index).empty()) {
        ++counts[0];
      } else if (index < 64 && (v.now[i].unhealthy_gpus >> index & 1)) {
        ++counts[2];
      } else if (st != NodeState::kUp) {
        ++counts[3];
      } else {
        ++counts[1];
      }
    }
  }
  Family(out, "shoal_nodes", "gauge", "Nodes by state.");
  constexpr const char* kNodeStates[] = {"up", "draining", "drained", "down"};
  for (size_t s = 0; s < 4; ++s)
    Sample(out, "shoal_nodes", Labels({{"state", kNodeStates[s]}}), node_states[s]);
  Family(out, "shoal_gpus", "gauge",
         "GPUs by model and state: allocated, idle (free on an up node), unhealthy, unavailable "
         "(node not up).");
  constexpr const char* kGpuStates[] = {"allocated", "idle", "unhealthy", "unavailable"};
  for (const auto& [model, counts] : gpus) {
    for (size_t s = 0; s < 4; ++s) {
      Sample(out, "shoal_gpus", Labels({{"model", model}, {"state", kGpuStates[s]}}), counts[s]);
    }
  }
  AppendPowerBudgetLines(out, v);
}

// Each node: one series for its current state (kube-state-metrics' style
// without the zero series of the other states, so that 10,000 nodes cost
// 10,000 lines, not 40,000), its last heartbeat's age, and its GPUs by model.
void AppendNodeLines(Buffer& out, const MetricsView& v, Time now) {
  const std::vector<Node>& nodes = *v.nodes;
  Family(out, "shoal_node_state", "gauge",
         "1 for each node, with its current state (up, draining, drained, down) as a label.");
  for (size_t i = 0; i < nodes.size(); ++i) {
    Sample(out, "shoal_node_state",
           Labels({{"node", nodes[i].name}, {"state", NodeStateName(v.now[i].state)}}), 1);
  }
  Family(out, "shoal_node_heartbeat_age_seconds", "gauge",
         "Time since the node was last heard from (its last heartbeat, or its registration).");
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (v.now[i].last_seen == Time{}) continue;
    Sample(out, "shoal_node_heartbeat_age_seconds", Labels({{"node", nodes[i].name}}),
           std::max(0.0, ToSeconds(now - v.now[i].last_seen)));
  }
  Family(out, "shoal_node_gpus", "gauge", "GPUs of each node, by model.");
  std::map<std::string_view, int> models;
  for (size_t i = 0; i < nodes.size(); ++i) {
    models.clear();
    for (const Gpu& g : nodes[i].gpus)
      ++models[g.model];
    for (const auto& [model, count] : models)
      Sample(out, "shoal_node_gpus", Labels({{"node", nodes[i].name}, {"model", model}}), count);
  }
}

// The GPUs' telemetry summed up by model: what a view of the whole cluster
// needs, without a series per GPU.
void AppendGpuTelemetry(Buffer& out, const MetricsView& v) {
  struct Sum {
    int gpus = 0;
    double util_pct = 0;
    double power_w = 0;
    double fb_used_mib = 0;
  };
  std::map<std::string_view, Sum> by_model;
  const std::vector<Node>& nodes = *v.nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!Reporting(v, i)) continue;
    for (const GpuReport& g : *v.now[i].gpus) {
      const Gpu* gpu = ReportedGpu(nodes[i], g);
      if (gpu == nullptr) continue;
      Sum& s = by_model[gpu->model];
      ++s.gpus;
      s.util_pct += g.telemetry.util_pct;
      s.power_w += g.telemetry.power_w;
      s.fb_used_mib += static_cast<double>(g.telemetry.fb_used_mib);
    }
  }
  Family(out, "shoal_gpus_reporting", "gauge",
         "GPUs whose telemetry came with their node's last heartbeat (nodes not down), by model.");
  for (const auto& [model, s] : by_model)
    Sample(out, "shoal_gpus_reporting", Labels({{"model", model}}), s.gpus);
  Family(out, "shoal_gpu_utilization_ratio", "gauge",
         "Mean utilisation of the GPUs reporting, by model (0 to 1).");
  for (const auto& [model, s] : by_model)
    Sample(out, "shoal_gpu_utilization_ratio", Labels({{"model", model}}),
           s.util_pct / 100 / s.gpus);
  Family(out, "shoal_gpu_power_watts", "gauge", "Power drawn by the GPUs reporting, by model.");
  for (const auto& [model, s] : by_model)
    Sample(out, "shoal_gpu_power_watts", Labels({{"model", model}}), s.power_w);
  Family(out, "shoal_gpu_memory_used_bytes", "gauge",
         "Framebuffer memory used on the GPUs reporting, by model.");
  for (const auto& [model, s] : by_model)
    Sample(out, "shoal_gpu_memory_used_bytes", Labels({{"model", model}}),
           s.fb_used_mib * 1024 * 1024);
}

// Accounts and idle jobs.
void AppendAccounts(Buffer& out, const MetricsView& v) {
  // In GPU-seconds, Prometheus' base unit (GPU-hours: divide by 3600).
  Family(out, "shoal_account_gpu_seconds_total", "counter",
         "GPU-seconds used by each account since the server started (GPU-hours x 3600).");
  for (const auto& [account, gpu_s] : v.account_gpu_s) {
    Sample(out, "shoal_account_gpu_seconds_total", Labels({{"account", account}}), gpu_s);
  }
  Family(out, "shoal_job_gpu_idle", "gauge",
         "1 when every GPU of a running job has stayed under its partition's idle threshold for "
         "idle_minutes.");
  for (const auto& job : v.jobs) {
    if (job->state != JobState::kRunning || job->allocation.TotalGpus() == 0) continue;
    Sample(out, "shoal_job_gpu_idle",
           Labels({{"hpc_job", std::to_string(job->id.value())},
                   {"user", job->spec.user},
                   {"account", job->spec.account}}),
           job->idle ? 1 : 0);
  }
}

}  // namespace

// The listener's connections: every agent keeps one (docs/scale.md).
void AppendListener(Buffer& out, const ListenerCounts& c) {
  Family(out, "shoal_http_connections", "gauge",
         "Connections open to the API listener: serving a request (active), or waiting for the "
         "next one without a thread (idle).");
  Sample(out, "shoal_http_connections", Labels({{"state", "active"}}), c.open - c.idle);
  Sample(out, "shoal_http_connections", Labels({{"state", "idle"}}), c.idle);
  Family(out, "shoal_http_connections_refused_total", "counter",
         "Connections refused because one address or all clients held as many as allowed "
         "(connections_per_address, max_connections).");
  Sample(out, "shoal_http_connections_refused_total", "", static_cast<double>(c.refused));
}

std::string RenderMetrics(const MetricsView& v, const LoopStats& loop, Time now,
                          MetricsOptions options) {
  const GpuHolders holders(v);
  Buffer out;
  if (options.per_gpu) api::prometheus::AppendDcgmFields(out, DcgmLines(v, holders));
  // --- Shoal's own ---
  AppendJobs(out, v, now);
  AppendPasses(out, v, loop);
  AppendNodes(out, v, holders);
  AppendNodeLines(out, v, now);
  AppendGpuTelemetry(out, v);
  AppendAccounts(out, v);
  if (options.listener) AppendListener(out, *options.listener);
  return fmt::to_string(out);
}

}  // namespace shoal::server
