#include "state/schema.h"

#include <fmt/format.h>

#include "core/check.h"

namespace shoal::state {

namespace {

// Records are the JSON forms of src/api/json.h in `record`, beside copies of
// the fields that queries filter or sort on. `finished` is IsTerminal(state):
// the partial indexes keep the few active jobs apart from the many finished
// ones, so Load reads the active jobs without scanning history. Times are Unix
// milliseconds; an end time of 0 means none. Tokens and usage are flat rows of
// fixed fields with no JSON form, so they are plain columns.
constexpr std::string_view kSchema1 = R"sql(
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value ANY NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('next_job_id', 1);

CREATE TABLE jobs (
  id INTEGER PRIMARY KEY,
  state TEXT NOT NULL,
  finished INTEGER NOT NULL,
  user_name TEXT NOT NULL,
  account_name TEXT NOT NULL,
  end_ms INTEGER NOT NULL,
  record TEXT NOT NULL
) STRICT;
CREATE INDEX jobs_active ON jobs (id) WHERE finished = 0;
CREATE INDEX jobs_finished_end ON jobs (end_ms) WHERE finished = 1;
CREATE INDEX jobs_finished_user ON jobs (user_name, end_ms) WHERE finished = 1;
CREATE INDEX jobs_finished_account ON jobs (account_name, end_ms) WHERE finished = 1;

CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  record TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE partitions (
  name TEXT PRIMARY KEY,
  record TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE accounts (
  name TEXT PRIMARY KEY,
  record TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE tokens (
  id TEXT PRIMARY KEY,
  secret_hash TEXT NOT NULL,
  user_name TEXT NOT NULL,
  role TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  revoked INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE usage (
  account TEXT PRIMARY KEY,
  usage_gpu_s REAL NOT NULL,
  updated_ms INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
)sql";

// Version 2 changes no table: job records may carry `efficiency`, `idle` and
// `idle_since`, and partition records `idle_util_pct`, `idle_minutes` and
// `idle_action`. Records without them read as before; the version tells an
// older shoal, whose strict parser would refuse such records one by one,
// to refuse the database as a whole with "use a newer shoal".
constexpr std::string_view kSchema2 = R"sql(
INSERT OR REPLACE INTO meta (key, value) VALUES ('record_format', 2);
)sql";

// Version 3 changes no table either: node records may carry `acceptance`,
// partition records `require_acceptance`, job specs `acceptance_node`.
constexpr std::string_view kSchema3 = R"sql(
INSERT OR REPLACE INTO meta (key, value) VALUES ('record_format', 3);
)sql";

// Version 4: tokens may expire (0: never) and a join token may name the only
// node it may join as; node records may carry `credential`, the fingerprint
// of the certificate the node joined with.
constexpr std::string_view kSchema4 = R"sql(
ALTER TABLE tokens ADD COLUMN expires_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN node TEXT NOT NULL DEFAULT '';
INSERT OR REPLACE INTO meta (key, value) VALUES ('record_format', 4);
)sql";

// Version 5: QoS and admin reservations, as JSON records like accounts'; job
// specs may name a reservation.
constexpr std::string_view kSchema5 = R"sql(
CREATE TABLE qos (
  name TEXT PRIMARY KEY,
  record TEXT NOT NULL
) STRICT, WITHOUT ROWID;
CREATE TABLE reservations (
  name TEXT PRIMARY KEY,
  record TEXT NOT NULL
) STRICT, WITHOUT ROWID;
INSERT OR REPLACE INTO meta (key, value) VALUES ('record_format', 5);
)sql";

// Version 6: what jobs' earlier runs reported of their progress on each GPU
// model (learned speeds); job records' efficiency may carry
// `progress_rate` and `progress_samples`.
constexpr std::string_view kSchema6 = R"sql(
CREATE TABLE speeds (
  user_name TEXT NOT NULL,
  job_name TEXT NOT NULL,
  model TEXT NOT NULL,
  rate REAL NOT NULL,
  runs INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (user_name, job_name, model)
) STRICT, WITHOUT ROWID;
INSERT OR REPLACE INTO meta (key, value) VALUES ('record_format', 6);
)sql";

constexpr Migration kMigrations[] = {
    {1, "jobs, nodes, partitions, accounts, tokens, usage and meta", kSchema1},
    {2, "job efficiency and idle flags, partition idle options (in the JSON records)", kSchema2},
    {3,
     "node acceptance results, partition require_acceptance, acceptance jobs (in the JSON records)",
     kSchema3},
    {4, "token expiry and join tokens' node names; node credentials (in the JSON records)",
     kSchema4},
    {5, "QoS and reservations; job specs' reservation (in the JSON records)", kSchema5},
    {6, "learned speeds; job progress (in the JSON records)", kSchema6},
};

// Applies the migration after the database's current version, if there is one.
// Returns whether it applied one.
Result<bool> ApplyNext(Connection& db, std::span<const Migration> migrations) {
  SHOAL_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  auto body = [&]() -> Result<bool> {
    SHOAL_ASSIGN_OR_RETURN(int64_t version, db.QueryInt("PRAGMA user_version"));
    const int64_t known = migrations.empty() ? 0 : migrations.back().version;
    if (version > known) {
      return FailedPrecondition(
          fmt::format("the database has schema version {}, but this build of shoal knows versions "
                      "up to {}: use a newer shoal",
                      version, known));
    }
    if (version < 0)
      return Internal(fmt::format("the database has a negative schema version {}", version));
    if (version == known) return false;
    const Migration& m = migrations[static_cast<size_t>(version)];
    Status applied = db.Exec(std::string(m.sql));
    if (applied.ok()) applied = db.Exec(fmt::format("PRAGMA user_version = {}", m.version));
    if (!applied.ok()) {
      return applied.WithContext(fmt::format("migration {} ({})", m.version, m.description));
    }
    return true;
  };
  Result<bool> result = body();
  Status end = result.ok() ? db.Exec("COMMIT") : Status::Ok();
  if (!result.ok() || !end.ok()) {
    if (db.InTransaction()) (void)db.Exec("ROLLBACK");
    return result.ok() ? end : result.status();
  }
  return result;
}

}  // namespace

std::span<const Migration> Migrations() {
  return kMigrations;
}

int SchemaVersion() {
  return Migrations().back().version;
}

Result<int> ApplyMigrations(Connection& db, std::span<const Migration> migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    SHOAL_CHECK(migrations[i].version == static_cast<int>(i) + 1,
                "migrations are numbered 1, 2, 3, ... in order");
  }
  int applied = 0;
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(bool more, ApplyNext(db, migrations));
    if (!more) return applied;
    ++applied;
  }
}

}  // namespace shoal::state
