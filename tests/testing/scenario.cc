#include "testing/scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/strings.h"
#include "sched/policy.h"
#include "sched/schedule.h"
#include "testing/builders.h"

namespace shoal::testing {

namespace {

struct Line {
  int number = 0;
  std::string verb;
  std::vector<std::string> args;            // positional
  std::map<std::string, std::string> opts;  // key=value (flags map to "")
};

struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<Line> Tokenize(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ParseError(fmt::format("{}: cannot open", path));
  std::vector<Line> out;
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    const size_t hash = text.find('#');
    if (hash != std::string::npos) text = text.substr(0, hash);
    std::istringstream words(text);
    std::string w;
    Line line;
    line.number = number;
    while (words >> w) {
      if (line.verb.empty()) {
        line.verb = w;
        continue;
      }
      const size_t eq = w.find('=');
      const size_t positional =
          line.verb == "expect" || line.verb == "nodes" || line.verb == "finished" ? 2
          : line.verb == "simulation"                                              ? 0
                                                                                   : 1;
      // A policy's overrides ("greedy:preempt=qos") are its name, not options.
      if (eq == std::string::npos || (line.verb == "policy" && line.args.empty())) {
        if (line.args.size() < positional) {
          line.args.push_back(w);
        } else {
          line.opts[w] = "";
        }
      } else {
        line.opts[w.substr(0, eq)] = w.substr(eq + 1);
      }
    }
    if (!line.verb.empty()) out.push_back(std::move(line));
  }
  return out;
}

class Runner {
 public:
  explicit Runner(std::string path) : path_(std::move(path)) {}

  ScenarioResult Run() {
    ScenarioResult result;
    try {
      Execute(result);
    } catch (const std::exception& e) {
      result.ok = false;
      result.failures.push_back(e.what());
    }
    return result;
  }

 private:
  [[noreturn]] void Fail(const Line& l, const std::string& what) const {
    throw ParseError(fmt::format("{}:{}: {}", path_, l.number, what));
  }

  std::string Opt(const Line& l, const std::string& key, const std::string& fallback = "") const {
    auto it = l.opts.find(key);
    return it == l.opts.end() ? fallback : it->second;
  }
  bool Has(const Line& l, const std::string& key) const { return l.opts.count(key) != 0; }

  Time ParseTime(const Line& l, const std::string& text) const {
    if (text.empty()) return now_;
    const bool rel = text[0] == '+' || text[0] == '-';
    const std::string body = rel ? text.substr(1) : text;
    auto d = ParseDuration(body.find_first_not_of("0123456789") == std::string::npos ? body + "s"
                                                                                     : body);
    if (!d.ok()) Fail(l, d.status().message());
    if (!rel) return Time(*d);
    return text[0] == '+' ? now_ + *d : now_ - *d;
  }

  int64_t Int(const Line& l, const std::string& key, int64_t fallback) const {
    if (!Has(l, key)) return fallback;
    auto v = ParseInt(Opt(l, key));
    if (!v.ok()) Fail(l, key + ": " + v.status().message());
    return *v;
  }

  std::vector<std::string> List(const Line& l, const std::string& key, char sep = ',') const {
    std::vector<std::string> out;
    if (!Has(l, key)) return out;
    const std::string value = Opt(l, key);
    for (std::string_view s : Split(value, sep)) {
      if (s.empty()) continue;
      // In placements "n1:0,4" the ",4" continues the GPU list of the item before.
      if (!out.empty() && s.find_first_not_of("0123456789-") == std::string_view::npos &&
          out.back().find(':') != std::string::npos) {
        out.back() += "," + std::string(s);
        continue;
      }
      out.emplace_back(s);
    }
    return out;
  }

  void AddNode(const Line& l, const std::string& name) {
    NodeBuilder b = cluster_.Node(name);
    b.Gpus(static_cast<int>(Int(l, "gpus", 8)), Opt(l, "model", "H100"));
    if (Has(l, "islands")) b.Islands(static_cast<int>(Int(l, "islands", 1)));
    if (Has(l, "cpus")) b.Cpus(static_cast<double>(Int(l, "cpus", 64)));
    if (Has(l, "mem")) {
      auto m = ParseMemoryMib(Opt(l, "mem"));
      if (!m.ok()) Fail(l, m.status().message());
      b.MemoryMib(*m);
    }
    if (Has(l, "leaf")) b.Leaf(Opt(l, "leaf"));
    if (Has(l, "partitions")) b.Partitions(List(l, "partitions"));
    if (Has(l, "labels")) b.Labels(List(l, "labels"));
    if (Has(l, "state") || Has(l, "unhealthy")) {
      uint64_t unhealthy = 0;
      for (const std::string& g : List(l, "unhealthy"))
        unhealthy |= uint64_t{1} << std::stoi(g);
      NodeState st = NodeState::kUp;
      if (Has(l, "state")) {
        auto s = ParseNodeState(Opt(l, "state"));
        if (!s.ok()) Fail(l, s.status().message());
        st = *s;
      }
      node_status_[name] = {st, unhealthy};
    }
  }

  JobBuilder MakeJob(const Line& l, const std::string& name) const {
    JobBuilder j(name);
    if (Has(l, "gpus-per-node")) {
      j.Gang(static_cast<int>(Int(l, "nodes", 1)), static_cast<int>(Int(l, "gpus-per-node", 0)));
    } else {
      j.Gpus(static_cast<int>(Int(l, "gpus", 0)));
      if (Has(l, "nodes")) j.Nodes(static_cast<int>(Int(l, "nodes", 1)));
    }
    if (Has(l, "milli")) j.Share(static_cast<int>(Int(l, "milli", 1000)));
    if (Has(l, "model")) j.Models(List(l, "model", '|'));
    if (Has(l, "cpus")) j.Cpus(static_cast<double>(Int(l, "cpus", 0)));
    if (Has(l, "cpus-per-gpu")) j.CpusPerGpu(static_cast<double>(Int(l, "cpus-per-gpu", 0)));
    if (Has(l, "mem")) {
      auto m = ParseMemoryMib(Opt(l, "mem"));
      if (!m.ok()) Fail(l, m.status().message());
      j.MemMib(*m);
    }
    if (Has(l, "partition")) j.Partition(Opt(l, "partition"));
    if (Has(l, "account")) j.Account(Opt(l, "account"));
    if (Has(l, "limit")) {
      auto d = ParseDuration(Opt(l, "limit"));
      if (!d.ok()) Fail(l, d.status().message());
      j.Limit(*d);
    }
    if (Has(l, "exclusive")) j.Exclusive();
    if (Has(l, "labels")) j.Labels(List(l, "labels"));
    if (Has(l, "nodelist")) j.NodeList(List(l, "nodelist"));
    if (Has(l, "exclude")) j.Exclude(List(l, "exclude"));
    if (Has(l, "requeue")) j.Requeue();
    if (Has(l, "user")) j.spec().user = Opt(l, "user");
    if (Has(l, "reservation")) j.spec().reservation = Opt(l, "reservation");
    return j;
  }

  void ApplyJobInfo(const Line& l, JobId id) {
    sched::JobInfo& info = snap_->info(id);
    if (Has(l, "held")) info.held = true;
    if (Has(l, "begin")) info.begin_time = ParseTime(l, Opt(l, "begin"));
    if (Has(l, "attained")) info.attained_gpu_s = static_cast<double>(Int(l, "attained", 0));
    if (Has(l, "remaining")) info.oracle_remaining_s = static_cast<double>(Int(l, "remaining", 0));
    if (Has(l, "qos")) info.qos_factor = std::stod(Opt(l, "qos"));
    if (Has(l, "priority")) info.admin_priority = Int(l, "priority", 0);
    if (Has(l, "array")) info.array_id = static_cast<uint64_t>(Int(l, "array", 0));
    if (Has(l, "array-max")) info.array_max_running = static_cast<int>(Int(l, "array-max", 0));
    if (Has(l, "after")) pending_deps_.push_back({l, id});
    if (Has(l, "qos-name")) info.qos = IndexOf(l, snap_->snapshot().qos, Opt(l, "qos-name"));
    if (Has(l, "reservation")) {
      const auto& all = snap_->snapshot().reservations;
      const std::string name = Opt(l, "reservation");
      const bool known = std::any_of(
          all.begin(), all.end(), [&](const sched::ReservationInfo& r) { return r.name == name; });
      if (known) {
        info.reservation = IndexOf(l, all, name);
      } else {
        info.reservation_gone = true;
      }
    }
  }

  // speed=V100:1,K80:0.25: the job's speed on the models a name matches
  // (GpuModelMatches); 0 on the others.
  void ApplySpeed(const Line& l, JobId id, const sched::Inventory& inv) {
    auto speed = std::make_shared<std::vector<double>>(inv.models().size(), 0.0);
    for (const std::string& item : List(l, "speed")) {
      const size_t colon = item.find(':');
      if (colon == std::string::npos) Fail(l, "speed=MODEL:X,...");
      const std::string model = item.substr(0, colon);
      bool matched = false;
      for (size_t m = 0; m < speed->size(); ++m) {
        if (GpuModelMatches(model, inv.models()[m])) {
          (*speed)[m] = std::stod(item.substr(colon + 1));
          matched = true;
        }
      }
      if (!matched) Fail(l, "speed: no model '" + model + "'");
    }
    snap_->info(id).model_speed = std::move(speed);
  }

  template <typename T>
  int IndexOf(const Line& l, const std::vector<T>& items, const std::string& name) const {
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].name == name) return static_cast<int>(i);
    }
    Fail(l, "unknown name '" + name + "'");
  }

  void AddQos(const Line& l) {
    sched::QosInfo q;
    q.name = l.args.at(0);
    q.max_gpus_per_job = static_cast<int>(Int(l, "max_gpus_per_job", 0));
    q.max_gpus_per_user = static_cast<int>(Int(l, "max_gpus_per_user", 0));
    q.max_jobs_per_user = static_cast<int>(Int(l, "max_jobs_per_user", 0));
    if (Has(l, "max_time")) q.max_time = *ParseDuration(Opt(l, "max_time"));
    snap_->snapshot().qos.push_back(q);
  }

  // After every QoS is known: whom each may preempt.
  void SetQosPreempts(const std::vector<Line>& lines) {
    auto& all = snap_->snapshot().qos;
    for (size_t i = 0; i < lines.size(); ++i) {
      for (const std::string& victim : List(lines[i], "preempt"))
        all[i].preempts |= uint64_t{1} << IndexOf(lines[i], all, victim);
    }
  }

  void AddReservation(const Line& l, const sched::Inventory& inv) {
    sched::ReservationInfo r;
    r.name = l.args.at(0);
    r.start = ParseTime(l, Opt(l, "start", "+0"));
    r.end = ParseTime(l, Opt(l, "end", "+1d"));
    r.nodes = sched::NodeBitset(inv.size());
    for (const std::string& node : List(l, "nodes")) {
      auto idx = inv.IndexOfName(node);
      if (!idx) Fail(l, "unknown node '" + node + "'");
      r.nodes.Set(*idx);
    }
    snap_->snapshot().reservations.push_back(std::move(r));
  }

  void Execute(ScenarioResult& result) {
    std::vector<Line> lines = Tokenize(path_);
    std::vector<Line> jobs;
    std::vector<Line> expects;
    std::vector<Line> accounts;
    std::vector<Line> qos;
    std::vector<Line> reservations;
    std::vector<Line> finished;
    bool simulation = false;
    std::string policy_spec;
    for (const Line& l : lines) {
      if (l.verb == "policy") {
        if (l.args.empty()) Fail(l, "policy needs a name");
        policy_spec = l.args[0];
      } else if (l.verb == "simulation") {
        simulation = true;
      } else if (l.verb == "now") {
        if (l.args.empty()) Fail(l, "now needs a time");
        now_ = kTimeZero;
        now_ = ParseTime(l, l.args[0]);
      } else if (l.verb == "partition") {
        if (l.args.empty()) Fail(l, "partition needs a name");
        Partition& p = cluster_.AddPartition(l.args[0], Has(l, "default"));
        if (Has(l, "max_time")) p.max_time = *ParseDuration(Opt(l, "max_time"));
        if (Has(l, "default_time")) p.default_time = *ParseDuration(Opt(l, "default_time"));
        p.priority_tier = static_cast<int>(Int(l, "tier", 0));
        p.max_nodes_per_job = static_cast<int>(Int(l, "max_nodes", 0));
        p.max_gpus_per_job = static_cast<int>(Int(l, "max_gpus", 0));
        p.allowed_accounts = List(l, "accounts");
        p.up = !Has(l, "down");
      } else if (l.verb == "node") {
        if (l.args.empty()) Fail(l, "node needs a name");
        AddNode(l, l.args[0]);
      } else if (l.verb == "nodes") {
        if (l.args.size() < 2) Fail(l, "nodes needs a prefix and a count");
        const int count = std::stoi(l.args[1]);
        for (int i = 1; i <= count; ++i)
          AddNode(l, l.args[0] + std::to_string(i));
      } else if (l.verb == "account") {
        accounts.push_back(l);
      } else if (l.verb == "qos") {
        if (l.args.empty()) Fail(l, "qos needs a name");
        qos.push_back(l);
      } else if (l.verb == "reservation") {
        if (l.args.empty()) Fail(l, "reservation needs a name");
        reservations.push_back(l);
      } else if (l.verb == "job" || l.verb == "running") {
        if (l.args.empty()) Fail(l, l.verb + " needs a name");
        jobs.push_back(l);
      } else if (l.verb == "finished") {
        finished.push_back(l);
      } else if (l.verb == "expect") {
        expects.push_back(l);
      } else {
        Fail(l, "unknown line '" + l.verb + "'");
      }
    }
    if (policy_spec.empty()) throw ParseError(path_ + ": no policy line");
    auto inv = cluster_.Inventory();
    snap_.emplace(inv);
    for (const auto& [name, st] : node_status_)
      snap_->SetNode(name, st.first, st.second);
    for (const Line& l : accounts) {
      snap_->AddAccount(l.args.at(0), Has(l, "shares") ? std::stod(Opt(l, "shares")) : 1.0,
                        Has(l, "usage") ? std::stod(Opt(l, "usage")) * 3600 : 0.0,
                        static_cast<int>(Int(l, "max_gpus", 0)));
    }
    for (const Line& l : qos)
      AddQos(l);
    SetQosPreempts(qos);
    for (const Line& l : reservations)
      AddReservation(l, *inv);
    for (const Line& l : jobs) {
      const std::string& name = l.args[0];
      JobBuilder job = MakeJob(l, name);
      JobId id;
      if (l.verb == "running" && !Has(l, "gpus") && !Has(l, "gpus-per-node")) {
        // Without a request, a running job asked for the GPUs it holds.
        int held = 0;
        for (const std::string& item : List(l, "on"))
          held += ParsePlacement(*cluster_.Inventory(), item).GpuCount();
        job.Gpus(held);
      }
      if (l.verb == "running") {
        const Time start = ParseTime(l, Opt(l, "start", "-1h"));
        std::vector<std::string> on = List(l, "on");
        if (on.empty()) Fail(l, "running needs on=node:gpus");
        try {
          id = snap_->Running(job, on, start, kTimeZero);
        } catch (const std::exception& e) {
          Fail(l, e.what());
        }
        sched::JobInfo& info = snap_->info(id);
        info.expected_end =
            Has(l, "end") ? ParseTime(l, Opt(l, "end")) : start + info.request.time_limit;
      } else {
        try {
          id = snap_->Pending(job, ParseTime(l, Opt(l, "submit", "-1m")));
        } catch (const std::exception& e) {
          Fail(l, e.what());
        }
      }
      ApplyJobInfo(l, id);
      if (Has(l, "speed")) ApplySpeed(l, id, *inv);
    }
    std::map<std::string, JobId> finished_ids;
    uint64_t next_finished = 1000000;
    for (const Line& l : finished) {
      if (l.args.size() < 2) Fail(l, "finished needs a name and a state");
      auto st = ParseJobState(l.args[1]);
      if (!st.ok()) Fail(l, st.status().message());
      const JobId id(next_finished++);
      finished_ids[l.args[0]] = id;
      snap_->snapshot().dependency_states[id] = *st;
    }
    for (const auto& [l, id] : pending_deps_) {
      std::vector<Dependency> deps;
      const std::string after = Opt(l, "after");
      const bool any = after.find('?') != std::string::npos;  // Slurm's any-of
      for (std::string_view clause : Split(after, any ? '?' : ',')) {
        std::vector<std::string_view> parts = Split(clause, ':');
        if (parts.size() < 2) Fail(l, "after=type:job[:job]");
        auto type = ParseDependencies(std::string(parts[0]) + ":1");
        if (!type.ok()) Fail(l, type.status().message());
        for (size_t i = 1; i < parts.size(); ++i) {
          const std::string dep(parts[i]);
          JobId target = finished_ids.count(dep) ? finished_ids[dep] : snap_->IdOf(dep);
          deps.push_back({type->deps[0].type, target});
          // Jobs of the scenario are pending or running.
          if (!finished_ids.count(dep)) {
            snap_->snapshot().dependency_states[target] =
                snap_->info(target).allocation ? JobState::kRunning : JobState::kPending;
          }
        }
      }
      snap_->SetDependencies(id, deps, any);
    }
    auto params = sched::Policy::Preset(policy_spec);
    if (!params.ok()) throw ParseError(path_ + ": " + params.status().message());
    auto policy = sched::Policy::Create(*params, sched::BuiltinRegistry(), {simulation});
    if (!policy.ok()) throw ParseError(path_ + ": " + policy.status().message());
    const sched::Snapshot& snapshot = snap_->Build();
    sched::Plan plan = sched::Schedule(snapshot, now_, *policy);
    result.plan_text = Describe(plan, *inv);
    sched::Plan again = sched::Schedule(snapshot, now_, *policy);
    if (Describe(again, *inv) != result.plan_text) {
      result.failures.push_back(path_ + ": the same snapshot gave two different plans");
    }
    CheckHintAndQuietPass(snapshot, *policy, *inv, result);
    Check(plan, *inv, expects, result);
    result.ok = result.failures.empty();
  }

  // The plan does not depend on Snapshot::rank_hint (here the pending jobs
  // backwards), and a pass that need not explain (Snapshot::explain false)
  // starts and preempts exactly what the explaining pass does.
  void CheckHintAndQuietPass(const sched::Snapshot& snapshot, const sched::Policy& policy,
                             const sched::Inventory& inv, ScenarioResult& result) {
    sched::Snapshot hinted = snapshot;
    for (size_t i = snapshot.pending.size(); i > 0; --i)
      hinted.rank_hint.push_back(static_cast<uint32_t>(i - 1));
    const auto lines = [](const std::string& text) {
      std::vector<std::string_view> out = Split(text, '\n');
      std::sort(out.begin(), out.end());
      return out;
    };
    const std::string with_hint = Describe(sched::Schedule(hinted, now_, policy), inv);
    if (lines(with_hint) != lines(result.plan_text)) {
      result.failures.push_back(path_ + ": a rank hint changed the plan:\n" + with_hint);
    }
    // Every other job of the order a pass ranked, taken on trust, then the
    // others backwards: under a sort whose values are fixed while jobs wait,
    // the pass reads the trusted jobs only as it reaches them and merges the
    // others in among them.
    sched::Snapshot trusting = snapshot;
    const std::vector<uint32_t> ranked = sched::Schedule(hinted, now_, policy).ranked;
    if (ranked.size() == snapshot.pending.size()) {
      for (size_t k = 0; k < ranked.size(); k += 2)
        trusting.rank_hint.push_back(ranked[k]);
      trusting.rank_hint_ranked = trusting.rank_hint.size();
      for (size_t k = ranked.size(); k-- > 0;) {
        if (k % 2 == 1) trusting.rank_hint.push_back(ranked[k]);
      }
      const std::string trusted = Describe(sched::Schedule(trusting, now_, policy), inv);
      if (lines(trusted) != lines(result.plan_text)) {
        result.failures.push_back(path_ + ": a trusted rank hint changed the plan:\n" + trusted);
      }
    }
    hinted = trusting.rank_hint_ranked > 0 ? trusting : hinted;
    hinted.explain = false;
    sched::Plan quiet = sched::Schedule(hinted, now_, policy);
    if (!quiet.pending.empty()) {
      result.failures.push_back(path_ + ": a pass that need not explain explained");
    }
    std::string acted;  // the explaining plan's starts and preemptions
    for (std::string_view line : Split(result.plan_text, '\n')) {
      if (line.starts_with("  start") || line.starts_with("  preempt"))
        acted += std::string(line) + "\n";
    }
    if (Describe(quiet, inv) != acted) {
      result.failures.push_back(path_ + ": a pass that need not explain did otherwise:\n" +
                                Describe(quiet, inv) + "instead of\n" + acted);
    }
  }

  std::string NodeName(const sched::Inventory& inv, NodeId id) const {
    auto idx = inv.IndexOf(id);
    return idx ? inv.node(*idx).name : ToString(id);
  }

  std::string Placement(const sched::Inventory& inv, const Allocation& a) const {
    std::vector<std::string> items;
    for (const NodeAllocation& na : a.nodes) {
      items.push_back(na.gpu_mask ? NodeName(inv, na.node) + ":" + FormatGpuMask(na.gpu_mask)
                                  : NodeName(inv, na.node));
    }
    std::sort(items.begin(), items.end());
    return Join(items, ",");
  }

  std::string Describe(const sched::Plan& plan, const sched::Inventory& inv) const {
    std::string out;
    for (const sched::StartDecision& s : plan.starts) {
      out += fmt::format("  start {} on={}{}\n", snap_->NameOf(s.job), Placement(inv, s.allocation),
                         s.backfilled ? " backfilled" : "");
    }
    for (const sched::PreemptDecision& p : plan.preemptions) {
      out +=
          fmt::format("  preempt {} for={}\n", snap_->NameOf(p.victim), snap_->NameOf(p.preemptor));
    }
    for (const sched::PendingDecision& p : plan.pending) {
      std::vector<std::string> nodes;
      for (NodeId n : p.planned_nodes)
        nodes.push_back(NodeName(inv, n));
      std::sort(nodes.begin(), nodes.end());
      out += fmt::format("  pending {} reason={}{}{}{}\n", snap_->NameOf(p.job),
                         PendingReasonName(p.reason),
                         p.estimated_start != kTimeNever
                             ? fmt::format(" start={}", ToSeconds(p.estimated_start - now_))
                             : "",
                         nodes.empty() ? "" : " nodes=" + Join(nodes, ","),
                         p.detail.empty() ? "" : " (" + p.detail + ")");
    }
    return out;
  }

  void Check(const sched::Plan& plan, const sched::Inventory& inv, const std::vector<Line>& expects,
             ScenarioResult& result) {
    auto fail = [&](const Line& l, const std::string& what) {
      result.failures.push_back(fmt::format("{}:{}: {}", path_, l.number, what));
    };
    std::set<uint64_t> expected_starts;
    std::set<std::pair<uint64_t, uint64_t>> expected_preempts;
    for (const Line& l : expects) {
      if (l.args.size() < 2) Fail(l, "expect <start|pending|preempt> <job>");
      const std::string& kind = l.args[0];
      const JobId id = snap_->IdOf(l.args[1]);
      if (kind == "start") {
        expected_starts.insert(id.value());
        const sched::StartDecision* s = plan.FindStart(id);
        if (s == nullptr) {
          const sched::PendingDecision* p = plan.FindPending(id);
          fail(l, fmt::format("{} did not start ({})", l.args[1],
                              p ? std::string(PendingReasonName(p->reason)) +
                                      (p->detail.empty() ? "" : ": " + p->detail)
                                : "no decision"));
          continue;
        }
        if (Has(l, "on")) {
          std::vector<std::string> want = List(l, "on");
          std::vector<std::string> norm;
          for (const std::string& w : want) {
            NodeAllocation na = ParsePlacement(inv, w);
            norm.push_back(na.gpu_mask ? NodeName(inv, na.node) + ":" + FormatGpuMask(na.gpu_mask)
                                       : NodeName(inv, na.node));
          }
          std::sort(norm.begin(), norm.end());
          const std::string got = Placement(inv, s->allocation);
          if (Join(norm, ",") != got)
            fail(l, fmt::format("{} started on {}, expected {}", l.args[1], got, Join(norm, ",")));
        }
        if (Has(l, "nodes")) {
          std::vector<std::string> want = List(l, "nodes");
          std::sort(want.begin(), want.end());
          std::vector<std::string> got;
          for (const NodeAllocation& na : s->allocation.nodes)
            got.push_back(NodeName(inv, na.node));
          std::sort(got.begin(), got.end());
          if (want != got)
            fail(l, fmt::format("{} started on nodes {}, expected {}", l.args[1], Join(got, ","),
                                Join(want, ",")));
        }
        if (Has(l, "gpus-on")) {
          // Any placement with this many GPUs per node, e.g. gpus-on=8,4.
          std::vector<int> want;
          for (const std::string& g : List(l, "gpus-on"))
            want.push_back(std::stoi(g));
          std::vector<int> got;
          for (const NodeAllocation& na : s->allocation.nodes)
            got.push_back(na.GpuCount());
          std::sort(want.rbegin(), want.rend());
          std::sort(got.rbegin(), got.rend());
          if (want != got)
            fail(l,
                 fmt::format("{} got GPUs per node {}", l.args[1], Placement(inv, s->allocation)));
        }
        if (Has(l, "backfilled") && !s->backfilled) fail(l, l.args[1] + " was not backfilled");
      } else if (kind == "pending") {
        const sched::PendingDecision* p = plan.FindPending(id);
        if (p == nullptr) {
          fail(l, l.args[1] + (plan.FindStart(id) ? " started" : " has no decision"));
          continue;
        }
        const std::string reason = Opt(l, "reason");
        if (!reason.empty() && PendingReasonName(p->reason) != reason) {
          fail(l, fmt::format("{} waits for {}, expected {}{}", l.args[1],
                              PendingReasonName(p->reason), reason,
                              p->detail.empty() ? "" : " (" + p->detail + ")"));
        }
        if (Has(l, "start")) {
          const Time want = ParseTime(l, Opt(l, "start"));
          if (p->estimated_start != want) {
            fail(l, fmt::format("{} is expected to start at {}, not {}", l.args[1],
                                p->estimated_start == kTimeNever
                                    ? "never"
                                    : fmt::format("{}s", ToSeconds(p->estimated_start - now_)),
                                fmt::format("{}s", ToSeconds(want - now_))));
          }
        }
        if (Has(l, "nodes")) {
          std::vector<std::string> want = List(l, "nodes");
          std::sort(want.begin(), want.end());
          std::vector<std::string> got;
          for (NodeId n : p->planned_nodes)
            got.push_back(NodeName(inv, n));
          std::sort(got.begin(), got.end());
          if (want != got)
            fail(l, fmt::format("{} would run on {}, expected {}", l.args[1], Join(got, ","),
                                Join(want, ",")));
        }
        if (Has(l, "detail~")) {
          if (p->detail.find(Opt(l, "detail~")) == std::string::npos) {
            fail(l,
                 fmt::format("{} detail '{}' lacks '{}'", l.args[1], p->detail, Opt(l, "detail~")));
          }
        }
      } else if (kind == "preempt") {
        const JobId by = snap_->IdOf(Opt(l, "for"));
        expected_preempts.insert({id.value(), by.value()});
        bool found = false;
        for (const sched::PreemptDecision& p : plan.preemptions)
          found |= p.victim == id && p.preemptor == by;
        if (!found) fail(l, fmt::format("{} was not preempted for {}", l.args[1], Opt(l, "for")));
      } else {
        Fail(l, "expect start|pending|preempt");
      }
    }
    // Whatever the plan does must be expected: scenarios describe all of it.
    for (const sched::StartDecision& s : plan.starts) {
      if (!expected_starts.count(s.job.value())) {
        result.failures.push_back(
            fmt::format("{}: unexpected start of {}", path_, snap_->NameOf(s.job)));
      }
    }
    for (const sched::PreemptDecision& p : plan.preemptions) {
      if (!expected_preempts.count({p.victim.value(), p.preemptor.value()})) {
        result.failures.push_back(
            fmt::format("{}: unexpected preemption of {}", path_, snap_->NameOf(p.victim)));
      }
    }
    // Every pending job has exactly one decision.
    const sched::Snapshot& s = snap_->snapshot();
    for (const sched::JobInfo& j : s.pending) {
      const int decisions =
          (plan.FindStart(j.id) ? 1 : 0) +
          static_cast<int>(std::count_if(plan.pending.begin(), plan.pending.end(),
                                         [&](const auto& p) { return p.job == j.id; }));
      if (decisions != 1) {
        result.failures.push_back(
            fmt::format("{}: {} has {} decisions", path_, snap_->NameOf(j.id), decisions));
      }
    }
  }

  std::string path_;
  ClusterBuilder cluster_;
  std::map<std::string, std::pair<NodeState, uint64_t>> node_status_;
  std::optional<SnapshotBuilder> snap_;
  std::vector<std::pair<Line, JobId>> pending_deps_;
  Time now_ = kTimeZero;
};

}  // namespace

ScenarioResult RunScenarioFile(const std::string& path) {
  return Runner(path).Run();
}

}  // namespace shoal::testing
