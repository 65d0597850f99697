// How long collectives take on a GPU system: ring all-reduce, all-gather,
// reduce-scatter and point-to-point sends, inside an NVLink domain or across
// the network, with achieved bandwidth that depends on the message size
// (measured curves, sources in collectives.cc). Pure functions; thread-safe.
#pragma once

namespace shoal::plan {

// The communication figures of one GPU in a system.
struct CommSystem {
  double scaleup_gbps = 0;        // per GPU, per direction: NVLink, or PCIe without it
  double scaleup_busbw_frac = 0;  // achieved all-reduce bus bandwidth at 16 GiB, of scaleup_gbps
  int scaleup_domain = 1;         // GPUs that talk over the scale-up link
  int gpus_per_node = 1;
  double nic_gbytes_per_gpu = 0;  // scale-out GB/s per GPU, one direction
  double oversubscription = 1;    // leaf uplinks : downlinks; >1 slows traffic that leaves a leaf
};

enum class Collective { kAllReduce, kAllGather, kReduceScatter };

// A collective over `ranks` GPUs of `bytes` each (the buffer one rank holds:
// the input of an all-reduce, the output of an all-gather). Ranks that all sit
// in one scale-up domain (`within_scaleup`) use it; otherwise the NICs of the
// `ranks_per_node` GPUs of each node that take part carry the traffic
// (hierarchical algorithms, as NCCL's); across nodes all-gathers and
// reduce-scatters are rings that pay NCCL's per-step latency, and an
// all-reduce takes the faster of a ring and a tree.
double CollectiveSeconds(Collective kind, double bytes, int ranks, int ranks_per_node,
                         bool within_scaleup, const CommSystem& sys);

// Same, when every rank drives its own NIC alone (a flat ring over the whole
// world, no aggregation within a node), as DeepSpeed ZeRO-3's per-layer
// parameter gathers did in 2021.
double FlatNetworkCollectiveSeconds(Collective kind, double bytes, int ranks,
                                    const CommSystem& sys);

// One point-to-point transfer of `bytes`.
double P2pSeconds(double bytes, bool over_network, const CommSystem& sys);

// The fraction of the asymptotic bus bandwidth reached at a message size:
// for the scale-up link among `ranks` GPUs (vTrain's A100 NVLink LUTs for 2
// to 8 GPUs, SimAI beyond 1 GiB; relative to 8 GPUs at 16 GiB) and for the
// network (NCCL tests at scale). Exposed for tests and docs.
double ScaleupSizeFraction(double bytes, int ranks = 8);
double NetworkSizeFraction(double bytes);

// The latency of a ring collective over `ranks` GPUs on `nodes` nodes, as
// NCCL's own cost model puts it (one step per rank, twice for an
// all-reduce; the steps between nodes slower), and the whole ring across
// nodes (latency plus the NICs at their achieved rate). Exposed for tests
// and docs.
double RingLatencySeconds(Collective kind, int ranks, int nodes);
double RingNetworkSeconds(Collective kind, double bytes, int ranks, int ranks_per_node,
                          const CommSystem& sys);

}  // namespace shoal::plan
