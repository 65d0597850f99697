#include "state/postgres_store.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/log.h"
#include "state/records.h"

namespace shoal::state {

namespace {

// The advisory lock the leading controller holds ("shoal" in ASCII), and the
// one migrations run under.
constexpr int64_t kLeadLock = 0x73686f616c;
constexpr int64_t kMigrationLock = kLeadLock + 1;
constexpr size_t kMaxIdleReaders = 4;

// libpq, loaded with dlopen the first time a store opens (see
// CMakeLists.txt): every other command of the one `shoal` binary starts
// without it.
// clang-format off
#define SHOAL_LIBPQ_FUNCTIONS(X)                                                        \
  X(PQfinish) X(PQclear) X(PQresultErrorField) X(PQresultErrorMessage) X(PQerrorMessage) \
  X(PQstatus) X(PQexecParams) X(PQexec) X(PQresultStatus) X(PQgetvalue) X(PQgetlength)   \
  X(PQntuples) X(PQtransactionStatus) X(PQconnectdbParams) X(PQparameterStatus)          \
  X(PQsendQuery) X(PQisBusy) X(PQsocket) X(PQconsumeInput) X(PQgetResult)
// clang-format on

struct Libpq {
#define SHOAL_LIBPQ_FIELD(name) decltype(&::name) name = nullptr;
  SHOAL_LIBPQ_FUNCTIONS(SHOAL_LIBPQ_FIELD)
#undef SHOAL_LIBPQ_FIELD
};

// Set once, inside LoadLibpq's static initialisation, which every store's
// opening passes through first (so every thread that uses it sees it set).
const Libpq* pq = nullptr;

Status LoadLibpq() {
  static const Result<const Libpq*> loaded = []() -> Result<const Libpq*> {
    void* lib = ::dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      return FailedPrecondition(fmt::format(
          "cannot load libpq.so.5, PostgreSQL's client library (apt-get install libpq5): {}",
          ::dlerror()));
    }
    static Libpq functions;
#define SHOAL_LIBPQ_LOAD(name)                                               \
  functions.name = reinterpret_cast<decltype(&::name)>(::dlsym(lib, #name)); \
  if (functions.name == nullptr) return FailedPrecondition("libpq.so.5 lacks " #name);
    SHOAL_LIBPQ_FUNCTIONS(SHOAL_LIBPQ_LOAD)
#undef SHOAL_LIBPQ_LOAD
    pq = &functions;
    return &functions;
  }();
  return loaded.status();
}

struct ConnCloser {
  void operator()(PGconn* c) const { pq->PQfinish(c); }
};
using Conn = std::unique_ptr<PGconn, ConnCloser>;
struct ResultClearer {
  void operator()(PGresult* r) const { pq->PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultClearer>;

std::string Chomp(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

// A failed statement: kUnavailable when the connection is gone (class 08,
// or the server shutting it: 57P01..57P03), else kInternal.
Status PgError(PGconn* conn, const PGresult* r, std::string_view what) {
  const char* state = r != nullptr ? pq->PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string message =
      Chomp(r != nullptr ? pq->PQresultErrorMessage(r) : pq->PQerrorMessage(conn));
  if (message.empty()) message = Chomp(pq->PQerrorMessage(conn));
  const bool gone = pq->PQstatus(conn) != CONNECTION_OK ||
                    (state != nullptr &&
                     (std::strncmp(state, "08", 2) == 0 || std::strncmp(state, "57P0", 4) == 0));
  return Status(gone ? StatusCode::kUnavailable : StatusCode::kInternal,
                fmt::format("{}: {}", what, message));
}

// One statement with text parameters (none: the simple protocol, which takes
// several statements at once).
Result<PgResult> Run(PGconn* conn, const std::string& sql,
                     const std::vector<std::string>& params = {}) {
  PgResult r;
  if (params.empty()) {
    r.reset(pq->PQexec(conn, sql.c_str()));
  } else {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const std::string& p : params)
      values.push_back(p.c_str());
    r.reset(pq->PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr,
                             values.data(), nullptr, nullptr, 0));
  }
  const ExecStatusType st = r ? pq->PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    std::string_view first = sql;
    first = first.substr(0, std::min(first.find('\n'), size_t{60}));
    return PgError(conn, r.get(), first);
  }
  return r;
}

std::string_view Text(const PGresult* r, int row, int col) {
  return {pq->PQgetvalue(r, row, col), static_cast<size_t>(pq->PQgetlength(r, row, col))};
}
int64_t Int(const PGresult* r, int row, int col) {
  std::string_view s = Text(r, row, col);
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}
bool Bool(const PGresult* r, int row, int col) {
  return Text(r, row, col) == "t";
}

// Array literals for unnest(): every element quoted, so any text goes.
class ArrayLiteral {
 public:
  void Add(std::string_view text) {
    Open();
    out_ += '"';
    for (char c : text) {
      if (c == '"' || c == '\\') out_ += '\\';
      out_ += c;
    }
    out_ += '"';
  }
  void Add(int64_t v) {
    Open();
    out_ += std::to_string(v);
  }
  void Add(bool v) {
    Open();
    out_ += v ? 't' : 'f';
  }
  void Add(double v) {
    Open();
    out_ += fmt::format("{:.17g}", v);
  }
  std::string Take() { return std::move(out_) + '}'; }

 private:
  void Open() { out_ += out_.empty() ? '{' : ','; }
  std::string out_;
};

std::string Arr(ArrayLiteral& a) {
  std::string s = a.Take();
  return s == "}" ? "{}" : s;
}

// The indexes of `items` whose key is not repeated later: a batch may name a
// record twice, and the last one wins (an upsert may touch a row only once).
template <typename T, typename KeyOf>
std::vector<size_t> LastOfEach(const std::vector<T>& items, KeyOf key_of) {
  std::unordered_map<std::string, size_t> last;
  for (size_t i = 0; i < items.size(); ++i)
    last[key_of(items[i])] = i;
  std::vector<size_t> keep;
  keep.reserve(last.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (last[key_of(items[i])] == i) keep.push_back(i);
  }
  return keep;
}

// The schema, in its own PostgreSQL schema `shoal` (every connection's
// search_path). Version 1 holds what SQLite's version 5 does.
constexpr std::string_view kPgSchema1 = R"sql(
CREATE TABLE meta (key text PRIMARY KEY, value bigint NOT NULL);
INSERT INTO meta (key, value) VALUES ('next_job_id', 1), ('record_format', 5);
CREATE TABLE jobs (
  id bigint PRIMARY KEY,
  state text NOT NULL,
  finished boolean NOT NULL,
  user_name text NOT NULL,
  account_name text NOT NULL,
  end_ms bigint NOT NULL,
  record text NOT NULL
);
CREATE INDEX jobs_active ON jobs (id) WHERE NOT finished;
CREATE INDEX jobs_finished_end ON jobs (end_ms) WHERE finished;
CREATE INDEX jobs_finished_user ON jobs (user_name, end_ms) WHERE finished;
CREATE INDEX jobs_finished_account ON jobs (account_name, end_ms) WHERE finished;
CREATE TABLE nodes (name text PRIMARY KEY, record text NOT NULL);
CREATE TABLE partitions (name text PRIMARY KEY, record text NOT NULL);
CREATE TABLE accounts (name text PRIMARY KEY, record text NOT NULL);
CREATE TABLE qos (name text PRIMARY KEY, record text NOT NULL);
CREATE TABLE reservations (name text PRIMARY KEY, record text NOT NULL);
CREATE TABLE tokens (
  id text PRIMARY KEY,
  secret_hash text NOT NULL,
  user_name text NOT NULL,
  role text NOT NULL,
  created_ms bigint NOT NULL,
  revoked boolean NOT NULL,
  expires_ms bigint NOT NULL,
  node text NOT NULL
);
CREATE TABLE usage (
  account text PRIMARY KEY,
  usage_gpu_s double precision NOT NULL,
  updated_ms bigint NOT NULL
);
)sql";

// 2: learned speeds (job records' efficiency may carry progress).
constexpr std::string_view kPgSchema2 = R"sql(
CREATE TABLE speeds (
  user_name text NOT NULL,
  job_name text NOT NULL,
  model text NOT NULL,
  rate double precision NOT NULL,
  runs integer NOT NULL,
  updated_ms bigint NOT NULL,
  PRIMARY KEY (user_name, job_name, model)
);
)sql";

constexpr std::string_view kPgMigrations[] = {kPgSchema1, kPgSchema2};

// Brings the schema up to date in one transaction (PostgreSQL's DDL is
// transactional), under a lock so that two controllers starting at once
// never both migrate.
Status Migrate(PGconn* conn) {
  SHOAL_RETURN_IF_ERROR(Run(conn, "BEGIN").status());
  auto body = [&]() -> Status {
    SHOAL_RETURN_IF_ERROR(
        Run(conn, "SELECT pg_advisory_xact_lock($1)", {std::to_string(kMigrationLock)}).status());
    SHOAL_RETURN_IF_ERROR(Run(conn,
                              "CREATE SCHEMA IF NOT EXISTS shoal;"
                              "CREATE TABLE IF NOT EXISTS shoal_schema (version integer NOT NULL)")
                              .status());
    SHOAL_ASSIGN_OR_RETURN(PgResult v, Run(conn, "SELECT version FROM shoal_schema"));
    int64_t version = 0;
    if (pq->PQntuples(v.get()) == 0) {
      SHOAL_RETURN_IF_ERROR(Run(conn, "INSERT INTO shoal_schema (version) VALUES (0)").status());
    } else {
      version = Int(v.get(), 0, 0);
    }
    const auto known = static_cast<int64_t>(std::size(kPgMigrations));
    if (version > known) {
      return FailedPrecondition(
          fmt::format("the database has schema version {}, but this build of shoal knows versions "
                      "up to {}: use a newer shoal",
                      version, known));
    }
    for (int64_t next = version; next < known; ++next) {
      SHOAL_RETURN_IF_ERROR(Run(conn, std::string(kPgMigrations[next]))
                                .status()
                                .WithContext(fmt::format("migration {}", next + 1)));
    }
    return Run(conn, "UPDATE shoal_schema SET version = $1", {std::to_string(known)}).status();
  };
  Status s = body();
  if (s.ok()) s = Run(conn, "COMMIT").status();
  if (!s.ok() && pq->PQtransactionStatus(conn) != PQTRANS_IDLE) (void)Run(conn, "ROLLBACK");
  return s;
}

std::string HostName() {
  char buf[256] = {};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// A connection whose statements see only Shoal's schema, with commits that
// wait for the disk whatever the database's default.
Result<Conn> Connect(const std::string& url) {
  const std::string app = fmt::format("shoal-server {} pid {}", HostName(), ::getpid());
  const char* keys[] = {"dbname",          "application_name",    "connect_timeout",  "options",
                        "keepalives_idle", "keepalives_interval", "keepalives_count", nullptr};
  const char* values[] = {
      url.c_str(), app.c_str(), "5", "-c search_path=shoal -c synchronous_commit=on",
      "2",         "1",         "2", nullptr};
  Conn conn(pq->PQconnectdbParams(keys, values, /*expand_dbname=*/1));
  if (!conn) return Unavailable("cannot connect to PostgreSQL: out of memory");
  if (pq->PQstatus(conn.get()) != CONNECTION_OK) {
    return Unavailable(
        fmt::format("cannot connect to PostgreSQL: {}", Chomp(pq->PQerrorMessage(conn.get()))));
  }
  const char* encoding = pq->PQparameterStatus(conn.get(), "server_encoding");
  if (encoding == nullptr || std::string_view(encoding) != "UTF8") {
    return FailedPrecondition(
        fmt::format("the PostgreSQL database's encoding is {}, not UTF8 (create it with "
                    "ENCODING 'UTF8')",
                    encoding != nullptr ? encoding : "unknown"));
  }
  return conn;
}

// A whole batch as one statement: a data-modifying CTE per table, so that
// a commit is one round trip and one implicit transaction. The CTEs run on
// one snapshot in no set order, so no row may be touched twice: a batch
// names a record at most once per table (the last wins), and a name both
// deleted and written is only written (deletions come first, so the write
// is what would be left).
struct BatchStatement {
  std::string sql;
  std::vector<std::string> params;
};

class BatchBuilder {
 public:
  std::string Param(std::string value) {
    out_.params.push_back(std::move(value));
    return fmt::format("${}", out_.params.size());
  }
  void Add(std::string cte) { ctes_.push_back(std::move(cte)); }
  BatchStatement Take() {
    out_.sql = "WITH ";
    for (size_t i = 0; i < ctes_.size(); ++i)
      out_.sql += fmt::format("{}w{} AS ({})", i == 0 ? "" : ", ", i, ctes_[i]);
    out_.sql += " SELECT 1";
    return std::move(out_);
  }

 private:
  std::vector<std::string> ctes_;
  BatchStatement out_;
};

template <typename T>
void AddNamed(BatchBuilder& b, const std::string& table, const std::vector<std::string>& deleted,
              const std::vector<T>& records, const std::vector<std::string>& texts) {
  const std::vector<size_t> keep = LastOfEach(records, [](const T& r) { return r.name; });
  std::unordered_set<std::string_view> written;
  for (size_t i : keep)
    written.insert(records[i].name);
  ArrayLiteral gone;
  bool any_gone = false;
  for (const std::string& name : deleted) {
    if (written.count(name) > 0) continue;
    gone.Add(std::string_view(name));
    any_gone = true;
  }
  if (any_gone) {
    b.Add(fmt::format("DELETE FROM {} WHERE name = ANY({}::text[])", table, b.Param(Arr(gone))));
  }
  if (keep.empty()) return;
  ArrayLiteral names, bodies;
  for (size_t i : keep) {
    names.Add(std::string_view(records[i].name));
    bodies.Add(std::string_view(texts[i]));
  }
  b.Add(
      fmt::format("INSERT INTO {} (name, record) SELECT * FROM unnest({}::text[], {}::text[]) "
                  "ON CONFLICT (name) DO UPDATE SET record = EXCLUDED.record",
                  table, b.Param(Arr(names)), b.Param(Arr(bodies))));
}

void AddJobs(BatchBuilder& b, const Batch& batch, const EncodedBatch& encoded) {
  if (batch.jobs.empty()) return;
  ArrayLiteral ids, states, finished, users, accounts, ends, records;
  for (size_t i :
       LastOfEach(batch.jobs, [](const Job& j) { return std::to_string(j.id.value()); })) {
    const Job& job = batch.jobs[i];
    ids.Add(static_cast<int64_t>(job.id.value()));
    states.Add(JobStateName(job.state));
    finished.Add(IsTerminal(job.state));
    users.Add(std::string_view(job.spec.user));
    accounts.Add(std::string_view(job.spec.account));
    ends.Add(ToMillis(job.end_time));
    records.Add(std::string_view(encoded.jobs[i]));
  }
  b.Add(fmt::format(
      "INSERT INTO jobs (id, state, finished, user_name, account_name, end_ms, record) "
      "SELECT * FROM unnest({}::bigint[], {}::text[], {}::boolean[], {}::text[], {}::text[], "
      "{}::bigint[], {}::text[]) ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, "
      "finished = EXCLUDED.finished, user_name = EXCLUDED.user_name, "
      "account_name = EXCLUDED.account_name, end_ms = EXCLUDED.end_ms, record = EXCLUDED.record",
      b.Param(Arr(ids)), b.Param(Arr(states)), b.Param(Arr(finished)), b.Param(Arr(users)),
      b.Param(Arr(accounts)), b.Param(Arr(ends)), b.Param(Arr(records))));
}

void AddTokens(BatchBuilder& b, const Batch& batch) {
  if (batch.tokens.empty()) return;
  ArrayLiteral ids, hashes, users, roles, created, revoked, expires, nodes;
  for (size_t i : LastOfEach(batch.tokens, [](const TokenRecord& t) { return t.id; })) {
    const TokenRecord& t = batch.tokens[i];
    ids.Add(std::string_view(t.id));
    hashes.Add(std::string_view(t.secret_hash));
    users.Add(std::string_view(t.user));
    roles.Add(std::string_view(t.role));
    created.Add(ToMillis(t.created));
    revoked.Add(t.revoked);
    expires.Add(t.expires == kTimeNever ? int64_t{0} : ToMillis(t.expires));
    nodes.Add(std::string_view(t.node));
  }
  b.Add(fmt::format(
      "INSERT INTO tokens (id, secret_hash, user_name, role, created_ms, revoked, expires_ms, "
      "node) SELECT * FROM unnest({}::text[], {}::text[], {}::text[], {}::text[], {}::bigint[], "
      "{}::boolean[], {}::bigint[], {}::text[]) ON CONFLICT (id) DO UPDATE SET "
      "secret_hash = EXCLUDED.secret_hash, user_name = EXCLUDED.user_name, role = EXCLUDED.role, "
      "created_ms = EXCLUDED.created_ms, revoked = EXCLUDED.revoked, "
      "expires_ms = EXCLUDED.expires_ms, node = EXCLUDED.node",
      b.Param(Arr(ids)), b.Param(Arr(hashes)), b.Param(Arr(users)), b.Param(Arr(roles)),
      b.Param(Arr(created)), b.Param(Arr(revoked)), b.Param(Arr(expires)), b.Param(Arr(nodes))));
}

void AddUsage(BatchBuilder& b, const Batch& batch) {
  if (batch.usage.empty()) return;
  ArrayLiteral accounts, usage, updated;
  for (size_t i : LastOfEach(batch.usage, [](const AccountUsage& u) { return u.account; })) {
    accounts.Add(std::string_view(batch.usage[i].account));
    usage.Add(batch.usage[i].usage_gpu_s);
    updated.Add(ToMillis(batch.usage[i].updated));
  }
  b.Add(fmt::format(
      "INSERT INTO usage (account, usage_gpu_s, updated_ms) SELECT * FROM unnest({}::text[], "
      "{}::double precision[], {}::bigint[]) ON CONFLICT (account) DO UPDATE SET "
      "usage_gpu_s = EXCLUDED.usage_gpu_s, updated_ms = EXCLUDED.updated_ms",
      b.Param(Arr(accounts)), b.Param(Arr(usage)), b.Param(Arr(updated))));
}

void AddSpeeds(BatchBuilder& b, const Batch& batch) {
  if (batch.speeds.empty() && batch.deleted_speeds.empty()) return;
  ArrayLiteral users, names, models, rates, runs, updated;
  // Names hold no NUL, so it separates the key's parts.
  for (size_t i : LastOfEach(batch.speeds, [](const LearnedSpeed& sp) {
         return sp.user + '\0' + sp.name + '\0' + sp.model;
       })) {
    const LearnedSpeed& sp = batch.speeds[i];
    users.Add(std::string_view(sp.user));
    names.Add(std::string_view(sp.name));
    models.Add(std::string_view(sp.model));
    rates.Add(sp.rate);
    runs.Add(int64_t{sp.runs});
    updated.Add(ToMillis(sp.updated));
  }
  const std::string written_users = b.Param(Arr(users)), written_names = b.Param(Arr(names)),
                    written_models = b.Param(Arr(models));
  if (!batch.deleted_speeds.empty()) {
    // A forgotten job's rows, but those the batch writes (no row may be
    // touched twice; the write is what would be left).
    ArrayLiteral gone_users, gone_names;
    for (const auto& [user, name] : batch.deleted_speeds) {
      gone_users.Add(std::string_view(user));
      gone_names.Add(std::string_view(name));
    }
    b.Add(fmt::format(
        "DELETE FROM speeds USING unnest({}::text[], {}::text[]) AS gone(user_name, job_name) "
        "WHERE speeds.user_name = gone.user_name AND speeds.job_name = gone.job_name AND "
        "(speeds.user_name, speeds.job_name, speeds.model) NOT IN (SELECT * FROM "
        "unnest({}::text[], "
        "{}::text[], {}::text[]))",
        b.Param(Arr(gone_users)), b.Param(Arr(gone_names)), written_users, written_names,
        written_models));
  }
  if (batch.speeds.empty()) return;
  b.Add(fmt::format(
      "INSERT INTO speeds (user_name, job_name, model, rate, runs, updated_ms) SELECT * FROM "
      "unnest({}::text[], {}::text[], {}::text[], {}::double precision[], {}::integer[], "
      "{}::bigint[]) ON CONFLICT (user_name, job_name, model) DO UPDATE SET rate = EXCLUDED.rate, "
      "runs = EXCLUDED.runs, updated_ms = EXCLUDED.updated_ms",
      written_users, written_names, written_models, b.Param(Arr(rates)), b.Param(Arr(runs)),
      b.Param(Arr(updated))));
}

BatchStatement BatchSql(const Batch& batch, const EncodedBatch& encoded) {
  BatchBuilder b;
  AddJobs(b, batch, encoded);
  AddNamed(b, "nodes", batch.deleted_nodes, batch.nodes, encoded.nodes);
  AddNamed(b, "partitions", batch.deleted_partitions, batch.partitions, encoded.partitions);
  AddNamed(b, "accounts", batch.deleted_accounts, batch.accounts, encoded.accounts);
  AddNamed(b, "qos", batch.deleted_qos, batch.qos, encoded.qos);
  AddNamed(b, "reservations", batch.deleted_reservations, batch.reservations, encoded.reservations);
  AddTokens(b, batch);
  AddUsage(b, batch);
  AddSpeeds(b, batch);
  if (batch.next_job_id) {
    b.Add(fmt::format("UPDATE meta SET value = {} WHERE key = 'next_job_id'",
                      b.Param(std::to_string(*batch.next_job_id))));
  }
  return b.Take();
}

class PostgresStore final : public Store {
 public:
  PostgresStore(PostgresOptions options, Conn writer)
      : options_(std::move(options)), writer_(std::move(writer)) {}
  ~PostgresStore() override {
    {
      std::lock_guard lock(watch_mu_);
      stopping_ = true;
    }
    watch_cv_.notify_all();
    if (watch_.joinable()) watch_.join();
  }

  Status Commit(const Batch& batch) override;
  Result<Loaded> Load(Time finished_horizon) override;
  Result<std::vector<Job>> History(const HistoryQuery& query) override;
  Result<std::optional<Job>> FindJob(JobId id) override;

  // Takes the lead (standing by while another holds it), then watches it.
  Status Lead();

 private:
  Status LoadInTransaction(Time finished_horizon, Loaded& loaded);
  Status Ping();
  void Watch();
  std::string Leader();

  // Reads go to a pool of connections beside the writer's.
  Result<Conn> LendReader();
  void ReturnReader(Conn conn);

  const PostgresOptions options_;
  std::mutex write_mu_;
  Conn writer_;        // guarded by write_mu_; holds the lead's lock
  bool lost_ = false;  // guarded by write_mu_
  std::mutex readers_mu_;
  std::vector<Conn> idle_readers_;  // guarded by readers_mu_
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool stopping_ = false;  // guarded by watch_mu_
  std::thread watch_;
};

Result<Conn> PostgresStore::LendReader() {
  {
    std::lock_guard lock(readers_mu_);
    if (!idle_readers_.empty()) {
      Conn c = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return c;
    }
  }
  return Connect(options_.url);
}

void PostgresStore::ReturnReader(Conn conn) {
  if (pq->PQstatus(conn.get()) != CONNECTION_OK ||
      pq->PQtransactionStatus(conn.get()) != PQTRANS_IDLE)
    return;
  std::lock_guard lock(readers_mu_);
  if (idle_readers_.size() < kMaxIdleReaders) idle_readers_.push_back(std::move(conn));
}

std::string PostgresStore::Leader() {
  Result<PgResult> r = Run(writer_.get(),
                           "SELECT a.application_name, coalesce(host(a.client_addr), 'local') "
                           "FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
                           "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
                           "AND ((l.classid::bigint << 32) | l.objid::bigint) = $1",
                           {std::to_string(kLeadLock)});
  if (!r.ok() || pq->PQntuples(r->get()) == 0) return "another shoal server";
  return fmt::format("{} (from {})", Text(r->get(), 0, 0), Text(r->get(), 0, 1));
}

Status PostgresStore::Lead() {
  bool told = false;
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(PgResult r, Run(writer_.get(), "SELECT pg_try_advisory_lock($1)",
                                           {std::to_string(kLeadLock)}));
    if (Bool(r.get(), 0, 0)) break;
    if (!options_.wait_for_lead) {
      return FailedPrecondition(fmt::format("{} leads on this database", Leader()));
    }
    if (!told && options_.log) options_.log(fmt::format("standing by: {} leads", Leader()));
    told = true;
    std::unique_lock lock(watch_mu_);
    if (watch_cv_.wait_for(lock, options_.standby_poll, [this] { return stopping_; }))
      return Unavailable("stopped while standing by");
  }
  // Silent longer than this, the session ends and the lock with it.
  const auto ms = [](Duration d) { return std::to_string(std::max<int64_t>(1, d.count())); };
  SHOAL_RETURN_IF_ERROR(
      Run(writer_.get(), fmt::format("SET idle_session_timeout = {0}; "
                                     "SET idle_in_transaction_session_timeout = {0}",
                                     ms(options_.session_timeout)))
          .status());
  if (told && options_.log) options_.log("took the lead");
  watch_ = std::thread([this] { Watch(); });
  return Status::Ok();
}

// One `SELECT 1` on the lead's session, answered within ping_timeout.
Status PostgresStore::Ping() {
  PGconn* c = writer_.get();
  if (pq->PQsendQuery(c, "SELECT 1") == 0) return PgError(c, nullptr, "ping");
  const auto deadline = std::chrono::steady_clock::now() + options_.ping_timeout;
  while (pq->PQisBusy(c) != 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd pfd{.fd = pq->PQsocket(c), .events = POLLIN, .revents = 0};
    const int n = left.count() > 0 ? ::poll(&pfd, 1, static_cast<int>(left.count())) : 0;
    if (n == 0) {
      return Unavailable(
          fmt::format("PostgreSQL did not answer within {} ms", options_.ping_timeout.count()));
    }
    if (n < 0 && errno != EINTR) return Unavailable("poll failed on the lead's session");
    if (pq->PQconsumeInput(c) == 0) return PgError(c, nullptr, "ping");
  }
  bool answered = false;
  Status failed = Status::Ok();
  while (PGresult* raw = pq->PQgetResult(c)) {
    PgResult r(raw);
    if (pq->PQresultStatus(raw) == PGRES_TUPLES_OK) {
      answered = true;
    } else if (failed.ok()) {
      failed = PgError(c, raw, "ping");
    }
  }
  if (!failed.ok()) return failed;
  return answered ? Status::Ok() : PgError(c, nullptr, "ping");
}

void PostgresStore::Watch() {
  for (;;) {
    {
      std::unique_lock lock(watch_mu_);
      if (watch_cv_.wait_for(lock, options_.ping_interval, [this] { return stopping_; })) return;
    }
    Status s = Status::Ok();
    {
      std::lock_guard lock(write_mu_);
      s = Ping();
      if (!s.ok()) lost_ = true;
    }
    if (s.ok()) continue;
    s = s.WithContext("this controller lost the lead on PostgreSQL");
    if (options_.on_lost) {
      options_.on_lost(s);
      return;
    }
    log::Error("store.lead_lost", {{"error", s.message()}, {"action", "exit; a standby may lead"}});
    std::_Exit(3);
  }
}

Status PostgresStore::Commit(const Batch& batch) {
  if (batch.empty()) return Status::Ok();
  SHOAL_ASSIGN_OR_RETURN(EncodedBatch encoded, EncodeBatch(batch));
  const BatchStatement statement = BatchSql(batch, encoded);
  std::lock_guard lock(write_mu_);
  if (lost_) return Unavailable("this controller lost the lead on PostgreSQL");
  return Run(writer_.get(), statement.sql, statement.params)
      .status()
      .WithContext("commit to PostgreSQL");
}

Result<Loaded> PostgresStore::Load(Time finished_horizon) {
  std::lock_guard lock(write_mu_);
  // One snapshot, so every list comes from the same commit.
  SHOAL_RETURN_IF_ERROR(
      Run(writer_.get(), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").status());
  Loaded loaded;
  Status s = LoadInTransaction(finished_horizon, loaded);
  (void)Run(writer_.get(), "ROLLBACK");
  if (!s.ok()) return s.WithContext("load from PostgreSQL");
  return loaded;
}

Status PostgresStore::LoadInTransaction(Time finished_horizon, Loaded& loaded) {
  PGconn* c = writer_.get();
  {
    SHOAL_ASSIGN_OR_RETURN(PgResult r,
                           Run(c, "SELECT id, record FROM jobs WHERE NOT finished ORDER BY id"));
    for (int i = 0; i < pq->PQntuples(r.get()); ++i) {
      SHOAL_ASSIGN_OR_RETURN(
          Job job, DecodeJob(Text(r.get(), i, 1), static_cast<uint64_t>(Int(r.get(), i, 0))));
      loaded.active_jobs.push_back(std::move(job));
    }
  }
  {
    SHOAL_ASSIGN_OR_RETURN(PgResult r,
                           Run(c, "SELECT id, state FROM jobs WHERE finished AND end_ms >= $1",
                               {std::to_string(ToMillis(finished_horizon))}));
    for (int i = 0; i < pq->PQntuples(r.get()); ++i) {
      const auto id = static_cast<uint64_t>(Int(r.get(), i, 0));
      Result<JobState> state = ParseJobState(Text(r.get(), i, 1));
      if (!state.ok()) return CorruptRecord("jobs", std::to_string(id), state.status().message());
      loaded.finished.emplace_back(JobId(id), *state);
    }
    std::sort(loaded.finished.begin(), loaded.finished.end());
  }
  // Keys in byte order, as the other stores list them, whatever the collation.
  auto read_named = [&](const std::string& table, auto decode, auto* out) -> Status {
    SHOAL_ASSIGN_OR_RETURN(
        PgResult r,
        Run(c, fmt::format("SELECT name, record FROM {} ORDER BY name COLLATE \"C\"", table)));
    for (int i = 0; i < pq->PQntuples(r.get()); ++i) {
      auto record = decode(Text(r.get(), i, 1), Text(r.get(), i, 0));
      if (!record.ok()) return record.status();
      out->push_back(std::move(record).value());
    }
    return Status::Ok();
  };
  SHOAL_RETURN_IF_ERROR(read_named("nodes", DecodeNode, &loaded.nodes));
  SHOAL_RETURN_IF_ERROR(read_named("partitions", DecodePartition, &loaded.partitions));
  SHOAL_RETURN_IF_ERROR(read_named("accounts", DecodeAccount, &loaded.accounts));
  SHOAL_RETURN_IF_ERROR(read_named("qos", DecodeQos, &loaded.qos));
  SHOAL_RETURN_IF_ERROR(read_named("reservations", DecodeReservation, &loaded.reservations));
  {
    SHOAL_ASSIGN_OR_RETURN(PgResult r,
                           Run(c,
                               "SELECT id, secret_hash, user_name, role, created_ms, revoked, "
                               "expires_ms, node FROM tokens ORDER BY id COLLATE \"C\""));
    for (int i = 0; i < pq->PQntuples(r.get()); ++i) {
      const PGresult* t = r.get();
      const int64_t expires = Int(t, i, 6);
      loaded.tokens.push_back(
          TokenRecord{.id = std::string(Text(t, i, 0)),
                      .secret_hash = std::string(Text(t, i, 1)),
                      .user = std::string(Text(t, i, 2)),
                      .role = std::string(Text(t, i, 3)),
                      .created = FromMillis(Int(t, i, 4)),
                      .revoked = Bool(t, i, 5),
                      .expires = expires == 0 ? kTimeNever : FromMillis(expires),
                      .node = std::string(Text(t, i, 7))});
    }
  }
  {
    SHOAL_ASSIGN_OR_RETURN(PgResult r, Run(c,
                                           "SELECT account, usage_gpu_s, updated_ms FROM usage "
                                           "ORDER BY account COLLATE \"C\""));
    for (int i = 0; i < pq->PQntuples(r.get()); ++i) {
      loaded.usage.push_back(
          AccountUsage{.account = std::string(Text(r.get(), i, 0)),
                       .usage_gpu_s = std::strtod(pq->PQgetvalue(r.get(), i, 1), nullptr),
                       .updated = FromMillis(Int(r.get(), i, 2))});
    }
  }
  {
    SHOAL_ASSIGN_OR_RETURN(PgResult r, Run(c,
                                           "SELECT user_name, job_name, model, rate, runs, "
                                           "updated_ms FROM speeds ORDER BY user_name COLLATE "
                                           "\"C\", job_name COLLATE \"C\", model COLLATE \"C\""));
    for (int i = 0; i < pq->PQntuples(r.get()); ++i) {
      loaded.speeds.push_back(
          LearnedSpeed{.user = std::string(Text(r.get(), i, 0)),
                       .name = std::string(Text(r.get(), i, 1)),
                       .model = std::string(Text(r.get(), i, 2)),
                       .rate = std::strtod(pq->PQgetvalue(r.get(), i, 3), nullptr),
                       .runs = static_cast<int>(Int(r.get(), i, 4)),
                       .updated = FromMillis(Int(r.get(), i, 5))});
    }
  }
  SHOAL_ASSIGN_OR_RETURN(PgResult r,
                         Run(c,
                             "SELECT (SELECT value FROM meta WHERE key = 'next_job_id'), "
                             "(SELECT coalesce(max(id), 0) FROM jobs)"));
  const int64_t next = Int(r.get(), 0, 0);
  const int64_t max_id = Int(r.get(), 0, 1);
  if (next < 1)
    return CorruptRecord("meta", "next_job_id", fmt::format("{} is not a job id", next));
  loaded.next_job_id = static_cast<uint64_t>(std::max(next, max_id + 1));
  return Status::Ok();
}

Result<std::vector<Job>> PostgresStore::History(const HistoryQuery& query) {
  SHOAL_ASSIGN_OR_RETURN(const int limit, HistoryLimit(query));
  std::vector<std::string> params = {std::to_string(ToMillis(query.since)),
                                     std::to_string(ToMillis(query.until))};
  std::string sql = "SELECT id, record FROM jobs WHERE finished AND end_ms >= $1 AND end_ms < $2";
  auto param = [&](std::string value) {
    params.push_back(std::move(value));
    return fmt::format("${}", params.size());
  };
  if (!query.user.empty()) sql += " AND user_name = " + param(query.user);
  if (!query.account.empty()) sql += " AND account_name = " + param(query.account);
  if (query.after_id > 0) {
    sql += " AND id > " + param(std::to_string(std::min<uint64_t>(query.after_id, INT64_MAX)));
  }
  if (!query.states.empty()) {
    ArrayLiteral states;
    for (JobState s : query.states)
      states.Add(JobStateName(s));
    sql += " AND state = ANY(" + param(Arr(states)) + "::text[])";
  }
  sql += query.by_id ? " ORDER BY id" : " ORDER BY end_ms DESC, id DESC";
  sql += " LIMIT " + param(std::to_string(limit));
  SHOAL_ASSIGN_OR_RETURN(Conn db, LendReader());
  Result<PgResult> r = Run(db.get(), sql, params);
  if (!r.ok()) return r.status().WithContext("history from PostgreSQL");
  std::vector<Job> jobs;
  for (int i = 0; i < pq->PQntuples(r->get()); ++i) {
    SHOAL_ASSIGN_OR_RETURN(
        Job job, DecodeJob(Text(r->get(), i, 1), static_cast<uint64_t>(Int(r->get(), i, 0))));
    jobs.push_back(std::move(job));
  }
  ReturnReader(std::move(db));
  return jobs;
}

Result<std::optional<Job>> PostgresStore::FindJob(JobId id) {
  if (id.value() == 0 || id.value() > static_cast<uint64_t>(INT64_MAX)) return std::optional<Job>();
  SHOAL_ASSIGN_OR_RETURN(Conn db, LendReader());
  Result<PgResult> r =
      Run(db.get(), "SELECT record FROM jobs WHERE id = $1", {std::to_string(id.value())});
  if (!r.ok()) return r.status().WithContext("find a job in PostgreSQL");
  std::optional<Job> found;
  if (pq->PQntuples(r->get()) > 0) {
    SHOAL_ASSIGN_OR_RETURN(Job job, DecodeJob(Text(r->get(), 0, 0), id.value()));
    found = std::move(job);
  }
  ReturnReader(std::move(db));
  return found;
}

}  // namespace

Result<std::unique_ptr<Store>> OpenPostgresStore(const PostgresOptions& options) {
  if (options.url.empty()) return InvalidArgument("no PostgreSQL connection string");
  if (options.ping_interval + options.ping_timeout >= options.session_timeout) {
    return InvalidArgument(
        "the lead's ping interval and timeout must add up to less than its session timeout");
  }
  SHOAL_RETURN_IF_ERROR(LoadLibpq());
  SHOAL_ASSIGN_OR_RETURN(Conn writer, Connect(options.url));
  SHOAL_RETURN_IF_ERROR(Migrate(writer.get()).WithContext("migrating the PostgreSQL schema"));
  auto store = std::make_unique<PostgresStore>(options, std::move(writer));
  SHOAL_RETURN_IF_ERROR(store->Lead());
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace shoal::state
