// Durable state of the controller (DESIGN.md, "Protocols and state").
//
// The control loop is the only writer: it groups the changes of many commands
// into one Batch and commits it in one transaction before acknowledging any
// of them (group commit: durability without a transaction per request). On
// start the controller loads everything it needs to go on where it stopped.
//
// Thread safety: Commit and Load are called by one thread (the control loop);
// History and FindJob may be called from any thread at the same time as a
// commit (SQLite in WAL mode lets readers run beside the writer).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal::state {

// An API token. Only a hash of the secret is stored; `id` is the public part
// that names the token in listings and revocations.
struct TokenRecord {
  std::string id;
  std::string secret_hash;  // hex SHA-256 of the secret
  std::string user;
  std::string role;  // "admin", "user", "node" or "join"
  Time created{};
  bool revoked = false;  // also set once a join token has been used
  Time expires = kTimeNever;
  // A join token: the only node name it may join as (empty: any name that
  // no joined node holds).
  std::string node{};
};

// Decayed GPU-seconds per account, for fair share.
struct AccountUsage {
  std::string account;
  double usage_gpu_s = 0;
  Time updated{};
};

// What a job's earlier runs reported of their progress on one GPU model
// (learned speeds, docs/scheduling.md): keyed by the job's user, its name
// and the model; the rate in whatever units a second the job reports.
struct LearnedSpeed {
  std::string user;
  std::string name;
  std::string model;
  double rate = 0;  // > 0
  int runs = 0;     // the runs it was learned from, >= 1
  Time updated{};
  friend bool operator==(const LearnedSpeed&, const LearnedSpeed&) = default;
};

// Everything one transaction writes. Jobs and nodes are written whole
// (insert or replace by id / name).
//
// The deletions of a batch are applied before its writes, so a batch that
// both deletes and writes one name leaves the written record. Every record is
// checked to read back before anything is written: a batch with one record
// that could not be loaded again (a job id of 0, a node without a name, text
// that is not UTF-8, ...) is refused whole with kInvalidArgument.
struct Batch {
  std::vector<Job> jobs;
  std::vector<Node> nodes;
  std::vector<std::string> deleted_nodes;
  std::vector<TokenRecord> tokens;
  std::vector<Partition> partitions;
  std::vector<std::string> deleted_partitions;
  std::vector<Account> accounts;
  std::vector<std::string> deleted_accounts;
  std::vector<Qos> qos;
  std::vector<std::string> deleted_qos;
  std::vector<Reservation> reservations;
  std::vector<std::string> deleted_reservations;
  std::vector<AccountUsage> usage;
  std::vector<LearnedSpeed> speeds;  // insert or replace by (user, name, model)
  // (user, job name): every model's learned speed of that job is forgotten.
  std::vector<std::pair<std::string, std::string>> deleted_speeds;
  std::optional<uint64_t> next_job_id;

  bool empty() const;
};

// What the controller needs to start again. Every list is ordered by its key
// (job id; node, partition, account, QoS and reservation name; token id;
// usage by account; speeds by user, name and model).
struct Loaded {
  std::vector<Job> active_jobs;  // pending and running
  // States of finished jobs newer than the load horizon, for dependencies.
  std::vector<std::pair<JobId, JobState>> finished;
  std::vector<Node> nodes;
  std::vector<TokenRecord> tokens;
  std::vector<Partition> partitions;
  std::vector<Account> accounts;
  std::vector<Qos> qos;
  std::vector<Reservation> reservations;
  std::vector<AccountUsage> usage;
  std::vector<LearnedSpeed> speeds;
  // The larger of the last committed next_job_id and one more than the
  // largest stored job id, so an id is never handed out twice.
  uint64_t next_job_id = 1;
};

// History answers at most this many jobs; a larger limit is cut to it.
inline constexpr int kMaxHistoryLimit = 10000;

// A limit below 1, or a state that is not a finished one, is kInvalidArgument.
struct HistoryQuery {
  std::string user;              // empty: every user
  std::string account;           // empty: every account
  std::vector<JobState> states;  // empty: every finished state
  Time since{};                  // end time at or after
  Time until = kTimeNever;       // end time before
  uint64_t after_id = 0;         // only jobs with a larger id (a listing's cursor)
  bool by_id = false;            // in ascending id order rather than newest first
  int limit = 100;               // at most 10,000
};

class Store {
 public:
  virtual ~Store() = default;

  // Writes the batch atomically; when it returns OK the batch survives a crash
  // of the process (and, with synchronous=FULL, of the machine).
  virtual Status Commit(const Batch& batch) = 0;
  // Reads the state the last committed batch left. `finished_horizon`: finished
  // jobs that ended after it (or at it) are listed in Loaded::finished.
  virtual Result<Loaded> Load(Time finished_horizon) = 0;
  // Finished jobs, newest end first (ties: the larger id first).
  virtual Result<std::vector<Job>> History(const HistoryQuery& query) = 0;
  // One job, active or finished.
  virtual Result<std::optional<Job>> FindJob(JobId id) = 0;
};

struct SqliteOptions {
  // FULL: a committed batch survives power loss; NORMAL: only a process crash.
  bool synchronous_full = true;
  // How long a statement waits for a lock another connection holds before it
  // fails with kUnavailable.
  int busy_timeout_ms = 5000;
};

// The embedded store: one SQLite database, `shoal.db`, in WAL mode under
// `state_dir` (created if missing), with the schema brought up to date by
// numbered migrations. A directory that cannot be created or written, a file
// that is not an SQLite database, or a schema newer than this build knows
// (kFailedPrecondition) is an error that names the path.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& state_dir,
                                               const SqliteOptions& options = {});

// A store in memory, for tests and simulations; nothing survives the process.
std::unique_ptr<Store> NewMemoryStore();

}  // namespace shoal::state
