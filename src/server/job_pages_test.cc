#include "server/job_pages.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shoal::server {
namespace {

struct Case {
  std::string name;
  std::vector<uint64_t> controller;
  std::optional<uint64_t> controller_bound;
  std::vector<uint64_t> store;
  std::optional<uint64_t> store_bound;
  size_t limit;
  PageCut want;
};

TEST(CutPage, MergesTwoSourcesUpToTheLowerBound) {
  const std::vector<Case> cases = {
      {"both empty: the last page", {}, {}, {}, {}, 10, {0, 0, {}}},
      {"the controller's alone, fewer than a page", {3, 5}, {}, {}, {}, 10, {2, 0, {}}},
      {"exactly a page and nothing more", {3, 5}, {}, {}, {}, 2, {2, 0, {}}},
      {"more than a page in hand", {3, 5, 7}, 7, {}, {}, 2, {2, 0, 5}},
      {"merged in id order", {2, 6}, {}, {1, 4, 9}, {}, 4, {2, 2, 6}},
      {"merged, all of it", {2, 6}, {}, {1, 4, 9}, {}, 10, {2, 3, {}}},
      // The store's read was cut at 4: nothing past it is known, so the
      // controller's 6 waits for the next page, which starts after 4.
      {"the store's bound holds the page back", {2, 6}, {}, {1, 4}, 4, 10, {1, 2, 4}},
      // Every row the store read was thinned away: the cursor still moves
      // past them, so that the next page does not read them again.
      {"a thinned store read moves the cursor", {}, {}, {}, 50, 10, {0, 0, 50}},
      {"the controller's bound holds the store back", {2, 3}, 3, {1, 8}, {}, 10, {2, 1, 3}},
  };
  for (const Case& c : cases) {
    PageCut got = CutPage({c.controller, c.controller_bound}, {c.store, c.store_bound}, c.limit);
    EXPECT_EQ(got.from_controller, c.want.from_controller) << c.name;
    EXPECT_EQ(got.from_store, c.want.from_store) << c.name;
    EXPECT_EQ(got.next_after, c.want.next_after) << c.name;
  }
}

}  // namespace
}  // namespace shoal::server
