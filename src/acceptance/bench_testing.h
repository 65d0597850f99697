// Builders for the bench module's tests: GPU specs made by hand (so the tests
// do not depend on the catalogue's current figures) and results to judge.
#pragma once

#include <string>
#include <vector>

#include "acceptance/results.h"
#include "catalog/gpus.h"

namespace shoal::acceptance::testing {

// An H200 SXM as the catalogue's sources give it (data/compiled/gpu_specs.csv).
inline catalog::GpuSpec H200Spec() {
  catalog::GpuSpec s;
  s.model = "H200-SXM-141GB";
  s.vendor = "NVIDIA";
  s.form = "SXM5";
  s.fp64_tflops = 34;
  s.fp64_tensor_tflops = 67;
  s.fp32_tflops = 67;
  s.tf32_tflops = 494.5;
  s.bf16_tflops = 989;
  s.fp16_tflops = 989;
  s.fp8_tflops = 1979;
  s.memory_mib = 141 * 1024;
  s.memory_bw_gbps = 4800;
  s.scaleup_bw_gbps = 450;
  s.scaleup_domain = 8;
  s.pcie_bw_gbps = 64;
  return s;
}

// A PCIe card without FP8 or NVLink (an A100 PCIe-like part).
inline catalog::GpuSpec PcieSpec() {
  catalog::GpuSpec s;
  s.model = "TEST-PCIE-80GB";
  s.fp64_tflops = 9.7;
  s.fp64_tensor_tflops = 19.5;
  s.tf32_tflops = 156;
  s.bf16_tflops = 312;
  s.fp16_tflops = 312;
  s.memory_mib = 80 * 1024;
  s.memory_bw_gbps = 1935;
  s.pcie_bw_gbps = 32;
  return s;
}

inline GpuInfo Gpu(int index, std::string name = "NVIDIA H200", int64_t memory_mib = 143771) {
  GpuInfo g;
  g.index = index;
  g.name = std::move(name);
  g.uuid = "GPU-0000000" + std::to_string(index);
  g.pci_bus_id = "0000:1" + std::to_string(index) + ":00.0";
  g.memory_mib = memory_mib;
  g.numa_node = index / 4;
  g.cc_major = 9;
  g.cc_minor = 0;
  g.sm_count = 132;
  return g;
}

inline Measurement Figure(TestKind test, std::string metric, int gpu, double value,
                          std::string_view unit) {
  Measurement m;
  m.test = test;
  m.metric = std::move(metric);
  m.gpu = gpu;
  m.value = value;
  m.unit = std::string(unit);
  m.stats.count = 1;
  m.stats.min = m.stats.max = m.stats.mean = m.stats.median = value;
  m.check = "ok";
  return m;
}

// A node of `gpus` H200s with no figures yet.
inline NodeResults Node(int gpus, std::string host = "node1") {
  NodeResults r;
  r.host = std::move(host);
  r.started_ms = 1'700'000'000'000;
  r.finished_ms = r.started_ms + 90'000;
  for (int i = 0; i < gpus; ++i)
    r.gpus.push_back(Gpu(i));
  return r;
}

}  // namespace shoal::acceptance::testing
