// What the PostgreSQL store adds to the Store contract (store_test.cc runs
// that): one controller leads, the others stand by and take over, a leader
// that lost its session can commit nothing, and a database it cannot read
// right is refused.
#include "state/postgres_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "state/postgres_testing.h"
#include "state/store_testing.h"

namespace shoal::state {
namespace {

using std::chrono::milliseconds;

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!server_.skip_reason().empty()) GTEST_SKIP() << server_.skip_reason();
    url_ = server_.NewDatabase("lead");
  }

  // Quick timings, so that a lost lead shows within a second or two.
  PostgresOptions Quick() const {
    return PostgresOptions{.url = url_,
                           .standby_poll = milliseconds(50),
                           .ping_interval = milliseconds(100),
                           .ping_timeout = milliseconds(400),
                           .session_timeout = milliseconds(1000)};
  }

  static Batch Jobs(uint64_t first, uint64_t last) {
    Batch b;
    for (uint64_t id = first; id <= last; ++id)
      b.jobs.push_back(TestJob(id));
    b.next_job_id = last + 1;
    return b;
  }

  TestPostgres server_;
  std::string url_;
};

TEST_F(PostgresStoreTest, OneLeadsAndAnotherTakesOverWhenItGoes) {
  Result<std::unique_ptr<Store>> leader = OpenPostgresStore(Quick());
  ASSERT_TRUE(leader.ok()) << leader.status().ToString();
  ASSERT_TRUE((*leader)->Commit(Jobs(1, 3)).ok());

  PostgresOptions now = Quick();
  now.wait_for_lead = false;
  Result<std::unique_ptr<Store>> refused = OpenPostgresStore(now);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("shoal-server"), std::string::npos)
      << "the refusal names the leader: " << refused.status().ToString();

  // A standby waits for the lead, and has it as soon as the leader closes.
  std::atomic<bool> told{false};
  PostgresOptions standby = Quick();
  standby.log = [&](std::string_view line) {
    if (line.starts_with("standing by")) told = true;
  };
  auto opened = std::async(std::launch::async, [&] { return OpenPostgresStore(standby); });
  EXPECT_EQ(opened.wait_for(milliseconds(500)), std::future_status::timeout)
      << "the standby must not lead while the leader lives";
  EXPECT_TRUE(told.load());
  leader->reset();
  ASSERT_EQ(opened.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Result<std::unique_ptr<Store>> next = opened.get();
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  Result<Loaded> loaded = (*next)->Load(kTimeZero);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->active_jobs.size(), 3u);
  EXPECT_EQ(loaded->next_job_id, 4u);
}

TEST_F(PostgresStoreTest, ALeaderWhoseSessionEndedCommitsNothingAndSaysSo) {
  std::promise<Status> lost;
  PostgresOptions o = Quick();
  o.on_lost = [&](const Status& why) { lost.set_value(why); };
  Result<std::unique_ptr<Store>> leader = OpenPostgresStore(o);
  ASSERT_TRUE(leader.ok()) << leader.status().ToString();
  ASSERT_TRUE((*leader)->Commit(Jobs(1, 1)).ok());

  // An administrator (or the server's own idle timeout) ends its session.
  ASSERT_TRUE(server_.Psql("lead",
                           "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE application_name LIKE 'shoal-server%'"));
  std::future<Status> why = lost.get_future();
  ASSERT_EQ(why.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "the leader must notice within its ping interval and timeout";
  EXPECT_NE(why.get().message().find("lost the lead"), std::string::npos);
  Status commit = (*leader)->Commit(Jobs(2, 2));
  EXPECT_EQ(commit.code(), StatusCode::kUnavailable) << commit.ToString();

  // The lock went with the session: another controller leads now, and
  // job 2 was never written.
  PostgresOptions next = Quick();
  next.wait_for_lead = false;
  Result<std::unique_ptr<Store>> other = OpenPostgresStore(next);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  Result<std::optional<Job>> two = (*other)->FindJob(JobId(2));
  ASSERT_TRUE(two.ok());
  EXPECT_FALSE(two->has_value());
}

TEST_F(PostgresStoreTest, RefusesASchemaNewerThanThisBuildAndANonUtf8Database) {
  { ASSERT_TRUE(OpenPostgresStore(Quick()).ok()); }
  ASSERT_TRUE(server_.Psql("lead", "UPDATE shoal.shoal_schema SET version = 99"));
  Result<std::unique_ptr<Store>> newer = OpenPostgresStore(Quick());
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(newer.status().message().find("use a newer shoal"), std::string::npos)
      << newer.status().ToString();

  ASSERT_TRUE(server_.Psql("lead",
                           "CREATE DATABASE latin ENCODING 'SQL_ASCII' TEMPLATE template0 "
                           "LC_COLLATE 'C' LC_CTYPE 'C'"));
  PostgresOptions latin = Quick();
  latin.url = server_.Url("latin");
  Result<std::unique_ptr<Store>> refused = OpenPostgresStore(latin);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not UTF8"), std::string::npos)
      << refused.status().ToString();
}

TEST_F(PostgresStoreTest, AnUnreachableServerIsUnavailable) {
  PostgresOptions o = Quick();
  o.url = "host=/nonexistent-shoal-dir user=shoal dbname=x";
  Result<std::unique_ptr<Store>> s = OpenPostgresStore(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(s.status().message().find("cannot connect to PostgreSQL"), std::string::npos);
}

}  // namespace
}  // namespace shoal::state
