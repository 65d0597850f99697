// Trace inputs for the simulator beyond one file: a directory of trace files
// is one trace whose accounts are the files (a Philly VC per Gavel file, an
// ITP cluster per CSV), so fairness between them can be measured.
#pragma once

#include <string>

#include "core/status.h"
#include "trace/trace.h"

namespace shoal::sim {

Result<trace::Trace> LoadTraceInput(const std::string& path, const trace::TraceOptions& options);

}  // namespace shoal::sim
