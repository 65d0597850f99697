#include "sched/ranked.h"

#include <algorithm>

namespace shoal::sched {

bool RankedBefore(const Ranked& a, const Ranked& b) {
  if (a.rank.tier != b.rank.tier) return a.rank.tier > b.rank.tier;
  if (a.rank.value != b.rank.value) return a.rank.value < b.rank.value;
  if (a.submit != b.submit) return a.submit < b.submit;
  return a.id < b.id;
}

void SortRanked(std::vector<Ranked>& order) {
  constexpr size_t kMaxRuns = 32;
  std::vector<size_t> bounds = {0};
  for (size_t i = 1; i < order.size(); ++i) {
    if (!RankedBefore(order[i], order[i - 1])) continue;
    bounds.push_back(i);
    if (bounds.size() > kMaxRuns) {
      std::sort(order.begin() + static_cast<ptrdiff_t>(i), order.end(), RankedBefore);
      break;
    }
  }
  bounds.push_back(order.size());
  const auto at = [&](size_t k) { return order.begin() + static_cast<ptrdiff_t>(k); };
  while (bounds.size() > 2) {  // merge neighbouring runs until one is left
    std::vector<size_t> merged = {0};
    for (size_t r = 0; r + 2 < bounds.size(); r += 2) {
      std::inplace_merge(at(bounds[r]), at(bounds[r + 1]), at(bounds[r + 2]), RankedBefore);
      merged.push_back(bounds[r + 2]);
    }
    if (bounds.size() % 2 == 0) merged.push_back(bounds.back());
    bounds = std::move(merged);
  }
}

OrderTails::OrderTails(const std::vector<Ranked>& order, RequestOf request_of, ClassOf class_of,
                       size_t partitions)
    : order_(order),
      request_of_(std::move(request_of)),
      class_of_(std::move(class_of)),
      partitions_(partitions) {}

ptrdiff_t OrderTails::LastInPartition(int partition) {
  if (!last_in_partition_) FindKinds();
  return (*last_in_partition_)[static_cast<size_t>(partition)];
}

ptrdiff_t OrderTails::LastNotWholeGpus() {
  if (last_in_partition_) return last_not_whole_;
  if (LastClassless() < 0) {  // jobs of one class have one shape: read one request of each
    ptrdiff_t last = -1;
    for (const ClassTail& c : Classes()) {
      if (!request_of_(order_[static_cast<size_t>(c.last)].index).NeedsWholeGpus())
        last = std::max(last, c.last);
    }
    return last;
  }
  FindKinds();
  return last_not_whole_;
}

void OrderTails::FindKinds() {
  last_in_partition_.emplace(partitions_, -1);
  for (size_t k = 0; k < order_.size(); ++k) {
    const Request& req = request_of_(order_[k].index);
    (*last_in_partition_)[static_cast<size_t>(req.partition)] = static_cast<ptrdiff_t>(k);
    if (!req.NeedsWholeGpus()) last_not_whole_ = static_cast<ptrdiff_t>(k);
  }
}

ptrdiff_t OrderTails::LastClassless() {
  if (!classes_) FindClasses();
  return last_classless_;
}

const std::vector<OrderTails::ClassTail>& OrderTails::Classes() {
  if (!classes_) FindClasses();
  return *classes_;
}

void OrderTails::FindClasses() {
  constexpr size_t kNone = ~size_t{0};
  classes_.emplace();
  class_at_.resize(order_.size());
  for (size_t k = order_.size(); k-- > 0;) {
    const uint32_t c = class_at_[k] = class_of_(k);
    if (c == 0) {
      last_classless_ = std::max(last_classless_, static_cast<ptrdiff_t>(k));
      continue;
    }
    if (c >= index_of_class_.size()) index_of_class_.resize(size_t{c} + 1, kNone);
    if (index_of_class_[c] != kNone) continue;
    index_of_class_[c] = classes_->size();
    classes_->push_back({c, static_cast<ptrdiff_t>(k)});
  }
}

Duration OrderTails::ShortestLimitFrom(size_t k, ptrdiff_t from) {
  if (limits_.empty()) {  // every class's places, latest first, with the shortest limit from each
    const std::vector<ClassTail>& classes = Classes();
    limits_.resize(classes.size());
    std::vector<Duration> shortest(classes.size(), Duration::max());
    for (size_t p = order_.size(); p-- > 0;) {
      if (class_at_[p] == 0) continue;
      const size_t c = index_of_class_[class_at_[p]];
      shortest[c] = std::min(shortest[c], request_of_(order_[p].index).time_limit);
      limits_[c].emplace_back(static_cast<ptrdiff_t>(p), shortest[c]);
    }
  }
  // The class's first place at or after `from` is the last entry whose place is >= from.
  const auto& places = limits_[k];
  auto it = std::partition_point(places.begin(), places.end(),
                                 [&](const auto& e) { return e.first >= from; });
  return it == places.begin() ? Duration::max() : std::prev(it)->second;
}

}  // namespace shoal::sched
