#include "sched/plan.h"

#include <cmath>
#include <numbers>

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

double DecayedService(double gpus, Duration held, Duration half_life) {
  if (held.count() <= 0) return 0;
  const double held_s = ToSeconds(held);
  if (half_life.count() <= 0) return gpus * held_s;
  const double h_s = ToSeconds(half_life);
  // h / ln 2 * (1 - 2^(-held / h)), with expm1 for the short steps where
  // 1 - 2^(-x) would lose its digits.
  return gpus * h_s / std::numbers::ln2 * -std::expm1(-held_s / h_s * std::numbers::ln2);
}

}  // namespace shoal::sched
