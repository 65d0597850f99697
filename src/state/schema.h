// The SQLite store's schema as an ordered list of numbered migrations,
// internal to src/state.
//
// The database's `PRAGMA user_version` is the number of the last migration
// applied. At open every later migration runs, each in its own transaction
// together with the version bump, so a crash between two migrations leaves a
// database that the next open finishes upgrading. A released migration is
// never edited: a change to the schema is a new migration at the end.
#pragma once

#include <span>
#include <string_view>

#include "core/status.h"
#include "state/sqlite_db.h"

namespace shoal::state {

struct Migration {
  int version = 0;               // 1, 2, 3, ... in order
  std::string_view description;  // for error messages
  std::string_view sql;          // one or more statements
};

// The migrations this build knows, oldest first.
std::span<const Migration> Migrations();
// The version of the last of them: the schema this build writes.
int SchemaVersion();

// Applies to `db` the migrations of `migrations` it does not have yet and
// returns how many it applied. Each runs in a BEGIN IMMEDIATE transaction that
// reads the version again, so two processes opening one database at once never
// both apply a migration. A database whose version is newer than the last
// migration is kFailedPrecondition: this build would misread it.
Result<int> ApplyMigrations(Connection& db, std::span<const Migration> migrations);

}  // namespace shoal::state
