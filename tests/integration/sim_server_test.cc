// The simulator predicts the server (issue 15): one trace runs through
// `sim::Simulate` and through the server's `Controller`, driven on a virtual
// clock by agents simulated here (they run each job for its trace time,
// report its exit, and stop it when told to, keeping its work as a
// checkpointing job does), and crash, go unheard or lose a GPU where the
// simulator's scripted faults say. Every job must start, be preempted or requeued and
// end at the same instants in both, under every policy a server runs.
//
// The driver passes when the simulator does: after the events of an instant
// and at the time the policy's plan says the order of running jobs changes
// (Plan::wake_at). A real server also passes once a second
// (LoopOptions::idle_pass); see docs/sim.md for what that may change.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/json.h"
#include "core/rng.h"
#include "sched/policy.h"
#include "server/controller.h"
#include "server/controller_testing.h"
#include "server/restore.h"
#include "sim/engine.h"
#include "sim/inputs.h"
#include "state/store.h"

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
                                const std::string& policy, std::vector<sim::Fault> faults) {
  sim::SimOptions opts;
  opts.scripted_faults = std::move(faults);
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

// The server's side: a Controller, and the agents of its nodes, which
// crash, go unheard, lose a GPU and come back as `faults` say.
class ServedRun {
 public:
  ServedRun(const Cluster& cluster, const trace::Trace& trace, const std::string& policy,
            std::vector<sim::Fault> faults)
      : trace_(trace),
        config_(Config(cluster, trace, policy)),
        c_(std::make_unique<server::Controller>(config_)),
        faults_(std::move(faults)) {
    for (const Node& n : cluster.nodes) {
      nodes_[n.name] = {n, true, 0};
      nodes_[n.name].node.boot_id = "boot-0";
      names_.push_back(n.name);
      EXPECT_TRUE(c_->RegisterNode(kNodeAgent, nodes_[n.name].node, kStart).ok());
    }
    jobs_.resize(trace.jobs.size());
    for (size_t i = 0; i < trace.jobs.size(); ++i)
      jobs_[i].ref_s = std::max(1.0, ToSeconds(trace.jobs[i].duration));
  }

  std::vector<Timeline> Run() {
    size_t next = 0;
    size_t next_fault = 0;
    while (next < trace_.jobs.size() || !ends_.empty() || !deadlines_.empty()) {
      // While the controller restarts, arrivals wait for it (clients retry).
      Time t = std::min(c_ ? c_->WakeAt() : down_until_,
                        ends_.empty() ? kTimeNever : ends_.begin()->first);
      if (next < trace_.jobs.size())
        t = std::min(
            t, c_ ? trace_.jobs[next].submit : std::max(trace_.jobs[next].submit, down_until_));
      if (next_fault < faults_.size()) t = std::min(t, faults_[next_fault].at);
      if (!deadlines_.empty()) t = std::min(t, deadlines_.begin()->first);
      if (t == kTimeNever) break;
      Instant(t, next, next_fault);
      if (::testing::Test::HasFailure()) return {};
    }
    // The server's records say what its agents saw (those of jobs that
    // ended before a restart, its store's history).
    EXPECT_TRUE(store_->Commit(c_->TakeBatch()).ok());
    std::vector<Timeline> out;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      auto shown = c_->ShowJob(kAdmin, JobId(i + 1));
      if (!shown.ok()) {
        auto kept = store_->FindJob(JobId(i + 1));
        EXPECT_TRUE(kept.ok() && kept->has_value())
            << "job " << i + 1 << ": " << shown.status().ToString();
        if (!kept.ok() || !kept->has_value()) return {};
        shown = api::ToJson(**kept);
      }
      EXPECT_EQ((*shown)["state"], "completed") << "job " << i + 1 << ": " << shown->dump();
      EXPECT_EQ((*shown)["restarts"], jobs_[i].launches - 1) << "job " << i + 1;
      Timeline tl = jobs_[i].timeline;
      tl.restarts = jobs_[i].launches - 1;
      out.push_back(tl);
    }
    return out;
  }

  // Runs of jobs that a fault stopped (so that a test through faults
  // knows they met some).
  int stopped_by_faults() const { return stopped_by_faults_; }

 private:
  // A job as its agents run it.
  struct Agented {
    double ref_s = 0;
    double remaining = 1.0;  // the fraction of its work left when this run began
    Time start{};
    double overhead_s = 0;  // the restart cost this run pays first
    uint64_t epoch = 0;
    std::map<std::string, uint64_t> gpus;  // this run's nodes and GPUs there
    std::set<std::string> alive;           // nodes whose agent still runs its part
    bool progressing = false;              // its work goes on (not stopped, not halted)
    int launches = 0;
    Timeline timeline;
  };
  struct AgentNode {
    Node node;
    bool up = true;            // its agent runs and beats
    uint64_t failed_gpus = 0;  // what it reports unhealthy
  };
  enum class Deadline { kCheck, kNodeBack, kAgentFence, kNodeHeard, kGpuRepaired };

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
    const sim::FaultModel m;  // the simulator's timings are the server's defaults
    cfg.node_timeout = m.node_timeout;
    cfg.kill_grace = m.kill_grace;
    cfg.fence_margin = m.fence_margin;
    cfg.finished_retention = std::chrono::hours(24 * 365);  // ended jobs stay to be compared
    return cfg;
  }

  // One instant: the server's tick (lost nodes, fences), exits, faults,
  // arrivals, then passes until the plan is applied.
  void Instant(Time t, size_t& next, size_t& next_fault) {
    if (!c_ && t >= down_until_) Restart(t);
    std::map<std::string, api::Heartbeat> beats;
    Beat(beats, t);  // every node that is up, so that only a crashed one goes silent
    if (c_) c_->Tick(t);
    // A crashed node comes back when it has rebooted, a silent one when
    // heard again; its repaired GPU, once an admin resumes it.
    while (!deadlines_.empty() && deadlines_.begin()->first == t) {
      const auto [at, what] = *deadlines_.begin();
      deadlines_.erase(deadlines_.begin());
      if (what.first == Deadline::kNodeBack) NodeBack(what.second, t);
      if (what.first == Deadline::kAgentFence) AgentFence(what.second, t);
      if (what.first == Deadline::kNodeHeard) NodeHeard(what.second, t);
      if (what.first == Deadline::kGpuRepaired) GpuRepaired(what.second, t);
    }
    while (!ends_.empty() && ends_.begin()->first == t) {
      const size_t idx = ends_.begin()->second;
      Agented& j = jobs_[idx];
      if (std::any_of(j.alive.begin(), j.alive.end(),
                      [&](const std::string& node) { return !nodes_.at(node).up; })) {
        // Its end cannot reach the server from a node cut off from it: the
        // server requeues it at the node's fence, and it runs again from its
        // last checkpoint.
        StopWork(idx, t, /*checkpoint_only=*/true);
        for (auto it = j.alive.begin(); it != j.alive.end();)
          it = nodes_.at(*it).up ? std::next(it) : j.alive.erase(it);
        ExitEverywhere(idx, 0, 0, t, beats);
        continue;
      }
      ends_.erase(ends_.begin());
      j.progressing = false;
      j.timeline.end = t;
      ExitEverywhere(idx, 0, 0, t, beats);
    }
    Deliver(beats, t);
    for (; next_fault < faults_.size() && faults_[next_fault].at == t; ++next_fault)
      Fault(faults_[next_fault], t);
    for (; c_ && next < trace_.jobs.size() && trace_.jobs[next].submit <= t; ++next) {
      JobSpec spec = sim::SpecFor(trace_.jobs[next]);
      spec.time_limit = sim::TimeLimitFor(trace_.jobs[next], Limits());
      spec.command = "train.sh";
      spec.requeue = true;  // the simulator takes every trace job to checkpoint
      auto r = c_->Submit(kAlice, spec, t);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ((*r)["jobs"][0].get<uint64_t>(), next + 1);
    }
    // Pass until the plan is applied: a preemption's victims stop (their
    // agents answer the kill at once), then its preemptor starts.
    for (int round = 0; c_ && (c_->WantsPass() || t >= c_->WakeAt()); ++round) {
      ASSERT_LT(round, 100) << "passes at one instant never settle";
      c_->SchedulePass(t);
      Apply(c_->TakeOutbox(), t);
    }
    // What the server made durable at this instant (it commits before it answers).
    if (c_) {
      ASSERT_TRUE(store_->Commit(c_->TakeBatch()).ok());
    }
  }

  // The controller is back: it restores what its store kept, and hears what
  // its agents held for it (exits while it was away).
  void Restart(Time t) {
    c_ = std::make_unique<server::Controller>(config_);
    auto loaded = server::RestoreFromStore(*c_, *store_, t);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    std::map<std::string, api::Heartbeat> held = std::move(held_);
    held_.clear();
    Deliver(held, t);
  }

  size_t IndexOf(JobId id) const { return static_cast<size_t>(id.value() - 1); }

  // What a job kept when a fault stopped it at `t`: its work up to its last
  // checkpoint, one after every FaultModel::checkpoint_every of work in this
  // run (as the simulator's SaveCheckpoint counts it).
  double Checkpointed(const Agented& j, Time t) const {
    const Duration every = sim::FaultModel{}.checkpoint_every;
    const Time work_from = j.start + DurationFromSeconds(j.overhead_s);
    if (t < work_from + every) return j.remaining;
    const Time last = work_from + (t - work_from) / every * every;
    const double worked = std::max(0.0, ToSeconds(last - j.start) - j.overhead_s);
    return std::max(0.0, j.remaining - worked * 1.0 / j.ref_s);
  }

  // Stops a job's work at `t`: kept whole (preempted: it saved as it was
  // told) or up to its last checkpoint (a fault).
  void StopWork(size_t idx, Time t, bool checkpoint_only) {
    Agented& j = jobs_[idx];
    if (!j.progressing) return;
    j.progressing = false;
    ends_.erase({end_of_[idx], idx});
    if (checkpoint_only) {
      ++stopped_by_faults_;
      j.remaining = Checkpointed(j, t);
    } else {
      const double worked = std::max(0.0, ToSeconds(t - j.start) - j.overhead_s);
      j.remaining = std::max(0.0, j.remaining - worked * 1.0 / j.ref_s);
    }
  }

  void Apply(const server::Outbox& out, Time t) {
    std::map<std::string, api::Heartbeat> beats;
    for (const server::KillOrder& k : out.kills) {
      const size_t idx = IndexOf(k.job);
      Agented& j = jobs_[idx];
      // A kill cannot reach a node that is cut off (its part runs on until
      // its agent fences it) or crashed (nothing runs there).
      if (j.epoch != k.epoch || !j.alive.count(k.node) || !nodes_.at(k.node).up) continue;
      StopWork(idx, t, /*checkpoint_only=*/false);  // preempted (a fault stopped it before)
      j.alive.erase(k.node);
      beats[k.node].events.push_back({k.job, j.epoch, 0, api::JobEvent::kExited, 0, 15, "", t});
    }
    Deliver(beats, t);
    for (const server::LaunchOrder& l : out.launches) {
      const size_t idx = IndexOf(l.job);
      Agented& j = jobs_[idx];
      if (j.epoch != l.epoch) {  // a new run
        j.epoch = l.epoch;
        j.gpus.clear();
        j.alive.clear();
        j.start = t;
        j.overhead_s = j.launches > 0 ? ToSeconds(kRestartCost) : 0.0;
        ++j.launches;
        if (j.timeline.first_start == kTimeNever) j.timeline.first_start = t;
        const Time finish = t + DurationFromSeconds(j.overhead_s + j.remaining * j.ref_s / 1.0);
        end_of_[idx] = std::max(finish, t + Duration(1));
        ends_.insert({end_of_[idx], idx});
        j.progressing = true;
      }
      j.gpus[l.node] = l.allocation.gpu_mask;
      // A launch to a crashed node runs nothing: the job is halted.
      if (nodes_.at(l.node).up) {
        j.alive.insert(l.node);
      } else {
        StopWork(idx, t, /*checkpoint_only=*/true);
      }
    }
  }

  void Fault(const sim::Fault& f, Time t) {
    const std::string& name = names_.at(f.node);
    AgentNode& n = nodes_.at(name);
    std::map<std::string, api::Heartbeat> beats;
    switch (f.kind) {
      case sim::Fault::Kind::kNodeFail: {
        // Its last beat is now; its jobs stop at once, and their other
        // nodes' parts wait for the server to stop them.
        n.up = false;
        n.node.boot_id = fmt::format("boot-{}", ++boots_);
        StopJobsOn(name, t);
        Silent(name, t, t + f.lasts, Deadline::kCheck, Deadline::kNodeBack);
        break;
      }
      case sim::Fault::Kind::kHeartbeatLoss: {
        // The node goes on but cannot reach the server (nor be reached): no
        // beats, no launches; past the node timeout its agent stops its jobs
        // (fencing), and it is heard again when the gap ends. A gap the
        // timeout absorbs changes nothing.
        if (f.lasts <= sim::FaultModel{}.node_timeout) break;
        n.up = false;
        Silent(name, t, std::max(t + f.lasts, sim::FaultModel{}.DownAt(t)), Deadline::kAgentFence,
               Deadline::kNodeHeard);
        break;
      }
      case sim::Fault::Kind::kGpuXid: {
        // What runs on it crashes, and the node says so with the GPU's health.
        n.failed_gpus |= uint64_t{1} << f.gpu;
        beats[name];
        for (size_t idx = 0; idx < jobs_.size(); ++idx) {
          Agented& j = jobs_[idx];
          auto g = j.gpus.find(name);
          if (g == j.gpus.end() || !(g->second >> f.gpu & 1) || !j.alive.count(name)) continue;
          StopWork(idx, t, /*checkpoint_only=*/true);
          j.alive.erase(name);
          beats[name].events.push_back(
              {JobId(idx + 1), j.epoch, 0, api::JobEvent::kExited, 1, 0, "XID 79", t});
        }
        deadlines_.insert({t + f.lasts, {Deadline::kGpuRepaired, name}});
        Deliver(beats, t);
        break;
      }
      case sim::Fault::Kind::kControllerRestart:
        // It stops after committing what it acknowledged; nothing reaches
        // it until it is back.
        ASSERT_TRUE(store_->Commit(c_->TakeBatch()).ok());
        c_.reset();
        down_until_ = t + f.lasts;
        break;
      default:
        ADD_FAILURE() << "the driver has no agent for this fault";
    }
  }

  // A crashed node's agent starts again: it registers with its new boot id,
  // running nothing.
  void NodeBack(const std::string& name, Time t) {
    ASSERT_TRUE(c_) << "the test's faults keep node returns out of controller restarts";
    nodes_.at(name).up = true;
    auto r = c_->RegisterNode(kNodeAgent, nodes_.at(name).node, t);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }

  // A node cut off for the node timeout stops its jobs (as the simulator
  // counts it, when the server notices).
  void AgentFence(const std::string& name, Time t) { StopJobsOn(name, t); }

  // Every job part that runs on node `name` stops at `t`, unheard, its work
  // kept to its last checkpoint.
  void StopJobsOn(const std::string& name, Time t) {
    for (size_t idx = 0; idx < jobs_.size(); ++idx) {
      if (!jobs_[idx].alive.count(name)) continue;
      StopWork(idx, t, /*checkpoint_only=*/true);
      jobs_[idx].alive.erase(name);
    }
  }

  // Node `name` is silent from `t` until `back_at`: the instants the server
  // would notice (`noticed`: also when its agent fences itself) and fence
  // it, and when it is back.
  void Silent(const std::string& name, Time t, Time back_at, Deadline noticed, Deadline back) {
    const sim::FaultModel m;
    deadlines_.insert({m.DownAt(t), {noticed, name}});
    deadlines_.insert({t + m.Fence(), {Deadline::kCheck, name}});
    deadlines_.insert({back_at, {back, name}});
  }

  // A silent node is heard again: it beats, running nothing it was cut off with.
  void NodeHeard(const std::string& name, Time t) {
    nodes_.at(name).up = true;
    std::map<std::string, api::Heartbeat> beats;
    beats[name];
    Deliver(beats, t);
  }

  // A failed GPU is repaired, and an admin resumes its node.
  void GpuRepaired(const std::string& name, Time t) {
    ASSERT_TRUE(c_) << "the test's faults keep repairs out of controller restarts";
    nodes_.at(name).failed_gpus = 0;
    std::map<std::string, api::Heartbeat> beats;
    beats[name];
    Deliver(beats, t);
    EXPECT_TRUE(c_->Resume(kAdmin, name, t).ok());
  }

  // Job `idx` exits at `t` on every node where it still runs.
  void ExitEverywhere(size_t idx, int code, int signal, Time t,
                      std::map<std::string, api::Heartbeat>& beats) {
    Agented& j = jobs_[idx];
    for (const std::string& node : j.alive) {
      beats[node].events.push_back(
          {JobId(idx + 1), j.epoch, 0, api::JobEvent::kExited, code, signal, "", t});
    }
    j.alive.clear();
  }

  // A beat from every node that is up (events may be added before Deliver).
  void Beat(std::map<std::string, api::Heartbeat>& beats, Time t) {
    for (const std::string& name : names_) {
      if (nodes_.at(name).up) beats[name];
    }
    Deliver(beats, t);
  }

  // Each node's heartbeat: its exits, its GPUs' health, and every job still
  // running there.
  void Deliver(std::map<std::string, api::Heartbeat>& beats, Time t) {
    if (!c_) {  // the agents keep their exits until the controller is back
      for (auto& [node, hb] : beats) {
        if (!nodes_.at(node).up) continue;
        std::vector<api::JobEvent>& kept = held_[node].events;
        kept.insert(kept.end(), hb.events.begin(), hb.events.end());
      }
      beats.clear();
      return;
    }
    for (auto& [node, hb] : beats) {
      const AgentNode& n = nodes_.at(node);
      if (!n.up) continue;
      for (int g = 0; g < static_cast<int>(n.node.gpus.size()); ++g) {
        api::GpuReport r;
        r.index = g;
        r.healthy = !(n.failed_gpus >> g & 1);
        if (!r.healthy) r.health_reason = "XID 79";
        hb.gpus.push_back(r);
      }
      for (size_t i = 0; i < jobs_.size(); ++i) {
        if (jobs_[i].alive.count(node)) hb.running.push_back({JobId(i + 1), jobs_[i].epoch});
      }
      auto r = c_->ReceiveHeartbeat(kNodeAgent, node, hb, t);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
    }
    beats.clear();
  }

  const trace::Trace& trace_;
  const server::ControllerConfig config_;
  std::unique_ptr<server::Controller> c_;  // null while it restarts
  // What it had committed, as a store keeps it through a restart.
  std::unique_ptr<state::Store> store_ = state::NewMemoryStore();
  Time down_until_ = kTimeZero;
  std::map<std::string, api::Heartbeat> held_;  // what agents could not send meanwhile
  std::vector<sim::Fault> faults_;
  std::map<std::string, AgentNode> nodes_;
  std::vector<std::string> names_;  // by inventory index
  std::vector<Agented> jobs_;
  std::map<size_t, Time> end_of_;
  std::set<std::pair<Time, size_t>> ends_;  // (when, job) of the running jobs' exits
  std::multimap<Time, std::pair<Deadline, std::string>> deadlines_;
  int stopped_by_faults_ = 0;
  int boots_ = 0;
};

// Two node crashes (one rebooted after ten seconds, before the server
// noticed, one back after two hours), two failed GPUs and two heartbeat gaps (ten minutes, and
// twenty seconds that the node timeout absorbs), at times no arrival or exit shares.
std::vector<sim::Fault> SomeFaults() {
  using K = sim::Fault::Kind;
  auto at = [](double s) { return kStart + DurationFromSeconds(s); };
  return {
      {at(5000.5), K::kNodeFail, 1, 0, std::chrono::hours(2)},
      {at(9000.25), K::kGpuXid, 2, 3, std::chrono::hours(1)},
      {at(15000.25), K::kHeartbeatLoss, 3, 0, std::chrono::minutes(10)},
      {at(20000.75), K::kNodeFail, 0, 0, std::chrono::seconds(10)},
      {at(25000.5), K::kHeartbeatLoss, 2, 0, std::chrono::seconds(20)},
      {at(30000.5), K::kGpuXid, 3, 0, std::chrono::hours(3)},
  };
}

// The same, and the controller restarts twice (a minute, and ten), at
// times when no node or GPU comes back.
std::vector<sim::Fault> SomeFaultsAndRestarts() {
  using K = sim::Fault::Kind;
  auto at = [](double s) { return kStart + DurationFromSeconds(s); };
  std::vector<sim::Fault> faults = SomeFaults();
  faults.push_back({at(17000.5), K::kControllerRestart, 0, 0, std::chrono::minutes(1)});
  faults.push_back({at(35000.5), K::kControllerRestart, 0, 0, std::chrono::minutes(10)});
  std::sort(faults.begin(), faults.end(),
            [](const sim::Fault& a, const sim::Fault& b) { return a.at < b.at; });
  return faults;
}

class SimServerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void Compare(const std::vector<sim::Fault>& faults) {
    const Cluster cluster = TestCluster();
    for (uint64_t seed : {1, 2, 3}) {
      const trace::Trace trace = RandomTrace(seed, 200);
      const std::vector<Timeline> simulated = Simulated(cluster, trace, GetParam(), faults);
      ServedRun run(cluster, trace, GetParam(), faults);
      const std::vector<Timeline> served = run.Run();
      if (!faults.empty()) {
        EXPECT_GT(run.stopped_by_faults(), 0) << "seed " << seed;
      }
      ASSERT_EQ(simulated.size(), trace.jobs.size());
      ASSERT_EQ(served.size(), trace.jobs.size());
      int differ = 0;
      for (size_t i = 0; i < trace.jobs.size(); ++i) {
        if (simulated[i] == served[i]) continue;
        if (++differ <= 5) {
          ADD_FAILURE() << GetParam() << ", seed " << seed << ", job " << i + 1 << ": simulated "
                        << Show(simulated[i]) << "; served " << Show(served[i]);
        }
      }
      EXPECT_EQ(differ, 0) << GetParam() << ", seed " << seed << ": " << differ << " of "
                           << trace.jobs.size() << " jobs differ";
    }
  }
};

TEST_P(SimServerTest, EveryJobStartsIsPreemptedAndEndsAtTheSameInstants) {
  Compare({});
}

// Through node crashes, heartbeat gaps and failed GPUs: a lost node's jobs
// are requeued once it is fenced, with the work of their last checkpoint
// (even one that ended unheard); a failed GPU's jobs at once; its node
// drains until an admin resumes it.
TEST_P(SimServerTest, AndSoThroughLostNodesAndFailedGpus) {
  Compare(SomeFaults());
}

// Through controller restarts too: the server restarts from its store,
// hears the exits its agents kept, and takes the arrivals that waited.
TEST_P(SimServerTest, AndThroughControllerRestarts) {
  Compare(SomeFaultsAndRestarts());
}

// Every policy, and plugins in other company. Under ThreadSanitizer, which
// looks for races in the server's threads (the same whatever the policy) at
// about ten times the cost, a few that between them reserve (backfill),
// preempt (by value and by class) and keep service tables (gittins, speed):
// all 84 tests took 750 s of its CI stage. The release and ASan builds run
// them all.
std::vector<std::string> Policies() {
#if defined(__SANITIZE_THREAD__)
  return {"fifo",
          "backfill",
          "las",
          "gittins:score=best-fit",
          "speed-gittins:queue=backfill",
          "multifactor:preempt=class"};
#else
  return {"fifo",
          "backfill",
          "multifactor",
          "las",
          "las:starvation-knob=2",
          "gittins",
          "greedy",
          "first-fit",
          "best-fit",
          "topology",
          "fgd",
          "speed",
          "speed-gittins",
          "backfill:long-backfill=0",
          "gittins:preempt=none",
          "las:queue=backfill",
          "gittins:queue=backfill",
          "multifactor:queue=greedy",
          "best-fit:queue=backfill",
          "speed:queue=greedy",
          "las:preempt=tier",
          "fgd:queue=backfill",
          "las:queue=strict",
          "gittins:score=best-fit",
          "las:score=fgd",
          "backfill:score=first-fit",
          "speed-gittins:queue=backfill",
          "multifactor:preempt=class"};
#endif
}

INSTANTIATE_TEST_SUITE_P(Policies, SimServerTest, ::testing::ValuesIn(Policies()),
                         [](const auto& p) {
                           std::string s = p.param;
                           for (char& c : s) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace shoal
