// What `shoal plan` prints and writes: the designs side by side as text
// tables, everything as JSON, a chosen design as a cluster file that
// `shoal sim` reads, and the validation report. Text in, text out; thread-safe.
#pragma once

#include <string>

#include "plan/planner.h"
#include "plan/validation.h"

namespace shoal::plan {

struct ReportOptions {
  bool all_details = false;  // details of every feasible design, not only the recommended one
};

std::string PlanText(const Workload& workload, const PlanResult& result,
                     const ReportOptions& options = {});
std::string PlanJson(const Workload& workload, const PlanResult& result);

// Shoal's cluster file (src/config/cluster_file.h) for one design: its nodes
// grouped by workload (labels "train", "serve", "general"), placed under the
// fabric's scalable units.
std::string ClusterToml(const Workload& workload, const Design& design);

std::string ValidationText(const ValidationReport& report, bool every_row);
std::string ValidationJson(const ValidationReport& report);

}  // namespace shoal::plan
