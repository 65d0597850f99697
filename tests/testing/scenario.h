// Scenario files: a cluster, its jobs, a policy, and the decisions a reader
// expects, in a format that can be checked by eye (STYLE habit 9).
// tests/scenarios/README.md describes the format.
#pragma once

#include <string>
#include <vector>

namespace shoal::testing {

struct ScenarioResult {
  bool ok = true;
  std::vector<std::string> failures;  // "file:line: what differs"
  std::string plan_text;              // the plan, for failure messages
};

// Parses and runs one scenario file; parse errors are failures too.
ScenarioResult RunScenarioFile(const std::string& path);

}  // namespace shoal::testing
