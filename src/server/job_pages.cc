#include "server/job_pages.h"

#include <algorithm>
#include <limits>

namespace shoal::server {

PageCut CutPage(const PageSource& controller, const PageSource& store, size_t limit) {
  constexpr uint64_t kOpen = std::numeric_limits<uint64_t>::max();
  const uint64_t bound = std::min(controller.bound.value_or(kOpen), store.bound.value_or(kOpen));
  PageCut cut;
  uint64_t last = 0;
  size_t& c = cut.from_controller;
  size_t& s = cut.from_store;
  while (c + s < limit) {
    const uint64_t next_c = c < controller.ids.size() ? controller.ids[c] : kOpen;
    const uint64_t next_s = s < store.ids.size() ? store.ids[s] : kOpen;
    const uint64_t next = std::min(next_c, next_s);
    if (next == kOpen || next > bound) break;
    // An id in both (never, as the caller thins the store's) is taken once.
    if (next_c == next) ++c;
    if (next_s == next) ++s;
    last = next;
  }
  const bool more_in_hand = (c < controller.ids.size() && controller.ids[c] <= bound) ||
                            (s < store.ids.size() && store.ids[s] <= bound);
  if (more_in_hand) {
    cut.next_after = last;
  } else if (bound != kOpen) {
    cut.next_after = std::max(last, bound);
  }
  return cut;
}

}  // namespace shoal::server
