// Gavel's measured isolated throughputs (steps/second) per job type, scale
// factor and GPU type, compiled in from data/gavel/throughputs.csv.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace shoal::trace {

// The embedded CSV: job_type,scale_factor,v100,p100,k80.
std::string_view GavelThroughputsCsv();

// Steps/second of `job_type` on `scale_factor` GPUs of `gpu` ("V100", "P100",
// "K80"). Where Gavel measured only one GPU, the one-GPU figure is scaled
// linearly with the GPU count (an optimistic assumption). 0 when the job cannot
// run there (Gavel's out-of-memory entries); NotFound for an unknown job type
// or GPU type. Thread-safe: the table is parsed once.
Result<double> GavelThroughput(std::string_view job_type, int scale_factor, std::string_view gpu);

// Whether the figure for this job type and scale factor was measured rather
// than scaled from one GPU.
bool GavelThroughputMeasured(std::string_view job_type, int scale_factor);

}  // namespace shoal::trace
