#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

namespace shoal::sim {

Stat Describe(std::vector<double> values) {
  Stat s;
  s.count = static_cast<int>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values)
    sum += v;
  s.mean = sum / static_cast<double>(values.size());
  const size_t n = values.size();
  s.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n)));
  s.p99 = values[std::clamp<size_t>(rank, 1, n) - 1];
  return s;
}

namespace {

struct SizeRange {
  const char* label;
  int lo;
  int hi;
};
constexpr SizeRange kSizes[] = {
    {"1", 0, 1}, {"2-4", 2, 4}, {"5-8", 5, 8}, {"9-32", 9, 32}, {"33+", 33, 1 << 30}};

std::string Hours(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{:.1f}m", s / 60);
  return fmt::format("{:.2f}h", s / 3600);
}

std::string Pct(double f) {
  return fmt::format("{:.1f}%", f * 100);
}

}  // namespace

Summary Summarize(const SimResult& r) {
  Summary s;
  s.policy = r.policy;
  s.description = r.policy_description;
  s.mode = r.mode;
  s.events = r.events;
  s.passes = r.passes;
  s.preemptions = r.preemptions;
  s.backfilled = r.backfilled;
  s.wall_s = r.wall_seconds;
  s.schedule_s = r.schedule_seconds;
  if (r.mode == Mode::kFill) {
    for (const FillPoint& p : r.fill) {
      if (p.arrived >= 1.0) {
        s.allocation_at_full = p.allocated;
        s.fragmentation_at_full = p.fragmented;
        s.failed_at_full = p.failed_tasks;
        break;
      }
    }
    return s;
  }
  std::vector<double> jct, queue, slowdown;
  std::vector<std::vector<double>> size_jct(std::size(kSizes)), size_queue(std::size(kSizes));
  std::map<std::string, AccountSummary> accounts;
  Time first = kTimeNever;
  Time last = kTimeZero;
  for (const JobRecord& j : r.jobs) {
    ++s.jobs;
    first = std::min(first, j.submit);
    if (j.end != kTimeNever) last = std::max(last, j.end);
    if (j.state == JobState::kTimeout) ++s.timeouts;
    if (j.nodes > 1) {
      ++s.multi_node_jobs;
      s.leaves_per_multi_node_job += j.leaves;
      s.nodes_per_multi_node_job += j.nodes;
    }
    if (j.state != JobState::kCompleted) continue;
    ++s.completed;
    const double c = ToSeconds(j.end - j.submit);
    // Every wait: a preempted job's time back in the queue is waiting too.
    const double q = ToSeconds(j.waited);
    const double sd = c / std::max(1.0, ToSeconds(j.duration));
    jct.push_back(c);
    queue.push_back(q);
    slowdown.push_back(sd);
    for (size_t b = 0; b < std::size(kSizes); ++b) {
      if (j.gpus >= kSizes[b].lo && j.gpus <= kSizes[b].hi) {
        size_jct[b].push_back(c);
        size_queue[b].push_back(q);
      }
    }
    if (!j.account.empty()) {
      AccountSummary& a = accounts[j.account];
      a.account = j.account;
      ++a.jobs;
      a.mean_jct_s += c;
      a.mean_slowdown += sd;
      a.gpu_hours += j.gpu_equivalents * ToSeconds(j.duration) / 3600;
    }
  }
  if (s.multi_node_jobs > 0) {
    s.leaves_per_multi_node_job /= s.multi_node_jobs;
    s.nodes_per_multi_node_job /= s.multi_node_jobs;
  }
  s.jct_s = Describe(jct);
  s.queue_s = Describe(queue);
  s.slowdown = Describe(slowdown);
  for (size_t b = 0; b < std::size(kSizes); ++b) {
    s.by_size.push_back({kSizes[b].label, Describe(size_jct[b]), Describe(size_queue[b])});
  }
  s.makespan_s = first < last ? ToSeconds(last - first) : 0;
  s.allocated_gpu_h = r.allocated_gpu_s / 3600;
  s.restart_gpu_h = r.restart_gpu_s / 3600;
  s.faults_on = r.faults_on;
  s.fault_model = r.fault_model;
  s.faults = r.faults;
  s.goodput =
      r.allocated_gpu_s > 0 ? 1 - (r.restart_gpu_s + r.faults.lost_gpu_s) / r.allocated_gpu_s : 0;
  double util = 0, frag = 0;
  int frag_n = 0;
  for (const UtilSample& u : r.samples) {
    util += u.allocated_gpus;
    s.pending_mean += u.pending;
    s.pending_max = std::max(s.pending_max, u.pending);
    const double free = r.cluster_gpus - u.allocated_gpus;
    if (free > 0.5) {
      frag += u.fragmented_gpus / free;
      ++frag_n;
    }
  }
  if (!r.samples.empty() && r.cluster_gpus > 0)
    util /= static_cast<double>(r.samples.size()) * r.cluster_gpus;
  s.utilisation = util;
  if (!r.samples.empty()) s.pending_mean /= static_cast<double>(r.samples.size());
  s.fragmentation = frag_n > 0 ? frag / frag_n : 0;
  s.power_peak_w = r.peak_power_w;
  if (r.peak_power_w > 0 && !r.samples.empty()) {
    for (const UtilSample& u : r.samples) {
      s.power_mean_w += u.power_w;
      s.power_max_w = std::max(s.power_max_w, u.power_w);
    }
    s.power_mean_w /= static_cast<double>(r.samples.size());
    s.energy_mwh = s.power_mean_w * s.makespan_s / 3600 / 1e6;
  }
  double sum = 0, sum2 = 0;
  for (auto& [name, a] : accounts) {
    a.mean_jct_s /= a.jobs;
    a.mean_slowdown /= a.jobs;
    s.accounts.push_back(a);
    sum += a.mean_slowdown;
    sum2 += a.mean_slowdown * a.mean_slowdown;
  }
  if (!s.accounts.empty() && sum2 > 0)
    s.jain_fairness = sum * sum / (static_cast<double>(s.accounts.size()) * sum2);
  return s;
}

std::string Sparkline(const std::vector<double>& values, int width) {
  static const char* kBars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (values.empty() || width <= 0) return "";
  std::string out;
  const size_t n = values.size();
  for (int c = 0; c < width; ++c) {
    const size_t lo = n * static_cast<size_t>(c) / static_cast<size_t>(width);
    const size_t hi = std::max(lo + 1, n * static_cast<size_t>(c + 1) / static_cast<size_t>(width));
    double sum = 0;
    for (size_t i = lo; i < hi && i < n; ++i)
      sum += values[i];
    const double v = std::clamp(sum / static_cast<double>(hi - lo), 0.0, 1.0);
    out += kBars[static_cast<int>(std::lround(v * 8))];
  }
  return out;
}

namespace {

// What the faults did, a row each (`row(label, cell)` as in RenderTable).
template <typename Row>
void RenderFaultRows(Row& row) {
  row("faults: nodes failed",
      [](const Summary& s) { return std::to_string(s.faults.node_failures); });
  row("  heartbeats lost / down", [](const Summary& s) {
    return fmt::format("{} / {}", s.faults.heartbeat_losses, s.faults.heartbeat_losses_down);
  });
  row("  GPUs failed / slow", [](const Summary& s) {
    return fmt::format("{} / {}", s.faults.gpu_failures, s.faults.slow_gpus);
  });
  row("  controller restarts",
      [](const Summary& s) { return std::to_string(s.faults.controller_restarts); });
  row("  jobs requeued by faults",
      [](const Summary& s) { return std::to_string(s.faults.requeues); });
  row("  GPU-hours lost", [](const Summary& s) {
    return fmt::format(
        "{:.0f} ({})", s.faults.lost_gpu_s / 3600,
        Pct(s.allocated_gpu_h > 0 ? s.faults.lost_gpu_s / 3600 / s.allocated_gpu_h : 0));
  });
  row("  GPU-hours out of service",
      [](const Summary& s) { return fmt::format("{:.0f}", s.faults.out_of_service_gpu_s / 3600); });
}

}  // namespace

std::string RenderTable(const ReportContext& ctx, const std::vector<SimResult>& results) {
  std::vector<Summary> sums;
  for (const SimResult& r : results)
    sums.push_back(Summarize(r));
  const bool fill = !results.empty() && results[0].mode == Mode::kFill;
  std::string out = fmt::format("cluster {} ({} nodes, {} GPUs)   trace {}   seed {}{}\n",
                                ctx.cluster, ctx.nodes, ctx.gpus, ctx.trace, ctx.seed,
                                fill ? "   mode fill" : "   time limits " + ctx.limits);
  for (const std::string& note : results.empty() ? std::vector<std::string>{} : results[0].notes) {
    out += "note: " + note + "\n";
  }
  if (!results.empty() && results[0].faults_on) out += "faults: " + results[0].fault_model + "\n";
  out += "\n";
  const int w = 14;
  auto row = [&](const std::string& label, auto&& cell) {
    out += fmt::format("{:<28}", label);
    for (const Summary& s : sums)
      out += fmt::format("{:>{}}", cell(s), w);
    out += "\n";
  };
  row("policy", [](const Summary& s) { return s.policy.substr(0, 13); });
  if (fill) {
    row("GPU allocation at 100%", [](const Summary& s) { return Pct(s.allocation_at_full); });
    row("fragmented GPUs at 100%", [](const Summary& s) { return Pct(s.fragmentation_at_full); });
    // Tasks and the GPUs they asked for, each labelled: the two do not add up.
    auto dropped = [](const SimResult& r, const std::string& kind) {
      int tasks = 0;
      double gpus = 0;
      for (const DroppedKind& k : r.dropped_at_full) {
        if (!kind.empty() && k.kind != kind) continue;
        tasks += k.tasks;
        gpus += k.gpus;
      }
      return fmt::format("{} / {:.0f}", tasks, gpus);
    };
    std::vector<std::string> kinds;
    for (const SimResult& r : results) {
      for (const DroppedKind& k : r.dropped_at_full) {
        if (std::find(kinds.begin(), kinds.end(), k.kind) == kinds.end()) kinds.push_back(k.kind);
      }
    }
    std::sort(kinds.begin(), kinds.end());
    kinds.insert(kinds.begin(), "");  // all kinds first
    for (const std::string& kind : kinds) {
      out += fmt::format("{:<28}", kind.empty() ? "dropped by 100%: tasks/GPUs" : "  " + kind);
      for (const SimResult& r : results)
        out += fmt::format("{:>{}}", dropped(r, kind), w);
      out += "\n";
    }
    out += "\nGPU allocation as arrived demand grows (allocated / cluster GPUs)\n";
    std::vector<double> marks;
    for (const FillPoint& p : results[0].fill)
      marks.push_back(p.arrived);
    for (size_t i = 0; i < marks.size(); ++i) {
      if (i + 1 < marks.size() && std::fmod(std::round(marks[i] * 100), 10.0) != 0 &&
          marks[i] < 0.999)
        continue;
      out += fmt::format("  arrived {:>6}    ", Pct(marks[i]));
      for (const SimResult& r : results)
        out += fmt::format("{:>{}}", i < r.fill.size() ? Pct(r.fill[i].allocated) : "-", w);
      out += "\n";
    }
  } else {
    row("jobs completed",
        [](const Summary& s) { return fmt::format("{}/{}", s.completed, s.jobs); });
    row("JCT mean", [](const Summary& s) { return Hours(s.jct_s.mean); });
    row("JCT median", [](const Summary& s) { return Hours(s.jct_s.median); });
    row("JCT p99", [](const Summary& s) { return Hours(s.jct_s.p99); });
    row("queueing mean", [](const Summary& s) { return Hours(s.queue_s.mean); });
    row("queueing median", [](const Summary& s) { return Hours(s.queue_s.median); });
    row("queueing p99", [](const Summary& s) { return Hours(s.queue_s.p99); });
    row("slowdown mean", [](const Summary& s) { return fmt::format("{:.2f}", s.slowdown.mean); });
    row("makespan", [](const Summary& s) { return Hours(s.makespan_s); });
    row("GPU utilisation", [](const Summary& s) { return Pct(s.utilisation); });
    row("jobs waiting mean / most",
        [](const Summary& s) { return fmt::format("{:.0f} / {}", s.pending_mean, s.pending_max); });
    row("fragmented free GPUs", [](const Summary& s) { return Pct(s.fragmentation); });
    if (!sums.empty() && sums[0].power_peak_w > 0) {
      row("power mean / highest", [](const Summary& s) {
        return fmt::format("{:.0f} / {:.0f} kW", s.power_mean_w / 1000, s.power_max_w / 1000);
      });
      row("  of peak", [](const Summary& s) {
        return fmt::format("{} / {}", Pct(s.power_mean_w / s.power_peak_w),
                           Pct(s.power_max_w / s.power_peak_w));
      });
      row("energy", [](const Summary& s) { return fmt::format("{:.1f} MWh", s.energy_mwh); });
    }
    row("preemptions", [](const Summary& s) { return std::to_string(s.preemptions); });
    row("backfilled starts", [](const Summary& s) { return std::to_string(s.backfilled); });
    row("timeouts", [](const Summary& s) { return std::to_string(s.timeouts); });
    row("goodput", [](const Summary& s) { return Pct(s.goodput); });
    if (!sums.empty() && sums[0].faults_on) RenderFaultRows(row);
    row("multi-node jobs", [](const Summary& s) { return std::to_string(s.multi_node_jobs); });
    row("  nodes / leaves each", [](const Summary& s) {
      return fmt::format("{:.1f} / {:.2f}", s.nodes_per_multi_node_job,
                         s.leaves_per_multi_node_job);
    });
    if (!sums.empty() && !sums[0].accounts.empty()) {
      row("fairness (Jain, slowdown)",
          [](const Summary& s) { return fmt::format("{:.3f}", s.jain_fairness); });
    }
    out += "\nmean JCT by job size (GPUs)\n";
    for (size_t b = 0; b < (sums.empty() ? 0 : sums[0].by_size.size()); ++b) {
      row(fmt::format("  {:>5} GPUs ({} jobs)", sums[0].by_size[b].label,
                      sums[0].by_size[b].jct_s.count),
          [b](const Summary& s) { return Hours(s.by_size[b].jct_s.mean); });
    }
    out += "\nmean queueing by job size (GPUs)\n";
    for (size_t b = 0; b < (sums.empty() ? 0 : sums[0].by_size.size()); ++b) {
      row(fmt::format("  {:>5} GPUs", sums[0].by_size[b].label),
          [b](const Summary& s) { return Hours(s.by_size[b].queue_s.mean); });
    }
    out += "\nGPU utilisation over time\n";
    for (const SimResult& r : results) {
      std::vector<double> u;
      for (const UtilSample& x : r.samples)
        u.push_back(r.cluster_gpus ? x.allocated_gpus / r.cluster_gpus : 0);
      out += fmt::format("  {:<14}|{}|\n", r.policy.substr(0, 14), Sparkline(u, 60));
    }
  }
  out += "\n";
  row("scheduling passes", [](const Summary& s) { return std::to_string(s.passes); });
  row("wall time", [](const Summary& s) { return fmt::format("{:.2f}s", s.wall_s); });
  row("  of which scheduling",
      [](const Summary& s) { return fmt::format("{:.2f}s", s.schedule_s); });
  if (ctx.peak_rss_mib > 0)
    out += fmt::format("{:<28}{:>{}}\n", "peak memory (process)",
                       fmt::format("{:.0f} MiB", ctx.peak_rss_mib), w);
  out += "\n";
  for (const Summary& s : sums)
    out += fmt::format("{}: {}\n", s.policy, s.description);
  return out;
}

namespace {

nlohmann::json StatJson(const Stat& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"median", s.median}, {"p99", s.p99}};
}

}  // namespace

std::string RenderJson(const ReportContext& ctx, const std::vector<SimResult>& results) {
  nlohmann::json out;
  out["cluster"] = {{"source", ctx.cluster}, {"nodes", ctx.nodes}, {"gpus", ctx.gpus}};
  out["trace"] = ctx.trace;
  out["seed"] = ctx.seed;
  out["time_limits"] = ctx.limits;
  out["peak_rss_mib"] = ctx.peak_rss_mib;
  out["notes"] = results.empty() ? std::vector<std::string>{} : results[0].notes;
  nlohmann::json policies = nlohmann::json::array();
  for (const SimResult& r : results) {
    const Summary s = Summarize(r);
    nlohmann::json p;
    p["policy"] = s.policy;
    p["description"] = s.description;
    p["mode"] = s.mode == Mode::kFill ? "fill" : "replay";
    if (s.mode == Mode::kFill) {
      p["allocation_at_full"] = s.allocation_at_full;
      p["fragmentation_at_full"] = s.fragmentation_at_full;
      p["failed_at_full"] = s.failed_at_full;
      nlohmann::json curve = nlohmann::json::array();
      for (const FillPoint& f : r.fill) {
        curve.push_back({{"arrived", f.arrived},
                         {"allocated", f.allocated},
                         {"fragmented", f.fragmented},
                         {"tasks", f.arrived_tasks},
                         {"failed", f.failed_tasks}});
      }
      p["curve"] = curve;
    } else {
      p["jobs"] = s.jobs;
      p["completed"] = s.completed;
      p["timeouts"] = s.timeouts;
      p["jct_s"] = StatJson(s.jct_s);
      p["queueing_s"] = StatJson(s.queue_s);
      p["slowdown"] = StatJson(s.slowdown);
      p["makespan_s"] = s.makespan_s;
      p["utilisation"] = s.utilisation;
      p["fragmentation"] = s.fragmentation;
      p["pending_mean"] = s.pending_mean;
      p["pending_max"] = s.pending_max;
      if (s.power_peak_w > 0) {
        p["power_mean_kw"] = s.power_mean_w / 1000;
        p["power_max_kw"] = s.power_max_w / 1000;
        p["power_peak_kw"] = s.power_peak_w / 1000;
        p["energy_mwh"] = s.energy_mwh;
      }
      p["preemptions"] = s.preemptions;
      p["backfilled"] = s.backfilled;
      p["allocated_gpu_hours"] = s.allocated_gpu_h;
      p["restart_gpu_hours"] = s.restart_gpu_h;
      p["goodput"] = s.goodput;
      if (s.faults_on) {
        const FaultStats& f = s.faults;
        p["faults"] = {{"model", s.fault_model},
                       {"node_failures", f.node_failures},
                       {"heartbeat_losses", f.heartbeat_losses},
                       {"heartbeat_losses_down", f.heartbeat_losses_down},
                       {"gpu_failures", f.gpu_failures},
                       {"slow_gpus", f.slow_gpus},
                       {"controller_restarts", f.controller_restarts},
                       {"ignored", f.ignored},
                       {"requeues", f.requeues},
                       {"lost_gpu_hours", f.lost_gpu_s / 3600},
                       {"out_of_service_gpu_hours", f.out_of_service_gpu_s / 3600}};
      }
      p["multi_node_jobs"] = s.multi_node_jobs;
      p["nodes_per_multi_node_job"] = s.nodes_per_multi_node_job;
      p["leaves_per_multi_node_job"] = s.leaves_per_multi_node_job;
      nlohmann::json sizes = nlohmann::json::array();
      for (const SizeClass& c : s.by_size) {
        sizes.push_back(
            {{"gpus", c.label}, {"jct_s", StatJson(c.jct_s)}, {"queueing_s", StatJson(c.queue_s)}});
      }
      p["by_size"] = sizes;
      nlohmann::json accounts = nlohmann::json::array();
      for (const AccountSummary& a : s.accounts) {
        accounts.push_back({{"account", a.account},
                            {"jobs", a.jobs},
                            {"mean_jct_s", a.mean_jct_s},
                            {"mean_slowdown", a.mean_slowdown},
                            {"gpu_hours", a.gpu_hours}});
      }
      p["accounts"] = accounts;
      if (!s.accounts.empty()) p["jain_fairness"] = s.jain_fairness;
      nlohmann::json series = nlohmann::json::array();
      for (const UtilSample& u : r.samples) {
        series.push_back(
            {ToSeconds(u.at), u.allocated_gpus, u.fragmented_gpus, u.pending, u.running});
      }
      p["utilisation_series"] = {
          {"columns", {"t_s", "allocated_gpus", "fragmented_gpus", "pending", "running"}},
          {"rows", series}};
    }
    p["events"] = s.events;
    p["passes"] = s.passes;
    p["wall_s"] = s.wall_s;
    p["schedule_s"] = s.schedule_s;
    policies.push_back(p);
  }
  out["policies"] = policies;
  return out.dump(2) + "\n";
}

std::string RenderCsv(const ReportContext& ctx, const std::vector<SimResult>& results) {
  std::string out;
  const bool fill = !results.empty() && results[0].mode == Mode::kFill;
  if (fill) {
    out = "policy,allocation_at_full,fragmentation_at_full,failed_at_full,wall_s\n";
  } else {
    out =
        "policy,jobs,completed,jct_mean_s,jct_median_s,jct_p99_s,queue_mean_s,queue_median_s,queue_"
        "p99_s,"
        "slowdown_mean,makespan_s,utilisation,fragmentation,preemptions,backfilled,timeouts,jain_"
        "fairness,goodput,fault_requeues,fault_lost_gpu_hours,wall_s\n";
  }
  (void)ctx;
  for (const SimResult& r : results) {
    const Summary s = Summarize(r);
    if (fill) {
      out += fmt::format("{},{:.4f},{:.4f},{},{:.3f}\n", s.policy, s.allocation_at_full,
                         s.fragmentation_at_full, s.failed_at_full, s.wall_s);
    } else {
      out += fmt::format(
          "{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.3f},{:.1f},{:.4f},{:.4f},{},{},{},"
          "{:.4f},{:.4f},{},{:.1f},{:.3f}\n",
          s.policy, s.jobs, s.completed, s.jct_s.mean, s.jct_s.median, s.jct_s.p99, s.queue_s.mean,
          s.queue_s.median, s.queue_s.p99, s.slowdown.mean, s.makespan_s, s.utilisation,
          s.fragmentation, s.preemptions, s.backfilled, s.timeouts, s.jain_fairness, s.goodput,
          s.faults.requeues, s.faults.lost_gpu_s / 3600, s.wall_s);
    }
  }
  return out;
}

std::string RenderSeriesCsv(const std::vector<SimResult>& results) {
  std::string out;
  const bool fill = !results.empty() && results[0].mode == Mode::kFill;
  out = fill ? "policy,arrived,allocated,fragmented,tasks,failed\n"
             : "policy,t_s,allocated_gpus,fragmented_gpus,pending,running\n";
  for (const SimResult& r : results) {
    if (fill) {
      for (const FillPoint& f : r.fill) {
        out += fmt::format("{},{:.4f},{:.4f},{:.4f},{},{}\n", r.policy, f.arrived, f.allocated,
                           f.fragmented, f.arrived_tasks, f.failed_tasks);
      }
    } else {
      for (const UtilSample& u : r.samples) {
        out += fmt::format("{},{:.0f},{:.2f},{:.2f},{},{}\n", r.policy, ToSeconds(u.at),
                           u.allocated_gpus, u.fragmented_gpus, u.pending, u.running);
      }
    }
  }
  return out;
}

}  // namespace shoal::sim
