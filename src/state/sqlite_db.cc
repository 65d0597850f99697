#include "state/sqlite_db.h"

#include <fmt/format.h>

namespace shoal::state {

Status SqliteStatus(sqlite3* db, int rc, std::string_view what) {
  const int primary = rc & 0xff;
  const StatusCode code = primary == SQLITE_BUSY || primary == SQLITE_LOCKED
                              ? StatusCode::kUnavailable
                              : StatusCode::kInternal;
  // The connection's message is more precise ("no such table: x"), but only
  // when the failure was the connection's last call; SQLite's text for the
  // code is always right.
  const char* message =
      db != nullptr && sqlite3_errcode(db) == rc ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return Status(code, fmt::format("{}: {}", what, message));
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), bind_rc_(other.bind_rc_) {
  other.stmt_ = nullptr;
}

Statement::~Statement() {
  if (stmt_ != nullptr) Reset();
}

void Statement::BindInt(int index, int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Statement::BindDouble(int index, double value) {
  const int rc = sqlite3_bind_double(stmt_, index, value);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Statement::BindText(int index, std::string_view text) {
  const int rc =
      sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

Result<bool> Statement::Step() {
  if (bind_rc_ != SQLITE_OK) return SqliteStatus(db_, bind_rc_, "binding a parameter");
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteStatus(db_, rc, sqlite3_sql(stmt_));
}

Status Statement::Run() {
  Result<bool> step = Step();
  Reset();
  if (!step.ok()) return step.status();
  return Status::Ok();
}

void Statement::Reset() {
  // sqlite3_reset repeats the last step's error, which Step has reported already.
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_rc_ = SQLITE_OK;
}

std::string_view Statement::Text(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (text == nullptr) return {};
  return std::string_view(text, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& path, Mode mode,
                                                     int busy_timeout_ms) {
  // NOMUTEX: each connection is used by one thread at a time (see the header),
  // so SQLite's own per-connection mutex would only cost time.
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  flags |=
      mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    Status status = SqliteStatus(db, rc, "cannot open the database");
    sqlite3_close_v2(db);
    return status;
  }
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return std::make_unique<Connection>(db, path);
}

Connection::~Connection() {
  for (auto& [sql, stmt] : cache_)
    sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Status Connection::Exec(const std::string& sql) {
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(db_, rc, sql);
  return Status::Ok();
}

Result<Statement> Connection::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return SqliteStatus(db_, rc, sql);
    it = cache_.emplace(sql, stmt).first;
  }
  return Statement(db_, it->second);
}

Result<int64_t> Connection::QueryInt(const std::string& sql) {
  SHOAL_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  SHOAL_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Internal(fmt::format("{}: no result", sql));
  return stmt.Int(0);
}

Result<std::string> Connection::QueryText(const std::string& sql) {
  SHOAL_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  SHOAL_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Internal(fmt::format("{}: no result", sql));
  return std::string(stmt.Text(0));
}

}  // namespace shoal::state
