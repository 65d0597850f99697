#include "sched/earliest_fit.h"

namespace shoal::sched {

ReleaseCounter::ReleaseCounter(WorkingState& state, const NodeBitset& eligible, const Request& req)
    : state_(state),
      eligible_(eligible),
      need_(req.total_gpus),
      counting_(req.shape != Shape::kCpuOnly && req.gpu_milli >= kMilliPerGpu) {
  if (!counting_) return;
  NodeBitset::ForEachAnd(state_.AtLeast(1), eligible_, [&](NodeIndex n) {
    free_ += state_.FreeWhole(n);
    return true;
  });
}

void ReleaseCounter::Release(const Allocation* a) {
  if (a == nullptr) return;
  const Inventory& inv = state_.inventory();
  for (const NodeAllocation& na : a->nodes) {
    auto n = inv.IndexOf(na.node);
    if (!n) continue;
    const int before = state_.FreeWhole(*n);
    state_.Release(*n, na);
    if (counting_ && eligible_.Test(*n) && state_.Usable(*n))
      free_ += state_.FreeWhole(*n) - before;
  }
}

}  // namespace shoal::sched
