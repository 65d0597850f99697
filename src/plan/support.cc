#include "plan/support.h"

#include <algorithm>
#include <cmath>

#include "plan/cluster.h"

namespace shoal::plan {
namespace {

int CeilDiv(double a, double b) {
  return static_cast<int>(std::ceil(a / b - 1e-9));
}

// The most appliances a checkpoint's write bandwidth is chosen among.
constexpr int kMaxCheckpointUnits = 2000;

}  // namespace

const SupportParts& DefaultSupportParts() {
  static const SupportParts parts{
      .source =
          "layout: NVIDIA HGX AI Factory enterprise RA (compute, converged and out-of-band "
          "networks; two converged ports per node to two switches) and DGX SuperPOD H100 RA "
          "Table 7 (5 management servers, 4 UFM appliances for 127 nodes); appliance, switch "
          "and server figures and all prices are Shoal's assumptions",
  };
  return parts;
}

Result<SupportDesign> DesignSupport(const StorageNeed& need, int nodes, int gpu_racks,
                                    const Fabric& compute) {
  if (nodes < 1) return InvalidArgument("support: a cluster needs at least one node");
  const SupportParts& p = DefaultSupportParts();
  SupportDesign s;
  s.need = need;
  // Storage: enough appliances for the most demanding of its needs, one at least.
  const double by_read = need.read_gbytes_s / p.storage_read_gbytes_s;
  const double by_write = need.write_gbytes_s / p.storage_write_gbytes_s;
  const double by_capacity = need.capacity_tb / p.storage_capacity_tb;
  const double most = std::max({by_read, by_write, by_capacity});
  s.storage_units = std::max(1, CeilDiv(most, 1));
  s.storage_bound = most <= 0          ? "nothing asked"
                    : most == by_write ? "write"
                    : most == by_read  ? "read"
                                       : "capacity";
  s.storage_read_gbytes_s = s.storage_units * p.storage_read_gbytes_s;
  s.storage_write_gbytes_s = s.storage_units * p.storage_write_gbytes_s;
  s.storage_capacity_tb = s.storage_units * p.storage_capacity_tb;

  s.management_servers =
      p.management_servers_base + std::max(0, CeilDiv(nodes, p.nodes_per_more_management) - 1);
  s.ufm_appliances = compute.tiers > 0 ? p.ufm_appliances : 0;

  // The converged network: every GPU node, storage appliance and management
  // server on two ports to two separate switches (two rails of a fat tree).
  const int storage_endpoints =
      CeilDiv(s.storage_units * p.storage_ports, p.converged_ports_per_node);
  FabricRequest fr;
  fr.nodes = nodes + storage_endpoints + s.management_servers;
  fr.rails = p.converged_ports_per_node;
  fr.nic_gbps = 200;
  fr.oversubscription = p.converged_oversubscription;
  SHOAL_ASSIGN_OR_RETURN(s.converged, DesignFatTree(fr));
  if (s.converged.Switches() == 1) s.converged.leaves = 2;  // two separate switches, however few

  // Out-of-band: one port for every node's BMC, appliance, server and
  // switch, and every rack's PDUs.
  const int support_units = s.storage_units * p.storage_rack_units +
                            (s.management_servers + s.ufm_appliances) * p.management_rack_units +
                            s.converged.Switches();  // 1U each
  s.racks = CeilDiv(support_units, p.rack_units);
  const int switches = compute.Switches() + s.converged.Switches();
  s.oob_ports = nodes + s.storage_units + s.management_servers + s.ufm_appliances + switches +
                (gpu_racks + s.racks) * p.pdus_per_rack;
  s.oob_switches = CeilDiv(s.oob_ports, p.oob_ports_per_switch);
  s.oob_ports += s.oob_switches;  // their own management ports

  const NetworkParts& net = DefaultNetworkParts();
  s.kw = (s.storage_units * p.storage_power_w + s.management_servers * p.management_power_w +
          s.ufm_appliances * p.ufm_power_w + s.converged.Switches() * net.switch_power_w +
          s.converged.link_ends * net.transceiver_power_w + s.oob_switches * p.oob_switch_power_w) /
         1000;
  s.storage_usd = s.storage_units * p.storage_price_usd;
  s.network_usd = s.converged.Switches() * net.switch_price_usd +
                  s.converged.link_ends * net.transceiver_price_usd +
                  s.converged.Cables() * net.cable_price_usd +
                  s.oob_switches * p.oob_switch_price_usd + s.oob_ports * net.cable_price_usd;
  s.servers_usd =
      s.management_servers * p.management_price_usd + s.ufm_appliances * p.ufm_price_usd;
  return s;
}

CheckpointStorage ChooseCheckpointStorage(double checkpoint_bytes, int gpus, double host_gbytes_s,
                                          double compute_days, double gpu_hour_usd) {
  const SupportParts& p = DefaultSupportParts();
  const double params = checkpoint_bytes / kCheckpointBytesPerParam;
  const double gpu_hours = compute_days * 24 * std::max(1, gpus);
  CheckpointStorage best;
  double best_usd = -1;
  for (int units = 1; units <= kMaxCheckpointUnits; ++units) {
    const double write = units * p.storage_write_gbytes_s;
    const double read = units * p.storage_read_gbytes_s;
    const CheckpointPlan c = PlanCheckpoints(params, gpus, write, host_gbytes_s, read);
    const double lost_usd = c.overhead / (1 - c.overhead) * gpu_hours * gpu_hour_usd;
    const double usd = units * p.storage_price_usd + lost_usd;
    if (best_usd < 0 || usd < best_usd) {
      best_usd = usd;
      best = {write, read};
    }
    // Past this, the appliances alone cost more than the best so far.
    if ((units + 1) * p.storage_price_usd > best_usd) break;
  }
  return best;
}

}  // namespace shoal::plan
