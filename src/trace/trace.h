// Job traces: the public GPU-cluster traces in data/traces read into one
// form that the simulator replays.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal::trace {

struct TraceJob {
  std::string name;      // the trace's id for the job
  Time submit{};         // arrival, from the start of the trace
  Duration duration{0};  // run time on the reference GPU; 0 when the trace has none
  // Resources, in the shapes of JobSpec: gpus (total, spread over as few
  // nodes as needed) or nodes x gpus_per_node; neither means CPU-only.
  int gpus = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  int gpu_milli = kMilliPerGpu;         // share of each GPU (Alibaba GPU sharing)
  int64_t cpu_milli = 0;                // per node
  int64_t mem_mib = 0;                  // per node
  std::vector<std::string> gpu_models;  // acceptable models; empty: any
  std::string user;
  std::string account;
  std::string kind;  // model / application / job type, when the trace says
  // Run time per GPU model for heterogeneous traces (Gavel); the simulator uses
  // the entry of the slowest model a job gets and falls back to `duration`.
  std::vector<std::pair<std::string, Duration>> duration_by_model;
};

struct Trace {
  std::string format;  // "itp", "gavel", "pollux", "openb"
  std::string path;
  std::vector<TraceJob> jobs;      // sorted by submit time, stable
  std::optional<Cluster> cluster;  // when the trace comes with its own cluster
  std::string cluster_source;      // the file it came from
  std::vector<std::string> notes;  // modelling assumptions a reader of the results must know
};

struct TraceOptions {
  std::string format = "auto";  // auto, itp, gavel, pollux, openb
  int max_jobs = 0;             // 0: all
};

// Reads a trace. The format is told by options.format or detected:
//   itp     Microsoft ITP CSV (job_id,submission_time,duration,num_gpu), raw or
//           with ElasticFlow's extra columns (model_name becomes `kind`);
//   gavel   Gavel/Philly 7-field TSV (*.trace); run times from Gavel's measured
//           throughputs per GPU type (data/gavel/README.md);
//   pollux  Pollux/Sia workload CSV; run times from a GPU-hours model (see the
//           notes it adds);
//   openb   Alibaba openb pod CSV, one-node pods; Trace::cluster is the
//           openb_node_list_all_node.csv beside it, when there is one.
// Jobs are sorted by submit time (stably), then cut to options.max_jobs. A
// malformed row is an error "path:line: what is wrong"; Trace::notes states the
// modelling assumptions of the format.
Result<Trace> LoadTrace(const std::string& path, const TraceOptions& options = {});

}  // namespace shoal::trace
