// The simulator predicts the server (issue 15): one trace runs through
// `sim::Simulate` and through the server's `Controller`, driven on a virtual
// clock by agents simulated here (they run each job for its trace time,
// report its exit, and stop it when told to, keeping its work as a
// checkpointing job does). Every job must start, be preempted and end at the
// same instants in both, under every policy a server runs.
//
// The driver passes when the simulator does: after the events of an instant
// and at the time the policy's plan says the order of running jobs changes
// (Plan::wake_at). A real server also passes once a second
// (LoopOptions::idle_pass); see docs/sim.md for what that may change.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/rng.h"
#include "sched/policy.h"
#include "server/controller.h"
#include "server/controller_testing.h"
#include "sim/engine.h"
#include "sim/inputs.h"

namespace shoal {
namespace {

using server::testing::kAdmin;
using server::testing::kAlice;
using server::testing::kNodeAgent;
using server::testing::MakeNode;

constexpr int kNodes = 4;
const Time kStart = kTimeZero + std::chrono::hours(1000);
const Duration kRestartCost = std::chrono::seconds(30);

// What happened to one job: its first start, its end, and how often it was
// stopped and requeued.
struct Timeline {
  Time first_start = kTimeNever;
  Time end = kTimeNever;
  int restarts = 0;
  bool operator==(const Timeline&) const = default;
};

std::string Show(const Timeline& t) {
  auto s = [](Time x) {
    return x == kTimeNever ? std::string("never") : fmt::format("{:.3f}", ToSeconds(x - kStart));
  };
  return fmt::format("start {} end {} restarts {}", s(t.first_start), s(t.end), t.restarts);
}

Cluster TestCluster() {
  Cluster c;
  c.name = "differential";
  for (int i = 1; i <= kNodes; ++i) {
    c.nodes.push_back(MakeNode(fmt::format("n{:02}", i)));
    c.nodes.back().id = NodeId(static_cast<uint64_t>(i));
  }
  Partition p;
  p.name = "gpu";
  p.is_default = true;
  p.max_time = std::chrono::hours(24 * 30);
  c.partitions.push_back(p);
  return c;
}

// Jobs of 1-16 GPUs arriving faster than 32 GPUs serve them, so that a queue
// builds: whole-second arrivals and run times (1 minute to 4 hours, most short).
trace::Trace RandomTrace(uint64_t seed, int jobs) {
  Rng rng(seed);
  trace::Trace t;
  Time at = kStart;
  static constexpr int kGpus[] = {1, 1, 1, 2, 2, 4, 8, 16};
  static constexpr const char* kAccounts[] = {"vision", "speech", "nlp"};
  for (int i = 0; i < jobs; ++i) {
    at += std::chrono::seconds(rng.Uniform(600));
    trace::TraceJob j;
    j.name = fmt::format("j{}", i + 1);
    j.submit = at;
    j.gpus = kGpus[rng.Uniform(std::size(kGpus))];
    j.account = kAccounts[rng.Uniform(std::size(kAccounts))];
    const double u = rng.UniformDouble();
    j.duration = std::chrono::seconds(60 + static_cast<int64_t>(u * u * u * 14400));
    t.jobs.push_back(j);
  }
  return t;
}

sim::LimitModel Limits() {
  sim::LimitModel m;
  m.kind = sim::LimitModel::kFactor;
  m.factor = 2;
  return m;
}

std::vector<Timeline> Simulated(const Cluster& cluster, const trace::Trace& trace,
                                const std::string& policy) {
  sim::SimOptions opts;
  opts.limits = Limits();
  opts.restart_cost = kRestartCost;
  opts.explain_every = 1;
  auto params = sched::Policy::Preset(policy);
  EXPECT_TRUE(params.ok()) << params.status().ToString();
  auto r = sim::Simulate(cluster, trace, *params, opts);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  std::vector<Timeline> out;
  if (!r.ok()) return out;
  for (const sim::JobRecord& j : r->jobs)
    out.push_back({j.first_start, j.end, j.restarts});
  return out;
}

// The server's side: a Controller, and the agents of its nodes.
class ServedRun {
 public:
  ServedRun(const Cluster& cluster, const trace::Trace& trace, const std::string& policy)
      : trace_(trace), c_(Config(cluster, trace, policy)) {
    for (const Node& n : cluster.nodes)
      EXPECT_TRUE(c_.RegisterNode(kNodeAgent, n, kStart).ok());
    jobs_.resize(trace.jobs.size());
    for (size_t i = 0; i < trace.jobs.size(); ++i)
      jobs_[i].ref_s = std::max(1.0, ToSeconds(trace.jobs[i].duration));
  }

  std::vector<Timeline> Run() {
    size_t next = 0;
    while (next < trace_.jobs.size() || !ends_.empty()) {  // (a wake-up needs a running job)
      Time t = std::min(c_.WakeAt(), ends_.empty() ? kTimeNever : ends_.begin()->first);
      if (next < trace_.jobs.size()) t = std::min(t, trace_.jobs[next].submit);
      if (t == kTimeNever) break;
      c_.Tick(t);
      // Exits first, then arrivals, as the simulator handles an instant.
      std::map<std::string, api::Heartbeat> beats;
      while (!ends_.empty() && ends_.begin()->first == t) {
        const size_t idx = ends_.begin()->second;
        ends_.erase(ends_.begin());
        Exit(idx, t, 0, beats);
      }
      Deliver(beats, t);
      for (; next < trace_.jobs.size() && trace_.jobs[next].submit == t; ++next) {
        JobSpec spec = sim::SpecFor(trace_.jobs[next]);
        spec.time_limit = sim::TimeLimitFor(trace_.jobs[next], Limits());
        spec.command = "train.sh";
        spec.requeue = true;  // the simulator takes every trace job to checkpoint
        auto r = c_.Submit(kAlice, spec, t);
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        if (!r.ok()) return {};
        EXPECT_EQ((*r)["jobs"][0].get<uint64_t>(), next + 1);
      }
      // Pass until the plan is applied: a preemption's victims stop (their
      // agents answer the kill at once), then its preemptor starts.
      for (int round = 0; c_.WantsPass() || t >= c_.WakeAt(); ++round) {
        EXPECT_LT(round, 100) << "passes at one instant never settle";
        if (round >= 100) return {};
        c_.SchedulePass(t);
        Apply(c_.TakeOutbox(), t);
      }
    }
    // The server's records say what its agents saw.
    std::vector<Timeline> out;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      auto shown = c_.ShowJob(kAdmin, JobId(i + 1));
      EXPECT_TRUE(shown.ok()) << shown.status().ToString();
      if (!shown.ok()) return {};
      EXPECT_EQ((*shown)["state"], "completed") << "job " << i + 1;
      EXPECT_EQ((*shown)["restarts"], jobs_[i].timeline.restarts) << "job " << i + 1;
      out.push_back(jobs_[i].timeline);
    }
    return out;
  }

 private:
  // A job as its agents run it.
  struct Agented {
    double ref_s = 0;
    double remaining = 1.0;  // the fraction of its work left when this run began
    Time start{};
    double overhead_s = 0;  // the restart cost this run pays first
    uint64_t epoch = 0;
    std::vector<std::string> nodes;
    bool running = false;
    Timeline timeline;
  };

  static server::ControllerConfig Config(const Cluster& cluster, const trace::Trace& trace,
                                         const std::string& policy) {
    server::ControllerConfig cfg;
    cfg.policy = policy;
    cfg.partitions = cluster.partitions;
    // The simulator gives each of the trace's accounts one share, in the
    // order they first appear.
    for (const trace::TraceJob& j : trace.jobs) {
      if (std::none_of(cfg.accounts.begin(), cfg.accounts.end(),
                       [&](const Account& a) { return a.name == j.account; }))
        cfg.accounts.push_back({.name = j.account, .shares = 1.0});
    }
    // The driver beats only when a job exits; nodes are never lost here.
    cfg.node_timeout = std::chrono::hours(24 * 365);
    cfg.finished_retention = std::chrono::hours(24 * 365);  // ended jobs stay to be compared
    return cfg;
  }

  size_t IndexOf(JobId id) const { return static_cast<size_t>(id.value() - 1); }

  void Apply(const server::Outbox& out, Time t) {
    std::map<std::string, api::Heartbeat> beats;
    for (const server::KillOrder& k : out.kills) {
      Agented& j = jobs_[IndexOf(k.job)];
      if (!j.running || j.epoch != k.epoch) continue;
      // Stopped as the simulator stops it: the work done since the restart
      // cost was paid is kept.
      const double worked = std::max(0.0, ToSeconds(t - j.start) - j.overhead_s);
      j.remaining = std::max(0.0, j.remaining - worked * 1.0 / j.ref_s);
      ends_.erase({end_of_[IndexOf(k.job)], IndexOf(k.job)});
      Exit(IndexOf(k.job), t, 15, beats);
    }
    Deliver(beats, t);
    for (const server::LaunchOrder& l : out.launches) {
      const size_t idx = IndexOf(l.job);
      Agented& j = jobs_[idx];
      if (j.running && j.epoch == l.epoch) {  // another node of the same start
        j.nodes.push_back(l.node);
        continue;
      }
      j.running = true;
      j.epoch = l.epoch;
      j.nodes = {l.node};
      j.start = t;
      j.overhead_s = j.timeline.restarts > 0 ? ToSeconds(kRestartCost) : 0.0;
      if (j.timeline.first_start == kTimeNever) j.timeline.first_start = t;
      const Time finish = t + DurationFromSeconds(j.overhead_s + j.remaining * j.ref_s / 1.0);
      end_of_[idx] = std::max(finish, t + Duration(1));
      ends_.insert({end_of_[idx], idx});
    }
  }

  // Job `idx` exits on each of its nodes: by itself (signal 0), or killed.
  void Exit(size_t idx, Time t, int signal, std::map<std::string, api::Heartbeat>& beats) {
    Agented& j = jobs_[idx];
    j.running = false;
    if (signal == 0) {
      j.timeline.end = t;
    } else {
      ++j.timeline.restarts;
    }
    for (const std::string& node : j.nodes) {
      beats[node].events.push_back(
          {JobId(idx + 1), j.epoch, 0, api::JobEvent::kExited, 0, signal, ""});
    }
  }

  // Each node's heartbeat: its exits, and every job still running there.
  void Deliver(std::map<std::string, api::Heartbeat>& beats, Time t) {
    for (auto& [node, hb] : beats) {
      for (size_t i = 0; i < jobs_.size(); ++i) {
        const Agented& j = jobs_[i];
        if (j.running && std::count(j.nodes.begin(), j.nodes.end(), node))
          hb.running.push_back({JobId(i + 1), j.epoch});
      }
      auto r = c_.ReceiveHeartbeat(kNodeAgent, node, hb, t);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
    }
  }

  const trace::Trace& trace_;
  server::Controller c_;
  std::vector<Agented> jobs_;
  std::map<size_t, Time> end_of_;
  std::set<std::pair<Time, size_t>> ends_;  // (when, job) of the running jobs' exits
};

class SimServerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SimServerTest, EveryJobStartsIsPreemptedAndEndsAtTheSameInstants) {
  const Cluster cluster = TestCluster();
  for (uint64_t seed : {1, 2, 3}) {
    const trace::Trace trace = RandomTrace(seed, 200);
    const std::vector<Timeline> simulated = Simulated(cluster, trace, GetParam());
    const std::vector<Timeline> served = ServedRun(cluster, trace, GetParam()).Run();
    ASSERT_EQ(simulated.size(), trace.jobs.size());
    ASSERT_EQ(served.size(), trace.jobs.size());
    int differ = 0;
    int preempted = 0;
    for (size_t i = 0; i < trace.jobs.size(); ++i) {
      preempted += simulated[i].restarts;
      if (simulated[i] == served[i]) continue;
      if (++differ <= 5) {
        ADD_FAILURE() << GetParam() << ", seed " << seed << ", job " << i + 1 << ": simulated "
                      << Show(simulated[i]) << "; served " << Show(served[i]);
      }
    }
    EXPECT_EQ(differ, 0) << GetParam() << ", seed " << seed << ": " << differ << " of "
                         << trace.jobs.size() << " jobs differ";
    RecordProperty(fmt::format("preemptions_seed{}", seed), preempted);
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, SimServerTest,
                         ::testing::Values("fifo", "backfill", "multifactor", "las", "gittins",
                                           "greedy", "first-fit", "best-fit", "topology", "fgd",
                                           "speed"),
                         [](const auto& p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace shoal
