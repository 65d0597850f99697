// MIG (Multi-Instance GPU): the GPU instance profiles each model offers, the
// layouts an admin asks for ("7x1g.10gb", "3g.40gb+2x2g.20gb"), and the
// slices a partitioned GPU becomes, each a schedulable GPU of its own
// (core/cluster.h's Gpu with a mig_profile). Pure and thread-safe.
//
// Figures: NVIDIA's MIG User Guide, "Supported MIG Profiles" (A100, H100,
// H200, B200 tables): compute slices out of 7, memory in eighths of the GPU.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"

namespace shoal::catalog {

struct MigProfile {
  std::string_view name;   // "1g.10gb": compute slices, then memory in GB
  int compute_slices = 0;  // of kMigComputeSlices
  int memory_eighths = 0;  // of the GPU's memory
  int max_count = 0;       // instances of it one GPU can hold
};

inline constexpr int kMigComputeSlices = 7;
inline constexpr int kMigMemoryEighths = 8;

// The profiles of a model (by canonical name or alias); empty when it has
// no MIG.
std::vector<MigProfile> MigProfilesOf(std::string_view gpu_model);

// One GPU's layout from its text: profiles joined by '+', each with an
// optional count ("7x1g.10gb", "3g.40gb+2x2g.20gb", "4g.40gb+3g.40gb");
// "none" or "off": MIG disabled (an empty list). Checked against the
// model's profiles: every one must exist, and together they must fit the
// GPU's compute slices, memory and each profile's instance limit. The GPU's
// own placement rules (which slice positions an instance may start at) are
// its driver's to check when the layout is applied.
Result<std::vector<std::string>> ParseMigLayout(std::string_view text, std::string_view gpu_model);

// "7x1g.10gb" for {"1g.10gb" x 7}; "none" for an empty list.
std::string MigLayoutText(const std::vector<std::string>& profiles);

// The whole GPU a node's GPU is or belongs to: its model without the
// profile ("H100-SXM-80GB" for "H100-SXM-80GB/1g.10gb").
std::string_view BaseModel(std::string_view model);

// Physical GPU (driver index) -> the profiles it is split into.
using MigLayouts = std::vector<std::pair<int, std::vector<std::string>>>;

// A node's whole GPUs (`gpus`, indexed by driver index) with those in
// `layouts` split into slices: whole GPUs and slices in the order of their
// physical GPU, indexed 0, 1, ... anew. A slice keeps its GPU's NVLink
// island, NUMA node and driver index (Gpu::device), has its profile's share
// of the memory and of the rated power, GPU instance ids 1, 2, ... on its
// GPU and a UUID derived from its GPU's. Each layout is checked as
// ParseMigLayout does.
Result<std::vector<Gpu>> PartitionGpus(const std::vector<Gpu>& gpus, const MigLayouts& layouts);

// `layout` for each of the node's physical GPUs `devices` (driver indices;
// empty: all of them), from its GPUs and slices, checked against each GPU's
// model: a GPU the node lacks, or a layout that does not fit one, is an
// error naming the GPU.
Result<MigLayouts> PlanMigLayouts(const std::vector<Gpu>& gpus, std::string_view layout,
                                  std::vector<int> devices);

}  // namespace shoal::catalog
