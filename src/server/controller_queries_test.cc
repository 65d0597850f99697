// The controller's job listings, driven directly with a fixed clock: what
// a filter, a cursor and a user select (controller_queries.cc).
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include "server/controller.h"
#include "server/controller_testing.h"

namespace shoal::server {
namespace {

using testing::kAdmin;
using testing::kAlice;
using testing::kBob;
using testing::Spec;

class ControllerQueriesTest : public testing::ControllerFixture {
 protected:
  // The ids of the jobs Alice lists with `f`.
  std::vector<JobId> Listed(const JobFilter& f) {
    auto listed = c_.ListJobs(kAlice, f);
    EXPECT_TRUE(listed.ok()) << listed.status().ToString();
    std::vector<JobId> out;
    if (!listed.ok()) return out;
    for (const auto& j : *listed)
      out.push_back(j->id);
    return out;
  }
};

TEST_F(ControllerQueriesTest, ListingsFilterByPartitionAndStartAfterACursor) {
  Partition debug;
  debug.name = "debug";
  debug.max_time = std::chrono::hours(1);
  ASSERT_TRUE(c_.PutPartition(kAdmin, debug).ok());
  JobSpec in_debug = Spec(1);
  in_debug.partition = "debug";
  JobSpec named_gpu = Spec(1);
  named_gpu.partition = "gpu";
  const JobId a = Submit(kAlice, Spec(1));  // the default partition: gpu
  const JobId b = Submit(kAlice, in_debug);
  const JobId c = Submit(kAlice, named_gpu);
  auto ids = [&](std::string partition, uint64_t after = 0, size_t limit = 0) {
    JobFilter f;
    f.partition = std::move(partition);
    f.after = after;
    f.limit = limit;
    return Listed(f);
  };
  using Ids = std::vector<JobId>;
  EXPECT_EQ(ids("gpu"), (Ids{a, c}));
  EXPECT_EQ(ids("debug"), (Ids{b}));
  EXPECT_EQ(ids("cpu"), (Ids{}));
  EXPECT_EQ(ids("", a.value()), (Ids{b, c}));
  EXPECT_EQ(ids("", a.value(), 1), (Ids{b}));
  EXPECT_EQ(ids("gpu", a.value(), 1), (Ids{c}));
  EXPECT_EQ(ids("", c.value()), (Ids{}));
}

// shoal queue -t all: every state, but of the finished jobs only those that
// ended at or after ended_since.
TEST_F(ControllerQueriesTest, ListingsOfFinishedJobsStartAtEndedSince) {
  const JobId early = Submit(kAlice, Spec(1));
  const JobId late = Submit(kAlice, Spec(1));
  const JobId waiting = Submit(kAlice, Spec(1));
  ASSERT_TRUE(c_.Cancel(kAlice, early, At(10)).ok());
  ASSERT_TRUE(c_.Cancel(kAlice, late, At(20)).ok());
  auto ids = [&](Time ended_since) {
    JobFilter f;
    f.states.assign(std::begin(kJobStates), std::end(kJobStates));
    f.ended_since = ended_since;
    return Listed(f);
  };
  using Ids = std::vector<JobId>;
  EXPECT_EQ(ids(Time{}), (Ids{early, late, waiting}));
  EXPECT_EQ(ids(At(15)), (Ids{late, waiting}));
  EXPECT_EQ(ids(At(20)), (Ids{late, waiting}));
  EXPECT_EQ(ids(At(21)), (Ids{waiting}));
}

// A user's listing reads that user's jobs alone (an index by user): the
// jobs that left memory after finished_retention are gone from it, however
// many left, and later ones come in id order, after a cursor too.
TEST_F(ControllerQueriesTest, AUsersListingIsTheirsThroughJobsLeavingMemory) {
  std::vector<JobId> mine;
  for (int i = 0; i < 6; ++i)
    mine.push_back(Submit(kAlice, Spec(1)));
  const JobId bobs = Submit(kBob, Spec(1));
  for (size_t k : {0u, 2u, 3u, 5u})
    ASSERT_TRUE(c_.Cancel(kAlice, mine[k], At(10)).ok());
  JobFilter every;
  every.states.assign(std::begin(kJobStates), std::end(kJobStates));
  using Ids = std::vector<JobId>;
  EXPECT_EQ(Listed(every), mine);
  c_.Tick(At(10 + 3601));  // one hour of retention gone: the cancelled jobs leave memory
  const Ids left{mine[1], mine[4]};
  EXPECT_EQ(Listed(every), left);
  mine = {mine[1], mine[4], Submit(kAlice, Spec(1), 3612), Submit(kAlice, Spec(1), 3612)};
  EXPECT_EQ(Listed(every), mine);
  JobFilter page = every;
  page.after = mine[1].value();
  page.limit = 1;
  EXPECT_EQ(Listed(page), (Ids{mine[2]}));
  auto bob = c_.ListJobs(kBob, {});
  ASSERT_TRUE(bob.ok());
  ASSERT_EQ(bob->size(), 1u);
  EXPECT_EQ(bob->front()->id, bobs);
  JobFilter nobody;
  nobody.user = "carol";
  auto none = c_.ListJobs(kAdmin, nobody);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace shoal::server
