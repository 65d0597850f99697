// From a GPU count to a buildable cluster: nodes and racks, the fabric,
// storage bandwidth, power (GPU, node, PSUs with redundancy, rack, site with
// PUE), cooling, capital and energy cost, and the failures to expect with the
// checkpoint overhead they cost. Pure; thread-safe.
#pragma once

#include <map>
#include <string>

#include "catalog/gpus.h"
#include "core/status.h"
#include "plan/fabric.h"
#include "plan/hardware.h"
#include "plan/support.h"

namespace shoal::plan {

enum class Cooling { kAny, kAir, kLiquid };
std::string_view CoolingName(Cooling c);

// The site and the buyer's limits. Zero means "no limit".
struct SiteConstraints {
  double rack_power_kw = 0;  // per rack; 0: the design's own (40 kW air, 132 kW liquid)
  double site_power_kw = 0;  // facility power available, PUE included
  Cooling cooling = Cooling::kAny;
  double pue = 1.3;
  double electricity_usd_per_kwh = 0.10;
  double budget_usd = 0;                        // capital
  double oversubscription = 1.0;                // leaf downlinks per uplink
  int psu_redundancy = 2;                       // spare supplies per node (N+2 as DGX H100)
  std::map<std::string, double> gpu_price_usd;  // by canonical model, overrides
};

// Air cooling ends around 40 kW per rack; liquid racks such as GB200 NVL72
// take ~132 kW. Shoal's assumptions. A
// vendor's reference rack of air-cooled nodes may go a little past the air
// limit (four DGX H100, ~41 kW); the design then says what must take the
// heat off.
constexpr double kAirRackLimitKw = 40;
constexpr double kLiquidRackLimitKw = 132;

// How a design's racks are cooled, in words: "air", "liquid", or "air-cooled
// nodes, rear-door heat exchangers" (ClusterDesign::rear_door).
struct ClusterDesign;
std::string RackCoolingName(const ClusterDesign& d);

struct ClusterDesign {
  const catalog::GpuSpec* gpu = nullptr;
  const NodeDesign* node = nullptr;
  int nodes = 0;
  int gpus = 0;
  int nodes_per_rack = 0;
  std::string rack_why;  // what sets nodes_per_rack
  int racks = 0;         // GPU racks; switches go in network racks
  int network_racks = 0;
  Fabric fabric;         // tiers 0: none (no node needs one)
  int fabric_nodes = 0;  // the nodes on it; the others serve replicas that fit in one node
  // Storage, the converged and out-of-band networks, management servers:
  // in the power and the cost below.
  SupportDesign support;
  // Power, kW at maximum draw.
  double gpu_kw = 0;      // GPUs alone
  double node_kw = 0;     // one node
  double network_kw = 0;  // the compute fabric
  double support_kw = 0;
  double it_kw = 0;
  double facility_kw = 0;  // it_kw x PUE
  double rack_kw = 0;      // one full GPU rack
  int psus_per_node = 0;
  int psus_needed_per_node = 0;
  Cooling cooling = Cooling::kAir;
  // Air-cooled nodes in racks past the air limit: rear-door heat exchangers
  // or in-row coolers take the rest of the heat off.
  bool rear_door = false;
  std::string cooling_why;
  double rack_btu_h = 0;
  double total_btu_h = 0;
  // Cost.
  double gpu_price_usd = 0;
  std::string gpu_price_source;
  double gpus_usd = 0;
  double servers_usd = 0;
  double network_usd = 0;  // the compute fabric
  double support_usd = 0;  // SupportDesign::Usd()
  double capex_usd = 0;
  double energy_usd_per_year = 0;  // at the average draw
  // Reliability (Llama 3's interruption rate).
  double failures_per_day = 0;
  double mtbf_hours = 0;
};

// The average draw over a training run as a fraction of the maximum: Shoal's
// assumption (GPUs rarely sit at TDP through a whole step).
constexpr double kAverageDrawFraction = 0.8;

// Sizes the cluster for `gpus` GPUs (rounded up to whole nodes). Fails with
// what binds when the site cannot hold it: a node (or NVL72 rack) above the
// rack power, liquid cooling needed where only air is allowed, and, with
// `check_limits`, site power or budget exceeded. The compute fabric joins
// the nodes of `fabric_gpus` of them (all when negative): a node that only
// serves replicas that fit in it never talks to another node, so inference
// alone gets no compute fabric. Storage is sized for `storage` (the least
// there is when it asks for nothing).
Result<ClusterDesign> DesignCluster(const catalog::GpuSpec& gpu, int gpus,
                                    const SiteConstraints& site, bool check_limits = true,
                                    int fabric_gpus = -1, const StorageNeed& storage = {});

// Unexpected interruptions per GPU per day: 419 in 54 days on 16,384 H100s
// (Llama 3 paper, arXiv 2407.21783, section 3.3.4, as in
// data/compiled/published_training_runs.csv).
constexpr double kFailuresPerGpuDay = 419.0 / (54.0 * 16384.0);

// Checkpoints are asynchronous, as in Megatron-Core and PyTorch DCP: training
// stalls only while each GPU copies its shard to host memory; storage writes
// in the background, so checkpoints cannot come faster than storage writes.
struct CheckpointPlan {
  double checkpoint_bytes = 0;  // weights and optimizer state
  double write_gbytes_s = 0;    // storage write bandwidth
  double write_s = 0;           // one checkpoint to storage
  double stall_s = 0;           // the device-to-host copy training waits for
  double interval_s = 0;        // Young's optimum sqrt(2 x stall x MTBF), at least write_s
  double restart_s = 0;         // kRestartS and reading the checkpoint back
  double overhead = 0;          // fraction of wall time lost to checkpoints and failures
};

// bf16 weights, fp32 master weights and two fp32 Adam moments.
constexpr double kCheckpointBytesPerParam = 16;
// Each save also stalls training for a fixed while however small the shard:
// the save is planned and agreed across ranks, and staging buffers filled
// (Shoal's assumption, a few seconds; it is what keeps the interval from
// shrinking to seconds on large clusters, where each GPU's shard is small).
constexpr double kCheckpointFixedStallS = 5;
// Restarting a large job after a failure: rescheduling, starting its
// processes, warming up (Shoal's assumption); reading the checkpoint back
// comes on top.
constexpr double kRestartS = 600;

// Checkpointing a model of `params` parameters on `gpus` GPUs with
// `write_gbytes_s` of storage bandwidth (and `read_gbytes_s` to load it back
// after a failure; 0: not counted) and `host_gbytes_s` per GPU to host memory.
CheckpointPlan PlanCheckpoints(double params, int gpus, double write_gbytes_s, double host_gbytes_s,
                               double read_gbytes_s = 0);

}  // namespace shoal::plan
