// One scheduling pass over a large cluster: the DESIGN.md target is 10,000
// nodes / 80,000 GPUs with 100,000 pending jobs in <= 100 ms, the cost growing
// no faster than linearly in pending jobs.
//
// Two states per size: "steady" (the cluster 95 % allocated by running jobs,
// as it is most of the time) and "cold" (an empty cluster: the pass places as
// many jobs as fit, the most work a pass ever does). Job sizes follow the
// Microsoft ITP mix: mostly 1 GPU, some 2-8, a few 16-64.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "core/rng.h"
#include "sched/policy.h"
#include "sched/schedule.h"

using namespace shoal;

namespace {

Cluster MakeCluster(int nodes) {
  Cluster c;
  c.name = "bench";
  for (int i = 0; i < nodes; ++i) {
    Node n;
    n.id = NodeId(static_cast<uint32_t>(i + 1));
    n.name = "n" + std::to_string(i);
    n.cpu_milli = 224000;
    n.memory_mib = 2048 * 1024;
    n.place.spine = "s" + std::to_string(i / 512);
    n.place.leaf = "l" + std::to_string(i / 32);
    for (int g = 0; g < 8; ++g) {
      Gpu& gpu = n.gpus.emplace_back();
      gpu.index = g;
      gpu.model = "H100-SXM-80GB";
      gpu.memory_mib = 81920;
      gpu.numa_node = g / 4;
      gpu.pcie_switch = g / 4;
    }
    c.nodes.push_back(n);
  }
  return c;
}

int JobGpus(Rng& rng) {
  const double u = rng.UniformDouble();
  if (u < 0.70) return 1;
  if (u < 0.80) return 2;
  if (u < 0.88) return 4;
  if (u < 0.96) return 8;
  if (u < 0.985) return 16;
  if (u < 0.995) return 32;
  return 64;
}

struct World {
  std::shared_ptr<const sched::Inventory> inv;
  std::deque<Allocation> allocs;
  sched::Snapshot snap;
};

// Fills the cluster to `fill` with running jobs (whole nodes or parts of them).
void AddRunning(World& w, double fill, Rng& rng) {
  const sched::Inventory& inv = *w.inv;
  const int64_t target = static_cast<int64_t>(fill * inv.total_gpus());
  int64_t used = 0;
  uint64_t id = 1'000'000;
  for (sched::NodeIndex n = 0; n < inv.size() && used < target; ++n) {
    int free = 8;
    while (free > 0 && used < target) {
      int g = std::min(free, JobGpus(rng));
      if (g > free) g = free;
      Allocation& a = w.allocs.emplace_back();
      NodeAllocation na;
      na.node = inv.node(n).id;
      na.gpu_mask = ((uint64_t{1} << g) - 1) << (8 - free);
      na.cpu_milli = 8000LL * g;
      na.mem_mib = 65536LL * g;
      a.nodes.push_back(na);
      sched::JobInfo j;
      j.id = JobId(id++);
      j.request.inventory_version = inv.version();
      j.request.shape = sched::Shape::kSpread;
      j.request.total_gpus = g;
      j.request.time_limit = std::chrono::hours(1 + static_cast<int>(rng.Uniform(47)));
      j.allocation = &a;
      j.start = kTimeZero + std::chrono::hours(100) - std::chrono::minutes(rng.Uniform(600));
      j.expected_end = j.start + j.request.time_limit;
      w.snap.running.push_back(j);
      free -= g;
      used += g;
    }
  }
}

void AddPending(World& w, int count, Rng& rng) {
  const sched::Inventory& inv = *w.inv;
  for (int i = 0; i < count; ++i) {
    sched::JobInfo j;
    j.id = JobId(static_cast<uint64_t>(i + 1));
    j.request.inventory_version = inv.version();
    j.request.partition = 0;
    j.request.model_mask = ~uint64_t{0};
    j.request.shape = sched::Shape::kSpread;
    j.request.total_gpus = JobGpus(rng);
    j.request.cpu_per_gpu = 8000;
    j.request.mem_per_gpu = 65536;
    j.request.time_limit = std::chrono::hours(1 + static_cast<int>(rng.Uniform(23)));
    j.submit = kTimeZero + std::chrono::hours(100) - std::chrono::seconds(count - i);
    j.queued_since = j.submit;
    j.attained_gpu_s = static_cast<double>(rng.Uniform(3)) * 4000;
    w.snap.pending.push_back(j);
  }
}

double PassMs(const World& w, const sched::Policy& policy, int repeats, sched::PassStats* stats) {
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    sched::Plan plan = sched::Schedule(w.snap, kTimeZero + std::chrono::hours(100), policy);
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    *stats = plan.stats;
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::string fmt_growth(double ratio) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "   x%.1f for 10x jobs", ratio);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  auto inv = sched::Inventory::Build(MakeCluster(nodes));
  if (!inv.ok()) {
    std::fprintf(stderr, "%s\n", inv.status().ToString().c_str());
    return 1;
  }
  std::printf("scheduling pass: %d nodes, %d GPUs (median of %d passes)\n\n", nodes,
              (*inv)->total_gpus(), repeats);
  std::printf("%-30s %-7s %9s %10s %10s %9s %9s\n", "policy", "state", "pending", "pass ms",
              "us/job", "started", "tried");
  for (const char* name :
       {"backfill", "backfill:backfill-order=queue", "multifactor", "las", "fifo", "greedy"}) {
    auto params = sched::Policy::Preset(name);
    auto policy = sched::Policy::Create(*params, sched::BuiltinRegistry());
    for (const char* state : {"steady", "cold"}) {
      double prev = 0;
      for (int pending : {1000, 10000, 100000}) {
        World w;
        w.inv = *inv;
        w.snap.inventory = *inv;
        Rng rng(42);
        if (std::string(state) == "steady") AddRunning(w, 0.95, rng);
        AddPending(w, pending, rng);
        sched::PassStats stats;
        const double ms = PassMs(w, *policy, repeats, &stats);
        std::printf("%-30s %-7s %9d %10.2f %10.3f %9d %9d%s\n", name, state, pending, ms,
                    1000.0 * ms / pending, stats.started, stats.placements_tried,
                    prev > 0 ? fmt_growth(ms / prev).c_str() : "");
        prev = ms;
      }
    }
  }
  return 0;
}
