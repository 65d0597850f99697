#include "server/port_book.h"

#include <gtest/gtest.h>

#include <set>

namespace shoal::server {
namespace {

TEST(PortBook, FiftyJobsOnOneNodeNeverShareAPort) {
  PortBook book(20000, 29999);
  std::set<int> used;
  for (uint64_t job = 1; job <= 50; ++job) {
    const int count = 1 + static_cast<int>(job % 9);  // MASTER_PORT + 0..8 TF workers
    auto p = book.Reserve(job, {"n1"}, count);
    ASSERT_TRUE(p.has_value()) << job;
    for (int port = *p; port < *p + count; ++port)
      EXPECT_TRUE(used.insert(port).second) << "port " << port << " handed out twice";
    EXPECT_GE(*p, 20000);
    EXPECT_LE(*p + count - 1, 29999);
  }
  EXPECT_EQ(book.jobs(), 50u);
}

TEST(PortBook, ABlockIsFreeOnEveryNodeOfTheJob) {
  PortBook book(100, 119);
  ASSERT_EQ(book.Reserve(1, {"a"}, 5), 100);
  ASSERT_EQ(book.Reserve(2, {"b"}, 5), 105);
  // Free on c, but a holds 100-104 and b 105-109: the next block after both.
  EXPECT_EQ(book.Reserve(3, {"a", "b", "c"}, 3), 110);
}

TEST(PortBook, ReleasedPortsAreReusedLastAndAFullRangeSaysSo) {
  PortBook book(100, 109);
  ASSERT_EQ(book.Reserve(1, {"n"}, 4), 100);
  ASSERT_EQ(book.Reserve(2, {"n"}, 4), 104);
  book.Release(1);
  // 108-109 are free but too few: the search wraps to the released block.
  EXPECT_EQ(book.Reserve(3, {"n"}, 3), 100);
  EXPECT_FALSE(book.Reserve(4, {"n"}, 4).has_value()) << "only 103 and 108-109 are free";
  EXPECT_EQ(book.Reserve(5, {"n"}, 2), 108);
  EXPECT_FALSE(book.Reserve(6, {"n"}, 11).has_value()) << "larger than the range";
  book.Release(2);
  book.Release(3);
  book.Release(5);
  EXPECT_EQ(book.jobs(), 0u);
  EXPECT_EQ(book.Reserve(7, {"n"}, 10), 100);
}

TEST(PortBook, HeldBlocksFromBeforeARestartAreAvoided) {
  PortBook book(100, 199);
  book.Hold(9, {"n"}, 100, 10);
  EXPECT_EQ(book.Reserve(10, {"n"}, 5), 110);
  EXPECT_EQ(book.Reserve(11, {"m"}, 5), 115) << "round-robin across nodes too";
}

}  // namespace
}  // namespace shoal::server
