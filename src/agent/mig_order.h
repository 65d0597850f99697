// Re-partitioning a node's GPUs into MIG slices: the controller's order
// (`shoal node mig NODE --layout 7x1g.10gb`, POST /v1/mig on the agent) and
// how the agent carries it out through its GPU provider. docs/mig.md.
#pragma once

#include <string>
#include <vector>

#include "agent/gpu/provider.h"
#include "catalog/mig.h"
#include "core/status.h"

namespace shoal::agent {

// Carries out the plan through `gpus` (GPU by GPU; an error stops there and
// says which GPUs were done) and returns what Discover finds after.
Result<std::vector<GpuDevice>> ApplyMigPlan(GpuProvider& gpus, const catalog::MigLayouts& plan);

// Simulated GPUs keep their layouts in a file of the agent's state, as real
// ones keep theirs in the GPU until it is reset: written after each order,
// applied when the agent starts. A missing file is no layout.
Status SaveMigLayouts(const std::string& path, const std::vector<GpuDevice>& devices);
Status RestoreMigLayouts(const std::string& path, GpuProvider& gpus);

}  // namespace shoal::agent
