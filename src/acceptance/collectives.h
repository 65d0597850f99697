// The arithmetic of NCCL collective benchmarks, as nccl-tests defines it, so
// that Shoal's figures can be read against nccl-tests' and against published
// ones.
//
// From NVIDIA nccl-tests, doc/PERFORMANCE.md ("Performance reported by NCCL
// tests"): algbw = S / t, where S is the size of the operation in bytes; busbw
// = algbw x a factor that makes the figure independent of the number of ranks
// n and comparable with the hardware's peak: all-reduce 2(n-1)/n,
// reduce-scatter (n-1)/n, all-gather (n-1)/n, all-to-all (n-1)/n. For
// all-gather and reduce-scatter S is the size of the whole (gathered) array,
// count per rank x n x element size; for all-to-all it is each rank's send
// buffer, which holds n blocks.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shoal::acceptance {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll };

const std::vector<Collective>& AllCollectives();
std::string_view CollectiveName(
    Collective c);  // "all_reduce", "all_gather", "reduce_scatter", "all_to_all"
Result<Collective> ParseCollective(std::string_view name);

// nccl-tests' bus bandwidth factor for n ranks; 0 for fewer than two.
double BusBwFactor(Collective c, int nranks);

// S / t in GB/s (10^9 bytes per second), as nccl-tests prints it.
double AlgBwGbps(int64_t size_bytes, double seconds);
double BusBwGbps(Collective c, int64_t size_bytes, double seconds, int nranks);

// Element counts that each rank passes to NCCL for an operation of
// `size_bytes` (nccl-tests' S), and the S they really make once rounded down
// to whole elements and, where the buffer is split among ranks, to a multiple
// of n elements.
struct CollectiveCounts {
  int64_t send_count = 0;  // elements in each rank's send buffer
  int64_t recv_count = 0;  // elements in each rank's receive buffer
  int64_t chunk = 0;       // elements of one rank's block (all-gather, reduce-scatter, all-to-all)
  int64_t size_bytes = 0;  // the S that these counts make
};
CollectiveCounts CountsFor(Collective c, int64_t size_bytes, int elem_bytes, int nranks);

// The value a correct collective leaves at `recv_index` of rank `rank`'s
// receive buffer when every rank q filled its send buffer with
// CollectiveInput(q, i) (bench/pattern.h) and the operation is a sum.
double ExpectedCollectiveOutput(Collective c, int nranks, int rank, int64_t recv_index,
                                const CollectiveCounts& counts);

// Message sizes from `min_bytes` up to `max_bytes`, each `factor` times the
// last (nccl-tests' -b/-e/-f); `max_bytes` itself is the last size even when
// the progression steps over it.
std::vector<int64_t> GeometricSizes(int64_t min_bytes, int64_t max_bytes, int factor);

// The sizes Shoal's NCCL test runs: 8 B to 8 GiB, doubling (31 sizes), or
// every eighth power of two in quick mode; none above `cap_bytes`.
inline constexpr int64_t kNcclMinBytes = 8;
inline constexpr int64_t kNcclMaxBytes = int64_t{8} << 30;
std::vector<int64_t> NcclSizes(bool quick, int64_t cap_bytes);

// The largest power-of-two S whose send and receive buffers (each S bytes,
// shared by every collective) fit in `fraction` of `free_bytes`, and no more
// than `limit_bytes`.
int64_t NcclCapBytes(int64_t free_bytes, double fraction, int64_t limit_bytes);

}  // namespace shoal::acceptance
