// The limits a pass screens pending jobs against before placing any: their
// partition's and QoS's per-job limits and the admin reservations they ask
// for. Each answers why a job waits, in words; empty when it need not.
#pragma once

#include <cstdint>
#include <string>

#include "core/cluster.h"
#include "core/time.h"
#include "sched/request.h"
#include "sched/snapshot.h"

namespace shoal::sched {

// Time limit, nodes and GPUs over the partition's maximum, or an account it does not allow.
std::string PartitionLimit(const Partition& part, const JobInfo& j, const Request& req);

// Time limit or GPUs over the maximum of the job's QoS.
std::string QosJobLimit(const Snapshot& snap, const JobInfo& j, const Request& req);

// Why a job that asked for a reservation cannot use it now.
std::string ReservationWait(const Snapshot& snap, Time now, const JobInfo& j);

// The reservations of `off` (bit r: snap.reservations[r]) for people:
// "'maint' (2026-12-06 10:00 to 2026-12-06 12:00)".
std::string ReservationNames(const Snapshot& snap, uint64_t off);

}  // namespace shoal::sched
