#include "catalog/gpus.h"

#include <cmath>
#include <cstdlib>
#include <span>

#include "core/strings.h"

namespace shoal::catalog {

namespace {

constexpr int64_t kGib = 1024;  // MiB per GiB

// Where most figures come from. data/compiled/gpu_specs.csv transcribes the
// vendors' datasheets (sparse figures halved to dense) and
// stas00/ml-engineering's tables; each row names its source (data/README.md).
#define SHOAL_SPECS_CSV "data/compiled/gpu_specs.csv"

// Common names that are not canonical, lower case. A bare family name means
// the part most clusters buy: the SXM board where there is one, the larger
// memory where there are two.
struct Alias {
  std::string_view alias;
  std::string_view model;
};
constexpr Alias kAliases[] = {
    {"a100", "A100-SXM4-80GB"},
    {"a100-80gb", "A100-SXM4-80GB"},
    {"a100-sxm", "A100-SXM4-80GB"},
    {"a100-sxm4", "A100-SXM4-80GB"},
    {"a100-40gb", "A100-SXM4-40GB"},
    {"a100-pcie", "A100-PCIE-80GB"},
    {"h100", "H100-SXM-80GB"},
    {"h100-sxm", "H100-SXM-80GB"},
    {"h100-80gb", "H100-SXM-80GB"},
    {"h100-pcie", "H100-PCIE-80GB"},
    {"h100-nvl", "H100-NVL-94GB"},
    {"h200", "H200-SXM-141GB"},
    {"h200-sxm", "H200-SXM-141GB"},
    {"h200-nvl", "H200-NVL-141GB"},
    {"b200", "B200-SXM-180GB"},
    {"gb200", "GB200-186GB"},
    {"gb200-nvl72", "GB200-186GB"},
    {"l40s", "L40S-48GB"},
    {"l4", "L4-24GB"},
    {"mi300x", "MI300X-192GB"},
    {"mi325x", "MI325X-256GB"},
    {"v100", "V100-SXM2-32GB"},
    {"v100-32gb", "V100-SXM2-32GB"},
    {"t4", "T4-16GB"},
    {"a10", "A10-24GB"},
};

// NVIDIA Ampere, the A100 boards.
constexpr GpuSpec kNvidiaA100[] = {
    {
        .model = "A100-SXM4-40GB",
        .vendor = "NVIDIA",
        .form = "SXM4",
        .fp64_tflops = 9.7,
        .fp64_tensor_tflops = 19.5,
        .fp32_tflops = 19.5,
        .tf32_tflops = 156,
        .bf16_tflops = 312,
        .fp16_tflops = 312,
        .int8_tops = 624,
        .memory_mib = 40 * kGib,
        .memory_bw_gbps = 1555,
        .scaleup_bw_gbps = 300,
        .scaleup_domain = 8,
        .pcie_bw_gbps = 32,
        .tdp_w = 400,
        .source =
            SHOAL_SPECS_CSV " row A100-40GB SXM4 (NVIDIA A100 datasheet; the CSV marks the "
                            "40GB bandwidth 'recalled: verify'); NVLink 3 via NVSwitch 600 GB/s "
                            "bidirectional = 300 per direction; PCIe Gen4 x16",
    },
    {
        .model = "A100-SXM4-80GB",
        .vendor = "NVIDIA",
        .form = "SXM4",
        .fp64_tflops = 9.7,
        .fp64_tensor_tflops = 19.5,
        .fp32_tflops = 19.5,
        .tf32_tflops = 156,
        .bf16_tflops = 312,
        .fp16_tflops = 312,
        .int8_tops = 624,
        .memory_mib = 80 * kGib,
        .memory_bw_gbps = 2039,
        .scaleup_bw_gbps = 300,
        .scaleup_domain = 8,
        .pcie_bw_gbps = 32,
        .tdp_w = 400,
        .source =
            SHOAL_SPECS_CSV " row A100-80GB SXM4 (NVIDIA A100 datasheet; stas00/ml-engineering "
                            "tables: 80GB HBM2e 2.0 TB/s, 400 W), confidence high",
    },
    {
        .model = "A100-PCIE-40GB",
        .vendor = "NVIDIA",
        .form = "PCIe",
        .fp64_tflops = 9.7,
        .fp64_tensor_tflops = 19.5,
        .fp32_tflops = 19.5,
        .tf32_tflops = 156,
        .bf16_tflops = 312,
        .fp16_tflops = 312,
        .int8_tops = 624,
        .memory_mib = 40 * kGib,
        .memory_bw_gbps = 1555,
        .pcie_bw_gbps = 32,
        .tdp_w = 250,
        .source = SHOAL_SPECS_CSV
        " row A100-40GB PCIe (NVIDIA A100 datasheet, 'recalled'); the "
        "optional NVLink bridge joins pairs only, so the usual node is PCIe only "
        "(as node profile pcie-a100-4)",
    },
    {
        .model = "A100-PCIE-80GB",
        .vendor = "NVIDIA",
        .form = "PCIe",
        .fp64_tflops = 9.7,
        .fp64_tensor_tflops = 19.5,
        .fp32_tflops = 19.5,
        .tf32_tflops = 156,
        .bf16_tflops = 312,
        .fp16_tflops = 312,
        .int8_tops = 624,
        .memory_mib = 80 * kGib,
        .memory_bw_gbps = 1935,
        .pcie_bw_gbps = 32,
        .tdp_w = 300,
        .source = SHOAL_SPECS_CSV
        " row A100-80GB PCIe (NVIDIA A100 datasheet; stas00 1.94 TB/s, "
        "300 W); NVLink bridge pairs only, modelled as PCIe only like pcie-a100-4",
    },
};

// NVIDIA Volta, Turing and the Ampere inference card.
constexpr GpuSpec kNvidiaVoltaTuringA10[] = {
    {
        .model = "V100-SXM2-32GB",
        .vendor = "NVIDIA",
        .form = "SXM2",
        .fp64_tflops = 7.8,
        .fp32_tflops = 15.7,
        .fp16_tflops = 125,
        .memory_mib = 32 * kGib,
        .memory_bw_gbps = 900,
        .scaleup_bw_gbps = 150,
        .scaleup_domain = 4,
        .pcie_bw_gbps = 16,
        .tdp_w = 300,
        .source = "cli99/llm-analysis gpu_configs/v100-sxm-32gb.json (fp16 125 TFLOPS, "
                  "900 GB/s, NVLink 150 GB/s; Apache-2.0); FP64 7.8 and FP32 15.7 TFLOPS from "
                  "the NVIDIA V100 datasheet (SXM2); no bf16 unit; 300 W and the 4-GPU NVLink "
                  "quad as node profile v100-8; PCIe Gen3 x16",
    },
    {
        .model = "T4-16GB",
        .vendor = "NVIDIA",
        .form = "PCIe",
        .fp32_tflops = 8.1,
        .fp16_tflops = 65,
        .int8_tops = 130,
        .memory_mib = 16 * kGib,
        .memory_bw_gbps = 320,
        .pcie_bw_gbps = 16,
        .tdp_w = 70,
        .source = "NVIDIA T4 datasheet (not in gpu_specs.csv): FP32 8.1, mixed-precision FP16 65 "
                  "TFLOPS, INT8 130 TOPS, 16 GB GDDR6 at 320 GB/s, 70 W, PCIe Gen3 x16",
    },
    {
        .model = "A10-24GB",
        .vendor = "NVIDIA",
        .form = "PCIe",
        .fp32_tflops = 31.2,
        .tf32_tflops = 62.5,
        .bf16_tflops = 125,
        .fp16_tflops = 125,
        .int8_tops = 250,
        .memory_mib = 24 * kGib,
        .memory_bw_gbps = 600,
        .pcie_bw_gbps = 32,
        .tdp_w = 150,
        .source = "cli99/llm-analysis gpu_configs/a10-pcie-28gb.json (fp16 125 TFLOPS, "
                  "int8 250, 600 GB/s; Apache-2.0; its 28 GB is not the A10's 24 GB); FP32 31.2 "
                  "and TF32 62.5 TFLOPS, 24 GB GDDR6, 150 W from the NVIDIA A10 datasheet",
    },
};

// NVIDIA Hopper: H100 and H200.
constexpr GpuSpec kNvidiaHopper[] = {
    {
        .model = "H100-SXM-80GB",
        .vendor = "NVIDIA",
        .form = "SXM5",
        .fp64_tflops = 34,
        .fp64_tensor_tflops = 67,
        .fp32_tflops = 67,
        .tf32_tflops = 494.5,
        .bf16_tflops = 989,
        .fp16_tflops = 989,
        .fp8_tflops = 1979,
        .int8_tops = 1979,
        .memory_mib = 80 * kGib,
        .memory_bw_gbps = 3350,
        .scaleup_bw_gbps = 450,
        .scaleup_domain = 8,
        .pcie_bw_gbps = 64,
        .tdp_w = 700,
        .price_usd = 30000,
        .source = SHOAL_SPECS_CSV " row H100 SXM5 (nvidia.com/en-us/data-center/h100; stas00 "
                                  "tables), confidence high; price: HF hardware page MSRP $30k "
                                  "(huggingface.co/hardware/h100)",
    },
    {
        .model = "H100-PCIE-80GB",
        .vendor = "NVIDIA",
        .form = "PCIe",
        .fp64_tflops = 26,
        .fp64_tensor_tflops = 51,
        .fp32_tflops = 51,
        .tf32_tflops = 378,
        .bf16_tflops = 756,
        .fp16_tflops = 756,
        .fp8_tflops = 1513,
        .int8_tops = 1513,
        .memory_mib = 80 * kGib,
        .memory_bw_gbps = 2000,
        .pcie_bw_gbps = 64,
        .tdp_w = 350,
        .source =
            SHOAL_SPECS_CSV " row H100 PCIe (NVIDIA H100 datasheet; stas00 tables; FP64 "
                            "'recalled'); the NVLink bridge is optional, modelled as PCIe only",
    },
    {
        .model = "H100-NVL-94GB",
        .vendor = "NVIDIA",
        .form = "PCIe",
        .fp64_tflops = 30,
        .fp64_tensor_tflops = 60,
        .fp32_tflops = 60,
        .tf32_tflops = 417.5,
        .bf16_tflops = 835.5,
        .fp16_tflops = 835.5,
        .fp8_tflops = 1670.5,
        .int8_tops = 1670.5,
        .memory_mib = 94 * kGib,
        .memory_bw_gbps = 3900,
        .scaleup_bw_gbps = 300,
        .scaleup_domain = 2,
        .pcie_bw_gbps = 64,
        .tdp_w = 400,
        .source = SHOAL_SPECS_CSV
        " row H100-NVL (NVIDIA H100 datasheet NVL column, sparse "
        "halved; 'recalled: verify'); sold as bridged pairs (NVLink 300 GB/s per "
        "direction); 400 W (DCGM diag-skus target_power 399-400)",
    },
    {
        .model = "H200-SXM-141GB",
        .vendor = "NVIDIA",
        .form = "SXM5",
        .fp64_tflops = 34,
        .fp64_tensor_tflops = 67,
        .fp32_tflops = 67,
        .tf32_tflops = 494.5,
        .bf16_tflops = 989,
        .fp16_tflops = 989,
        .fp8_tflops = 1979,
        .int8_tops = 1979,
        .memory_mib = 141 * kGib,
        .memory_bw_gbps = 4800,
        .scaleup_bw_gbps = 450,
        .scaleup_domain = 8,
        .pcie_bw_gbps = 64,
        .tdp_w = 700,
        .price_usd = 32000,
        .source = SHOAL_SPECS_CSV " row H200 SXM5 (nvidia.com/en-us/data-center/h200; stas00 "
                                  "tables), confidence high; price: HF hardware page MSRP $32k "
                                  "(huggingface.co/hardware/h200)",
    },
    {
        .model = "H200-NVL-141GB",
        .vendor = "NVIDIA",
        .form = "PCIe",
        .fp64_tflops = 30,
        .fp64_tensor_tflops = 60,
        .fp32_tflops = 60,
        .tf32_tflops = 417.5,
        .bf16_tflops = 835.5,
        .fp16_tflops = 835.5,
        .fp8_tflops = 1670.5,
        .int8_tops = 1670.5,
        .memory_mib = 141 * kGib,
        .memory_bw_gbps = 4800,
        .scaleup_bw_gbps = 450,
        .scaleup_domain = 4,
        .pcie_bw_gbps = 64,
        .tdp_w = 600,
        .source =
            SHOAL_SPECS_CSV " row H200-NVL (nvidia.com H200 page NVL column, compute "
                            "'recalled: verify'); 2- or 4-way NVLink bridge (domain of 4); 600 W "
                            "(stas00 power table; DCGM diag-skus id 233b target_power 600)",
    },
};

// NVIDIA Blackwell.
constexpr GpuSpec kNvidiaBlackwell[] = {
    {
        .model = "B200-SXM-180GB",
        .vendor = "NVIDIA",
        .form = "SXM6",
        .fp64_tflops = 37,
        .fp64_tensor_tflops = 37,
        .fp32_tflops = 80,
        .tf32_tflops = 1125,
        .bf16_tflops = 2250,
        .fp16_tflops = 2250,
        .fp8_tflops = 4500,
        .fp4_tflops = 9000,
        .int8_tops = 4500,
        .memory_mib = 180 * kGib,
        .memory_bw_gbps = 8000,
        .scaleup_bw_gbps = 900,
        .scaleup_domain = 8,
        .pcie_bw_gbps = 64,
        .tdp_w = 1000,
        .source = SHOAL_SPECS_CSV
        " row B200 (DGX B200 datasheet; stas00 tables; FP64 derived), "
        "confidence high; 180 GB usable of 192 physical; 1,000 W is the maximum TGP "
        "(DGX default set point 700 W)",
    },
    {
        .model = "GB200-186GB",
        .vendor = "NVIDIA",
        .form = "NVL72",
        .fp64_tflops = 45,
        .fp64_tensor_tflops = 45,
        .fp32_tflops = 80,
        .tf32_tflops = 1250,
        .bf16_tflops = 2500,
        .fp16_tflops = 2500,
        .fp8_tflops = 5000,
        .fp4_tflops = 10000,
        .int8_tops = 5000,
        .memory_mib = 186 * kGib,
        .memory_bw_gbps = 8000,
        .scaleup_bw_gbps = 900,
        .scaleup_domain = 72,
        .pcie_bw_gbps = 450,
        .tdp_w = 1200,
        .source = SHOAL_SPECS_CSV
        " row GB200 per GPU (nvidia.com/en-us/data-center/gb200-nvl72; "
        "stas00 tables; FP64 from the rack's 3,240 TFLOPS / 72), confidence high; "
        "1.2 kW per GPU (NVIDIA Mission Control power FAQ); host link NVLink-C2C to "
        "Grace, 900 GB/s bidirectional",
    },
};

// NVIDIA Ada Lovelace (inference and graphics).
constexpr GpuSpec kNvidiaAda[] = {
    {
        .model = "L40S-48GB",
        .vendor = "NVIDIA",
        .form = "PCIe",
        .fp32_tflops = 91.6,
        .tf32_tflops = 183,
        .bf16_tflops = 362,
        .fp16_tflops = 362,
        .fp8_tflops = 733,
        .int8_tops = 733,
        .memory_mib = 48 * kGib,
        .memory_bw_gbps = 864,
        .pcie_bw_gbps = 32,
        .tdp_w = 350,
        .source = SHOAL_SPECS_CSV " row L40S (nvidia.com/en-us/data-center/l40s; stas00 tables), "
                                  "confidence high; no FP64 figure given; no NVLink",
    },
    {
        .model = "L4-24GB",
        .vendor = "NVIDIA",
        .form = "PCIe",
        .fp32_tflops = 30.3,
        .tf32_tflops = 60,
        .bf16_tflops = 121,
        .fp16_tflops = 121,
        .fp8_tflops = 242.5,
        .int8_tops = 242.5,
        .memory_mib = 24 * kGib,
        .memory_bw_gbps = 300,
        .pcie_bw_gbps = 32,
        .tdp_w = 72,
        .source = SHOAL_SPECS_CSV " row L4 (NVIDIA L4 datasheet, sparse 242/485 halved), "
                                  "confidence high; no FP64 figure given; no NVLink",
    },
};

// AMD CDNA 3 (Instinct MI300 series).
constexpr GpuSpec kAmdCdna3[] = {
    {
        .model = "MI300X-192GB",
        .vendor = "AMD",
        .form = "OAM",
        .fp64_tflops = 81.7,
        .fp64_tensor_tflops = 163.4,
        .fp32_tflops = 163.4,
        .tf32_tflops = 653.7,
        .bf16_tflops = 1307,
        .fp16_tflops = 1307,
        .fp8_tflops = 2610,
        .int8_tops = 2600,
        .memory_mib = 192 * kGib,
        .memory_bw_gbps = 5300,
        .scaleup_bw_gbps = 448,
        .scaleup_domain = 8,
        .pcie_bw_gbps = 64,
        .tdp_w = 750,
        .source = SHOAL_SPECS_CSV
        " row MI300X (amd.com/en/products/accelerators/instinct/mi300/"
        "mi300x.html; stas00 tables), confidence high; Infinity Fabric 7 x 64 GB/s "
        "peer links = 448 GB/s all-to-all per GPU",
    },
    {
        .model = "MI325X-256GB",
        .vendor = "AMD",
        .form = "OAM",
        .fp64_tflops = 81.7,
        .fp64_tensor_tflops = 163.4,
        .fp32_tflops = 163.4,
        .tf32_tflops = 653.7,
        .bf16_tflops = 1307,
        .fp16_tflops = 1307,
        .fp8_tflops = 2610,
        .int8_tops = 2600,
        .memory_mib = 256 * kGib,
        .memory_bw_gbps = 6000,
        .scaleup_bw_gbps = 448,
        .scaleup_domain = 8,
        .pcie_bw_gbps = 64,
        .tdp_w = 1000,
        .source = SHOAL_SPECS_CSV " row MI325X (amd.com MI325X page; stas00 tables), confidence "
                                  "high; Infinity Fabric 7 x 64 GB/s peer links",
    },
};

// Every group above, in this order (Gpus() and GpuNames() list them so).
const std::vector<GpuSpec>& Table() {
  using Group = std::span<const GpuSpec>;
  static const std::vector<GpuSpec> table = [] {
    std::vector<GpuSpec> all;
    for (Group group : {Group(kNvidiaA100), Group(kNvidiaVoltaTuringA10), Group(kNvidiaHopper),
                        Group(kNvidiaBlackwell), Group(kNvidiaAda), Group(kAmdCdna3)}) {
      all.insert(all.end(), group.begin(), group.end());
    }
    return all;
  }();
  return table;
}

#undef SHOAL_SPECS_CSV

// The family a driver's name reports ("NVIDIA H100 80GB HBM3" -> "h100"),
// with the canonical names it may stand for, in preference order.
struct Family {
  std::string_view token;
  std::vector<std::string_view> models;
};

const std::vector<Family>& Families() {
  static const std::vector<Family> families = {
      {"a100", {"A100-SXM4-80GB", "A100-SXM4-40GB", "A100-PCIE-80GB", "A100-PCIE-40GB"}},
      {"h100", {"H100-SXM-80GB", "H100-PCIE-80GB", "H100-NVL-94GB"}},
      {"h200", {"H200-SXM-141GB", "H200-NVL-141GB"}},
      {"b200", {"B200-SXM-180GB"}},
      {"gb200", {"GB200-186GB"}},
      {"l40s", {"L40S-48GB"}},
      {"l4", {"L4-24GB"}},
      {"a10", {"A10-24GB"}},
      {"t4", {"T4-16GB"}},
      {"v100", {"V100-SXM2-32GB"}},
      {"mi300x", {"MI300X-192GB"}},
      {"mi325x", {"MI325X-256GB"}},
  };
  return families;
}

// Splits a device name into lower-case words at spaces, hyphens and underscores.
std::vector<std::string> Words(std::string_view name) {
  std::vector<std::string> words;
  std::string word;
  for (char c : ToLower(name)) {
    if (c == ' ' || c == '-' || c == '_') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

// "80gb" -> 80 GiB in MiB; 0 when the word is not a memory size.
int64_t WordMemoryMib(std::string_view word) {
  if (word.size() < 3 || word.substr(word.size() - 2) != "gb") return 0;
  auto n = ParseInt(word.substr(0, word.size() - 2));
  return n.ok() && *n > 0 ? *n * kGib : 0;
}

// The board form a device name implies: "pcie" and "nvl" are written out;
// an SXM part's name often says nothing ("NVIDIA H200").
std::string_view WordsForm(const std::vector<std::string>& words) {
  for (const std::string& w : words) {
    if (StartsWith(w, "pcie")) return "PCIe";
    if (w == "nvl") return "NVL";
  }
  return "SXM";
}

bool FormMatches(const GpuSpec& spec, std::string_view form) {
  const bool nvl = spec.model.find("-NVL-") != std::string_view::npos;
  if (form == "NVL") return nvl;
  if (form == "PCIe") return spec.form == "PCIe" && !nvl;
  // A name without a form matches the board the family is usually sold as.
  return !nvl;
}

}  // namespace

std::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp64:
      return "fp64";
    case Precision::kFp64Tensor:
      return "fp64-tensor";
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kFp4:
      return "fp4";
    case Precision::kInt8:
      return "int8";
  }
  return "unknown";
}

double GpuSpec::PeakTflops(Precision p) const {
  switch (p) {
    case Precision::kFp64:
      return fp64_tflops;
    case Precision::kFp64Tensor:
      return fp64_tensor_tflops;
    case Precision::kFp32:
      return fp32_tflops;
    case Precision::kTf32:
      return tf32_tflops;
    case Precision::kBf16:
      return bf16_tflops;
    case Precision::kFp16:
      return fp16_tflops;
    case Precision::kFp8:
      return fp8_tflops;
    case Precision::kFp4:
      return fp4_tflops;
    case Precision::kInt8:
      return int8_tops;
  }
  return 0;
}

const std::vector<GpuSpec>& Gpus() {
  return Table();
}

const GpuSpec* FindGpu(std::string_view name) {
  const std::string lower = ToLower(Trim(name));
  for (const GpuSpec& g : Table()) {
    if (ToLower(g.model) == lower) return &g;
  }
  for (const Alias& a : kAliases) {
    if (a.alias == lower) return FindGpu(a.model);
  }
  return nullptr;
}

const GpuSpec* FindGpuByDeviceName(std::string_view device_name, int64_t memory_mib) {
  const std::vector<std::string> words = Words(device_name);
  const Family* family = nullptr;
  int64_t named_memory_mib = 0;
  for (const std::string& w : words) {
    for (const Family& f : Families()) {
      if (w == f.token) family = &f;
    }
    if (named_memory_mib == 0) named_memory_mib = WordMemoryMib(w);
  }
  if (family == nullptr) return nullptr;
  const std::string_view form = WordsForm(words);
  // Drivers report a little less than the nominal size (an 80 GB H100 shows
  // 81559 MiB); the nearest nominal size among the family's boards wins.
  const int64_t want_mib = memory_mib > 0 ? memory_mib : named_memory_mib;
  const GpuSpec* best = nullptr;
  int64_t best_gap = 0;
  for (std::string_view model : family->models) {
    const GpuSpec* spec = FindGpu(model);
    if (spec == nullptr || !FormMatches(*spec, form)) continue;
    if (want_mib <= 0) return spec;
    const int64_t gap = std::llabs(spec->memory_mib - want_mib);
    if (best == nullptr || gap < best_gap) {
      best = spec;
      best_gap = gap;
    }
  }
  // A size far from every known board is a part the catalogue does not know
  // (an H100 96GB, say), not the nearest one.
  if (best != nullptr && want_mib > 0 &&
      static_cast<double>(best_gap) > 0.1 * static_cast<double>(best->memory_mib)) {
    return nullptr;
  }
  return best;
}

std::string UnknownGpuMessage(std::string_view name) {
  std::vector<std::string_view> names;
  for (const GpuSpec& g : Table())
    names.push_back(g.model);
  std::vector<std::string_view> with_aliases = names;
  for (const Alias& a : kAliases)
    with_aliases.push_back(a.alias);
  return "unknown GPU '" + std::string(name) + "'" + UnknownNameHint(name, with_aliases, &names);
}

std::vector<std::string> GpuNames() {
  std::vector<std::string> names;
  names.reserve(Table().size());
  for (const GpuSpec& g : Table())
    names.emplace_back(g.model);
  return names;
}

}  // namespace shoal::catalog
