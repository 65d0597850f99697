#include "sim/fill.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>

#include "core/rng.h"
#include "sched/schedule.h"

namespace shoal::sim {

namespace {

// The tasks dropped once the cluster was full, by kind (one line each).
void RecordDropped(SimResult& result, const sched::Request& r, double gpus) {
  const std::string kind = r.total_gpus == 0            ? "CPU only"
                           : r.gpu_milli < kMilliPerGpu ? "shared GPU"
                           : r.total_gpus == 1          ? "1 GPU"
                                                        : fmt::format("{} GPUs", r.total_gpus);
  auto it = std::find_if(result.dropped_at_full.begin(), result.dropped_at_full.end(),
                         [&](const DroppedKind& k) { return k.kind == kind; });
  if (it == result.dropped_at_full.end())
    it = result.dropped_at_full.insert(it, DroppedKind{kind, 0, 0});
  ++it->tasks;
  it->gpus += gpus;
}

// The order the tasks arrive in: the trace's in seeded random order, then
// random copies of them until arrived GPU demand reaches the target (as the
// FGD artifact's workload tuning). Notes what it made in `result`.
std::vector<uint32_t> ArrivalOrder(const std::vector<FillTask>& tasks, double capacity,
                                   const SimOptions& options, SimResult& result) {
  Rng rng(options.seed);
  std::vector<uint32_t> order(tasks.size());
  for (uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[rng.Uniform(i)]);
  const size_t originals = tasks.size();
  const double target = options.fill_target * capacity;
  double demand = 0;
  size_t keep = 0;
  while (keep < order.size() && demand + tasks[order[keep]].request->GpuEquivalents() <= target)
    demand += tasks[order[keep++]].request->GpuEquivalents();
  // More demand than the target: the rest of the shuffled tasks never arrive.
  order.resize(keep);
  while (keep == originals) {
    const uint32_t src = static_cast<uint32_t>(rng.Uniform(originals));
    const double d = tasks[src].request->GpuEquivalents();
    if (demand + d > target) break;
    demand += d;
    order.push_back(src);  // a copy: the same request again
  }
  result.notes.push_back(fmt::format(
      "fill: {} tasks ({} of the trace's {}, {} random copies) in seeded random order (seed {}), "
      "{:.0f} GPUs of demand on {:.0f} GPUs",
      order.size(), keep, originals, order.size() - keep, options.seed, demand, capacity));
  return order;
}

}  // namespace

Status RunFill(const std::vector<FillTask>& tasks, FillContext& c, SimResult& result) {
  const double capacity = static_cast<double>(c.snapshot.inventory->total_gpus());
  if (capacity <= 0) return InvalidArgument("fill mode needs a cluster with GPUs");
  if (tasks.empty()) return Status::Ok();
  const std::vector<uint32_t> order = ArrivalOrder(tasks, capacity, c.options, result);
  Time now{};
  auto violation = [&](const std::string& what) {
    return InvariantViolated(now, result.policy, c.options.seed, what);
  };
  auto wall_now = [&] { return c.options.wall_clock ? c.options.wall_clock->Now() : kTimeZero; };
  // One pass: the queue in arrival order, placed in that order, a task that
  // does not fit dropped; the same as scheduling each as it arrives.
  sched::PolicyParams params = c.policy;
  params.queue = "greedy";
  params.workload = c.workload;
  auto policy = sched::Policy::Create(
      params, c.options.registry ? *c.options.registry : sched::BuiltinRegistry(), {true});
  if (!policy.ok()) return policy.status();
  sched::Snapshot& snap = c.snapshot;
  snap.pending.clear();
  snap.pending.reserve(order.size());
  snap.pending_not_whole_gpus = -1;
  for (size_t k = 0; k < order.size(); ++k) {
    sched::JobInfo info;
    info.id = JobId(k + 1);
    info.request = *tasks[order[k]].request;
    info.submit = Time(Duration(static_cast<int64_t>(k)));
    snap.pending.push_back(info);
  }
  now = Time(Duration(static_cast<int64_t>(order.size())));
  const Time t0 = wall_now();
  sched::Plan plan = sched::Schedule(snap, now, *policy);
  result.schedule_seconds += ToSeconds(wall_now() - t0);
  ++result.passes;
  std::vector<const Allocation*> placed(order.size(), nullptr);
  std::vector<int> decisions(order.size(), 0);
  for (const sched::StartDecision& s : plan.starts) {
    placed[s.job.value() - 1] = &s.allocation;
    ++decisions[s.job.value() - 1];
  }
  for (const sched::PendingDecision& p : plan.pending) {
    if (p.reason == PendingReason::kNone) return violation("a task waits without a reason");
    ++decisions[p.job.value() - 1];
  }
  double arrived = 0;
  int failed = 0;
  double next_point = 0.05;
  bool recorded_full = false;
  for (size_t k = 0; k < order.size(); ++k) {
    now = Time(Duration(static_cast<int64_t>(k)));
    ++result.events;
    if (decisions[k] != 1)
      return violation(fmt::format("task {} got {} decisions", k + 1, decisions[k]));
    const FillTask& t = tasks[order[k]];
    const double d = t.request->GpuEquivalents();
    arrived += d;
    if (placed[k] != nullptr) {
      if (std::string wrong = NotWhole(*t.request, *placed[k], t.name); !wrong.empty())
        return violation(wrong);
      Status took = c.ledger.Take(*placed[k]);
      if (!took.ok()) return violation(fmt::format("task {}: {}", k + 1, took.message()));
    } else {
      ++failed;
      if (!recorded_full) RecordDropped(result, *t.request, d);
    }
    const double frac = arrived / capacity;
    const bool full = !recorded_full && frac >= 1.0;
    if (frac >= next_point - 1e-12 || full || k + 1 == order.size()) {
      FillPoint p;
      p.arrived = frac;
      p.allocated = c.ledger.AllocatedGpus() / capacity;
      p.fragmented = c.ledger.FragmentedGpus(c.workload) / capacity;
      p.arrived_tasks = static_cast<int>(k + 1);
      p.failed_tasks = failed;
      result.fill.push_back(p);
      while (next_point <= frac + 1e-12)
        next_point += 0.05;
      if (full) recorded_full = true;
    }
  }
  return Status::Ok();
}

}  // namespace shoal::sim
