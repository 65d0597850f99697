#include "sched/plan.h"

#include <cmath>

#include "sched/snapshot.h"

namespace shoal::sched {

const StartDecision* Plan::FindStart(JobId id) const {
  for (const StartDecision& s : starts) {
    if (s.job == id) return &s;
  }
  return nullptr;
}

const PendingDecision* Plan::FindPending(JobId id) const {
  for (const PendingDecision& p : pending) {
    if (p.job == id) return &p;
  }
  return nullptr;
}

double DecayUsage(double usage, Duration elapsed, Duration half_life) {
  if (half_life.count() <= 0 || elapsed.count() <= 0) return usage;
  return usage *
         std::exp2(-static_cast<double>(elapsed.count()) / static_cast<double>(half_life.count()));
}

}  // namespace shoal::sched
