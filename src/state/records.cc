#include "state/records.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "api/json.h"

namespace shoal::state {

namespace {

using api::Json;

constexpr uint64_t kMaxJobId = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// Encodes one record with `to_json` and checks `from_json` accepts it.
// The api functions report errors as values, but nlohmann throws on misuse;
// the try blocks make sure nothing escapes the store whatever a record holds.
template <typename T, typename ToJson, typename FromJson>
Result<std::string> Encode(const T& record, std::string_view what, ToJson to_json,
                           FromJson from_json) {
  try {
    Json j = to_json(record);
    auto back = from_json(j);
    if (!back.ok())
      return InvalidArgument(fmt::format("{} cannot be stored: {}", what, back.status().message()));
    // Text that is not UTF-8 makes dump throw: such a record is refused.
    return j.dump();
  } catch (const Json::exception& e) {
    return InvalidArgument(fmt::format("{} cannot be stored: {}", what, e.what()));
  }
}

template <typename T, typename FromJson>
Result<T> Decode(std::string_view text, std::string_view table, std::string_view key,
                 FromJson from_json) {
  try {
    Result<Json> j = api::Parse(text);
    if (!j.ok()) return CorruptRecord(table, key, j.status().message());
    Result<T> record = from_json(*j);
    if (!record.ok()) return CorruptRecord(table, key, record.status().message());
    return record;
  } catch (const Json::exception& e) {
    return CorruptRecord(table, key, e.what());
  }
}

}  // namespace

Status CorruptRecord(std::string_view table, std::string_view key, std::string_view detail) {
  return Internal(fmt::format("the store's record {}/{} is corrupt: {}", table, key, detail));
}

Result<EncodedBatch> EncodeBatch(const Batch& batch) {
  EncodedBatch out;
  out.jobs.reserve(batch.jobs.size());
  for (const Job& job : batch.jobs) {
    const std::string what = fmt::format("job {}", job.id.value());
    if (job.id.value() == 0 || job.id.value() > kMaxJobId)
      return InvalidArgument(what + " has no valid id");
    SHOAL_ASSIGN_OR_RETURN(std::string text,
                           Encode(
                               job, what, [](const Job& r) { return api::ToJson(r); },
                               [](const Json& j) { return api::JobFromJson(j); }));
    out.jobs.push_back(std::move(text));
  }
  for (const Node& node : batch.nodes) {
    SHOAL_ASSIGN_OR_RETURN(std::string text,
                           Encode(
                               node, fmt::format("node '{}'", node.name),
                               [](const Node& r) { return api::ToJson(r); }, api::NodeFromJson));
    out.nodes.push_back(std::move(text));
  }
  for (const Partition& p : batch.partitions) {
    SHOAL_ASSIGN_OR_RETURN(std::string text, Encode(
                                                 p, fmt::format("partition '{}'", p.name),
                                                 [](const Partition& r) { return api::ToJson(r); },
                                                 api::PartitionFromJson));
    out.partitions.push_back(std::move(text));
  }
  for (const Account& a : batch.accounts) {
    SHOAL_ASSIGN_OR_RETURN(std::string text, Encode(
                                                 a, fmt::format("account '{}'", a.name),
                                                 [](const Account& r) { return api::ToJson(r); },
                                                 api::AccountFromJson));
    out.accounts.push_back(std::move(text));
  }
  for (const Qos& q : batch.qos) {
    SHOAL_ASSIGN_OR_RETURN(std::string text,
                           Encode(
                               q, fmt::format("QoS '{}'", q.name),
                               [](const Qos& r) { return api::ToJson(r); }, api::QosFromJson));
    out.qos.push_back(std::move(text));
  }
  for (const Reservation& r : batch.reservations) {
    SHOAL_ASSIGN_OR_RETURN(
        std::string text,
        Encode(
            r, fmt::format("reservation '{}'", r.name),
            [](const Reservation& x) { return api::ToJson(x); }, api::ReservationFromJson));
    out.reservations.push_back(std::move(text));
  }
  for (const TokenRecord& t : batch.tokens) {
    if (t.id.empty()) return InvalidArgument("a token cannot be stored without an id");
  }
  for (const AccountUsage& u : batch.usage) {
    if (u.account.empty()) return InvalidArgument("usage cannot be stored without an account");
    if (!std::isfinite(u.usage_gpu_s)) {
      return InvalidArgument(
          fmt::format("usage of account '{}' is not a finite number", u.account));
    }
  }
  for (const LearnedSpeed& sp : batch.speeds) {
    if (sp.user.empty() || sp.name.empty() || sp.model.empty())
      return InvalidArgument("a learned speed needs a user, a job name and a GPU model");
    if (!std::isfinite(sp.rate) || sp.rate <= 0 || sp.runs < 1) {
      return InvalidArgument(fmt::format(
          "learned speed of '{}' on {} needs a positive rate and a run", sp.name, sp.model));
    }
  }
  if (batch.next_job_id && (*batch.next_job_id == 0 || *batch.next_job_id > kMaxJobId)) {
    return InvalidArgument(fmt::format("next job id {} is out of range", *batch.next_job_id));
  }
  return out;
}

Result<Job> DecodeJob(std::string_view text, uint64_t key) {
  const std::string key_text = std::to_string(key);
  SHOAL_ASSIGN_OR_RETURN(Job job, Decode<Job>(text, "jobs", key_text,
                                              [](const Json& j) { return api::JobFromJson(j); }));
  if (job.id.value() != key)
    return CorruptRecord("jobs", key_text, fmt::format("it holds job {}", job.id.value()));
  return job;
}

Result<Node> DecodeNode(std::string_view text, std::string_view key) {
  SHOAL_ASSIGN_OR_RETURN(Node node, Decode<Node>(text, "nodes", key, api::NodeFromJson));
  if (node.name != key)
    return CorruptRecord("nodes", key, fmt::format("it holds node '{}'", node.name));
  return node;
}

Result<Partition> DecodePartition(std::string_view text, std::string_view key) {
  SHOAL_ASSIGN_OR_RETURN(Partition p,
                         Decode<Partition>(text, "partitions", key, api::PartitionFromJson));
  if (p.name != key)
    return CorruptRecord("partitions", key, fmt::format("it holds partition '{}'", p.name));
  return p;
}

Result<Account> DecodeAccount(std::string_view text, std::string_view key) {
  SHOAL_ASSIGN_OR_RETURN(Account a, Decode<Account>(text, "accounts", key, api::AccountFromJson));
  if (a.name != key)
    return CorruptRecord("accounts", key, fmt::format("it holds account '{}'", a.name));
  return a;
}

Result<Qos> DecodeQos(std::string_view text, std::string_view key) {
  SHOAL_ASSIGN_OR_RETURN(Qos q, Decode<Qos>(text, "qos", key, api::QosFromJson));
  if (q.name != key) return CorruptRecord("qos", key, fmt::format("it holds QoS '{}'", q.name));
  return q;
}

Result<Reservation> DecodeReservation(std::string_view text, std::string_view key) {
  SHOAL_ASSIGN_OR_RETURN(Reservation r,
                         Decode<Reservation>(text, "reservations", key, api::ReservationFromJson));
  if (r.name != key)
    return CorruptRecord("reservations", key, fmt::format("it holds reservation '{}'", r.name));
  return r;
}

Result<int> HistoryLimit(const HistoryQuery& query) {
  if (query.limit < 1)
    return InvalidArgument(fmt::format("history: a limit of {} is below 1", query.limit));
  for (JobState s : query.states) {
    if (!IsTerminal(s)) {
      return InvalidArgument(fmt::format(
          "history lists finished jobs only, and '{}' is not a finished state", JobStateName(s)));
    }
  }
  return std::min(query.limit, kMaxHistoryLimit);
}

bool MatchesHistory(const Job& job, const HistoryQuery& query) {
  if (!IsTerminal(job.state)) return false;
  if (job.end_time < query.since || job.end_time >= query.until) return false;
  if (job.id.value() <= query.after_id) return false;
  if (!query.user.empty() && job.spec.user != query.user) return false;
  if (!query.account.empty() && job.spec.account != query.account) return false;
  if (!query.states.empty() &&
      std::find(query.states.begin(), query.states.end(), job.state) == query.states.end()) {
    return false;
  }
  return true;
}

}  // namespace shoal::state
