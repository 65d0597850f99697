// How the stores write and read records, internal to src/state.
//
// Records are the JSON forms of src/api/json.h. Every record of a batch is
// encoded and parsed back before anything is written, so a commit can never
// leave a record that would stop the controller from loading its state. Both
// stores check batches here, so they accept and refuse the same batches.
// Everything here is a pure function, safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/job.h"
#include "core/status.h"
#include "state/store.h"

namespace shoal::state {

// A batch's records as JSON text, in the order of the batch's lists.
struct EncodedBatch {
  std::vector<std::string> jobs;
  std::vector<std::string> nodes;
  std::vector<std::string> partitions;
  std::vector<std::string> accounts;
  std::vector<std::string> qos;
  std::vector<std::string> reservations;
};

// Encodes every record and checks it reads back, and that keys are usable (a
// job id of 1..2^63-1, names and token ids not empty, finite usage). The error
// names the first record at fault.
Result<EncodedBatch> EncodeBatch(const Batch& batch);

// Reads a stored record. A record that does not parse, or whose key is not the
// one it is stored under, is kInternal naming the table and key: the database
// was damaged or written by something else.
Result<Job> DecodeJob(std::string_view text, uint64_t key);
Result<Node> DecodeNode(std::string_view text, std::string_view key);
Result<Partition> DecodePartition(std::string_view text, std::string_view key);
Result<Account> DecodeAccount(std::string_view text, std::string_view key);
Result<Qos> DecodeQos(std::string_view text, std::string_view key);
Result<Reservation> DecodeReservation(std::string_view text, std::string_view key);

// The error for a damaged record outside the JSON ones (e.g. a state column).
Status CorruptRecord(std::string_view table, std::string_view key, std::string_view detail);

// The number of jobs a history query returns at most, or kInvalidArgument for
// a query that cannot be answered (see HistoryQuery).
Result<int> HistoryLimit(const HistoryQuery& query);
// Whether a job belongs in the answer to `query` (the limit aside).
bool MatchesHistory(const Job& job, const HistoryQuery& query);

// Unix milliseconds, the unit of the store's time columns.
inline int64_t ToMillis(Time t) {
  return t.time_since_epoch().count();
}
inline Time FromMillis(int64_t ms) {
  return Time(Duration(ms));
}

}  // namespace shoal::state
