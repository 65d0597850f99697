// What the sizing model assumes about hardware beyond the GPU datasheet:
// the fraction of peak that GPUs reach in practice (measured, with sources),
// the server and rack designs GPUs come in, the network parts, and the prices
// used for cost. Every figure carries a source string, and figures that are
// Shoal's own assumptions say so. Static tables; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "catalog/gpus.h"

namespace shoal::plan {

// Fractions of the datasheet peak that a GPU sustains.
struct Achieved {
  double gemm_16 = 0;        // large bf16/fp16 GEMM, of the bf16 (fp16) peak
  double gemm_fp8 = 0;       // large fp8 GEMM, of the fp8 peak
  double hbm = 0;            // streaming memory bandwidth, of the peak
  double scaleup_busbw = 0;  // NVLink/xGMI all-reduce bus bandwidth at 16 GiB, of the
                             // per-direction link figure (above 1 with NVLink SHARP)
  std::string_view source;
  double attention = 0;  // fused (flash) attention forward + backward, of the bf16 peak;
                         // AchievedFor fills 0 as 0.75 of gemm_16 (FlashAttention-2 on A100)
};
Achieved AchievedFor(const catalog::GpuSpec& gpu);

// A server (or an NVL72 compute tray) that holds GPUs.
struct NodeDesign {
  std::string_view name;     // "dgx-h100"
  std::string_view profile;  // node profile for cluster files; empty: none
  int gpus = 8;
  int nvlink_domain_gpus = 8;    // GPUs in one NVLink domain (72 for NVL72, across trays)
  double max_power_w = 0;        // the node's maximum draw, all GPUs at TDP
  int rack_units = 0;            // height; 0 for trays that only come as a whole rack
  int nodes_per_fixed_rack = 0;  // NVL72: 18 trays in one rack; 0: racks are filled by power
  int compute_nics = 8;          // scale-out NICs (one per rail)
  double nic_gbps = 400;         // per NIC
  // NICs behind one optical module: 2 where twin-port OSFP cages serve the
  // NICs in pairs (DGX H100, H200 and B200: four OSFP ports for eight
  // single-port ConnectX-7, NVIDIA DGX BasePOD RA).
  int nics_per_optic = 1;
  double psu_w = 3300;                // rating of one power supply
  bool liquid_only = false;           // no air-cooled version exists
  int cpus = 0;                       // hardware threads, for cluster files without a profile
  int memory_gib = 0;                 // host memory, same
  double price_without_gpus_usd = 0;  // chassis, CPUs, memory, NICs
  // The vendor's reference rack: this many nodes per rack where the site
  // states no rack power (0: racks are filled to Shoal's air limit).
  int reference_rack_nodes = 0;
  std::string_view reference_rack_source = {};
  std::string_view source;
};
const NodeDesign& NodeDesignFor(const catalog::GpuSpec& gpu);

// Price per GPU: the catalogue's list price where it has one, else Shoal's
// indicative assumption (see `PriceSource`).
double GpuPriceUsd(const catalog::GpuSpec& gpu);
std::string PriceSource(const catalog::GpuSpec& gpu);

// The scale-out network parts: a radix-64 400G switch (NVIDIA Quantum-2
// QM9700 class), cables and transceivers.
struct NetworkParts {
  int switch_ports = 64;
  double switch_power_w = 1720;
  double switch_price_usd = 30000;
  double transceiver_price_usd = 1000;  // per 400G link end (a twin-port module: two)
  double transceiver_power_w = 12;      // same
  int links_per_switch_optic = 2;       // twin-port OSFP: 32 cages for 64 ports
  double cable_price_usd = 150;
  std::string_view source;
};
const NetworkParts& DefaultNetworkParts();

}  // namespace shoal::plan
