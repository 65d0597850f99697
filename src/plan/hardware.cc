#include "plan/hardware.h"

#include <fmt/format.h>

#include "core/strings.h"

namespace shoal::plan {

namespace {

// The measured anchors: data/compiled/measured_bandwidth_anchors.csv
// (mamf-finder GEMM maxima and NCCL busbw from stas00/ml-engineering and
// NVIDIA GTC slides; DCGM dcgmproftester HBM figures from NVIDIA/DCGM).
#define SHOAL_ANCHORS "data/compiled/measured_bandwidth_anchors.csv"

// Used where the anchors have no measurement of a GPU: 0.75 lies inside the
// measured GEMM fractions (0.51 MI300X .. 0.87 A100) and HBM fractions
// (0.68 B200 .. 0.92 GB200).
constexpr double kAssumedFraction = 0.75;

// Fused attention reaches ~0.75 of what cuBLAS GEMMs reach on the same GPU
// (FlashAttention-2, Dao 2023: 73 % of A100 peak forward, 63 % backward, where
// cuBLAS reaches ~87 %); used where a GPU has no measurement of its own.
constexpr double kAttentionOfGemm = 0.75;
// On Hopper the same kernels do worse: FlashAttention-2 reaches 335 TFLOPS
// forward + backward on H100 (Dao 2023, section 4.1), "only 35 % utilization"
// (FlashAttention-3, Shah et al. 2024, arXiv 2407.08608). FlashAttention-3
// and cuDNN 9 kernels reach ~75 %, but came after the H100 runs validated
// here (Megatron-Core r0.8, Llama 3); the planner keeps the measured 2023-24
// figure, a conservative one.
constexpr double kHopperAttention = 335.0 / 989;

struct AchievedRow {
  std::string_view model_prefix;  // matches canonical names that start with it
  Achieved achieved;
};

const AchievedRow kAchieved[] = {
    {"A100-SXM4",
     {0.869, 0, 0.767, 0.783,
      SHOAL_ANCHORS ": gemm_bf16 A100 SXM 271.2 of 312 TFLOPS (mamf-finder); hbm_bw_dcgm "
                    "A100-SXM4-80GB 1564 of 2039 GB/s; allreduce_busbw 8xA100 NVLink3 234.89 of "
                    "300 GB/s (nccl-tests 16 GiB)"}},
    {"A100-PCIE",
     {0.811, 0, 0.767, 0.774,
      SHOAL_ANCHORS ": gemm_bf16 A100 PCIe 252.9 of 312; HBM fraction as A100 SXM (DCGM); "
                    "collectives over PCIe Gen4: allreduce_busbw 24 of 31 GB/s"}},
    {"H100-SXM",
     {0.803, 0.709, 0.758, 1.067,
      SHOAL_ANCHORS ": gemm_bf16 H100 SXM 794.5 of 989; gemm_fp8 1402.6 of 1979; hbm_bw_dcgm "
                    "H100 2540 of 3350; allreduce_busbw H100 NVLS (NVLink SHARP) 480 of 450; fused "
                    "attention 335 of 989 (FlashAttention-2 on H100, Dao 2023)",
      kHopperAttention}},
    {"H200-SXM",
     {0.803, 0.734, 0.758, 1.072,
      SHOAL_ANCHORS ": gemm_bf16 'H200 same' as H100 794.5 of 989; gemm_fp8 H200 1453.4 of 1979; "
                    "allreduce_busbw 8xH200 NVLS 482.26 of 450; HBM fraction assumed as H100's "
                    "(no H200 measurement); fused attention as H100 (FlashAttention-2, Dao 2023)",
      kHopperAttention}},
    {"B200",
     {0.776, 0.763, 0.679, 0.944,
      SHOAL_ANCHORS ": gemm_bf16 B200 1745 of 2250; gemm_fp8 3432.5 of 4500; hbm_bw_dcgm B200 "
                    "5430 of 8000; allreduce_busbw B200 NVLS 850 of 900"}},
    {"GB200",
     {0.729, 0.549, 0.919, 0.944,
      SHOAL_ANCHORS
      ": gemm_bf16 GB200 1822 of 2500; gemm_fp8 GB200 2744 of 5000 (Azure ND GB200 "
      "v6); hbm_bw GB200 7350 of 8000 (Azure); allreduce_busbw NVL72 SHARP 850 of 900"}},
    {"MI300X",
     {0.511, 0, kAssumedFraction, 0.698,
      SHOAL_ANCHORS ": gemm_bf16 MI300X 668.4 TFLOPS (tunableop) of 1307; allreduce_busbw 8xMI300X "
                    "xGMI 312.91 of 448; no HBM or fp8 measurement: HBM 0.75 assumed, fp8 at the "
                    "bf16 fraction"}},
    {"MI325X",
     {0.601, 0, kAssumedFraction, 0.698,
      SHOAL_ANCHORS ": gemm_bf16 MI325X 784.9 of 1307; collectives as MI300X; HBM 0.75 assumed"}},
};

// Collectives of PCIe-only GPUs run over PCIe at the measured NCCL fraction
// (Gen4 24 of 31 GB/s, Gen5 48 of 63 GB/s).
constexpr double kPcieBusbwFraction = 0.76;

}  // namespace

Achieved AchievedFor(const catalog::GpuSpec& gpu) {
  for (const AchievedRow& row : kAchieved) {
    if (StartsWith(gpu.model, row.model_prefix)) {
      Achieved a = row.achieved;
      if (a.gemm_fp8 == 0) a.gemm_fp8 = a.gemm_16;
      if (a.attention == 0) a.attention = kAttentionOfGemm * a.gemm_16;
      return a;
    }
  }
  Achieved a;
  a.gemm_16 = kAssumedFraction;
  a.gemm_fp8 = kAssumedFraction;
  a.hbm = kAssumedFraction;
  a.attention = kAttentionOfGemm * a.gemm_16;
  a.scaleup_busbw = gpu.scaleup_bw_gbps > 0 ? 0.78 : kPcieBusbwFraction;
  a.source =
      "Shoal assumption: no measurement of this GPU in the anchors; GEMM and HBM at 0.75 of "
      "peak (inside the measured range of other GPUs), collectives at the A100 NVLink "
      "fraction (0.78) or the measured PCIe fraction (0.76, " SHOAL_ANCHORS ")";
  return a;
}

#undef SHOAL_ANCHORS

namespace {

// Shoal's assumptions for hosts of PCIe GPUs, which no vendor specifies: a
// 2-socket server drawing 1.2 kW besides its GPUs.
constexpr std::string_view kPcieHost =
    "Shoal assumption: a 4-GPU 2-socket PCIe server (as node profiles pcie-l40s-4 and "
    "pcie-a100-4), drawing the GPUs' TDP plus 1.2 kW for the host; 2 x 200G NICs; price "
    "without GPUs indicative";

const NodeDesign kDesigns[] = {
    {.name = "dgx-a100",
     .profile = "dgx-a100",
     .gpus = 8,
     .nvlink_domain_gpus = 8,
     .max_power_w = 6500,
     .rack_units = 6,
     .compute_nics = 8,
     .nic_gbps = 200,
     .psu_w = 3000,
     .cpus = 256,
     .memory_gib = 2048,
     .price_without_gpus_usd = 50000,
     .source = "NVIDIA DGX A100 datasheet: 6.5 kW max, 6U, 8 x 200 Gb/s HDR ConnectX-6 for "
               "compute, 3 kW power supplies; price without GPUs is a Shoal assumption"},
    {.name = "dgx-h100",
     .profile = "dgx-h100",
     .gpus = 8,
     .nvlink_domain_gpus = 8,
     .max_power_w = 10200,
     .rack_units = 8,
     .compute_nics = 8,
     .nic_gbps = 400,
     .nics_per_optic = 2,
     .psu_w = 3300,
     .cpus = 224,
     .memory_gib = 2048,
     .price_without_gpus_usd = 60000,
     .reference_rack_nodes = 4,
     .reference_rack_source =
         "NVIDIA DGX SuperPOD reference architecture (DGX H100): four DGX H100 "
         "per rack, ~41 kW",
     .source = "NVIDIA DGX H100 datasheet: ~10.2 kW max, 8U, 8 x 400 Gb/s NDR ConnectX-7 (one per "
               "GPU, rail-optimised in DGX SuperPOD), 3.3 kW supplies; price without GPUs is a "
               "Shoal assumption"},
    {.name = "hgx-h200",
     .profile = "hgx-h200",
     .gpus = 8,
     .nvlink_domain_gpus = 8,
     .max_power_w = 10200,
     .rack_units = 8,
     .compute_nics = 8,
     .nic_gbps = 400,
     .nics_per_optic = 2,
     .psu_w = 3300,
     .cpus = 224,
     .memory_gib = 2048,
     .price_without_gpus_usd = 60000,
     .reference_rack_nodes = 4,
     .reference_rack_source = "the DGX H100 chassis and power, racked as NVIDIA's DGX SuperPOD "
                              "reference architecture racks it: four per rack, ~41 kW",
     .source = "NVIDIA DGX H200 datasheet: ~10.2 kW max, 8U, 8 x 400 Gb/s ConnectX-7; price "
               "without GPUs is a Shoal assumption"},
    {.name = "dgx-b200",
     .profile = "dgx-b200",
     .gpus = 8,
     .nvlink_domain_gpus = 8,
     .max_power_w = 14300,
     .rack_units = 10,
     .compute_nics = 8,
     .nic_gbps = 400,
     .nics_per_optic = 2,
     .psu_w = 3300,
     .cpus = 224,
     .memory_gib = 2048,
     .price_without_gpus_usd = 70000,
     .source = "NVIDIA DGX B200 datasheet: ~14.3 kW max, 10U, 8 x 400 Gb/s (ConnectX-7); price "
               "without GPUs is a Shoal assumption"},
    {.name = "gb200-nvl72-tray",
     .profile = "",
     .gpus = 4,
     .nvlink_domain_gpus = 72,
     .max_power_w = 120000.0 / 18,
     .rack_units = 0,
     .nodes_per_fixed_rack = 18,
     .compute_nics = 4,
     .nic_gbps = 400,
     .psu_w = 5500,
     .liquid_only = true,
     .cpus = 144,
     .memory_gib = 960,
     .price_without_gpus_usd = 60000,
     .source = "NVIDIA GB200 NVL72: one liquid-cooled rack of 18 compute trays (2 Grace CPUs, 4 "
               "GPUs each) and 9 NVLink switch trays, ~120 kW per rack (shared here over the 18 "
               "trays); DGX SuperPOD GB200 RA: NDR 400 Gb/s InfiniBand per GPU; Grace 72 cores "
               "and 480 GB LPDDR5X each; power-shelf supply rating and price are Shoal "
               "assumptions"},
    {.name = "oam-mi300x-8",
     .profile = "",
     .gpus = 8,
     .nvlink_domain_gpus = 8,
     .max_power_w = 8 * 750 + 2500,
     .rack_units = 8,
     .compute_nics = 8,
     .nic_gbps = 400,
     .psu_w = 3000,
     .cpus = 384,
     .memory_gib = 2048,
     .price_without_gpus_usd = 60000,
     .source = "Shoal assumption for an 8-GPU AMD Instinct MI300X platform (OAM, Infinity Fabric "
               "all-to-all): GPUs at 750 W TDP plus a 2.5 kW 2-socket host, one 400G NIC per GPU"},
    {.name = "oam-mi325x-8",
     .profile = "",
     .gpus = 8,
     .nvlink_domain_gpus = 8,
     .max_power_w = 8 * 1000 + 2500,
     .rack_units = 8,
     .compute_nics = 8,
     .nic_gbps = 400,
     .psu_w = 3300,
     .cpus = 384,
     .memory_gib = 2048,
     .price_without_gpus_usd = 60000,
     .source = "Shoal assumption for an 8-GPU AMD Instinct MI325X platform: GPUs at 1,000 W TDP "
               "plus a 2.5 kW host, one 400G NIC per GPU"},
    {.name = "v100-8",
     .profile = "v100-8",
     .gpus = 8,
     .nvlink_domain_gpus = 4,
     .max_power_w = 3500,
     .rack_units = 3,
     .compute_nics = 4,
     .nic_gbps = 100,
     .psu_w = 1600,
     .cpus = 80,
     .memory_gib = 512,
     .price_without_gpus_usd = 20000,
     .source = "NVIDIA DGX-1 (V100) datasheet: 3,500 W, 3U, 4 x 100 Gb/s EDR InfiniBand, 1.6 kW "
               "supplies; price without GPUs is a Shoal assumption"},
    {.name = "pcie-l40s-4",
     .profile = "pcie-l40s-4",
     .gpus = 4,
     .nvlink_domain_gpus = 1,
     .max_power_w = 4 * 350 + 1200,
     .rack_units = 2,
     .compute_nics = 2,
     .nic_gbps = 200,
     .psu_w = 2000,
     .cpus = 128,
     .memory_gib = 1024,
     .price_without_gpus_usd = 20000,
     .source = kPcieHost},
    {.name = "pcie-a100-4",
     .profile = "pcie-a100-4",
     .gpus = 4,
     .nvlink_domain_gpus = 1,
     .max_power_w = 4 * 300 + 1200,
     .rack_units = 2,
     .compute_nics = 2,
     .nic_gbps = 200,
     .psu_w = 2000,
     .cpus = 128,
     .memory_gib = 1024,
     .price_without_gpus_usd = 20000,
     .source = kPcieHost},
    {.name = "pcie-h100-4",
     .profile = "",
     .gpus = 4,
     .nvlink_domain_gpus = 1,
     .max_power_w = 4 * 350 + 1200,
     .rack_units = 2,
     .compute_nics = 2,
     .nic_gbps = 200,
     .psu_w = 2000,
     .cpus = 128,
     .memory_gib = 1024,
     .price_without_gpus_usd = 20000,
     .source = kPcieHost},
    {.name = "pcie-h100nvl-4",
     .profile = "",
     .gpus = 4,
     .nvlink_domain_gpus = 2,
     .max_power_w = 4 * 400 + 1200,
     .rack_units = 2,
     .compute_nics = 2,
     .nic_gbps = 200,
     .psu_w = 2000,
     .cpus = 128,
     .memory_gib = 1024,
     .price_without_gpus_usd = 20000,
     .source = kPcieHost},
    {.name = "pcie-h200nvl-4",
     .profile = "",
     .gpus = 4,
     .nvlink_domain_gpus = 4,
     .max_power_w = 4 * 600 + 1200,
     .rack_units = 2,
     .compute_nics = 2,
     .nic_gbps = 200,
     .psu_w = 2400,
     .cpus = 128,
     .memory_gib = 1024,
     .price_without_gpus_usd = 20000,
     .source = kPcieHost},
    {.name = "pcie-l4-4",
     .profile = "",
     .gpus = 4,
     .nvlink_domain_gpus = 1,
     .max_power_w = 4 * 72 + 800,
     .rack_units = 1,
     .compute_nics = 1,
     .nic_gbps = 200,
     .psu_w = 1200,
     .cpus = 64,
     .memory_gib = 512,
     .price_without_gpus_usd = 12000,
     .source = "Shoal assumption: a 1U 4-GPU L4 inference server, GPUs at 72 W plus an 0.8 kW "
               "host, one 200G NIC"},
    {.name = "t4-2",
     .profile = "t4-2",
     .gpus = 2,
     .nvlink_domain_gpus = 1,
     .max_power_w = 2 * 70 + 500,
     .rack_units = 1,
     .compute_nics = 1,
     .nic_gbps = 100,
     .psu_w = 800,
     .cpus = 64,
     .memory_gib = 256,
     .price_without_gpus_usd = 8000,
     .source = "Shoal assumption for node profile t4-2: GPUs at 70 W plus a 0.5 kW host, one "
               "100G NIC"},
    {.name = "a10-1",
     .profile = "a10-1",
     .gpus = 1,
     .nvlink_domain_gpus = 1,
     .max_power_w = 150 + 450,
     .rack_units = 1,
     .compute_nics = 1,
     .nic_gbps = 100,
     .psu_w = 800,
     .cpus = 32,
     .memory_gib = 128,
     .price_without_gpus_usd = 6000,
     .source = "Shoal assumption for node profile a10-1: GPU at 150 W plus a 0.45 kW host, one "
               "100G NIC"},
};

struct DesignOf {
  std::string_view model;
  std::string_view design;
};
constexpr DesignOf kDesignOf[] = {
    {"A100-SXM4-40GB", "dgx-a100"},
    {"A100-SXM4-80GB", "dgx-a100"},
    {"A100-PCIE-40GB", "pcie-a100-4"},
    {"A100-PCIE-80GB", "pcie-a100-4"},
    {"V100-SXM2-32GB", "v100-8"},
    {"T4-16GB", "t4-2"},
    {"A10-24GB", "a10-1"},
    {"H100-SXM-80GB", "dgx-h100"},
    {"H100-PCIE-80GB", "pcie-h100-4"},
    {"H100-NVL-94GB", "pcie-h100nvl-4"},
    {"H200-SXM-141GB", "hgx-h200"},
    {"H200-NVL-141GB", "pcie-h200nvl-4"},
    {"B200-SXM-180GB", "dgx-b200"},
    {"GB200-186GB", "gb200-nvl72-tray"},
    {"L40S-48GB", "pcie-l40s-4"},
    {"L4-24GB", "pcie-l4-4"},
    {"MI300X-192GB", "oam-mi300x-8"},
    {"MI325X-256GB", "oam-mi325x-8"},
};

// Indicative prices per GPU for models without a list price in the
// catalogue: Shoal's assumptions, to be overridden with a workload's
// [constraints] gpu_price when a quote exists.
struct AssumedPrice {
  std::string_view model;
  double usd;
};
constexpr AssumedPrice kAssumedPrices[] = {
    {"A100-SXM4-40GB", 10000}, {"A100-SXM4-80GB", 15000}, {"A100-PCIE-40GB", 9000},
    {"A100-PCIE-80GB", 14000}, {"V100-SXM2-32GB", 3000},  {"T4-16GB", 1500},
    {"A10-24GB", 3000},        {"H100-PCIE-80GB", 25000}, {"H100-NVL-94GB", 28000},
    {"H200-NVL-141GB", 30000}, {"B200-SXM-180GB", 40000}, {"GB200-186GB", 45000},
    {"L40S-48GB", 9000},       {"L4-24GB", 2500},         {"MI300X-192GB", 15000},
    {"MI325X-256GB", 20000},
};

}  // namespace

const NodeDesign& NodeDesignFor(const catalog::GpuSpec& gpu) {
  std::string_view name = "pcie-l40s-4";
  for (const DesignOf& d : kDesignOf) {
    if (d.model == gpu.model) name = d.design;
  }
  for (const NodeDesign& d : kDesigns) {
    if (d.name == name) return d;
  }
  return kDesigns[0];
}

double GpuPriceUsd(const catalog::GpuSpec& gpu) {
  if (gpu.price_usd > 0) return gpu.price_usd;
  for (const AssumedPrice& p : kAssumedPrices) {
    if (p.model == gpu.model) return p.usd;
  }
  return 0;
}

std::string PriceSource(const catalog::GpuSpec& gpu) {
  if (gpu.price_usd > 0) return std::string(gpu.source);
  return fmt::format(
      "Shoal assumption: indicative street price ${:.0f}k, no public list price; "
      "override with [constraints] gpu_price",
      GpuPriceUsd(gpu) / 1000);
}

const NetworkParts& DefaultNetworkParts() {
  static const NetworkParts parts{
      .source =
          "Shoal assumption for a radix-64 400 Gb/s switch of the NVIDIA Quantum-2 QM9700 "
          "class (64 NDR ports in 32 twin-port OSFP cages, as in DGX SuperPOD, ~1.7 kW), "
          "optics at both ends of every link, priced and powered per 400G link end; prices "
          "indicative",
  };
  return parts;
}

}  // namespace shoal::plan
