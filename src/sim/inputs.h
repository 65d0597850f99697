// What the simulator is given beyond the cluster and the policy: trace inputs
// beyond one file (a directory of trace files is one trace whose accounts are
// the files: a Philly VC per Gavel file, an ITP cluster per CSV, so fairness
// between them can be measured), MIG shares, and how time limits relate to
// true run times.
#pragma once

#include <string>
#include <string_view>

#include "core/cluster.h"
#include "core/job.h"
#include "core/status.h"
#include "trace/trace.h"

namespace shoal::sim {

// How the time limits that the scheduler sees relate to true run times.
struct LimitModel {
  enum Kind { kExact, kFactor, kPartitionDefault } kind = kFactor;
  double factor = 2.0;
};

// The job that a replay submits for a trace job: its resources as the trace
// gives them (a CPU-only job asks for one CPU per node at least), no time limit.
JobSpec SpecFor(const trace::TraceJob& t);

// The time limit `m` gives a trace job, in whole minutes (at least one); 0
// (the partition's default) for LimitModel::kPartitionDefault. A job whose
// trace gives run times per GPU model asks for enough on the slowest.
Duration TimeLimitFor(const trace::TraceJob& t, const LimitModel& m);

// "exact", "x2" / "2" (a factor of the true run time), or "default" (the partition's default).
Result<LimitModel> ParseLimitModel(std::string_view text);
std::string FormatLimitModel(const LimitModel& m);

Result<trace::Trace> LoadTraceInput(const std::string& path, const trace::TraceOptions& options);

// `shoal sim --mig-shares`: a cluster whose GPUs are (partly) MIG slices
// time-shares none of them, so each job that asks for a share of one GPU
// (Alibaba's GPU-sharing pods, gpu_milli < 1000) asks instead for the
// smallest slice of the cluster whose compute covers its share (a 0.4 share:
// 3g of 7), or for a whole GPU where no slice does. Adds a note to the trace
// saying how many went where; an error when the cluster has no slices.
Status MapSharesToMigSlices(trace::Trace& trace, const Cluster& cluster);

}  // namespace shoal::sim
