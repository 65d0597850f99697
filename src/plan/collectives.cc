#include "plan/collectives.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace shoal::plan {

namespace {

constexpr double kMib = 1024.0 * 1024.0;

// All-reduce bus bandwidth (GB/s) on 2 to 8 A100s over NVLink (300 GB/s per
// direction), at 1, 2, 4, ... 1024 MiB: data/vtrain/allreduce_lut_a100/
// AR_GPU{n}_1M_1024M_LUT.csv (VIA-Research/vTrain, MIT), the mean of the two
// runs in each file. Small groups are not just large ones scaled: a 4-GPU
// ring finishes 1 MiB in 51 us, an 8-GPU one in 93 us.
constexpr int kLutPoints = 11;  // 1 MiB .. 1024 MiB, powers of two
constexpr double kScaleupLut[7][kLutPoints] = {
    {23.48, 40.13, 69.08, 96.28, 128.41, 146.20, 165.95, 175.53, 184.48, 189.31, 197.08},   // 2
    {21.95, 39.55, 71.04, 108.56, 146.14, 168.70, 179.09, 192.63, 200.38, 206.50, 211.81},  // 3
    {30.21, 56.33, 82.19, 109.27, 140.84, 177.89, 185.66, 201.40, 208.81, 216.46, 221.62},  // 4
    {26.87, 54.06, 86.12, 110.03, 135.91, 166.45, 189.28, 201.62, 210.89, 218.35, 224.57},  // 5
    {23.83, 47.08, 85.97, 111.73, 139.09, 184.24, 198.66, 199.58, 211.40, 222.56, 226.95},  // 6
    {23.09, 45.86, 85.88, 108.89, 126.28, 172.61, 192.15, 200.72, 210.09, 223.94, 226.78},  // 7
    {19.84, 39.41, 77.34, 111.19, 126.70, 164.53, 202.56, 201.78, 217.47, 224.25, 229.30},  // 8
};
// Beyond 1 GiB the curves go on as the 1-node NVLink column of
// astra-sim-alibabacloud/inputs/ratio/nvlink_ratio.csv (aliyun/SimAI, Apache-2.0), relative to
// its 1 GiB value (0.77; vTrain's 8-GPU 1 GiB point is 229.3/300 = 0.76, the
// two agree where they overlap).
struct Point {
  double mib;
  double ratio;
};
constexpr Point kBeyondLut[] = {
    {1024, 0.77}, {2048, 0.78}, {4096, 0.79}, {8192, 0.80}, {16384, 0.81}};
// The curves are used as shapes: busbw(size, ranks) / busbw(16 GiB, 8 ranks),
// scaled by each GPU's own measured 16 GiB figure.
constexpr double kScaleupAsymptoteGbps = 229.30 * 0.81 / 0.77;

// Across nodes: NCCL reaches ~96 % of a 400G NIC at large sizes ("400Gb RDMA
// single NIC 48 of 50 GB/s") and its tree all-reduce about half of that at
// 64-256 MiB at any scale from 32 to 8192 H100s ("NVLSTree ... ~50% at
// 64-256MiB"), both in data/compiled/measured_bandwidth_anchors.csv.
constexpr double kNetworkPeakFraction = 0.96;
constexpr double kNetworkHalfBytes = 128 * kMib;

// Latencies of one small transfer: 8 us inside a node (cli99/llm-analysis
// gpu_configs intra_node_min_message_latency), and Shoal's
// assumption of 20 us across an RDMA network.
constexpr double kScaleupLatencyS = 8e-6;
constexpr double kNetworkLatencyS = 20e-6;

// NCCL's own cost model of a ring (NVIDIA/nccl src/graph/tuning.cc, Simple
// protocol, the one large messages use): a base of 8.4 us, then 3.4 us per
// step between GPUs of a node and 9.6 us per step between nodes; an
// all-gather or reduce-scatter over n ranks takes n - 1 steps, an all-reduce
// twice that. With the NIC's 96 % this reproduces SimAI's measured ring
// efficiencies from 2 to 128 nodes (aliyun/SimAI inputs/ratio/nic_ratio.csv; a test
// checks it): latency, not bandwidth, is what large rings lose at
// per-layer message sizes.
constexpr double kRingBaseLatencyS = 8.4e-6;
constexpr double kRingIntraStepS = 3.4e-6;
constexpr double kRingInterStepS = 9.6e-6;

// The LUT of `ranks` (2..8; larger groups take the 8-GPU curve) at `mib`,
// interpolated in log size.
double LutGbps(int ranks, double mib) {
  const double* row = kScaleupLut[std::clamp(ranks, 2, 8) - 2];
  if (mib <= 1) return row[0];
  if (mib > 1024) {
    for (const auto* p = std::begin(kBeyondLut); p + 1 != std::end(kBeyondLut); ++p) {
      if (mib <= p[1].mib) {
        const double f =
            (std::log(mib) - std::log(p->mib)) / (std::log(p[1].mib) - std::log(p->mib));
        return row[kLutPoints - 1] * (p->ratio + f * (p[1].ratio - p->ratio)) / kBeyondLut[0].ratio;
      }
    }
    return row[kLutPoints - 1] * std::prev(std::end(kBeyondLut))->ratio / kBeyondLut[0].ratio;
  }
  const double x = std::log2(mib);
  const int i = std::min(static_cast<int>(x), kLutPoints - 2);
  return row[i] + (x - i) * (row[i + 1] - row[i]);
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

// Across nodes the node's NICs carry what its ranks exchange (each of NCCL's
// rings enters a node once, over one of its NICs); never faster than the
// scale-up link that gathers it to them.
double NetworkBusBandwidth(int ranks_per_node, const CommSystem& sys) {
  double busbw =
      ranks_per_node * sys.nic_gbytes_per_gpu * 1e9 / std::max(1.0, sys.oversubscription);
  const double scaleup_peak = sys.scaleup_gbps * 1e9 * sys.scaleup_busbw_frac;
  if (scaleup_peak > 0) busbw = std::min(busbw, scaleup_peak);
  return busbw;
}

}  // namespace

double ScaleupSizeFraction(double bytes, int ranks) {
  return LutGbps(ranks, bytes / kMib) / kScaleupAsymptoteGbps;
}

double NetworkSizeFraction(double bytes) {
  return kNetworkPeakFraction * bytes / (bytes + kNetworkHalfBytes);
}

double RingLatencySeconds(Collective kind, int ranks, int nodes) {
  if (ranks <= 1) return 0;
  nodes = std::clamp(nodes, 1, ranks);
  const int passes = kind == Collective::kAllReduce ? 2 : 1;
  const int steps = passes * (ranks - 1);
  const int inter = passes * (nodes - 1);
  return kRingBaseLatencyS + (steps - inter) * kRingIntraStepS + inter * kRingInterStepS;
}

double RingNetworkSeconds(Collective kind, double bytes, int ranks, int ranks_per_node,
                          const CommSystem& sys) {
  if (ranks <= 1 || bytes <= 0) return 0;
  ranks_per_node = std::clamp(ranks_per_node, 1, ranks);
  const int nodes = (ranks + ranks_per_node - 1) / ranks_per_node;
  return RingLatencySeconds(kind, ranks, nodes) +
         Factor(kind, ranks) * bytes /
             (NetworkBusBandwidth(ranks_per_node, sys) * kNetworkPeakFraction);
}

double CollectiveSeconds(Collective kind, double bytes, int ranks, int ranks_per_node,
                         bool within_scaleup, const CommSystem& sys) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const double traffic = Factor(kind, ranks) * bytes;
  ranks_per_node = std::clamp(ranks_per_node, 1, ranks);
  const double scaleup_peak = sys.scaleup_gbps * 1e9 * sys.scaleup_busbw_frac;
  if (within_scaleup || ranks == ranks_per_node) {
    const double one_mib =
        Factor(kind, ranks) * kMib / (scaleup_peak * ScaleupSizeFraction(kMib, ranks));
    return Seconds(traffic, scaleup_peak * ScaleupSizeFraction(bytes, ranks), kScaleupLatencyS,
                   one_mib);
  }
  // Across nodes: all-gathers and reduce-scatters run as rings; an
  // all-reduce takes the faster of a ring and NCCL's tree (the measured
  // NVLSTree curve), as NCCL's tuner does.
  const double ring = RingNetworkSeconds(kind, bytes, ranks, ranks_per_node, sys);
  if (kind != Collective::kAllReduce) return ring;
  const double busbw = NetworkBusBandwidth(ranks_per_node, sys);
  const double one_mib = Factor(kind, ranks) * kMib / (busbw * NetworkSizeFraction(kMib));
  return std::min(ring,
                  Seconds(traffic, busbw * NetworkSizeFraction(bytes), kNetworkLatencyS, one_mib));
}

double FlatNetworkCollectiveSeconds(Collective kind, double bytes, int ranks,
                                    const CommSystem& sys) {
  CommSystem one_nic = sys;
  one_nic.scaleup_domain = 1;
  return CollectiveSeconds(kind, bytes, ranks, 1, false, one_nic);
}

double P2pSeconds(double bytes, bool over_network, const CommSystem& sys) {
  if (bytes <= 0) return 0;
  if (over_network) {
    return kNetworkLatencyS + bytes / (sys.nic_gbytes_per_gpu * 1e9 * kNetworkPeakFraction /
                                       std::max(1.0, sys.oversubscription));
  }
  return kScaleupLatencyS + bytes / (sys.scaleup_gbps * 1e9 * sys.scaleup_busbw_frac);
}

}  // namespace shoal::plan
