// What only the SQLite store does: keep state across opens and crashes,
// migrate its schema, and report bad directories and damaged records.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <set>

#include "state/schema.h"
#include "state/sqlite_db.h"
#include "state/store.h"
#include "state/store_testing.h"

namespace shoal::state {
namespace {

std::unique_ptr<Store> MustOpen(const std::string& dir, const SqliteOptions& options = {}) {
  Result<std::unique_ptr<Store>> store = OpenSqliteStore(dir, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

// A connection of the test's own to the store's file, to look behind its back.
std::unique_ptr<Connection> RawConnection(const std::string& dir) {
  Result<std::unique_ptr<Connection>> db =
      Connection::Open(dir + "/shoal.db", Connection::Mode::kReadWrite, /*busy_timeout_ms=*/1000);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return db.ok() ? std::move(db).value() : nullptr;
}

void ExpectContains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' is not in: " << text;
}

TEST(SqliteStoreTest, KeepsEverythingAcrossReopens) {
  ScratchDir dir;
  Batch batch;
  batch.jobs = {TestJob(1), TestJob(2, JobState::kRunning), TestJob(3, JobState::kTimeout)};
  batch.nodes = {TestNode("gpu-a")};
  batch.tokens = {TokenRecord{
      .id = "t1", .secret_hash = "ab", .user = "alice", .role = "user", .created = At(1)}};
  batch.partitions = {Partition{}};
  batch.partitions[0].name = "gpu";
  batch.accounts = {Account{.name = "ml", .shares = 3, .max_gpus = 8}};
  batch.usage = {AccountUsage{.account = "ml", .usage_gpu_s = 99.5, .updated = At(2)}};
  batch.next_job_id = 4;
  {
    std::unique_ptr<Store> store = MustOpen(dir.path());
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Commit(batch).ok());
  }
  std::unique_ptr<Store> store = MustOpen(dir.path());
  ASSERT_NE(store, nullptr);
  Result<Loaded> loaded = store->Load(kTimeZero);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->active_jobs.size(), 2u);
  EXPECT_EQ(JsonText(loaded->active_jobs[1]), JsonText(batch.jobs[1]));
  EXPECT_EQ(loaded->finished.size(), 1u);
  ASSERT_EQ(loaded->nodes.size(), 1u);
  EXPECT_EQ(JsonText(loaded->nodes[0]), JsonText(batch.nodes[0]));
  EXPECT_EQ(loaded->tokens.size(), 1u);
  EXPECT_EQ(loaded->partitions.size(), 1u);
  EXPECT_EQ(loaded->accounts.size(), 1u);
  ASSERT_EQ(loaded->usage.size(), 1u);
  EXPECT_EQ(loaded->usage[0].usage_gpu_s, 99.5);
  EXPECT_EQ(loaded->next_job_id, 4u);
}

TEST(SqliteStoreTest, OpensInWalModeAtTheCurrentSchemaVersion) {
  ScratchDir dir;
  for (bool full : {true, false}) {
    // Opening twice applies the migrations once: a second run of migration 1
    // would fail on its CREATE TABLE.
    std::unique_ptr<Store> store = MustOpen(dir.path(), SqliteOptions{.synchronous_full = full});
    ASSERT_NE(store, nullptr);
    Batch batch;
    batch.jobs = {TestJob(full ? 1 : 2)};
    ASSERT_TRUE(store->Commit(batch).ok());
  }
  std::unique_ptr<Connection> db = RawConnection(dir.path());
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(*db->QueryText("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), SchemaVersion());
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM jobs"), 2);
}

TEST(SqliteStoreTest, MigrationsRunOnceEachInOrder) {
  ScratchDir dir;
  std::unique_ptr<Connection> db = RawConnection(dir.path());
  ASSERT_NE(db, nullptr);
  const Migration two[] = {
      {1, "a table", "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);"},
      {2, "a second row", "INSERT INTO t VALUES (2);"},
  };
  EXPECT_EQ(*ApplyMigrations(*db, two), 2);
  EXPECT_EQ(*ApplyMigrations(*db, two), 0);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM t"), 2);
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), 2);

  // A migration that fails halfway leaves nothing of itself behind.
  const Migration three[] = {
      two[0], two[1], {3, "broken", "INSERT INTO t VALUES (3); INSERT INTO nowhere VALUES (1);"}};
  Result<int> failed = ApplyMigrations(*db, three);
  ASSERT_FALSE(failed.ok());
  ExpectContains(failed.status().message(), "migration 3 (broken)");
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM t"), 2);
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), 2);
  EXPECT_FALSE(db->InTransaction());
}

TEST(SqliteStoreTest, RefusesASchemaNewerThanItKnows) {
  ScratchDir dir;
  MustOpen(dir.path());
  {
    std::unique_ptr<Connection> db = RawConnection(dir.path());
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(db->Exec("PRAGMA user_version = 99").ok());
  }
  Result<std::unique_ptr<Store>> store = OpenSqliteStore(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  ExpectContains(store.status().message(), "schema version 99");
  ExpectContains(store.status().message(), dir.path() + "/shoal.db");
}

TEST(SqliteStoreTest, ABadStateDirectoryIsAClearError) {
  ScratchDir dir;
  const std::string file = dir.Sub("a-file");
  std::ofstream(file) << "not a directory\n";
  struct Case {
    std::string name;
    std::string state_dir;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"empty", "", "not set"},
      {"below a file", file + "/state", "cannot create the state directory " + file + "/state"},
      {"a file", file, "the state directory " + file + " is not a directory"},
  };
  for (const Case& c : cases) {
    Result<std::unique_ptr<Store>> store = OpenSqliteStore(c.state_dir);
    ASSERT_FALSE(store.ok()) << c.name;
    ExpectContains(store.status().message(), c.message);
  }
  if (geteuid() != 0) {  // root writes anywhere
    const std::string locked = dir.Sub("locked");
    ASSERT_EQ(mkdir(locked.c_str(), 0500), 0);
    Result<std::unique_ptr<Store>> store = OpenSqliteStore(locked);
    ASSERT_FALSE(store.ok());
    ExpectContains(store.status().message(), "is not writable");
  }
}

TEST(SqliteStoreTest, AFileThatIsNotADatabaseIsAnError) {
  ScratchDir dir;
  std::ofstream(dir.Sub("shoal.db")) << std::string(4096, 'x');
  Result<std::unique_ptr<Store>> store = OpenSqliteStore(dir.path());
  ASSERT_FALSE(store.ok());
  ExpectContains(store.status().message(), dir.Sub("shoal.db"));
  ExpectContains(store.status().message(), "not a database");
}

TEST(SqliteStoreTest, ACorruptRecordIsAnErrorNamingTableAndKey) {
  // Job 6 is pending (Load reads its record), 7 and 8 finished (Load reads
  // their states only; History and FindJob read their records).
  struct Case {
    std::string name;
    std::string damage;  // SQL run on the file behind the store's back
    std::string message;
    bool load_fails = true;
    uint64_t find_fails = 0;  // a job FindJob must fail on; 0: none
    bool history_fails = false;
  };
  const std::vector<Case> cases = {
      {"active job not JSON", "UPDATE jobs SET record = '{\"id\": 6, ' WHERE id = 6",
       "jobs/6 is corrupt: malformed JSON", true, 6},
      {"finished job not JSON", "UPDATE jobs SET record = 'x' WHERE id = 7",
       "jobs/7 is corrupt: malformed JSON", false, 7, true},
      {"job of the wrong shape",
       "UPDATE jobs SET record = '{\"id\": 7, \"colour\": 1}' WHERE id = 7",
       "jobs/7 is corrupt: job record: unknown field 'colour'", false, 7, true},
      {"job under another id",
       "UPDATE jobs SET record = (SELECT record FROM jobs WHERE id = 8) WHERE id = 7",
       "jobs/7 is corrupt: it holds job 8", false, 7, true},
      {"job state", "UPDATE jobs SET state = 'melted' WHERE id = 8", "jobs/8 is corrupt"},
      {"node", "UPDATE nodes SET record = '[1, 2' WHERE name = 'gpu-a'", "nodes/gpu-a is corrupt"},
      {"partition", "UPDATE partitions SET record = '{}' WHERE name = 'gpu'",
       "partitions/gpu is corrupt"},
      {"account", "UPDATE accounts SET record = 'null' WHERE name = 'ml'",
       "accounts/ml is corrupt"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ScratchDir dir;
    {
      std::unique_ptr<Store> store = MustOpen(dir.path());
      ASSERT_NE(store, nullptr);
      Batch batch;
      batch.jobs = {TestJob(6), TestJob(7, JobState::kCompleted), TestJob(8, JobState::kFailed)};
      batch.nodes = {TestNode("gpu-a")};
      batch.partitions = {Partition{}};
      batch.partitions[0].name = "gpu";
      batch.accounts = {Account{.name = "ml"}};
      ASSERT_TRUE(store->Commit(batch).ok());
    }
    {
      std::unique_ptr<Connection> db = RawConnection(dir.path());
      ASSERT_NE(db, nullptr);
      ASSERT_TRUE(db->Exec(c.damage).ok());
    }
    std::unique_ptr<Store> store = MustOpen(dir.path());
    ASSERT_NE(store, nullptr);
    Result<Loaded> loaded = store->Load(kTimeZero);
    EXPECT_EQ(loaded.ok(), !c.load_fails);
    if (!loaded.ok()) {
      EXPECT_EQ(loaded.status().code(), StatusCode::kInternal);
      ExpectContains(loaded.status().message(), c.message);
    }
    if (c.find_fails != 0) {
      Result<std::optional<Job>> found = store->FindJob(JobId(c.find_fails));
      ASSERT_FALSE(found.ok());
      ExpectContains(found.status().message(), c.message);
    }
    Result<std::vector<Job>> history = store->History(HistoryQuery());
    EXPECT_EQ(history.ok(), !c.history_fails);
    if (!history.ok()) ExpectContains(history.status().message(), c.message);
    // Other records stay readable.
    Result<std::optional<Job>> other = store->FindJob(JobId(8));
    ASSERT_TRUE(other.ok()) << other.status().ToString();
    EXPECT_TRUE(other->has_value());
  }
}

// The crash test's child: opens the store and commits batches until it is
// killed. Batch b holds jobs b*K+1 .. b*K+K (pending), finishes the jobs of
// batch b-1 and moves next_job_id past its own; its number goes down the pipe
// only after Commit has returned OK.
constexpr uint64_t kCrashJobsPerBatch = 5;
constexpr uint64_t kCrashChildFailed = ~uint64_t{0};

Job CrashJob(uint64_t id, JobState state) {
  Job job = TestJob(id, state);
  job.spec.command = std::string(200 + id % 300, 'c');  // records of varied size
  return job;
}

[[noreturn]] void RunCrashChild(const std::string& dir, int fd) {
  auto fail = [fd](const Status& s) {
    std::fprintf(stderr, "crash child: %s\n", s.ToString().c_str());
    const uint64_t marker = kCrashChildFailed;
    (void)!write(fd, &marker, sizeof marker);
    _exit(2);
  };
  Result<std::unique_ptr<Store>> store = OpenSqliteStore(dir);
  if (!store.ok()) fail(store.status());
  Result<Loaded> loaded = (*store)->Load(kTimeZero);
  if (!loaded.ok()) fail(loaded.status());
  for (uint64_t b = (loaded->next_job_id - 1) / kCrashJobsPerBatch;; ++b) {
    Batch batch;
    for (uint64_t i = 1; i <= kCrashJobsPerBatch; ++i) {
      batch.jobs.push_back(CrashJob(b * kCrashJobsPerBatch + i, JobState::kPending));
      if (b > 0)
        batch.jobs.push_back(CrashJob((b - 1) * kCrashJobsPerBatch + i, JobState::kCompleted));
    }
    batch.next_job_id = (b + 1) * kCrashJobsPerBatch + 1;
    Status s = (*store)->Commit(batch);
    if (!s.ok()) fail(s);
    if (write(fd, &b, sizeof b) != sizeof b) _exit(3);
  }
}

// Reads batch numbers from `fd` until `deadline`, or to the end of the pipe
// when there is no deadline.
void ReadAcks(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
              std::string* bytes) {
  for (;;) {
    int timeout_ms = -1;
    if (deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return;
      timeout_ms = static_cast<int>(left.count());
    }
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, timeout_ms) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return;
    bytes->append(buf, static_cast<size_t>(n));
  }
}

TEST(SqliteStoreCrashTest, AcknowledgedBatchesSurviveSigkill) {
  ScratchDir dir;
  uint64_t last_acked = 0;
  int acked_total = 0;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      RunCrashChild(dir.path(), fds[1]);
    }
    close(fds[1]);
    std::string bytes;
    // At least 150 ms of commits and two acknowledgements before the kill
    // (a slow build, under a sanitizer, may need longer for them).
    ReadAcks(fds[0], std::chrono::steady_clock::now() + std::chrono::milliseconds(150), &bytes);
    const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (bytes.size() < 2 * sizeof(uint64_t) && std::chrono::steady_clock::now() < cap)
      ReadAcks(fds[0], std::chrono::steady_clock::now() + std::chrono::milliseconds(50), &bytes);
    kill(pid, SIGKILL);
    int wait_status = 0;
    ASSERT_EQ(waitpid(pid, &wait_status, 0), pid);
    ReadAcks(fds[0], std::nullopt, &bytes);  // what it wrote before it died
    close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(wait_status)) << "the child stopped by itself; see its message above";
    ASSERT_EQ(bytes.size() % sizeof(uint64_t), 0u);
    std::vector<uint64_t> acks(bytes.size() / sizeof(uint64_t));
    std::memcpy(acks.data(), bytes.data(), bytes.size());
    ASSERT_FALSE(acks.empty()) << "no batch was committed in time";
    ASSERT_NE(acks.back(), kCrashChildFailed) << "the child failed; see its message above";
    for (size_t i = 1; i < acks.size(); ++i)
      ASSERT_EQ(acks[i], acks[i - 1] + 1);
    if (round > 0) {
      EXPECT_GT(acks.front(), last_acked) << "a later run reused a batch number";
    }
    last_acked = acks.back();
    acked_total += static_cast<int>(acks.size());

    // The store opens cleanly and holds whole batches: every acknowledged one,
    // and at most one more that committed just before the kill.
    std::unique_ptr<Store> store = MustOpen(dir.path());
    ASSERT_NE(store, nullptr);
    Result<Loaded> loaded = store->Load(kTimeZero);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    const uint64_t batches = (loaded->next_job_id - 1) / kCrashJobsPerBatch;
    ASSERT_EQ(loaded->next_job_id, batches * kCrashJobsPerBatch + 1);
    EXPECT_GE(batches, last_acked + 1);
    EXPECT_LE(batches, last_acked + 2);
    const uint64_t last_batch = batches - 1;
    std::vector<uint64_t> active;
    for (const Job& job : loaded->active_jobs) {
      active.push_back(job.id.value());
      EXPECT_EQ(JsonText(job), JsonText(CrashJob(job.id.value(), JobState::kPending)));
    }
    std::vector<uint64_t> want_active;
    for (uint64_t i = 1; i <= kCrashJobsPerBatch; ++i)
      want_active.push_back(last_batch * kCrashJobsPerBatch + i);
    EXPECT_EQ(active, want_active);
    ASSERT_EQ(loaded->finished.size(), last_batch * kCrashJobsPerBatch);
    std::set<uint64_t> ids(active.begin(), active.end());
    for (size_t i = 0; i < loaded->finished.size(); ++i) {
      EXPECT_EQ(loaded->finished[i].first.value(), i + 1);
      EXPECT_EQ(loaded->finished[i].second, JobState::kCompleted);
      ids.insert(loaded->finished[i].first.value());
    }
    EXPECT_EQ(ids.size(), batches * kCrashJobsPerBatch) << "a job is listed twice";
    Result<std::optional<Job>> newest = store->FindJob(JobId(last_acked * kCrashJobsPerBatch + 1));
    ASSERT_TRUE(newest.ok());
    EXPECT_TRUE(newest->has_value());
    store.reset();
    std::unique_ptr<Connection> db = RawConnection(dir.path());
    ASSERT_NE(db, nullptr);
    EXPECT_EQ(*db->QueryText("PRAGMA integrity_check"), "ok");
  }
  EXPECT_GT(acked_total, 3);
}

}  // namespace
}  // namespace shoal::state
