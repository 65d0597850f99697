// The JSON forms of Shoal's vocabulary: the HTTP API's bodies and the
// store's records (the node protocol's messages are in node_protocol.h).
// Parsing is strict (json_reader.h): an unknown field or a field of the
// wrong type is an error that names the field, so a typo never passes
// silently.
//
// This header includes nlohmann/json: include it only from .cc files that
// build or read JSON (the API handlers, the CLI, the store).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/cluster.h"
#include "core/job.h"
#include "core/status.h"

namespace shoal::api {

using Json = nlohmann::json;

// Node ids <-> names, for allocations in API bodies (the store keeps ids only).
struct NodeNames {
  std::function<std::string(NodeId)> name_of;
  std::function<std::optional<NodeId>(std::string_view)> id_of;
};

// Parses text into JSON; a syntax error says where.
Result<Json> Parse(std::string_view text);

// A job's --container-* options as the API carries them ("container").
Json ContainerToJson(const ContainerSpec& c);
Result<ContainerSpec> ContainerFromJson(const Json& j);
Json ToJson(const JobSpec& spec);
Result<JobSpec> JobSpecFromJson(const Json& j);

Json ToJson(const Allocation& a, const NodeNames* names = nullptr);
// One node's part of an allocation (an item of the list above); `path`
// names it in errors.
Json ToJson(const NodeAllocation& na, const NodeNames* names = nullptr);
Result<NodeAllocation> NodeAllocationFromJson(const Json& j, const std::string& path,
                                              const NodeNames* names = nullptr);
Result<Allocation> AllocationFromJson(const Json& j, const NodeNames* names = nullptr);

Json ToJson(const JobEfficiency& e);
Result<JobEfficiency> JobEfficiencyFromJson(const Json& j);

// What `shoal run` asks for (POST /v1/jobs/{id}/steps), and a step as the
// job record keeps it.
Json ToJson(const StepSpec& spec);
Result<StepSpec> StepSpecFromJson(const Json& j);
Json ToJson(const JobStep& step);
Result<JobStep> JobStepFromJson(const Json& j);

// A job with its spec, state and allocation.
Json ToJson(const Job& job, const NodeNames* names = nullptr);
Result<Job> JobFromJson(const Json& j, const NodeNames* names = nullptr);

Json ToJson(const Node& node);
Result<Node> NodeFromJson(const Json& j);

// A node's acceptance result: {"passed", "summary", "time", "failures", "job"}.
// The API's body may also carry "report" (a `shoal bench` report, schema
// shoal-bench-report/1), whose "failures" are taken when the body names none;
// the rest of the report is not kept.
Json ToJson(const AcceptanceResult& a);
Result<AcceptanceResult> AcceptanceFromJson(const Json& j);

Json ToJson(const Partition& p);
Result<Partition> PartitionFromJson(const Json& j);

Json ToJson(const Account& a);
Result<Account> AccountFromJson(const Json& j);

Json ToJson(const Qos& q);
Result<Qos> QosFromJson(const Json& j);

// A reservation's record: times in Unix seconds, its nodes by name.
Json ToJson(const Reservation& r);
Result<Reservation> ReservationFromJson(const Json& j);

// Times on the wire are Unix seconds (fractions allowed); durations seconds.
double TimeToJson(Time t);
Time TimeFromJson(double seconds);
// CPUs as the API writes them (2.5), and in thousandths as Shoal counts them.
int64_t MilliFromCpus(double cpus);
double CpusFromMilli(int64_t milli);

// The error body of every failed request: {"error": code, "detail": message}.
Json ErrorBody(const Status& s);
// The HTTP status for a Status (400, 401, 403, 404, 409, 413, 503, 500).
int HttpStatus(const Status& s);

}  // namespace shoal::api
