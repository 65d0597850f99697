// Where a page of a job listing ends. A listing (GET /v1/jobs) merges two
// sources in ascending id order: the jobs the controller holds (active and
// recently finished) and, when finished states are asked for, the ones only
// the store still has. Each source is read from the cursor on, one more than
// the page holds, so that the page knows whether it is the last; the store's
// rows may then be thinned (jobs the controller holds, other partitions),
// which is why its bound is the last row read, not the last kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace shoal::server {

struct PageSource {
  std::span<const uint64_t> ids;  // ascending, all after the cursor
  // Known up to here: the last id read when the read was cut by its limit,
  // none when the source had nothing more.
  std::optional<uint64_t> bound;
};

struct PageCut {
  size_t from_controller = 0;  // how many of each source's ids the page takes,
  size_t from_store = 0;       // from the front of each
  // The next page's cursor; none when this page is the last.
  std::optional<uint64_t> next_after;
};

// The first `limit` (at least 1) ids of the two sources merged, of those up to
// the lower of their bounds.
PageCut CutPage(const PageSource& controller, const PageSource& store, size_t limit);

}  // namespace shoal::server
