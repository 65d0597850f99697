// A job's speed on each GPU model of the cluster, for speed-aware policies
// (sched/speed.h; PolicyParams::speed_aware):
//  1. declared: JobSpec::gpu_speeds (--gpu-speed h100=1,a100=0.55), each
//     entry on the models its name matches (GpuModelMatches); a model it
//     names none of gets 0, so the job does not run there;
//  2. else estimated from the catalogue: each model's peak dense BF16
//     TFLOP/s (the precision most training runs in), which overstates the
//     gain of a newer GPU for a job bound by memory or communication.
// Null where no choice is to be made (the cluster has one model) or nothing
// is known (a model the catalogue lacks, with nothing declared).
//
// Not yet: speeds learned from a job's earlier runs.
#pragma once

#include <memory>
#include <vector>

#include "core/job.h"
#include "sched/inventory.h"

namespace shoal::server {

std::shared_ptr<const std::vector<double>> ModelSpeeds(const JobSpec& spec,
                                                       const sched::Inventory& inv);

}  // namespace shoal::server
