// The controller's state on PostgreSQL, and the lead among controllers that
// share it (docs/deploy.md, "A standby controller").
//
// Any number of `shoal server`s may point at one database. One leads: it holds
// a session-level advisory lock on its write connection, and every commit
// goes through that connection, so a commit can only succeed while its
// session lives, and while it lives no other controller holds the lock.
// The others stand by, asking for the lock every `standby_poll`, and take
// over when the leader's session ends: at once when its process dies (the
// server sees the connection close), or after `session_timeout` when it
// stops talking (a frozen host, a cut network).
//
// The leader checks its session every `ping_interval` and gives up the
// lead (`on_lost`) when an answer takes longer than `ping_timeout` or the
// session is gone. `ping_interval + ping_timeout` is less than
// `session_timeout`, so a leader that lost touch stops acting before the
// server lets a standby take the lock.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/time.h"
#include "state/store.h"

namespace shoal::state {

struct PostgresOptions {
  // A libpq connection string or URI ("postgresql://shoal@db1/shoal",
  // "host=/run/postgresql dbname=shoal"); a password belongs in ~/.pgpass or
  // $PGPASSFILE, not here.
  std::string url;
  // Stand by while another controller leads; false: fail at once instead.
  bool wait_for_lead = true;
  Duration standby_poll = std::chrono::milliseconds(500);
  Duration ping_interval = std::chrono::seconds(1);
  Duration ping_timeout = std::chrono::seconds(2);
  // The server ends the lead's session when it has been silent this long
  // (PostgreSQL's idle_session_timeout, set on that session only).
  Duration session_timeout = std::chrono::seconds(5);
  // Told what the store is waiting for (standing by, reconnecting); may be empty.
  std::function<void(std::string_view)> log{};
  // Called once, from the store's own thread, when this controller has lost
  // the lead; every later Commit fails. Empty: print why and exit(3) at once,
  // which is what a controller must do (nothing it does after is safe).
  std::function<void(const Status&)> on_lost{};
};

// Connects, brings the schema up to date (numbered migrations, as SQLite's),
// waits for the lead unless told not to, and returns the store. A database
// whose encoding is not UTF8, or whose schema is newer than this build knows,
// is kFailedPrecondition; a server that cannot be reached is kUnavailable.
Result<std::unique_ptr<Store>> OpenPostgresStore(const PostgresOptions& options);

}  // namespace shoal::state
