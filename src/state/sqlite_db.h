// Thin owners of SQLite handles, internal to src/state: a Connection with a
// cache of prepared statements, and Statement, a borrowed handle to one of
// them.
//
// Ownership: a Connection owns its sqlite3 handle and every statement it has
// prepared; a Statement only borrows one, and resets it when it goes out of
// scope, so a statement left half-stepped by an early return never keeps a
// read transaction (and with it an old WAL snapshot) open.
//
// Thread safety: none. A Connection and its statements are used by one thread
// at a time; the store guards each connection with a mutex or lends it to one
// caller at a time. One cached statement may have one Statement at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/status.h"

namespace shoal::state {

// A Status for an SQLite result code: busy and locked are kUnavailable (try
// again), everything else kInternal. The message is "what: SQLite's message".
Status SqliteStatus(sqlite3* db, int rc, std::string_view what);

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  // Parameters are numbered from 1. A failed bind is reported by the next Step.
  void BindInt(int index, int64_t value);
  void BindDouble(int index, double value);
  // SQLite does not copy the text: it must live until the statement is reset.
  void BindText(int index, std::string_view text);

  // Steps once: true when a row is ready, false when the statement is done.
  Result<bool> Step();
  // Runs a statement that returns no rows, then resets it for the next use.
  Status Run();
  // Clears the bindings and rewinds the statement.
  void Reset();

  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  double Double(int column) const { return sqlite3_column_double(stmt_, column); }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  // Valid until the next Step or Reset.
  std::string_view Text(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int bind_rc_ = SQLITE_OK;
};

class Connection {
 public:
  enum class Mode { kReadWrite, kReadOnly };

  // Opens (and in kReadWrite mode creates) the database at `path`.
  static Result<std::unique_ptr<Connection>> Open(const std::string& path, Mode mode,
                                                  int busy_timeout_ms);
  // Takes ownership of an open handle; Open is the usual way to get one.
  Connection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  // Finalizes the cached statements and closes the handle.
  ~Connection();

  // Runs SQL that returns no rows; it may hold several statements (DDL).
  Status Exec(const std::string& sql);
  // A statement prepared on first use and kept for the connection's life.
  Result<Statement> Prepare(const std::string& sql);
  // The first column of the first row of a query, e.g. "PRAGMA user_version".
  Result<int64_t> QueryInt(const std::string& sql);
  Result<std::string> QueryText(const std::string& sql);

  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }
  const std::string& path() const { return path_; }

 private:
  sqlite3* db_;
  std::string path_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

}  // namespace shoal::state
