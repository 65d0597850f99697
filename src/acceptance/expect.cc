#include "acceptance/expect.h"

#include <fmt/format.h>

#include <algorithm>

#include "acceptance/checks.h"

namespace shoal::acceptance {

namespace {

// Shipped with Shoal (data/README.md; installed under share/shoal/data).
constexpr std::string_view kAnchors = "data/compiled/measured_bandwidth_anchors.csv";

// Fractions of peak. Measured ones come from the anchors file named above
// (stas00/ml-engineering, NVIDIA GTC talks, nvbandwidth, LLMCompass, Azure);
// the ones marked "assumed" have no measurement behind them yet and wider
// margins: replace them with figures from real nodes as they come in.
constexpr Achievable kTable[] = {
    {TestKind::kGemm, "fp64", Link::kNone, 0.80, 0.20,
     "assumed: cuBLAS DGEMM on FP64 tensor cores; no measured anchor yet"},
    {TestKind::kGemm, "tf32", Link::kNone, 0.70, 0.20,
     "assumed: TF32 GEMMs reach less of peak than BF16; no measured anchor yet"},
    {TestKind::kGemm, "bf16", Link::kNone, 0.78, 0.15,
     "gemm_bf16 anchors: mamf-finder H100/H200 SXM 794.5 of 989 (80.3%), A100 SXM 86.9%, B200 "
     "77.6%"},
    {TestKind::kGemm, "fp16", Link::kNone, 0.78, 0.15,
     "as bf16 (same tensor-core rate); LLMCompass A100 FP16 8192x16384x16384 293 of 312 (94%)"},
    {TestKind::kGemm, "fp8", Link::kNone, 0.72, 0.15,
     "gemm_fp8 anchors: mamf-finder H100 SXM 70.9%, H200 SXM 73.4%, B200 76.3%"},
    {TestKind::kHbm, "copy", Link::kNone, 0.85, 0.12,
     "STREAM-like kernels reach 85-92% of HBM peak (Azure ND GB200 v6: 7350 of 8000 GB/s); DCGM's "
     "own "
     "diag passes at 0.75 x its dcgmproftester figure (diag-skus.yaml.in)"},
    {TestKind::kHbm, "triad", Link::kNone, 0.85, 0.12, "as copy"},
    {TestKind::kPcie, "h2d", Link::kNone, 0.85, 0.15,
     "nvbandwidth host_to_device_memcpy_ce on H200, PCIe Gen5 x16: 55.43 of 63 GB/s (88%)"},
    {TestKind::kPcie, "d2h", Link::kNone, 0.85, 0.15,
     "nvbandwidth device_to_host_memcpy_ce on H200, PCIe Gen5 x16: 55.06 of 63 GB/s (87%)"},
    {TestKind::kPcie, "bidir", Link::kNone, 0.65, 0.20,
     "assumed: both directions at once (sum, against twice the link) share the root complex and "
     "host "
     "memory; no measured anchor yet"},
    {TestKind::kP2p, "bw", Link::kNvlink, 0.83, 0.15,
     "p2p_unidir anchors: p2pBandwidthLatencyTest 8xH100 376 of 450 (83%), 8xA100 274 of 300 "
     "(91%)"},
    {TestKind::kP2p, "bw", Link::kPcie, 0.75, 0.25,
     "assumed from the PCIe host-link figures: P2P over PCIe crosses a switch or the root complex"},
    {TestKind::kNccl, "all_reduce", Link::kNvlink, 0.80, 0.15,
     "allreduce_busbw anchors: nccl-tests ring 8xH100 370 of 450 (82%), 8xH200 367.6 (82%), 8xA100 "
     "232-235 of 300 (77-78%); NVLS reaches 107%"},
    {TestKind::kNccl, "all_gather", Link::kNvlink, 0.80, 0.15,
     "assumed as all_reduce: same links, same rings"},
    {TestKind::kNccl, "reduce_scatter", Link::kNvlink, 0.80, 0.15,
     "assumed as all_reduce: same links, same rings"},
    {TestKind::kNccl, "all_to_all", Link::kNvlink, 0.70, 0.20, "assumed: no measured anchor yet"},
    {TestKind::kNccl, "all_reduce", Link::kPcie, 0.76, 0.20,
     "allreduce_busbw anchors: nccl-tests PCIe Gen4 24 of 31 GB/s (77%), Gen5 48 of 63 (76%)"},
    {TestKind::kNccl, "all_gather", Link::kPcie, 0.70, 0.25, "assumed from PCIe all_reduce"},
    {TestKind::kNccl, "reduce_scatter", Link::kPcie, 0.70, 0.25, "assumed from PCIe all_reduce"},
    {TestKind::kNccl, "all_to_all", Link::kPcie, 0.60, 0.30, "assumed: no measured anchor yet"},
    {TestKind::kBurnIn, "sustained_bf16", Link::kNone, 0.78, 0.20,
     "as gemm bf16, with a wider margin: minutes at full load run at the power cap"},
};

const Achievable* Find(TestKind test, std::string_view metric, Link link) {
  for (const Achievable& a : kTable) {
    if (a.test == test && a.metric == metric && (a.link == Link::kNone || a.link == link))
      return &a;
  }
  return nullptr;
}

catalog::Precision PrecisionOf(GemmType t) {
  switch (t) {
    case GemmType::kFp64:
      return catalog::Precision::kFp64Tensor;
    case GemmType::kTf32:
      return catalog::Precision::kTf32;
    case GemmType::kBf16:
      return catalog::Precision::kBf16;
    case GemmType::kFp16:
      return catalog::Precision::kFp16;
    case GemmType::kFp8:
      return catalog::Precision::kFp8;
  }
  return catalog::Precision::kFp32;
}

// The catalogue peak a GEMM figure is measured against: for FP64 the faster of
// the vector and tensor-core rates, since cuBLAS uses tensor cores where they exist.
double GemmPeakTflops(const catalog::GpuSpec& spec, GemmType t) {
  double peak = spec.PeakTflops(PrecisionOf(t));
  if (t == GemmType::kFp64) peak = std::max(peak, spec.PeakTflops(catalog::Precision::kFp64));
  return peak;
}

// The peak that a measurement's test compares against, with its name; 0 when none.
std::pair<double, std::string> PeakFor(const Measurement& m, const catalog::GpuSpec& spec,
                                       Link link) {
  switch (m.test) {
    case TestKind::kGemm: {
      auto t = ParseGemmType(m.metric);
      if (!t.ok()) return {0, ""};
      return {GemmPeakTflops(spec, *t), fmt::format("TFLOP/s ({} peak)", m.metric)};
    }
    case TestKind::kBurnIn: {
      constexpr std::string_view kPrefix = "sustained_";
      if (m.metric.rfind(kPrefix, 0) != 0) return {0, ""};
      auto t = ParseGemmType(std::string_view(m.metric).substr(kPrefix.size()));
      if (!t.ok()) return {0, ""};
      return {GemmPeakTflops(spec, *t), fmt::format("TFLOP/s ({} peak)", GemmTypeName(*t))};
    }
    case TestKind::kHbm:
      return {spec.memory_bw_gbps, "GB/s (memory peak)"};
    case TestKind::kPcie:
      if (m.metric == "bidir") return {2 * spec.pcie_bw_gbps, "GB/s (host link, both directions)"};
      return {spec.pcie_bw_gbps, "GB/s (host link, one direction)"};
    case TestKind::kP2p:
    case TestKind::kNccl:
      if (link == Link::kNvlink) return {spec.scaleup_bw_gbps, "GB/s (NVLink, one direction)"};
      if (link == Link::kPcie) return {spec.pcie_bw_gbps, "GB/s (PCIe, one direction)"};
      return {0, ""};
  }
  return {0, ""};
}

}  // namespace

std::string_view LinkName(Link l) {
  switch (l) {
    case Link::kNone:
      return "none";
    case Link::kNvlink:
      return "nvlink";
    case Link::kPcie:
      return "pcie";
  }
  return "?";
}

Link NodeLink(const catalog::GpuSpec& spec, int node_gpus) {
  if (node_gpus < 2) return Link::kNone;
  if (spec.scaleup_bw_gbps > 0 && node_gpus <= spec.scaleup_domain) return Link::kNvlink;
  return Link::kPcie;
}

std::span<const Achievable> AchievableTable() {
  return kTable;
}

std::optional<Expectation> Expect(const Measurement& m, const catalog::GpuSpec& spec,
                                  const ExpectContext& ctx) {
  if (m.test == TestKind::kNccl && ctx.nccl_min_busbw_gbps > 0) {
    return Expectation{ctx.nccl_min_busbw_gbps, ctx.nccl_min_busbw_gbps,
                       fmt::format("operator's floor of {:g} GB/s", ctx.nccl_min_busbw_gbps),
                       "--nccl-min-busbw"};
  }
  if (m.test == TestKind::kNccl && ctx.multi_node) return std::nullopt;
  const Link link = NodeLink(spec, ctx.node_gpus);
  if (m.test == TestKind::kP2p && m.metric == "access") {
    // Peer access inside an NVLink domain is what the links are for; over
    // PCIe a platform may rightly refuse it (across CPU sockets, say).
    if (link != Link::kNvlink) return std::nullopt;
    return Expectation{1, 1, "peer access between GPUs of one NVLink domain",
                       "NVLink/NVSwitch topology"};
  }
  const Achievable* a = Find(m.test, m.metric, link);
  if (a == nullptr) return std::nullopt;
  const auto [peak, what] = PeakFor(m, spec, link);
  if (peak <= 0) return std::nullopt;
  Expectation e;
  e.expected = a->fraction * peak;
  e.min_pass = (1 - a->margin) * e.expected;
  e.basis = fmt::format("{:.2f} x {:g} {}, pass at {:.0f}% of that", a->fraction, peak, what,
                        (1 - a->margin) * 100);
  e.source = std::string(a->source);
  if (e.source.find("anchors") != std::string::npos) e.source += fmt::format(" ({})", kAnchors);
  return e;
}

}  // namespace shoal::acceptance
