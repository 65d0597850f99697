#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <iterator>
#include <map>
#include <unordered_map>

namespace shoal::server {

namespace {

using Buffer = fmt::memory_buffer;

// A label value with \, " and newlines escaped, as the format requires.
void AppendEscaped(Buffer& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') {
      out.append(std::string_view("\\\\"));
    } else if (c == '"') {
      out.append(std::string_view("\\\""));
    } else if (c == '\n') {
      out.append(std::string_view("\\n"));
    } else {
      out.push_back(c);
    }
  }
}

void Label(Buffer& out, std::string_view name, std::string_view value, bool first = false) {
  if (!first) out.push_back(',');
  out.append(name);
  out.append(std::string_view("=\""));
  AppendEscaped(out, value);
  out.push_back('"');
}

void Family(Buffer& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

// A sample: name{labels} value. `labels` is already formatted (may be empty).
void Sample(Buffer& out, std::string_view name, std::string_view labels, double value) {
  out.append(name);
  if (!labels.empty()) {
    out.push_back('{');
    out.append(labels);
    out.push_back('}');
  }
  out.push_back(' ');
  if (value == static_cast<double>(static_cast<int64_t>(value)) && value > -1e15 && value < 1e15) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<int64_t>(value));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", value);
  }
  out.push_back('\n');
}

std::string Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> labels) {
  Buffer b;
  bool first = true;
  for (const auto& [k, v] : labels) {
    Label(b, k, v, first);
    first = false;
  }
  return fmt::to_string(b);
}

// The dcgm-exporter fields Shoal's agents report, in dcgm-exporter's order.
struct DcgmField {
  const char* name;
  const char* type;
  const char* help;
  double (*value)(const GpuTelemetry&);
};

constexpr DcgmField kDcgmFields[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).",
     [](const GpuTelemetry& t) { return t.sm_clock_mhz; }},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).",
     [](const GpuTelemetry& t) { return t.temperature_c; }},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).",
     [](const GpuTelemetry& t) { return t.power_w; }},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).",
     [](const GpuTelemetry& t) { return t.energy_j * 1000.0; }},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).",
     [](const GpuTelemetry& t) { return t.util_pct; }},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).",
     [](const GpuTelemetry& t) { return t.mem_copy_util_pct; }},
    {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.",
     [](const GpuTelemetry& t) { return static_cast<double>(t.last_xid); }},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
     [](const GpuTelemetry& t) { return static_cast<double>(t.fb_free_mib); }},
    {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
     [](const GpuTelemetry& t) { return static_cast<double>(t.fb_used_mib); }},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
     [](const GpuTelemetry& t) { return static_cast<double>(t.ecc_corrected); }},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
     [](const GpuTelemetry& t) { return static_cast<double>(t.ecc_uncorrected); }},
};

// One GPU with telemetry: its labels and its reading.
struct GpuLine {
  std::string labels;
  const GpuTelemetry* telemetry;
};

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

// Labels of every GPU with telemetry, formatted once for all the fields.
std::vector<GpuLine> GpuLines(const MetricsView& v, const GpuHolders& holders) {
  const std::vector<Node>& nodes = *v.nodes;
  std::vector<GpuLine> lines;
  lines.reserve(holders.gpus());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& reports = v.now[i].gpus;
    // A node that stopped answering has no current readings (as a
    // dcgm-exporter that is down has none); its last ones would mislead.
    if (!reports || v.now[i].state == NodeState::kDown) continue;
    const Node& node = nodes[i];
    for (const GpuReport& g : *reports) {
      if (!g.telemetry.present || g.index < 0 || static_cast<size_t>(g.index) >= node.gpus.size())
        continue;
      const Gpu& gpu = node.gpus[static_cast<size_t>(g.index)];
      Buffer b;
      fmt::format_to(std::back_inserter(b), "gpu=\"{}\"", g.index);
      Label(b, "UUID", gpu.uuid);
      fmt::format_to(std::back_inserter(b), ",device=\"nvidia{}\"", g.index);
      Label(b, "modelName", gpu.model);
      Label(b, "Hostname", node.name);
      Label(b, "hostname", node.name);
      const auto& jobs = holders.Of(i, static_cast<size_t>(g.index));
      if (!jobs.empty()) {
        std::string ids, users, accounts;
        for (const Job* j : jobs) {
          if (!ids.empty()) {
            ids += ',';
            users += ',';
            accounts += ',';
          }
          ids += std::to_string(j->id.value());
          users += j->spec.user;
          accounts += j->spec.account;
        }
        Label(b, "hpc_job", ids);
        Label(b, "user", users);
        Label(b, "account", accounts);
      }
      lines.push_back({fmt::to_string(b), &g.telemetry});
    }
  }
  return lines;
}

void AppendDcgmFields(Buffer& out, const std::vector<GpuLine>& lines) {
  for (const DcgmField& f : kDcgmFields) {
    if (lines.empty()) break;
    Family(out, f.name, f.type, f.help);
    for (const GpuLine& l : lines)
      Sample(out, f.name, l.labels, f.value(*l.telemetry));
  }
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
  // Each one is a scheduler bug the commit's check caught: alert on any increase.
  Family(out, "shoal_scheduler_plan_starts_dropped_total", "counter",
         "Starts from a scheduling plan that failed the check before commit and were dropped.");
  Sample(out, "shoal_scheduler_plan_starts_dropped_total", "",
         static_cast<double>(v.plan_starts_dropped));
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

std::string RenderMetrics(const MetricsView& v, const LoopStats& loop, Time now) {
  const GpuHolders holders(v);
  Buffer out;
  AppendDcgmFields(out, GpuLines(v, holders));
  // --- Shoal's own ---
  AppendJobs(out, v, now);
  AppendPasses(out, v, loop);
  AppendNodes(out, v, holders);
  AppendAccounts(out, v);
  return fmt::to_string(out);
}

}  // namespace shoal::server
