// Shoal's backfill against a small, obviously correct EASY written here: a
// pool of GPUs, jobs in FIFO order, the first job that does not fit gets a
// reservation at the earliest time the running jobs' time limits free enough
// GPUs, and later jobs start if they fit now and either end by then or, in
// textbook EASY, fit in what the reservation leaves (the "extra" GPUs); the
// jobs behind the reservation are tried in FIFO order or shortest limit
// first (Shoal's default, backfill-order=shortest). On
// random workloads the simulator, driving the real scheduler on one node of
// 64 GPUs, must start every job when the reference does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/rng.h"
#include "sim/engine.h"
#include "sim/sim_testing.h"

namespace shoal::sim {
namespace {

constexpr int kPool = 64;

struct RefJob {
  int64_t submit = 0;  // seconds
  int64_t run = 0;
  int64_t limit = 0;
  int gpus = 0;
  int64_t start = -1;
};

// The time limit the simulator gives a job under --time-limits x2: twice its
// run time, rounded up to a minute, at least a minute.
int64_t LimitOf(int64_t run_s) {
  return std::max<int64_t>(60, (2 * run_s + 59) / 60 * 60);
}

// One EASY pass at `now` over the waiting jobs in FIFO order; the jobs behind
// the first that does not fit are tried in FIFO order, or by their time
// limits, shortest first (`shortest`), ties in FIFO order.
void EasyPass(std::vector<RefJob>& jobs, const std::vector<size_t>& waiting,
              std::vector<size_t>& running, int64_t now, bool long_backfill, bool shortest) {
  int free = kPool;
  for (size_t r : running)
    free -= jobs[r].gpus;
  size_t head = 0;
  for (; head < waiting.size() && jobs[waiting[head]].gpus <= free; ++head) {
    jobs[waiting[head]].start = now;
    free -= jobs[waiting[head]].gpus;
    running.push_back(waiting[head]);
  }
  if (head == waiting.size()) return;
  // The reservation for the first that does not fit: add up what running
  // jobs free, by their limits.
  const int wants = jobs[waiting[head]].gpus;
  std::map<int64_t, int> frees;
  for (size_t r : running)
    frees[std::max(now, jobs[r].start + jobs[r].limit)] += jobs[r].gpus;
  int64_t shadow = 0;
  int avail = free;
  for (const auto& [at, gpus] : frees) {
    avail += gpus;
    if (avail >= wants) {
      shadow = at;
      break;
    }
  }
  int extra = avail - wants;  // GPUs free at the shadow time beyond what it needs
  std::vector<size_t> behind(waiting.begin() + static_cast<ptrdiff_t>(head) + 1, waiting.end());
  if (shortest) {
    std::stable_sort(behind.begin(), behind.end(),
                     [&](size_t a, size_t b) { return jobs[a].limit < jobs[b].limit; });
  }
  for (size_t w : behind) {
    RefJob& j = jobs[w];
    const bool ends_before = now + j.limit <= shadow;
    if (j.gpus > free || (!ends_before && (!long_backfill || j.gpus > extra))) continue;
    j.start = now;
    free -= j.gpus;
    if (!ends_before) extra -= j.gpus;
    running.push_back(w);
  }
}

// The whole replay: ends, then arrivals, then one pass per instant.
void ReferenceEasy(std::vector<RefJob>& jobs, bool long_backfill, bool shortest) {
  std::vector<size_t> running, waiting;
  size_t next = 0;
  while (next < jobs.size() || !running.empty() || !waiting.empty()) {
    int64_t t = next < jobs.size() ? jobs[next].submit : INT64_MAX;
    for (size_t r : running)
      t = std::min(t, jobs[r].start + jobs[r].run);
    std::erase_if(running, [&](size_t r) { return jobs[r].start + jobs[r].run == t; });
    for (; next < jobs.size() && jobs[next].submit == t; ++next)
      waiting.push_back(next);
    EasyPass(jobs, waiting, running, t, long_backfill, shortest);
    std::erase_if(waiting, [&](size_t w) { return jobs[w].start >= 0; });
  }
}

// Poisson arrivals at about 1.3 times what the pool can take, sizes from one
// GPU to the whole pool, heavy-tailed run times.
std::vector<RefJob> RandomWorkload(uint64_t seed, int count) {
  Rng rng(seed);
  constexpr int kSizes[] = {1, 1, 1, 2, 4, 8, 8, 16, 32, 64};
  std::vector<RefJob> jobs;
  int64_t t = 0;
  for (int i = 0; i < count; ++i) {
    RefJob j;
    j.gpus = kSizes[rng.Uniform(std::size(kSizes))];
    // Log-uniform from a minute to two days.
    j.run = static_cast<int64_t>(std::exp(std::log(60.0) + rng.UniformDouble() * std::log(2880.0)));
    j.limit = LimitOf(j.run);
    j.submit = t;
    jobs.push_back(j);
    t += static_cast<int64_t>(-std::log(1 - rng.UniformDouble()) * 900);
  }
  return jobs;
}

void ExpectSameStarts(bool long_backfill, bool shortest) {
  Cluster c = OneNode(kPool);
  c.nodes[0].cpu_milli = 1'000'000;
  const std::string policy = std::string("backfill:backfill-order=") +
                             (shortest ? "shortest" : "queue") +
                             (long_backfill ? "" : ":long-backfill=0");
  int backfilled = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::vector<RefJob> ref = RandomWorkload(seed, 300);
    trace::Trace t;
    for (size_t i = 0; i < ref.size(); ++i) {
      t.jobs.push_back(Job("j" + std::to_string(i), static_cast<double>(ref[i].submit),
                           static_cast<double>(ref[i].run), ref[i].gpus));
    }
    ReferenceEasy(ref, long_backfill, shortest);
    SimResult r = RunSim(c, t, policy);
    ASSERT_EQ(r.jobs.size(), ref.size());
    int differ = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      if (ToSeconds(r.jobs[i].first_start) != static_cast<double>(ref[i].start) && differ++ < 3) {
        ADD_FAILURE() << policy << " seed " << seed << ": job " << i << " (" << ref[i].gpus
                      << " GPUs, submitted " << ref[i].submit << ", limit " << ref[i].limit
                      << ") starts at " << ToSeconds(r.jobs[i].first_start) << ", the reference at "
                      << ref[i].start;
      }
    }
    EXPECT_EQ(differ, 0) << policy << " seed " << seed;
    backfilled += static_cast<int>(r.backfilled);
  }
  EXPECT_GT(backfilled, 100) << "the workloads backfill";
}

TEST(BackfillReferenceTest, TextbookEasyStartsWhatTheReferenceStarts) {
  ExpectSameStarts(/*long_backfill=*/true, /*shortest=*/false);
}

TEST(BackfillReferenceTest, ShortOnlyEasyStartsWhatTheReferenceStarts) {
  ExpectSameStarts(/*long_backfill=*/false, /*shortest=*/false);
}

TEST(BackfillReferenceTest, ShortestFirstEasyStartsWhatTheReferenceStarts) {
  ExpectSameStarts(/*long_backfill=*/true, /*shortest=*/true);
}

TEST(BackfillReferenceTest, ShortestFirstShortOnlyEasyStartsWhatTheReferenceStarts) {
  ExpectSameStarts(/*long_backfill=*/false, /*shortest=*/true);
}

}  // namespace
}  // namespace shoal::sim
