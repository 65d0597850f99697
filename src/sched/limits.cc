#include "sched/limits.h"

#include <fmt/format.h>

namespace shoal::sched {

std::string QosJobLimit(const Snapshot& snap, const JobInfo& j, const Request& req) {
  if (j.qos < 0 || static_cast<size_t>(j.qos) >= snap.qos.size()) return {};
  const QosInfo& q = snap.qos[static_cast<size_t>(j.qos)];
  if (q.max_time.count() > 0 && req.time_limit > q.max_time) {
    return fmt::format("time limit {} exceeds QoS '{}' maximum {}", FormatDuration(req.time_limit),
                       q.name, FormatDuration(q.max_time));
  }
  if (q.max_gpus_per_job > 0 && req.total_gpus > q.max_gpus_per_job) {
    return fmt::format("{} GPUs exceed QoS '{}' maximum {} per job", req.total_gpus, q.name,
                       q.max_gpus_per_job);
  }
  return {};
}

std::string ReservationWait(const Snapshot& snap, Time now, const JobInfo& j) {
  if (j.reservation_gone) {
    return fmt::format("reservation '{}' does not exist",
                       j.spec != nullptr ? j.spec->reservation : std::string("?"));
  }
  if (j.reservation < 0 || static_cast<size_t>(j.reservation) >= snap.reservations.size())
    return {};
  const ReservationInfo& r = snap.reservations[static_cast<size_t>(j.reservation)];
  if (now < r.start) {
    return fmt::format("reservation '{}' begins at {}", r.name, FormatTime(r.start));
  }
  if (now >= r.end) return fmt::format("reservation '{}' has ended", r.name);
  return {};
}

std::string ReservationNames(const Snapshot& snap, uint64_t off) {
  std::string out;
  for (size_t r = 0; r < snap.reservations.size() && r < 64; ++r) {
    if ((off >> r & 1) == 0) continue;
    const ReservationInfo& resv = snap.reservations[r];
    if (!out.empty()) out += ", ";
    out += fmt::format("'{}' ({} to {})", resv.name, FormatTime(resv.start), FormatTime(resv.end));
  }
  return out;
}

std::string PartitionLimit(const Partition& part, const JobInfo& j, const Request& req) {
  if (part.max_time.count() > 0 && req.time_limit > part.max_time) {
    return fmt::format("time limit {} exceeds partition '{}' maximum {}",
                       FormatDuration(req.time_limit), part.name, FormatDuration(part.max_time));
  }
  if (part.max_nodes_per_job > 0 && req.nodes > part.max_nodes_per_job) {
    return fmt::format("{} nodes exceed partition '{}' maximum {}", req.nodes, part.name,
                       part.max_nodes_per_job);
  }
  if (part.max_gpus_per_job > 0 && req.total_gpus > part.max_gpus_per_job) {
    return fmt::format("{} GPUs exceed partition '{}' maximum {}", req.total_gpus, part.name,
                       part.max_gpus_per_job);
  }
  if (j.spec != nullptr && !part.AllowsAccount(j.spec->account)) {
    return fmt::format("account '{}' may not use partition '{}'", j.spec->account, part.name);
  }
  return {};
}

}  // namespace shoal::sched
