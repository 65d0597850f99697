#include "plan/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace shoal::plan {

namespace {

// A 48U rack with 6U kept for PDUs, the management switch and cable
// management (Shoal's assumption; DGX SuperPOD H100 racks hold 4 DGX H100).
constexpr int kUsableRackUnits = 42;
constexpr int kSwitchesPerNetworkRack = 32;  // 1U switches, with patch panels
constexpr double kWattsToBtuPerHour = 3.412142;

}  // namespace

std::string RackCoolingName(const ClusterDesign& d) {
  return d.rear_door ? "air-cooled nodes, rear-door heat exchangers"
                     : std::string(CoolingName(d.cooling));
}

std::string_view CoolingName(Cooling c) {
  switch (c) {
    case Cooling::kAny:
      return "any";
    case Cooling::kAir:
      return "air";
    case Cooling::kLiquid:
      return "liquid";
  }
  return "any";
}

Result<ClusterDesign> DesignCluster(const catalog::GpuSpec& gpu, int gpus,
                                    const SiteConstraints& site, bool check_limits, int fabric_gpus,
                                    const StorageNeed& storage) {
  if (gpus < 1) return InvalidArgument("a cluster needs at least one GPU");
  ClusterDesign d;
  d.gpu = &gpu;
  d.node = &NodeDesignFor(gpu);
  const NodeDesign& node = *d.node;
  d.nodes = (gpus + node.gpus - 1) / node.gpus;
  // NVL72 trays come as whole racks of 18.
  if (node.nodes_per_fixed_rack > 0) {
    d.nodes = (d.nodes + node.nodes_per_fixed_rack - 1) / node.nodes_per_fixed_rack *
              node.nodes_per_fixed_rack;
  }
  d.gpus = d.nodes * node.gpus;
  d.node_kw = node.max_power_w / 1000;
  d.gpu_kw = d.gpus * gpu.tdp_w / 1000;

  // Power supplies: enough for the node's maximum draw, plus spares.
  d.psus_needed_per_node = static_cast<int>(std::ceil(node.max_power_w / node.psu_w));
  d.psus_per_node = d.psus_needed_per_node + site.psu_redundancy;

  // Cooling and rack power: liquid when the design needs it, the site asks
  // for it, or a single node is beyond what an air-cooled rack takes.
  const bool must_liquid = node.liquid_only || d.node_kw > kAirRackLimitKw;
  if (must_liquid && site.cooling == Cooling::kAir) {
    return Unsatisfiable(
        fmt::format("{} needs liquid cooling ({}), the site allows air only", node.name,
                    node.liquid_only ? "no air-cooled version exists"
                                     : fmt::format("{:.1f} kW per node", d.node_kw)));
  }
  // Liquid only for a chassis that has it (the catalogue's liquid chassis
  // are liquid-only): a site that offers liquid still racks air-cooled
  // servers as air-cooled ones.
  d.cooling = must_liquid ? Cooling::kLiquid : Cooling::kAir;
  const double rack_limit_kw = site.rack_power_kw > 0          ? site.rack_power_kw
                               : d.cooling == Cooling::kLiquid ? kLiquidRackLimitKw
                                                               : kAirRackLimitKw;
  if (node.nodes_per_fixed_rack > 0) {
    d.nodes_per_rack = node.nodes_per_fixed_rack;
    d.rack_why = "the design comes as whole racks";
    d.rack_kw = d.nodes_per_rack * d.node_kw;
    if (d.rack_kw > rack_limit_kw + 1e-9) {
      return Unsatisfiable(fmt::format("a {} rack draws {:.0f} kW, racks here take {:.0f} kW",
                                       node.name, d.rack_kw, rack_limit_kw));
    }
  } else {
    const int by_power = static_cast<int>(std::floor(rack_limit_kw / d.node_kw + 1e-9));
    const int by_space = std::max(1, kUsableRackUnits / std::max(1, node.rack_units));
    if (by_power < 1) {
      return Unsatisfiable(fmt::format("one {} draws {:.1f} kW, more than a rack's {:.0f} kW",
                                       node.name, d.node_kw, rack_limit_kw));
    }
    d.nodes_per_rack = std::min(by_power, by_space);
    d.rack_why = fmt::format("as many as {:.0f} kW per rack {}", rack_limit_kw,
                             site.rack_power_kw > 0 ? "(given)" : "(Shoal's default)");
    // Where the site says nothing of its racks, the vendor's reference rack.
    if (site.rack_power_kw <= 0 && d.cooling == Cooling::kAir && node.reference_rack_nodes > 0) {
      d.nodes_per_rack = std::min(node.reference_rack_nodes, by_space);
      d.rack_why = std::string(node.reference_rack_source);
    }
    d.rack_kw = d.nodes_per_rack * d.node_kw;
  }
  d.racks = (d.nodes + d.nodes_per_rack - 1) / d.nodes_per_rack;
  if (must_liquid) {
    d.cooling_why = node.liquid_only ? "the design is liquid-cooled only, through a coolant "
                                       "distribution unit (CDU)"
                                     : "a node exceeds an air-cooled rack";
  } else if (d.rack_kw > kAirRackLimitKw + 1e-9) {
    d.rear_door = true;
    d.cooling_why = fmt::format(
        "{:.1f} kW per rack is past the {:.0f} kW air takes off a rack: rear-door heat exchangers "
        "or in-row coolers take the rest",
        d.rack_kw, kAirRackLimitKw);
  } else {
    d.cooling_why = fmt::format("{:.1f} kW per rack is within air cooling ({:.0f} kW)", d.rack_kw,
                                kAirRackLimitKw);
  }
  if (site.cooling == Cooling::kLiquid && !node.liquid_only) {
    d.cooling_why +=
        fmt::format("; the site offers liquid, but {} has no liquid-cooled version", node.name);
  }

  // The fabric, for the nodes that talk to each other.
  d.fabric_nodes =
      fabric_gpus < 0 ? d.nodes : std::min(d.nodes, (fabric_gpus + node.gpus - 1) / node.gpus);
  if (d.fabric_nodes > 0) {
    FabricRequest fr;
    fr.nodes = d.fabric_nodes;
    fr.rails = node.compute_nics;
    fr.nic_gbps = node.nic_gbps;
    fr.oversubscription = site.oversubscription;
    fr.switch_ports = DefaultNetworkParts().switch_ports;
    fr.nics_per_optic = node.nics_per_optic;
    fr.links_per_switch_optic = DefaultNetworkParts().links_per_switch_optic;
    SHOAL_ASSIGN_OR_RETURN(d.fabric, DesignFatTree(fr));
  }
  const NetworkParts& parts = DefaultNetworkParts();
  d.network_racks = (d.fabric.Switches() + kSwitchesPerNetworkRack - 1) / kSwitchesPerNetworkRack;
  d.network_kw = (d.fabric.Switches() * parts.switch_power_w +
                  d.fabric.link_ends * parts.transceiver_power_w) /
                 1000;

  SHOAL_ASSIGN_OR_RETURN(d.support, DesignSupport(storage, d.nodes, d.racks, d.fabric));
  d.support_kw = d.support.kw;
  d.it_kw = d.nodes * d.node_kw + d.network_kw + d.support_kw;
  d.facility_kw = d.it_kw * site.pue;
  d.rack_btu_h = d.rack_kw * 1000 * kWattsToBtuPerHour;
  d.total_btu_h = d.it_kw * 1000 * kWattsToBtuPerHour;

  // Cost.
  auto price = site.gpu_price_usd.find(std::string(gpu.model));
  d.gpu_price_usd = price != site.gpu_price_usd.end() ? price->second : GpuPriceUsd(gpu);
  d.gpu_price_source =
      price != site.gpu_price_usd.end() ? "given in the workload" : PriceSource(gpu);
  d.gpus_usd = d.gpus * d.gpu_price_usd;
  d.servers_usd = d.nodes * node.price_without_gpus_usd;
  d.network_usd = d.fabric.Switches() * parts.switch_price_usd +
                  d.fabric.link_ends * parts.transceiver_price_usd +
                  d.fabric.Cables() * parts.cable_price_usd;
  d.support_usd = d.support.Usd();
  d.capex_usd = d.gpus_usd + d.servers_usd + d.network_usd + d.support_usd;
  d.energy_usd_per_year =
      d.facility_kw * kAverageDrawFraction * 24 * 365 * site.electricity_usd_per_kwh;

  d.failures_per_day = kFailuresPerGpuDay * d.gpus;
  d.mtbf_hours = 24 / d.failures_per_day;

  if (check_limits) {
    if (site.site_power_kw > 0 && d.facility_kw > site.site_power_kw) {
      return Unsatisfiable(
          fmt::format("{} x {} would draw {:.0f} kW at PUE {:.2f}, the site has {:.0f} kW", d.gpus,
                      gpu.model, d.facility_kw, site.pue, site.site_power_kw));
    }
    if (site.budget_usd > 0 && d.capex_usd > site.budget_usd) {
      return Unsatisfiable(fmt::format("{} x {} would cost ${:.1f}M, the budget is ${:.1f}M",
                                       d.gpus, gpu.model, d.capex_usd / 1e6,
                                       site.budget_usd / 1e6));
    }
  }
  return d;
}

CheckpointPlan PlanCheckpoints(double params, int gpus, double write_gbytes_s, double host_gbytes_s,
                               double read_gbytes_s) {
  CheckpointPlan c;
  gpus = std::max(1, gpus);
  c.checkpoint_bytes = kCheckpointBytesPerParam * params;
  c.write_gbytes_s = write_gbytes_s;
  c.write_s = write_gbytes_s > 0 ? c.checkpoint_bytes / (write_gbytes_s * 1e9) : 0;
  c.stall_s = host_gbytes_s > 0
                  ? kCheckpointFixedStallS + c.checkpoint_bytes / gpus / (host_gbytes_s * 1e9)
                  : c.write_s;
  c.restart_s = kRestartS + (read_gbytes_s > 0 ? c.checkpoint_bytes / (read_gbytes_s * 1e9) : 0);
  const double mtbf_s = 86400 / (kFailuresPerGpuDay * gpus);
  // Young (1974): the interval that minimises lost time is sqrt(2 x stall x
  // MTBF); each failure also loses half an interval of work on average and a
  // restart.
  c.interval_s = std::max(std::sqrt(2 * c.stall_s * mtbf_s), c.write_s);
  c.overhead =
      (c.interval_s > 0 ? c.stall_s / c.interval_s : 0) + (c.interval_s / 2 + c.restart_s) / mtbf_s;
  c.overhead = std::min(c.overhead, 0.99);
  return c;
}

}  // namespace shoal::plan
