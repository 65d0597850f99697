// The scheduling cycle.
//
// Schedule() is a pure function: no clock, threads, I/O or globals; the same
// snapshot, time and policy always give the same plan. The controller and the
// simulator both call it (DESIGN.md, boundary 1).
//
// One pass:
//  1. screen: held, begin time, dependencies, unsatisfiable requests and
//     partition limits give their reasons without touching resources;
//  2. sort the rest with the policy's sort plugin (partition tier first);
//  3. walk them in order, placing each with the policy's score plugin. In
//     strict mode a job that cannot start blocks its partition; in backfill
//     mode the first such job gets a reservation at the earliest time the
//     running jobs' time limits free enough room, and later jobs start only
//     if they end before it or stay off the resources it needs (EASY); with
//     a preempt plugin a blocked job may displace lower-ranked running jobs.
// Every pending job not started gets a reason.
#pragma once

#include "core/job.h"
#include "core/status.h"
#include "core/time.h"
#include "sched/plan.h"
#include "sched/policy.h"
#include "sched/snapshot.h"

namespace shoal::sched {

Plan Schedule(const Snapshot& snapshot, Time now, const Policy& policy);

// sbatch --test-only: when and where `req` could start, not before
// `not_before`, were it the only pending job: then if it fits what the
// snapshot's running jobs leave free, else at the first of their expected
// ends (start + time limit) after which it fits, placed as the policy's
// score plugin places it (the search the backfill reservation makes).
// With power budgets, the start is also when the running jobs' expected ends
// leave each budget room for the job's draw (`gpu_power_w` per GPU; 0: the
// GPUs' rated power). Other pending jobs, preemption, account limits and the
// running jobs' early ends are not considered. An error says why it could
// not start at all.
struct StartEstimate {
  Time start;
  Allocation allocation;
};
Result<StartEstimate> EstimateStart(const Snapshot& snapshot, const Request& req, Time not_before,
                                    const Policy& policy, double gpu_power_w = 0);

}  // namespace shoal::sched
