#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "state/records.h"
#include "state/schema.h"
#include "state/sqlite_db.h"
#include "state/store.h"

namespace shoal::state {

namespace {

constexpr const char* kDatabaseFile = "shoal.db";
// Idle read connections kept for the next History or FindJob; more may be
// open at once, but the extra ones are closed when their call ends.
constexpr size_t kMaxIdleReaders = 4;

// The statements of the hot path, prepared once per connection.
const std::string kBegin = "BEGIN IMMEDIATE";
const std::string kCommit = "COMMIT";
const std::string kInsertJob =
    "INSERT OR REPLACE INTO jobs (id, state, finished, user_name, account_name, end_ms, record) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
const std::string kFindJob = "SELECT record FROM jobs WHERE id = ?1";

// The SQLite store: one write connection (Commit and Load, under write_mu_)
// and a pool of read-only connections lent to one History or FindJob call at a
// time, so reads run beside a commit as WAL allows.
// Thread safety: every method may be called from any thread; commits are
// serialized by write_mu_.
class SqliteStore final : public Store {
 public:
  SqliteStore(std::unique_ptr<Connection> writer, int busy_timeout_ms)
      : path_(writer->path()), busy_timeout_ms_(busy_timeout_ms), writer_(std::move(writer)) {}

  Status Commit(const Batch& batch) override;
  Result<Loaded> Load(Time finished_horizon) override;
  Result<std::vector<Job>> History(const HistoryQuery& query) override;
  Result<std::optional<Job>> FindJob(JobId id) override;

 private:
  // A read connection lent by the pool; it goes back when the lease ends.
  class ReaderLease {
   public:
    ReaderLease(SqliteStore* store, std::unique_ptr<Connection> db)
        : store_(store), db_(std::move(db)) {}
    ReaderLease(ReaderLease&&) = default;
    ~ReaderLease() {
      if (db_) store_->ReturnReader(std::move(db_));
    }
    Connection& operator*() { return *db_; }
    Connection* operator->() { return db_.get(); }

   private:
    SqliteStore* store_;
    std::unique_ptr<Connection> db_;
  };

  Result<ReaderLease> LendReader();
  void ReturnReader(std::unique_ptr<Connection> db);
  Status WriteBatch(const Batch& batch, const EncodedBatch& encoded);
  Result<Loaded> LoadInTransaction(Time finished_horizon);

  const std::string path_;
  const int busy_timeout_ms_;
  std::mutex write_mu_;
  std::unique_ptr<Connection> writer_;  // guarded by write_mu_
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Connection>> idle_readers_;  // guarded by readers_mu_
};

Result<SqliteStore::ReaderLease> SqliteStore::LendReader() {
  {
    std::lock_guard lock(readers_mu_);
    if (!idle_readers_.empty()) {
      std::unique_ptr<Connection> db = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return ReaderLease(this, std::move(db));
    }
  }
  Result<std::unique_ptr<Connection>> db =
      Connection::Open(path_, Connection::Mode::kReadOnly, busy_timeout_ms_);
  if (!db.ok()) return db.status().WithContext(fmt::format("reading {}", path_));
  return ReaderLease(this, std::move(db).value());
}

void SqliteStore::ReturnReader(std::unique_ptr<Connection> db) {
  std::lock_guard lock(readers_mu_);
  if (idle_readers_.size() < kMaxIdleReaders) idle_readers_.push_back(std::move(db));
}

Status SqliteStore::Commit(const Batch& batch) {
  if (batch.empty()) return Status::Ok();
  // Encoding before BEGIN keeps the write lock short and refuses a bad batch
  // before anything is written.
  SHOAL_ASSIGN_OR_RETURN(EncodedBatch encoded, EncodeBatch(batch));
  std::lock_guard lock(write_mu_);
  Status status = [&]() -> Status {
    SHOAL_ASSIGN_OR_RETURN(Statement begin, writer_->Prepare(kBegin));
    SHOAL_RETURN_IF_ERROR(begin.Run());
    SHOAL_RETURN_IF_ERROR(WriteBatch(batch, encoded));
    SHOAL_ASSIGN_OR_RETURN(Statement commit, writer_->Prepare(kCommit));
    return commit.Run();
  }();
  if (!status.ok()) {
    if (writer_->InTransaction()) (void)writer_->Exec("ROLLBACK");
    return status.WithContext(fmt::format("commit to {}", path_));
  }
  return Status::Ok();
}

Status SqliteStore::WriteBatch(const Batch& batch, const EncodedBatch& encoded) {
  auto delete_names = [&](const std::string& sql, const std::vector<std::string>& names) -> Status {
    if (names.empty()) return Status::Ok();
    SHOAL_ASSIGN_OR_RETURN(Statement stmt, writer_->Prepare(sql));
    for (const std::string& name : names) {
      stmt.BindText(1, name);
      SHOAL_RETURN_IF_ERROR(stmt.Run());
    }
    return Status::Ok();
  };
  SHOAL_RETURN_IF_ERROR(delete_names("DELETE FROM nodes WHERE name = ?1", batch.deleted_nodes));
  SHOAL_RETURN_IF_ERROR(
      delete_names("DELETE FROM partitions WHERE name = ?1", batch.deleted_partitions));
  SHOAL_RETURN_IF_ERROR(
      delete_names("DELETE FROM accounts WHERE name = ?1", batch.deleted_accounts));
  SHOAL_RETURN_IF_ERROR(delete_names("DELETE FROM qos WHERE name = ?1", batch.deleted_qos));
  SHOAL_RETURN_IF_ERROR(
      delete_names("DELETE FROM reservations WHERE name = ?1", batch.deleted_reservations));

  if (!batch.jobs.empty()) {
    SHOAL_ASSIGN_OR_RETURN(Statement stmt, writer_->Prepare(kInsertJob));
    for (size_t i = 0; i < batch.jobs.size(); ++i) {
      const Job& job = batch.jobs[i];
      const bool finished = IsTerminal(job.state);
      stmt.BindInt(1, static_cast<int64_t>(job.id.value()));
      stmt.BindText(2, JobStateName(job.state));
      stmt.BindInt(3, finished ? 1 : 0);
      stmt.BindText(4, job.spec.user);
      stmt.BindText(5, job.spec.account);
      stmt.BindInt(6, ToMillis(job.end_time));
      stmt.BindText(7, encoded.jobs[i]);
      SHOAL_RETURN_IF_ERROR(stmt.Run());
    }
  }

  auto write_named = [&](const std::string& sql, const auto& records,
                         const std::vector<std::string>& texts) -> Status {
    if (records.empty()) return Status::Ok();
    SHOAL_ASSIGN_OR_RETURN(Statement stmt, writer_->Prepare(sql));
    for (size_t i = 0; i < records.size(); ++i) {
      stmt.BindText(1, records[i].name);
      stmt.BindText(2, texts[i]);
      SHOAL_RETURN_IF_ERROR(stmt.Run());
    }
    return Status::Ok();
  };
  SHOAL_RETURN_IF_ERROR(write_named("INSERT OR REPLACE INTO nodes (name, record) VALUES (?1, ?2)",
                                    batch.nodes, encoded.nodes));
  SHOAL_RETURN_IF_ERROR(
      write_named("INSERT OR REPLACE INTO partitions (name, record) VALUES (?1, ?2)",
                  batch.partitions, encoded.partitions));
  SHOAL_RETURN_IF_ERROR(
      write_named("INSERT OR REPLACE INTO accounts (name, record) VALUES (?1, ?2)", batch.accounts,
                  encoded.accounts));
  SHOAL_RETURN_IF_ERROR(write_named("INSERT OR REPLACE INTO qos (name, record) VALUES (?1, ?2)",
                                    batch.qos, encoded.qos));
  SHOAL_RETURN_IF_ERROR(
      write_named("INSERT OR REPLACE INTO reservations (name, record) VALUES (?1, ?2)",
                  batch.reservations, encoded.reservations));

  if (!batch.tokens.empty()) {
    SHOAL_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare(
            "INSERT OR REPLACE INTO tokens (id, secret_hash, user_name, role, created_ms, revoked, "
            "expires_ms, node) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    for (const TokenRecord& t : batch.tokens) {
      stmt.BindText(1, t.id);
      stmt.BindText(2, t.secret_hash);
      stmt.BindText(3, t.user);
      stmt.BindText(4, t.role);
      stmt.BindInt(5, ToMillis(t.created));
      stmt.BindInt(6, t.revoked ? 1 : 0);
      stmt.BindInt(7, t.expires == kTimeNever ? 0 : ToMillis(t.expires));
      stmt.BindText(8, t.node);
      SHOAL_RETURN_IF_ERROR(stmt.Run());
    }
  }
  if (!batch.usage.empty()) {
    SHOAL_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare(
            "INSERT OR REPLACE INTO usage (account, usage_gpu_s, updated_ms) VALUES (?1, ?2, ?3)"));
    for (const AccountUsage& u : batch.usage) {
      stmt.BindText(1, u.account);
      stmt.BindDouble(2, u.usage_gpu_s);
      stmt.BindInt(3, ToMillis(u.updated));
      SHOAL_RETURN_IF_ERROR(stmt.Run());
    }
  }
  if (!batch.deleted_speeds.empty()) {
    SHOAL_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("DELETE FROM speeds WHERE user_name = ?1 AND job_name = ?2"));
    for (const auto& [user, name] : batch.deleted_speeds) {
      stmt.BindText(1, user);
      stmt.BindText(2, name);
      SHOAL_RETURN_IF_ERROR(stmt.Run());
    }
  }
  if (!batch.speeds.empty()) {
    SHOAL_ASSIGN_OR_RETURN(Statement stmt,
                           writer_->Prepare("INSERT OR REPLACE INTO speeds (user_name, job_name, "
                                            "model, rate, runs, updated_ms) VALUES (?1, ?2, ?3, "
                                            "?4, ?5, ?6)"));
    for (const LearnedSpeed& sp : batch.speeds) {
      stmt.BindText(1, sp.user);
      stmt.BindText(2, sp.name);
      stmt.BindText(3, sp.model);
      stmt.BindDouble(4, sp.rate);
      stmt.BindInt(5, sp.runs);
      stmt.BindInt(6, ToMillis(sp.updated));
      SHOAL_RETURN_IF_ERROR(stmt.Run());
    }
  }
  if (batch.next_job_id) {
    SHOAL_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('next_job_id', ?1)"));
    stmt.BindInt(1, static_cast<int64_t>(*batch.next_job_id));
    SHOAL_RETURN_IF_ERROR(stmt.Run());
  }
  return Status::Ok();
}

Result<Loaded> SqliteStore::Load(Time finished_horizon) {
  std::lock_guard lock(write_mu_);
  // One read transaction, so every list comes from the same commit.
  SHOAL_RETURN_IF_ERROR(writer_->Exec("BEGIN").WithContext(fmt::format("load from {}", path_)));
  Result<Loaded> loaded = LoadInTransaction(finished_horizon);
  // A read transaction has nothing to keep: ROLLBACK ends it either way.
  (void)writer_->Exec("ROLLBACK");
  if (!loaded.ok()) return loaded.status().WithContext(fmt::format("load from {}", path_));
  return loaded;
}

Result<Loaded> SqliteStore::LoadInTransaction(Time finished_horizon) {
  Loaded loaded;
  {
    SHOAL_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("SELECT id, record FROM jobs WHERE finished = 0 ORDER BY id"));
    for (;;) {
      SHOAL_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      SHOAL_ASSIGN_OR_RETURN(Job job, DecodeJob(stmt.Text(1), static_cast<uint64_t>(stmt.Int(0))));
      loaded.active_jobs.push_back(std::move(job));
    }
  }
  {
    // Sorted here rather than by ORDER BY id, which SQLite would answer by
    // scanning all of history in id order instead of using the end time index.
    SHOAL_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("SELECT id, state FROM jobs WHERE finished = 1 AND end_ms >= ?1"));
    stmt.BindInt(1, ToMillis(finished_horizon));
    for (;;) {
      SHOAL_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      const uint64_t id = static_cast<uint64_t>(stmt.Int(0));
      Result<JobState> state = ParseJobState(stmt.Text(1));
      if (!state.ok()) return CorruptRecord("jobs", std::to_string(id), state.status().message());
      loaded.finished.emplace_back(JobId(id), *state);
    }
    std::sort(loaded.finished.begin(), loaded.finished.end());
  }
  auto read_named = [&](const std::string& sql, auto decode, auto* out) -> Status {
    SHOAL_ASSIGN_OR_RETURN(Statement stmt, writer_->Prepare(sql));
    for (;;) {
      SHOAL_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return Status::Ok();
      auto record = decode(stmt.Text(1), stmt.Text(0));
      if (!record.ok()) return record.status();
      out->push_back(std::move(record).value());
    }
  };
  SHOAL_RETURN_IF_ERROR(
      read_named("SELECT name, record FROM nodes ORDER BY name", DecodeNode, &loaded.nodes));
  SHOAL_RETURN_IF_ERROR(read_named("SELECT name, record FROM partitions ORDER BY name",
                                   DecodePartition, &loaded.partitions));
  SHOAL_RETURN_IF_ERROR(read_named("SELECT name, record FROM accounts ORDER BY name", DecodeAccount,
                                   &loaded.accounts));
  SHOAL_RETURN_IF_ERROR(
      read_named("SELECT name, record FROM qos ORDER BY name", DecodeQos, &loaded.qos));
  SHOAL_RETURN_IF_ERROR(read_named("SELECT name, record FROM reservations ORDER BY name",
                                   DecodeReservation, &loaded.reservations));
  {
    SHOAL_ASSIGN_OR_RETURN(Statement stmt,
                           writer_->Prepare("SELECT id, secret_hash, user_name, role, created_ms, "
                                            "revoked, expires_ms, node FROM tokens ORDER BY id"));
    for (;;) {
      SHOAL_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      loaded.tokens.push_back(
          TokenRecord{.id = std::string(stmt.Text(0)),
                      .secret_hash = std::string(stmt.Text(1)),
                      .user = std::string(stmt.Text(2)),
                      .role = std::string(stmt.Text(3)),
                      .created = FromMillis(stmt.Int(4)),
                      .revoked = stmt.Int(5) != 0,
                      .expires = stmt.Int(6) == 0 ? kTimeNever : FromMillis(stmt.Int(6)),
                      .node = std::string(stmt.Text(7))});
    }
  }
  {
    SHOAL_ASSIGN_OR_RETURN(
        Statement stmt,
        writer_->Prepare("SELECT account, usage_gpu_s, updated_ms FROM usage ORDER BY account"));
    for (;;) {
      SHOAL_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      loaded.usage.push_back(AccountUsage{.account = std::string(stmt.Text(0)),
                                          .usage_gpu_s = stmt.Double(1),
                                          .updated = FromMillis(stmt.Int(2))});
    }
  }
  {
    SHOAL_ASSIGN_OR_RETURN(Statement stmt,
                           writer_->Prepare("SELECT user_name, job_name, model, rate, runs, "
                                            "updated_ms FROM speeds ORDER BY user_name, "
                                            "job_name, model"));
    for (;;) {
      SHOAL_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      loaded.speeds.push_back(LearnedSpeed{.user = std::string(stmt.Text(0)),
                                           .name = std::string(stmt.Text(1)),
                                           .model = std::string(stmt.Text(2)),
                                           .rate = stmt.Double(3),
                                           .runs = static_cast<int>(stmt.Int(4)),
                                           .updated = FromMillis(stmt.Int(5))});
    }
  }
  SHOAL_ASSIGN_OR_RETURN(int64_t next,
                         writer_->QueryInt("SELECT value FROM meta WHERE key = 'next_job_id'"));
  SHOAL_ASSIGN_OR_RETURN(int64_t max_id,
                         writer_->QueryInt("SELECT coalesce(max(id), 0) FROM jobs"));
  if (next < 1)
    return CorruptRecord("meta", "next_job_id", fmt::format("{} is not a job id", next));
  loaded.next_job_id = static_cast<uint64_t>(std::max(next, max_id + 1));
  return loaded;
}

Result<std::vector<Job>> SqliteStore::History(const HistoryQuery& query) {
  SHOAL_ASSIGN_OR_RETURN(const int limit, HistoryLimit(query));
  // The text varies with the filters present, so each form is prepared once
  // and SQLite picks the index that fits it (user, account or end time).
  std::string sql =
      "SELECT id, record FROM jobs WHERE finished = 1 AND end_ms >= ?1 AND end_ms < ?2";
  if (!query.user.empty()) sql += " AND user_name = ?4";
  if (!query.account.empty()) sql += " AND account_name = ?5";
  if (query.after_id > 0) sql += " AND id > ?6";
  std::vector<std::string_view> states;
  for (JobState s : query.states) {
    if (std::find(states.begin(), states.end(), JobStateName(s)) == states.end())
      states.push_back(JobStateName(s));
  }
  if (!states.empty()) {
    sql += " AND state IN (";
    for (size_t i = 0; i < states.size(); ++i)
      sql += fmt::format("{}?{}", i == 0 ? "" : ", ", 7 + i);
    sql += ")";
  }
  sql += query.by_id ? " ORDER BY id LIMIT ?3" : " ORDER BY end_ms DESC, id DESC LIMIT ?3";

  SHOAL_ASSIGN_OR_RETURN(ReaderLease db, LendReader());
  SHOAL_ASSIGN_OR_RETURN(Statement stmt, db->Prepare(sql));
  stmt.BindInt(1, ToMillis(query.since));
  stmt.BindInt(2, ToMillis(query.until));
  stmt.BindInt(3, limit);
  if (!query.user.empty()) stmt.BindText(4, query.user);
  if (!query.account.empty()) stmt.BindText(5, query.account);
  if (query.after_id > 0)
    stmt.BindInt(6, static_cast<int64_t>(std::min<uint64_t>(query.after_id, INT64_MAX)));
  for (size_t i = 0; i < states.size(); ++i)
    stmt.BindText(static_cast<int>(7 + i), states[i]);
  std::vector<Job> jobs;
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    SHOAL_ASSIGN_OR_RETURN(Job job, DecodeJob(stmt.Text(1), static_cast<uint64_t>(stmt.Int(0))));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::optional<Job>> SqliteStore::FindJob(JobId id) {
  if (id.value() == 0 || id.value() > static_cast<uint64_t>(INT64_MAX)) return std::optional<Job>();
  SHOAL_ASSIGN_OR_RETURN(ReaderLease db, LendReader());
  SHOAL_ASSIGN_OR_RETURN(Statement stmt, db->Prepare(kFindJob));
  stmt.BindInt(1, static_cast<int64_t>(id.value()));
  SHOAL_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<Job>();
  SHOAL_ASSIGN_OR_RETURN(Job job, DecodeJob(stmt.Text(0), id.value()));
  return std::optional<Job>(std::move(job));
}

// Creates the directory if needed and checks it can hold the database, so the
// operator reads which directory is wrong rather than SQLite's "unable to open
// database file".
Status PrepareStateDir(const std::string& state_dir) {
  namespace fs = std::filesystem;
  if (state_dir.empty()) return InvalidArgument("the state directory is not set");
  std::error_code ec;
  if (fs::exists(state_dir, ec) && !fs::is_directory(state_dir, ec)) {
    return Internal(fmt::format("the state directory {} is not a directory", state_dir));
  }
  fs::create_directories(state_dir, ec);
  if (ec)
    return Internal(
        fmt::format("cannot create the state directory {}: {}", state_dir, ec.message()));
  if (access(state_dir.c_str(), W_OK | X_OK) != 0) {
    return Internal(fmt::format("the state directory {} is not writable: {}", state_dir,
                                std::error_code(errno, std::generic_category()).message()));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Connection>> OpenWriter(const std::string& path,
                                               const SqliteOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(
      std::unique_ptr<Connection> db,
      Connection::Open(path, Connection::Mode::kReadWrite, options.busy_timeout_ms));
  // journal_mode answers with the mode it got: a file system that cannot
  // share memory between processes stays in another mode, and readers beside
  // the writer would then block it.
  SHOAL_ASSIGN_OR_RETURN(std::string mode, db->QueryText("PRAGMA journal_mode = WAL"));
  if (mode != "wal")
    return Internal(fmt::format("cannot use WAL mode (the database stays in '{}')", mode));
  SHOAL_RETURN_IF_ERROR(db->Exec(options.synchronous_full ? "PRAGMA synchronous = FULL"
                                                          : "PRAGMA synchronous = NORMAL"));
  SHOAL_RETURN_IF_ERROR(ApplyMigrations(*db, Migrations()).status());
  return db;
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& state_dir,
                                               const SqliteOptions& options) {
  SHOAL_RETURN_IF_ERROR(PrepareStateDir(state_dir));
  const std::string path = (std::filesystem::path(state_dir) / kDatabaseFile).string();
  // SQLite would create the file 0644 (less the umask), and its WAL and
  // shared-memory files with the database's mode: it holds token hashes and
  // jobs' environments, so it is made 0600 first (an empty file is an empty
  // database).
  if (const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600); fd >= 0) ::close(fd);
  Result<std::unique_ptr<Connection>> db = OpenWriter(path, options);
  if (!db.ok()) return db.status().WithContext(fmt::format("opening the store {}", path));
  return std::unique_ptr<Store>(
      std::make_unique<SqliteStore>(std::move(db).value(), options.busy_timeout_ms));
}

}  // namespace shoal::state
