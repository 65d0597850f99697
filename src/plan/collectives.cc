#include "plan/collectives.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace shoal::plan {

namespace {

constexpr double kMib = 1024.0 * 1024.0;

// All-reduce bus bandwidth on 8 A100s over NVLink (300 GB/s per direction),
// as a fraction of that link figure, by message size in MiB:
// shared/data/vtrain/allreduce_lut_a100/AR_GPU8_1M_1024M_LUT.csv (VIA-Research/
// vTrain, MIT) up to 1 GiB, then the 1-node NVLink column of
// shared/data/simai/nvlink_ratio.csv (aliyun/SimAI, Apache-2.0). The two agree
// where they overlap (64 MiB: 0.675 vs 0.65; 1 GiB: 0.765 vs 0.77).
struct Point {
  double mib;
  double fraction;
};
constexpr Point kScaleup[] = {
    {1, 19.78 / 300},    {2, 39.36 / 300},    {4, 76.62 / 300},    {8, 109.30 / 300},
    {16, 126.33 / 300},  {32, 163.97 / 300},  {64, 202.52 / 300},  {128, 202.13 / 300},
    {256, 217.25 / 300}, {512, 224.15 / 300}, {1024, 229.35 / 300}, {2048, 0.78},
    {4096, 0.79},        {8192, 0.80},        {16384, 0.81},
};
// The curve is used as a shape: fraction(size) / fraction(16 GiB), scaled by
// each GPU's own measured 16 GiB figure.
constexpr double kScaleupAsymptote = 0.81;

// Across nodes: NCCL reaches ~96 % of a 400G NIC at large sizes ("400Gb RDMA
// single NIC 48 of 50 GB/s") and about half of its peak at 64-256 MiB at any
// scale from 32 to 8192 H100s ("NVLSTree ... ~50% at 64-256MiB"), both in
// shared/data/compiled/measured_bandwidth_anchors.csv.
constexpr double kNetworkPeakFraction = 0.96;
constexpr double kNetworkHalfBytes = 128 * kMib;

// Latencies of one small transfer: 8 us inside a node (shared/data/
// llm-analysis gpu_configs intra_node_min_message_latency), and Shoal's
// assumption of 20 us across an RDMA network.
constexpr double kScaleupLatencyS = 8e-6;
constexpr double kNetworkLatencyS = 20e-6;

double Interpolate(double mib) {
  const auto* first = std::begin(kScaleup);
  if (mib <= first->mib) return first->fraction;
  for (const auto* p = first; p + 1 != std::end(kScaleup); ++p) {
    if (mib <= p[1].mib) {
      const double f = (std::log(mib) - std::log(p->mib)) / (std::log(p[1].mib) - std::log(p->mib));
      return p->fraction + f * (p[1].fraction - p->fraction);
    }
  }
  return std::prev(std::end(kScaleup))->fraction;
}

// Bytes each rank moves per byte of its buffer: 2(n-1)/n for a ring
// all-reduce, (n-1)/n for all-gather and reduce-scatter.
double Factor(Collective kind, int ranks) {
  const double n = ranks;
  return (kind == Collective::kAllReduce ? 2.0 : 1.0) * (n - 1) / n;
}

// Time at a bus bandwidth that holds from 1 MiB up; below 1 MiB the
// measured curve is latency-bound, so time shrinks only towards the latency.
double Seconds(double traffic_bytes, double busbw_bytes_s, double latency_s, double one_mib_s) {
  if (traffic_bytes >= kMib) return traffic_bytes / busbw_bytes_s;
  return latency_s + (one_mib_s - latency_s) * traffic_bytes / kMib;
}

}  // namespace

double ScaleupSizeFraction(double bytes) { return Interpolate(bytes / kMib) / kScaleupAsymptote; }

double NetworkSizeFraction(double bytes) {
  return kNetworkPeakFraction * bytes / (bytes + kNetworkHalfBytes);
}

double CollectiveSeconds(Collective kind, double bytes, int ranks, int ranks_per_node,
                         bool within_scaleup, const CommSystem& sys) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double traffic = Factor(kind, ranks) * bytes;
  ranks_per_node = std::clamp(ranks_per_node, 1, ranks);
  const double scaleup_peak = sys.scaleup_gbps * 1e9 * sys.scaleup_busbw_frac;
  if (within_scaleup || ranks == ranks_per_node) {
    const double one_mib = Factor(kind, ranks) * kMib / (scaleup_peak * ScaleupSizeFraction(kMib));
    return Seconds(traffic, scaleup_peak * ScaleupSizeFraction(bytes), kScaleupLatencyS, one_mib);
  }
  // Across nodes the node's NICs carry what its ranks exchange; never faster
  // than the scale-up link that gathers it to them.
  double busbw = ranks_per_node * sys.nic_gbytes_per_gpu * 1e9 / std::max(1.0, sys.oversubscription);
  if (scaleup_peak > 0) busbw = std::min(busbw, scaleup_peak);
  const double one_mib = Factor(kind, ranks) * kMib / (busbw * NetworkSizeFraction(kMib));
  return Seconds(traffic, busbw * NetworkSizeFraction(bytes), kNetworkLatencyS, one_mib);
}

double FlatNetworkCollectiveSeconds(Collective kind, double bytes, int ranks, const CommSystem& sys) {
  CommSystem one_nic = sys;
  one_nic.scaleup_domain = 1;
  return CollectiveSeconds(kind, bytes, ranks, 1, false, one_nic);
}

double P2pSeconds(double bytes, bool over_network, const CommSystem& sys) {
  if (bytes <= 0) return 0;
  if (over_network) {
    return kNetworkLatencyS +
           bytes / (sys.nic_gbytes_per_gpu * 1e9 * kNetworkPeakFraction / std::max(1.0, sys.oversubscription));
  }
  return kScaleupLatencyS + bytes / (sys.scaleup_gbps * 1e9 * sys.scaleup_busbw_frac);
}

}  // namespace shoal::plan
