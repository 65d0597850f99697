// The GPU catalogue: what each GPU model should do, with the source of every
// figure. `shoal plan` sizes clusters from it, `shoal bench` compares measured
// results with it, and the agent maps the names that drivers report onto it.
//
// The table is static and immutable; every function here is thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::catalog {

// Numeric precisions that the catalogue gives peak throughput for.
enum class Precision { kFp64, kFp64Tensor, kFp32, kTf32, kBf16, kFp16, kFp8, kFp4, kInt8 };

std::string_view PrecisionName(Precision p);  // "fp64", "fp64-tensor", "fp32", "tf32", "bf16", ...

struct GpuSpec {
  std::string_view model;   // canonical name, as in node profiles: "H100-SXM-80GB"
  std::string_view vendor;  // "NVIDIA", "AMD"
  std::string_view form;    // "SXM5", "PCIe", "OAM", ...
  // Peak dense throughput in TFLOP/s (TOP/s for int8), without sparsity;
  // 0 where the GPU has no such unit.
  double fp64_tflops = 0;
  double fp64_tensor_tflops = 0;
  double fp32_tflops = 0;
  double tf32_tflops = 0;
  double bf16_tflops = 0;
  double fp16_tflops = 0;
  double fp8_tflops = 0;
  double fp4_tflops = 0;
  double int8_tops = 0;
  int64_t memory_mib = 0;      // nominal HBM/GDDR size ("80GB" is 80 GiB here)
  double memory_bw_gbps = 0;   // GB/s (10^9 bytes), peak
  double scaleup_bw_gbps = 0;  // NVLink/Infinity Fabric per GPU, one direction, GB/s; 0: none
  int scaleup_domain = 1;      // GPUs in one NVLink/NVSwitch domain in its usual node design
  double pcie_bw_gbps = 0;     // host link per direction, GB/s (Gen4 x16 ~ 32, Gen5 x16 ~ 64)
  double tdp_w = 0;
  double price_usd = 0;     // indicative list price per GPU; 0: unknown
  std::string_view source;  // where the figures come from

  // Peak for a precision (0 where unsupported).
  double PeakTflops(Precision p) const;
};

// Every GPU model Shoal knows.
const std::vector<GpuSpec>& Gpus();

// By canonical name or a common alias ("H100", "h100-sxm", "A100-80GB"),
// case-insensitive. Null when unknown.
const GpuSpec* FindGpu(std::string_view name);

// By the name a driver reports (NVML's nvmlDeviceGetName, e.g. "NVIDIA H100
// 80GB HBM3", "NVIDIA H200", "NVIDIA A100-SXM4-80GB") and the memory it
// reports in MiB, which tells apart variants that share a name. Null when
// unknown.
const GpuSpec* FindGpuByDeviceName(std::string_view device_name, int64_t memory_mib);

// Canonical names, for error messages and `--help`.
std::vector<std::string> GpuNames();

// "unknown GPU 'h101' (did you mean 'h100'?)": the nearest name or alias
// when it is a near miss, else the canonical names.
std::string UnknownGpuMessage(std::string_view name);

}  // namespace shoal::catalog
