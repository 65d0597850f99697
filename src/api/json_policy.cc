// The cluster's policy records as the API and the store carry them:
// partitions, accounts, QoS and reservations (/v1/partitions, /v1/accounts,
// /v1/qos, /v1/reservations). Jobs, steps and nodes: json.cc.
#include <fmt/format.h>

#include "api/json.h"
#include "api/json_reader.h"

namespace shoal::api {

Json ToJson(const Partition& p) {
  return {{"name", p.name},
          {"default", p.is_default},
          {"up", p.up},
          {"max_time_s", ToSeconds(p.max_time)},
          {"default_time_s", ToSeconds(p.default_time)},
          {"max_nodes_per_job", p.max_nodes_per_job},
          {"max_gpus_per_job", p.max_gpus_per_job},
          {"allowed_accounts", p.allowed_accounts},
          {"priority_tier", p.priority_tier},
          {"idle_util_pct", p.idle_util_pct},
          {"idle_minutes", p.idle_minutes},
          {"idle_action", p.idle_action},
          {"require_acceptance", p.require_acceptance}};
}

Result<Partition> PartitionFromJson(const Json& j) {
  Partition p;
  ObjectReader f(j, "partition");
  double max_time = 0, default_time = 0;
  f.Optional("name", &p.name);
  f.Optional("default", &p.is_default);
  f.Optional("up", &p.up);
  f.Optional("max_time_s", &max_time);
  f.Optional("default_time_s", &default_time);
  f.Optional("max_nodes_per_job", &p.max_nodes_per_job);
  f.Optional("max_gpus_per_job", &p.max_gpus_per_job);
  f.Optional("allowed_accounts", &p.allowed_accounts);
  f.Optional("priority_tier", &p.priority_tier);
  f.Optional("idle_util_pct", &p.idle_util_pct);
  f.Optional("idle_minutes", &p.idle_minutes);
  f.Optional("idle_action", &p.idle_action);
  f.Optional("require_acceptance", &p.require_acceptance);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (p.name.empty()) return InvalidArgument("partition: a name is required");
  if (p.idle_util_pct < 0 || p.idle_util_pct > 100)
    return InvalidArgument("partition: idle_util_pct is 0 to 100");
  if (p.idle_minutes < 0) return InvalidArgument("partition: idle_minutes cannot be negative");
  if (p.idle_action != "notify" && p.idle_action != "cancel") {
    return InvalidArgument("partition: idle_action is notify or cancel");
  }
  if (max_time < 0 || default_time < 0)
    return InvalidArgument("partition: times cannot be negative");
  p.max_time = DurationFromSeconds(max_time);
  p.default_time = DurationFromSeconds(default_time);
  return p;
}

Json ToJson(const Account& a) {
  return {{"name", a.name}, {"shares", a.shares}, {"max_gpus", a.max_gpus}};
}

Json ToJson(const Qos& q) {
  return {{"name", q.name},
          {"default", q.is_default},
          {"priority", q.priority},
          {"max_gpus_per_job", q.max_gpus_per_job},
          {"max_gpus_per_user", q.max_gpus_per_user},
          {"max_jobs_per_user", q.max_jobs_per_user},
          {"max_time_s", ToSeconds(q.max_time)},
          {"preempt", q.preempt}};
}

Result<Qos> QosFromJson(const Json& j) {
  Qos q;
  ObjectReader f(j, "qos");
  double max_time = 0;
  f.Optional("name", &q.name);
  f.Optional("default", &q.is_default);
  f.Optional("priority", &q.priority);
  f.Optional("max_gpus_per_job", &q.max_gpus_per_job);
  f.Optional("max_gpus_per_user", &q.max_gpus_per_user);
  f.Optional("max_jobs_per_user", &q.max_jobs_per_user);
  f.Optional("max_time_s", &max_time);
  f.Optional("preempt", &q.preempt);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (q.name.empty()) return InvalidArgument("qos: a name is required");
  if (q.priority < 0 || q.max_gpus_per_job < 0 || q.max_gpus_per_user < 0 ||
      q.max_jobs_per_user < 0 || max_time < 0) {
    return InvalidArgument("qos: priority, limits and max_time_s cannot be negative");
  }
  if (max_time > 100.0 * 365 * 86400) return InvalidArgument("qos: max_time_s is over 100 years");
  q.max_time = DurationFromSeconds(max_time);
  return q;
}

Json ToJson(const Reservation& r) {
  return {{"name", r.name},
          {"start", TimeToJson(r.start)},
          {"end", TimeToJson(r.end)},
          {"nodes", r.nodes},
          {"users", r.users},
          {"accounts", r.accounts},
          {"maintenance", r.maintenance}};
}

Result<Reservation> ReservationFromJson(const Json& j) {
  Reservation r;
  ObjectReader f(j, "reservation");
  double start = 0, end = 0;
  f.Required("name", &r.name);
  f.Required("start", &start);
  f.Required("end", &end);
  f.Optional("nodes", &r.nodes);
  f.Optional("users", &r.users);
  f.Optional("accounts", &r.accounts);
  f.Optional("maintenance", &r.maintenance);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (!(start >= 0 && start < end && end <= 1e10))
    return InvalidArgument("reservation: start must be before end (Unix seconds, up to 1e10)");
  r.start = TimeFromJson(start);
  r.end = TimeFromJson(end);
  return r;
}

Result<Account> AccountFromJson(const Json& j) {
  Account a;
  ObjectReader f(j, "account");
  f.Optional("name", &a.name);
  f.Optional("shares", &a.shares);
  f.Optional("max_gpus", &a.max_gpus);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  if (a.name.empty()) return InvalidArgument("account: a name is required");
  if (!(a.shares > 0) || a.max_gpus < 0)
    return InvalidArgument("account: shares must be > 0 and max_gpus >= 0");
  return a;
}

}  // namespace shoal::api
