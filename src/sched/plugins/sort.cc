// Queue orderings.
#include <algorithm>
#include <cmath>
#include <limits>

#include "sched/gittins.h"
#include "sched/plugins/plugins.h"
#include "sched/policy.h"

namespace shoal::sched::plugins {

namespace {

// First come, first served.
class FifoSort final : public SortPlugin {
 public:
  std::string_view Name() const override { return "fifo"; }
  bool FixedWhilePending(const PolicyParams&) const override { return true; }
  double Value(const SortContext&, const JobInfo&) const override { return 0; }
};

// Slurm's multifactor priority: age, fair share, job size and QoS, each a
// factor in [0, 1] times its weight.
class MultifactorSort final : public SortPlugin {
 public:
  std::string_view Name() const override { return "multifactor"; }
  double Value(const SortContext& ctx, const JobInfo& job) const override {
    return -MultifactorPriority(ctx, job);
  }
};

// Tiresias' discretised two-dimensional least-attained-service: jobs that have
// received the least GPU-time go first; within a queue, first come first served.
class LasSort final : public SortPlugin {
 public:
  std::string_view Name() const override { return "las"; }
  // Without the starvation knob, a waiting job's queue is its attained service's.
  bool FixedWhilePending(const PolicyParams& p) const override {
    return p.las_starvation_knob <= 0;
  }
  double Value(const SortContext& ctx, const JobInfo& job) const override {
    return LasQueue(ctx, job);
  }
  bool ChangesAsItRuns() const override { return true; }
  double NextChangeAt(const Snapshot&, const PolicyParams& p, double attained_gpu_s,
                      double above) const override {
    return NextLasThreshold(p, attained_gpu_s, above);
  }
};

// Tiresias' 2DAS with Gittins indices: the job whose attained GPU-time gives the
// best chance of finishing soon per GPU-second, judged against the service that
// past jobs needed, goes first. Values are -log2 of the index, so that a whole
// unit of value is a factor of two in the index and the `class` preempt plugin
// can compare classes. Without enough history it falls back to LAS's queues.
class GittinsSort final : public SortPlugin {
 public:
  std::string_view Name() const override { return "gittins"; }
  bool UsesServiceHistory() const override { return true; }
  double Value(const SortContext& ctx, const JobInfo& job) const override {
    const GittinsTable* table = ctx.snapshot.service_index.get();
    if (table == nullptr || table->empty()) return 64.0 + LasQueue(ctx, job);
    return GittinsValue(table->Index(job.attained_gpu_s));
  }
  // Where the index's factor of two changes (the table is constant between
  // its points); LAS's queues without history.
  bool ChangesAsItRuns() const override { return true; }
  double NextChangeAt(const Snapshot& snap, const PolicyParams& p, double attained_gpu_s,
                      double above) const override {
    const GittinsTable* table = snap.service_index.get();
    if (table == nullptr || table->empty()) return NextLasThreshold(p, attained_gpu_s, above - 64);
    return table->NextClassChange(attained_gpu_s, above);
  }
};

// Shortest remaining service (GPUs x remaining time) first, from the true
// remaining time that only a simulator knows: a lower bound for comparison,
// never a policy for a real cluster.
class OracleSort final : public SortPlugin {
 public:
  std::string_view Name() const override { return "oracle"; }
  bool SimulationOnly() const override { return true; }
  bool FixedWhilePending(const PolicyParams&) const override { return true; }
  double Value(const SortContext&, const JobInfo& job) const override {
    if (job.oracle_remaining_s < 0) return std::numeric_limits<double>::infinity();
    return job.oracle_remaining_s * std::max(1.0, job.request.GpuEquivalents());
  }
};

}  // namespace

double MultifactorPriority(const SortContext& ctx, const JobInfo& job) {
  const PolicyParams& p = ctx.params;
  if (job.admin_priority > 0) return static_cast<double>(job.admin_priority);
  const double age_s = std::max(0.0, ToSeconds(ctx.now - job.submit));
  const double max_age_s = std::max(1.0, ToSeconds(p.max_age));
  const double age = std::min(1.0, age_s / max_age_s);
  double fairshare = 1.0;
  if (job.account >= 0 && static_cast<size_t>(job.account) < ctx.snapshot.accounts.size() &&
      ctx.total_shares > 0) {
    const AccountInfo& a = ctx.snapshot.accounts[static_cast<size_t>(job.account)];
    const double share = a.shares / ctx.total_shares;
    const double usage = ctx.total_usage_gpu_s > 0 ? a.usage_gpu_s / ctx.total_usage_gpu_s : 0.0;
    fairshare = share > 0 ? std::pow(2.0, -usage / share) : 0.0;
  }
  double size =
      ctx.cluster_gpus > 0
          ? std::min(1.0, job.request.GpuEquivalents() / static_cast<double>(ctx.cluster_gpus))
          : 0.0;
  if (p.favor_small) size = 1.0 - size;
  const double qos = std::clamp(job.qos_factor, 0.0, 1.0);
  return p.weight_age * age + p.weight_fairshare * fairshare + p.weight_size * size +
         p.weight_qos * qos;
}

double NextLasThreshold(const PolicyParams& p, double attained_gpu_s, double above) {
  int queue = 0;  // the queue from each threshold on
  for (double threshold : p.las_thresholds_gpu_s) {
    ++queue;
    if (attained_gpu_s < threshold && queue > above) return threshold;
  }
  return std::numeric_limits<double>::infinity();
}

int LasQueue(const SortContext& ctx, const JobInfo& job) {
  const PolicyParams& p = ctx.params;
  int queue = 0;
  for (double threshold : p.las_thresholds_gpu_s) {
    if (job.attained_gpu_s >= threshold) ++queue;
  }
  if (p.las_starvation_knob > 0 && job.allocation == nullptr && queue > 0) {
    const double gpus = std::max(1.0, job.request.GpuEquivalents());
    const double executed_s = job.attained_gpu_s / gpus;
    const double waited_s = ToSeconds(ctx.now - job.queued_since);
    if (waited_s >= p.las_starvation_knob * executed_s) queue = 0;
  }
  return queue;
}

std::shared_ptr<const SortPlugin> MakeFifoSort() {
  return std::make_shared<FifoSort>();
}
std::shared_ptr<const SortPlugin> MakeMultifactorSort() {
  return std::make_shared<MultifactorSort>();
}
std::shared_ptr<const SortPlugin> MakeLasSort() {
  return std::make_shared<LasSort>();
}
std::shared_ptr<const SortPlugin> MakeOracleSort() {
  return std::make_shared<OracleSort>();
}
std::shared_ptr<const SortPlugin> MakeGittinsSort() {
  return std::make_shared<GittinsSort>();
}

}  // namespace shoal::sched::plugins
