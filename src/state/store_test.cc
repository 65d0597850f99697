// The Store contract, run against every store: the SQLite and PostgreSQL ones
// and the memory one the controller's tests use must answer alike.
#include "state/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>

#include "state/postgres_store.h"
#include "state/postgres_testing.h"
#include "state/store_testing.h"

namespace shoal::state {
namespace {

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      Result<std::unique_ptr<Store>> opened = OpenSqliteStore(dir_.Sub("state"));
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      store_ = std::move(opened).value();
    } else if (GetParam() == "postgres") {
      // One server for the process (ctest runs each case in its own), a
      // database per case.
      static TestPostgres server;
      if (!server.skip_reason().empty()) GTEST_SKIP() << server.skip_reason();
      static int databases = 0;
      Result<std::unique_ptr<Store>> opened =
          OpenPostgresStore({.url = server.NewDatabase("store_" + std::to_string(++databases))});
      ASSERT_TRUE(opened.ok()) << opened.status().ToString();
      store_ = std::move(opened).value();
    } else {
      store_ = NewMemoryStore();
    }
  }

  void MustCommit(const Batch& batch) {
    Status s = store_->Commit(batch);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  Loaded MustLoad(Time horizon = kTimeZero) {
    Result<Loaded> loaded = store_->Load(horizon);
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    return loaded.ok() ? std::move(loaded).value() : Loaded{};
  }

  std::vector<uint64_t> HistoryIds(const HistoryQuery& query) {
    Result<std::vector<Job>> jobs = store_->History(query);
    EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
    std::vector<uint64_t> ids;
    if (jobs.ok()) {
      for (const Job& j : *jobs)
        ids.push_back(j.id.value());
    }
    return ids;
  }

  ScratchDir dir_;
  std::unique_ptr<Store> store_;
};

std::vector<uint64_t> Ids(const std::vector<Job>& jobs) {
  std::vector<uint64_t> ids;
  for (const Job& j : jobs)
    ids.push_back(j.id.value());
  return ids;
}

TEST_P(StoreTest, EmptyStoreLoadsNothing) {
  Loaded loaded = MustLoad();
  EXPECT_TRUE(loaded.active_jobs.empty());
  EXPECT_TRUE(loaded.finished.empty());
  EXPECT_TRUE(loaded.nodes.empty());
  EXPECT_TRUE(loaded.tokens.empty());
  EXPECT_TRUE(loaded.partitions.empty());
  EXPECT_TRUE(loaded.accounts.empty());
  EXPECT_TRUE(loaded.usage.empty());
  EXPECT_EQ(loaded.next_job_id, 1u);
  EXPECT_TRUE(store_->Commit(Batch{}).ok());
}

TEST_P(StoreTest, RoundTripsEveryKindOfRecord) {
  Batch batch;
  Job running = TestJob(2, JobState::kRunning);
  running.spec.dependencies = {Dependency{DependencyType::kAfterAny, JobId(1)}};
  running.spec.array =
      std::make_shared<const ArraySpec>(ArraySpec{.indices = {0, 1, 2, 3}, .max_running = 2});
  running.array_job_id = JobId(2);
  running.array_task_id = 0;
  running.spec.script = true;
  running.spec.command = "#!/bin/bash\necho \"héllo\" ✓\n";
  running.restarts = 1;
  running.priority = 7;
  Job pending = TestJob(1);
  pending.spec.hold = true;
  pending.spec.begin_time = At(100);
  pending.reason = PendingReason::kHeld;
  pending.reason_detail = "held by alice";
  batch.jobs = {running, pending, TestJob(3, JobState::kFailed)};
  batch.jobs[2].exit_code = 3;
  batch.jobs[2].exit_signal = 9;
  Node down = TestNode("gpu-b", 2, 8);
  down.state = NodeState::kDown;
  down.state_reason = "no heartbeat";
  down.gpus[5].healthy = false;
  batch.nodes = {TestNode("gpu-a", 1), down};
  batch.nodes[0].credential = "AB:CD";
  batch.tokens = {TokenRecord{.id = "tok1",
                              .secret_hash = std::string(64, 'a'),
                              .user = "alice",
                              .role = "user",
                              .created = At(5),
                              .revoked = false,
                              .expires = At(50),
                              .node = "gpu-a"},
                  TokenRecord{.id = "tok0",
                              .secret_hash = std::string(64, 'b'),
                              .user = "root",
                              .role = "admin",
                              .created = At(6),
                              .revoked = true}};
  batch.partitions = {Partition{.name = "gpu",
                                .is_default = true,
                                .up = true,
                                .max_time = Duration(86'400'000),
                                .default_time = Duration(3'600'000),
                                .max_nodes_per_job = 4,
                                .max_gpus_per_job = 32,
                                .allowed_accounts = {"ml", "vision"},
                                .priority_tier = 1},
                      Partition{}};
  batch.partitions[1].name = "debug";
  batch.partitions[1].up = false;
  batch.accounts = {Account{.name = "ml", .shares = 2.5, .max_gpus = 64},
                    Account{.name = "vision"}};
  batch.usage = {AccountUsage{.account = "ml", .usage_gpu_s = 12345.678, .updated = At(9)}};
  batch.next_job_id = 4;
  MustCommit(batch);

  Loaded loaded = MustLoad();
  ASSERT_EQ(loaded.active_jobs.size(), 2u);
  EXPECT_EQ(JsonText(loaded.active_jobs[0]), JsonText(pending));  // ordered by id
  EXPECT_EQ(JsonText(loaded.active_jobs[1]), JsonText(running));
  ASSERT_EQ(loaded.finished.size(), 1u);
  EXPECT_EQ(loaded.finished[0], std::make_pair(JobId(3), JobState::kFailed));
  ASSERT_EQ(loaded.nodes.size(), 2u);
  EXPECT_EQ(JsonText(loaded.nodes[0]), JsonText(batch.nodes[0]));
  EXPECT_EQ(JsonText(loaded.nodes[1]), JsonText(down));
  ASSERT_EQ(loaded.tokens.size(), 2u);
  EXPECT_EQ(loaded.tokens[0].id, "tok0");
  EXPECT_EQ(loaded.tokens[0].secret_hash, batch.tokens[1].secret_hash);
  EXPECT_EQ(loaded.tokens[0].user, "root");
  EXPECT_EQ(loaded.tokens[0].role, "admin");
  EXPECT_EQ(loaded.tokens[0].created, At(6));
  EXPECT_TRUE(loaded.tokens[0].revoked);
  EXPECT_EQ(loaded.tokens[0].expires, kTimeNever);
  EXPECT_EQ(loaded.tokens[0].node, "");
  EXPECT_EQ(loaded.tokens[1].id, "tok1");
  EXPECT_FALSE(loaded.tokens[1].revoked);
  EXPECT_EQ(loaded.tokens[1].expires, At(50));
  EXPECT_EQ(loaded.tokens[1].node, "gpu-a");
  ASSERT_EQ(loaded.partitions.size(), 2u);
  EXPECT_EQ(JsonText(loaded.partitions[0]), JsonText(batch.partitions[1]));  // "debug" < "gpu"
  EXPECT_EQ(JsonText(loaded.partitions[1]), JsonText(batch.partitions[0]));
  ASSERT_EQ(loaded.accounts.size(), 2u);
  EXPECT_EQ(JsonText(loaded.accounts[0]), JsonText(batch.accounts[0]));
  EXPECT_EQ(JsonText(loaded.accounts[1]), JsonText(batch.accounts[1]));
  ASSERT_EQ(loaded.usage.size(), 1u);
  EXPECT_EQ(loaded.usage[0].account, "ml");
  EXPECT_EQ(loaded.usage[0].usage_gpu_s, 12345.678);
  EXPECT_EQ(loaded.usage[0].updated, At(9));
  EXPECT_EQ(loaded.next_job_id, 4u);

  Result<std::optional<Job>> found = store_->FindJob(JobId(2));
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ(JsonText(**found), JsonText(running));
}

TEST_P(StoreTest, LaterWritesReplaceEarlierOnes) {
  Batch first;
  first.jobs = {TestJob(1)};
  first.nodes = {TestNode("n1")};
  first.tokens = {TokenRecord{.id = "t", .secret_hash = "h", .user = "u", .role = "user"}};
  first.usage = {AccountUsage{.account = "ml", .usage_gpu_s = 1}};
  MustCommit(first);
  Batch second;
  second.jobs = {TestJob(1, JobState::kRunning)};
  MustCommit(second);
  EXPECT_EQ(MustLoad().active_jobs.at(0).state, JobState::kRunning);

  Batch third;
  third.jobs = {TestJob(1, JobState::kCompleted)};
  third.nodes = {TestNode("n1")};
  third.nodes[0].state = NodeState::kDrained;
  third.tokens = {
      TokenRecord{.id = "t", .secret_hash = "h", .user = "u", .role = "user", .revoked = true}};
  third.usage = {AccountUsage{.account = "ml", .usage_gpu_s = 0.5}};
  MustCommit(third);
  Loaded loaded = MustLoad();
  EXPECT_TRUE(loaded.active_jobs.empty());
  ASSERT_EQ(loaded.finished.size(), 1u);
  EXPECT_EQ(loaded.finished[0].second, JobState::kCompleted);
  ASSERT_EQ(loaded.nodes.size(), 1u);
  EXPECT_EQ(loaded.nodes[0].state, NodeState::kDrained);
  ASSERT_EQ(loaded.tokens.size(), 1u);
  EXPECT_TRUE(loaded.tokens[0].revoked);
  ASSERT_EQ(loaded.usage.size(), 1u);
  EXPECT_EQ(loaded.usage[0].usage_gpu_s, 0.5);
  EXPECT_EQ(HistoryIds(HistoryQuery()), std::vector<uint64_t>{1});
}

TEST_P(StoreTest, LearnedSpeedsAreKeptByUserNameAndModel) {
  Batch first;
  first.speeds = {
      LearnedSpeed{
          .user = "ann", .name = "train", .model = "A100", .rate = 50, .runs = 1, .updated = At(1)},
      LearnedSpeed{
          .user = "ann", .name = "train", .model = "H100", .rate = 90, .runs = 2, .updated = At(2)},
      LearnedSpeed{
          .user = "bob", .name = "train", .model = "A100", .rate = 7, .runs = 1, .updated = At(3)},
  };
  MustCommit(first);
  Batch second;  // the same key twice in a batch: the last one counts
  second.speeds = {
      LearnedSpeed{
          .user = "ann", .name = "train", .model = "A100", .rate = 60, .runs = 2, .updated = At(4)},
      LearnedSpeed{
          .user = "ann", .name = "train", .model = "A100", .rate = 55, .runs = 3, .updated = At(5)},
  };
  MustCommit(second);
  const std::vector<LearnedSpeed> want = {
      LearnedSpeed{
          .user = "ann", .name = "train", .model = "A100", .rate = 55, .runs = 3, .updated = At(5)},
      LearnedSpeed{
          .user = "ann", .name = "train", .model = "H100", .rate = 90, .runs = 2, .updated = At(2)},
      LearnedSpeed{
          .user = "bob", .name = "train", .model = "A100", .rate = 7, .runs = 1, .updated = At(3)},
  };
  EXPECT_EQ(MustLoad().speeds, want);
}

// Forgetting a job name's speeds removes every model's, and nothing of
// another name or user; a batch that forgets and learns again keeps what it
// learned.
TEST_P(StoreTest, ForgottenSpeedsAreGoneButWhatTheBatchLearnsAgain) {
  auto speed = [](std::string user, std::string name, std::string model, double rate) {
    return LearnedSpeed{.user = std::move(user),
                        .name = std::move(name),
                        .model = std::move(model),
                        .rate = rate,
                        .runs = 1,
                        .updated = At(1)};
  };
  Batch first;
  first.speeds = {speed("ann", "a", "A100", 1), speed("ann", "a", "H100", 2),
                  speed("ann", "b", "H100", 3), speed("bob", "a", "H100", 4)};
  MustCommit(first);
  Batch forget;
  forget.deleted_speeds = {{"ann", "a"}};
  MustCommit(forget);
  EXPECT_EQ(MustLoad().speeds, (std::vector<LearnedSpeed>{speed("ann", "b", "H100", 3),
                                                          speed("bob", "a", "H100", 4)}));
  Batch again;
  again.deleted_speeds = {{"ann", "b"}, {"bob", "a"}};
  again.speeds = {speed("bob", "a", "H100", 5)};
  MustCommit(again);
  EXPECT_EQ(MustLoad().speeds, (std::vector<LearnedSpeed>{speed("bob", "a", "H100", 5)}));
}

TEST_P(StoreTest, DeletionsComeBeforeTheWritesOfTheirBatch) {
  Batch first;
  first.nodes = {TestNode("a"), TestNode("b")};
  first.partitions = {Partition{}, Partition{}};
  first.partitions[0].name = "p1";
  first.partitions[1].name = "p2";
  first.accounts = {Account{.name = "x"}, Account{.name = "y"}};
  MustCommit(first);
  Batch second;
  second.nodes = {TestNode("b")};
  second.nodes[0].address = "elsewhere:1";
  second.deleted_nodes = {"a", "b", "never-existed"};
  second.deleted_partitions = {"p1"};
  second.deleted_accounts = {"y"};
  MustCommit(second);
  Loaded loaded = MustLoad();
  ASSERT_EQ(loaded.nodes.size(), 1u);
  EXPECT_EQ(loaded.nodes[0].address, "elsewhere:1");
  ASSERT_EQ(loaded.partitions.size(), 1u);
  EXPECT_EQ(loaded.partitions[0].name, "p2");
  ASSERT_EQ(loaded.accounts.size(), 1u);
  EXPECT_EQ(loaded.accounts[0].name, "x");
}

TEST_P(StoreTest, LoadListsFinishedJobsFromTheHorizonOn) {
  // Finished jobs 10..14 ended at At(10)..At(14).
  Batch batch;
  for (uint64_t id = 10; id < 15; ++id)
    batch.jobs.push_back(TestJob(id, JobState::kCompleted));
  batch.jobs.push_back(TestJob(20, JobState::kRunning));
  MustCommit(batch);
  Loaded loaded = MustLoad(At(12));
  std::vector<std::pair<JobId, JobState>> want = {{JobId(12), JobState::kCompleted},
                                                  {JobId(13), JobState::kCompleted},
                                                  {JobId(14), JobState::kCompleted}};
  EXPECT_EQ(loaded.finished, want);
  EXPECT_EQ(Ids(loaded.active_jobs), std::vector<uint64_t>{20});
  EXPECT_TRUE(MustLoad(At(15)).finished.empty());
  EXPECT_EQ(MustLoad(kTimeZero).finished.size(), 5u);
}

TEST_P(StoreTest, NextJobIdIsNeverAnIdInUse) {
  Batch counter;
  counter.next_job_id = 50;
  MustCommit(counter);
  EXPECT_EQ(MustLoad().next_job_id, 50u);
  // A controller that stored a job but not the counter still gets a fresh id.
  Batch job_only;
  job_only.jobs = {TestJob(70)};
  MustCommit(job_only);
  EXPECT_EQ(MustLoad().next_job_id, 71u);
  counter.next_job_id = 100;
  MustCommit(counter);
  EXPECT_EQ(MustLoad().next_job_id, 100u);
}

TEST_P(StoreTest, FindJobFindsActiveAndFinishedJobs) {
  Batch batch;
  batch.jobs = {TestJob(1), TestJob(2, JobState::kCancelled)};
  MustCommit(batch);
  for (uint64_t id : {1, 2}) {
    Result<std::optional<Job>> found = store_->FindJob(JobId(id));
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    ASSERT_TRUE(found->has_value()) << id;
    EXPECT_EQ(JsonText(**found),
              JsonText(TestJob(id, id == 1 ? JobState::kPending : JobState::kCancelled)));
  }
  for (uint64_t id : {uint64_t{0}, uint64_t{3}, std::numeric_limits<uint64_t>::max()}) {
    Result<std::optional<Job>> found = store_->FindJob(JobId(id));
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_FALSE(found->has_value()) << id;
  }
}

TEST_P(StoreTest, HistoryFiltersAndOrdersNewestFirst) {
  // Job i ends at At(i), except 6, which ends with 5: ties go to the larger id.
  Batch batch;
  const JobState states[] = {JobState::kCompleted, JobState::kFailed, JobState::kCancelled,
                             JobState::kTimeout};
  for (uint64_t id = 1; id <= 8; ++id) {
    Job job = TestJob(id, states[id % 4]);
    job.spec.user = id % 2 == 0 ? "bob" : "alice";
    job.spec.account = id <= 4 ? "ml" : "vision";
    if (id == 6) job.end_time = At(5);
    batch.jobs.push_back(job);
  }
  batch.jobs.push_back(TestJob(9));                       // pending: never history
  batch.jobs.push_back(TestJob(10, JobState::kRunning));  // running: never history
  MustCommit(batch);

  struct Case {
    std::string name;
    std::function<void(HistoryQuery&)> set;
    std::vector<uint64_t> want;
  };
  const std::vector<Case> cases = {
      {"everything", [](HistoryQuery&) {}, {8, 7, 6, 5, 4, 3, 2, 1}},
      {"user", [](HistoryQuery& q) { q.user = "bob"; }, {8, 6, 4, 2}},
      {"account", [](HistoryQuery& q) { q.account = "ml"; }, {4, 3, 2, 1}},
      {"user and account",
       [](HistoryQuery& q) {
         q.user = "alice";
         q.account = "vision";
       },
       {7, 5}},
      {"one state", [](HistoryQuery& q) { q.states = {JobState::kFailed}; }, {5, 1}},
      {"two states, one twice",
       [](HistoryQuery& q) {
         q.states = {JobState::kTimeout, JobState::kCompleted, JobState::kTimeout};
       },
       {8, 7, 4, 3}},
      {"since is inclusive", [](HistoryQuery& q) { q.since = At(6); }, {8, 7}},
      {"until is exclusive", [](HistoryQuery& q) { q.until = At(5); }, {4, 3, 2, 1}},
      {"window",
       [](HistoryQuery& q) {
         q.since = At(3);
         q.until = At(6);
       },
       {6, 5, 4, 3}},
      {"limit", [](HistoryQuery& q) { q.limit = 3; }, {8, 7, 6}},
      {"by id", [](HistoryQuery& q) { q.by_id = true; }, {1, 2, 3, 4, 5, 6, 7, 8}},
      {"by id after a cursor, a page",
       [](HistoryQuery& q) {
         q.by_id = true;
         q.after_id = 3;
         q.limit = 2;
       },
       {4, 5}},
      {"after a cursor, newest first", [](HistoryQuery& q) { q.after_id = 5; }, {8, 7, 6}},
      {"by id, one user, after a cursor",
       [](HistoryQuery& q) {
         q.by_id = true;
         q.user = "bob";
         q.after_id = 2;
       },
       {4, 6, 8}},
      {"by id, two states",
       [](HistoryQuery& q) {
         q.by_id = true;
         q.states = {JobState::kCompleted, JobState::kFailed};
       },
       {1, 4, 5, 8}},
      {"everything at once",
       [](HistoryQuery& q) {
         q.user = "bob";
         q.account = "vision";
         q.states = {JobState::kCancelled};
         q.since = At(1);
         q.until = At(9);
         q.limit = 1;
       },
       {6}},
      {"nobody", [](HistoryQuery& q) { q.user = "carol"; }, {}},
      {"empty window",
       [](HistoryQuery& q) {
         q.since = At(7);
         q.until = At(3);
       },
       {}},
  };
  for (const Case& c : cases) {
    HistoryQuery query;
    c.set(query);
    EXPECT_EQ(HistoryIds(query), c.want) << c.name;
  }
}

TEST_P(StoreTest, HistoryRefusesQueriesItCannotAnswer) {
  for (int limit : {0, -5}) {
    HistoryQuery query;
    query.limit = limit;
    Result<std::vector<Job>> r = store_->History(query);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  }
  HistoryQuery query;
  query.states = {JobState::kCompleted, JobState::kRunning};
  Result<std::vector<Job>> r = store_->History(query);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("running"), std::string::npos) << r.status().message();
}

TEST_P(StoreTest, HistoryLimitIsCappedAtTenThousand) {
  Batch batch;
  for (uint64_t id = 1; id <= kMaxHistoryLimit + 5; ++id)
    batch.jobs.push_back(TestJob(id, JobState::kCompleted));
  MustCommit(batch);
  HistoryQuery query;
  query.limit = 1'000'000;
  std::vector<uint64_t> ids = HistoryIds(query);
  ASSERT_EQ(ids.size(), static_cast<size_t>(kMaxHistoryLimit));
  EXPECT_EQ(ids.front(), kMaxHistoryLimit + 5u);
  EXPECT_EQ(ids.back(), 6u);
}

TEST_P(StoreTest, RefusesWholeBatchesWithARecordThatCouldNotBeLoaded) {
  Node no_model = TestNode("n");
  no_model.gpus[1].model.clear();
  Job bad_utf8 = TestJob(8);
  bad_utf8.spec.command = "echo \xff\xfe";
  Job bad_spec = TestJob(9);
  bad_spec.spec.gpu_milli = 0;
  struct Case {
    std::string name;
    std::function<void(Batch&)> set;
  };
  const std::vector<Case> cases = {
      {"job id 0", [](Batch& b) { b.jobs = {TestJob(0)}; }},
      {"job id past int64", [](Batch& b) { b.jobs = {TestJob(uint64_t{1} << 63)}; }},
      {"job text not UTF-8", [&](Batch& b) { b.jobs = {bad_utf8}; }},
      {"job spec invalid", [&](Batch& b) { b.jobs = {bad_spec}; }},
      {"node without a name", [](Batch& b) { b.nodes = {TestNode("")}; }},
      {"GPU without a model", [&](Batch& b) { b.nodes = {no_model}; }},
      {"partition with a negative time",
       [](Batch& b) {
         b.partitions = {Partition{}};
         b.partitions[0].name = "p";
         b.partitions[0].max_time = Duration(-1000);
       }},
      {"account without shares",
       [](Batch& b) { b.accounts = {Account{.name = "a", .shares = 0}}; }},
      {"token without an id", [](Batch& b) { b.tokens = {TokenRecord{}}; }},
      {"usage without an account",
       [](Batch& b) { b.usage = {AccountUsage{.account = "", .usage_gpu_s = 1}}; }},
      {"usage not finite",
       [](Batch& b) { b.usage = {AccountUsage{.account = "a", .usage_gpu_s = std::nan("")}}; }},
      {"learned speed without a model",
       [](Batch& b) {
         b.speeds = {LearnedSpeed{.user = "u", .name = "n", .model = "", .rate = 1, .runs = 1}};
       }},
      {"learned speed of 0",
       [](Batch& b) {
         b.speeds = {LearnedSpeed{.user = "u", .name = "n", .model = "m", .rate = 0, .runs = 1}};
       }},
      {"next job id 0", [](Batch& b) { b.next_job_id = 0; }},
  };
  for (const Case& c : cases) {
    Batch batch;
    c.set(batch);
    // A good job in the same batch must not be written either.
    batch.jobs.push_back(TestJob(42));
    Status s = store_->Commit(batch);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.name << ": " << s.ToString();
    Result<std::optional<Job>> found = store_->FindJob(JobId(42));
    ASSERT_TRUE(found.ok());
    EXPECT_FALSE(found->has_value()) << c.name;
  }
  EXPECT_TRUE(MustLoad().nodes.empty());
}

TEST_P(StoreTest, ReadersSeeEachCommitWhileTheWriterGoesOn) {
  // The writer publishes the largest id it has committed after Commit returns;
  // a reader thread must then find that job, and see history newest first.
  //
  // Nothing here waits on timing: the reader publishes the largest commit it
  // has checked, the writer waits for that at fixed checkpoints (so reads are
  // known to interleave with commits, not merely hoped to) and at the end (so
  // the last commit is always checked), and the reader stops by itself once it
  // has checked the last commit.
  constexpr uint64_t kBatches = 60;
  constexpr uint64_t kJobsPerBatch = 5;
  constexpr uint64_t kCheckpointEvery = 10;  // batches
  constexpr uint64_t kLastId = kBatches * kJobsPerBatch;
  std::atomic<uint64_t> committed{0};
  std::atomic<uint64_t> verified{0};  // the largest committed id the reader has checked
  std::atomic<bool> stop{false};      // the writer gave up; the reader must not wait for kLastId
  std::atomic<bool> failed{false};
  std::atomic<int> reads{0};
  std::string failure;  // written by the reader only, read after it has joined
  std::thread reader([&] {
    auto fail = [&](std::string why) {
      failure = std::move(why);
      failed = true;
    };
    while (verified.load() < kLastId && !stop.load()) {
      const uint64_t seen = committed.load();
      HistoryQuery newest;
      newest.limit = 20;
      Result<std::vector<Job>> history = store_->History(newest);
      if (!history.ok()) return fail(history.status().ToString());
      std::vector<uint64_t> ids = Ids(*history);
      if (!std::is_sorted(ids.rbegin(), ids.rend())) return fail("history is not newest first");
      if (seen > 0 && (ids.empty() || ids.front() < seen)) {
        return fail("history misses committed job " + std::to_string(seen));
      }
      if (seen > 0) {
        Result<std::optional<Job>> found = store_->FindJob(JobId(seen));
        if (!found.ok()) return fail(found.status().ToString());
        if (!found->has_value())
          return fail("FindJob misses committed job " + std::to_string(seen));
      }
      ++reads;
      verified = seen;
    }
  });
  // Waits until the reader has checked `id` (or failed); false when it failed.
  auto wait_verified = [&](uint64_t id) {
    while (verified.load() < id && !failed.load())
      std::this_thread::yield();
    return !failed.load();
  };
  int checkpoints = 0;
  std::string commit_failure;
  for (uint64_t b = 0; b < kBatches && !failed.load(); ++b) {
    Batch batch;
    for (uint64_t i = 1; i <= kJobsPerBatch; ++i) {
      batch.jobs.push_back(TestJob(b * kJobsPerBatch + i, JobState::kCompleted));
    }
    batch.next_job_id = (b + 1) * kJobsPerBatch + 1;
    if (Status s = store_->Commit(batch); !s.ok()) {
      commit_failure = s.ToString();
      break;
    }
    committed = (b + 1) * kJobsPerBatch;
    if ((b + 1) % kCheckpointEvery == 0 && wait_verified(committed.load())) ++checkpoints;
  }
  stop = true;
  reader.join();
  EXPECT_EQ(commit_failure, "");
  EXPECT_EQ(failure, "");
  // Every checkpoint, the last commit among them, was checked by the reader
  // while the writer still had batches to go (or had just finished).
  EXPECT_EQ(checkpoints, static_cast<int>(kBatches / kCheckpointEvery));
  EXPECT_EQ(verified.load(), kLastId);
  EXPECT_GE(reads.load(), checkpoints);
  EXPECT_EQ(MustLoad().next_job_id, kLastId + 1);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreTest, ::testing::Values("sqlite", "memory", "postgres"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace shoal::state
