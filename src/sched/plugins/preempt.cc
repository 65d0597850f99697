// Who may displace whom.
#include <cmath>

#include "sched/plugins/plugins.h"

namespace shoal::sched::plugins {

namespace {

// By discrete priority class: a job may preempt jobs of a lower partition tier,
// or of the same tier in a strictly lower class (a higher LAS queue).
class ClassPreempt final : public PreemptPlugin {
 public:
  std::string_view Name() const override { return "class"; }
  bool ByClass() const override { return true; }
  bool MayPreempt(const Snapshot&, const JobInfo&, JobRank p, const JobInfo&,
                  JobRank v) const override {
    if (v.tier != p.tier) return v.tier < p.tier;
    return std::floor(v.value) > std::floor(p.value);
  }
};

// Shortest remaining first: a job may preempt jobs with more remaining service.
class SrtfPreempt final : public PreemptPlugin {
 public:
  std::string_view Name() const override { return "srtf"; }
  bool MayPreempt(const Snapshot&, const JobInfo&, JobRank p, const JobInfo&,
                  JobRank v) const override {
    if (v.tier != p.tier) return v.tier < p.tier;
    return v.value > p.value;
  }
};

// By partition tier only: a higher tier preempts lower ones (DESIGN.md, "Preemption").
class TierPreempt final : public PreemptPlugin {
 public:
  std::string_view Name() const override { return "tier"; }
  bool MayPreempt(const Snapshot&, const JobInfo&, JobRank p, const JobInfo&,
                  JobRank v) const override {
    return v.tier < p.tier;
  }
};

// By QoS, as Slurm's preempt/qos: a job may preempt running jobs of the QoS
// its own QoS names (`preempt`), and, as `tier`, jobs of a lower partition tier.
class QosPreempt final : public PreemptPlugin {
 public:
  std::string_view Name() const override { return "qos"; }
  bool Monotone() const override { return false; }
  bool MayPreempt(const Snapshot& snap, const JobInfo& p, JobRank pr, const JobInfo& v,
                  JobRank vr) const override {
    if (vr.tier < pr.tier) return true;
    if (vr.tier > pr.tier || p.qos < 0 || v.qos < 0 || v.qos >= 64) return false;
    if (static_cast<size_t>(p.qos) >= snap.qos.size()) return false;
    return (snap.qos[static_cast<size_t>(p.qos)].preempts >> v.qos & 1) != 0;
  }
};

}  // namespace

std::shared_ptr<const PreemptPlugin> MakeQosPreempt() {
  return std::make_shared<QosPreempt>();
}

std::shared_ptr<const PreemptPlugin> MakeClassPreempt() {
  return std::make_shared<ClassPreempt>();
}
std::shared_ptr<const PreemptPlugin> MakeSrtfPreempt() {
  return std::make_shared<SrtfPreempt>();
}
std::shared_ptr<const PreemptPlugin> MakeTierPreempt() {
  return std::make_shared<TierPreempt>();
}

}  // namespace shoal::sched::plugins
