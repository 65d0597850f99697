// What a GPU cluster needs besides its GPU nodes and their compute fabric:
// shared storage, the converged (north/south) Ethernet network that carries
// storage, in-band management and users, the out-of-band management network,
// and the management servers. Pure; thread-safe.
//
// The layout follows NVIDIA's reference architectures: the HGX AI Factory
// enterprise RA builds three physical networks (compute east/west; converged
// north/south, each node on two ports to two separate switches; out-of-band
// management), and the DGX SuperPOD H100 RA (Table 7: 127 DGX H100) adds 5
// management servers and 4 UFM appliances to its nodes. Counts beyond those,
// and every price and power figure here, are Shoal's assumptions
// (SupportParts::source).
#pragma once

#include <string_view>

#include "core/status.h"
#include "plan/fabric.h"

namespace shoal::plan {

// What the workloads ask of shared storage.
struct StorageNeed {
  double read_gbytes_s = 0;   // data loading, and reading a checkpoint back
  double write_gbytes_s = 0;  // checkpoints
  double capacity_tb = 0;     // data sets, kept checkpoints, model weights, headroom
};

struct SupportParts {
  // One storage appliance (a parallel file system's building block, of the
  // class of DDN's AI400X2: 2U of NVMe).
  double storage_read_gbytes_s = 90;
  double storage_write_gbytes_s = 65;
  double storage_capacity_tb = 500;
  int storage_rack_units = 2;
  int storage_ports = 8;  // on the converged network
  double storage_power_w = 2500;
  double storage_price_usd = 300000;
  // The converged network: radix-64 Ethernet switches, 200 Gb/s per port,
  // leaves with three downlinks per uplink (north/south traffic is storage
  // and users, far below the compute fabric's).
  int converged_ports_per_node = 2;  // to two separate switches
  double converged_oversubscription = 3;
  // Out-of-band management: 48 ports of 1 GbE per switch (SN2201 class).
  int oob_ports_per_switch = 48;
  double oob_switch_power_w = 150;
  double oob_switch_price_usd = 5000;
  int pdus_per_rack = 2;
  // Management servers (cluster manager, scheduler, monitoring, login): 5
  // for up to 128 nodes as the SuperPOD RA, one more per further 128.
  int management_servers_base = 5;
  int nodes_per_more_management = 128;
  int management_rack_units = 1;
  double management_power_w = 1000;
  double management_price_usd = 20000;
  // UFM appliances manage an InfiniBand compute fabric, as an HA pair (the
  // SuperPOD RA's 4 serve its compute and storage InfiniBand fabrics).
  int ufm_appliances = 2;
  double ufm_power_w = 600;
  double ufm_price_usd = 40000;
  int rack_units = 42;  // per support rack, as GPU racks
  std::string_view source;
};
const SupportParts& DefaultSupportParts();

struct SupportDesign {
  StorageNeed need;
  int storage_units = 0;
  std::string_view storage_bound;    // "read", "write", "capacity" or "nothing asked"
  double storage_read_gbytes_s = 0;  // what the units give
  double storage_write_gbytes_s = 0;
  double storage_capacity_tb = 0;
  Fabric converged;  // north/south Ethernet, two rails (the two switches per node)
  int oob_ports = 0;
  int oob_switches = 0;
  int management_servers = 0;
  int ufm_appliances = 0;  // 0 without an InfiniBand compute fabric
  int racks = 0;           // storage, management servers, UFM and converged switches
  double kw = 0;
  double storage_usd = 0;
  double network_usd = 0;  // converged and out-of-band
  double servers_usd = 0;  // management servers and UFM appliances
  double Usd() const { return storage_usd + network_usd + servers_usd; }
};

// Sizes the support for `nodes` GPU nodes in `gpu_racks` racks beside a
// compute fabric `compute` (tiers 0: none, and then no UFM).
Result<SupportDesign> DesignSupport(const StorageNeed& need, int nodes, int gpu_racks,
                                    const Fabric& compute);

// The storage write bandwidth a training run's checkpoints should have: the
// one that costs least once the GPU time lost to failures is counted.
// Faster storage allows a shorter checkpoint interval (less work lost per
// failure) and a faster restart, at the price of more appliances.
struct CheckpointStorage {
  double write_gbytes_s = 0;
  double read_gbytes_s = 0;  // what the same appliances read at
};
CheckpointStorage ChooseCheckpointStorage(double checkpoint_bytes, int gpus, double host_gbytes_s,
                                          double compute_days, double gpu_hour_usd);

}  // namespace shoal::plan
