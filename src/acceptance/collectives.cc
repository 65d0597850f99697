#include "acceptance/collectives.h"

#include <fmt/format.h>

#include <algorithm>

#include "acceptance/pattern.h"

namespace shoal::acceptance {

const std::vector<Collective>& AllCollectives() {
  static const std::vector<Collective> kAll = {Collective::kAllReduce, Collective::kAllGather,
                                               Collective::kReduceScatter, Collective::kAllToAll};
  return kAll;
}

std::string_view CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllToAll:
      return "all_to_all";
  }
  return "?";
}

Result<Collective> ParseCollective(std::string_view name) {
  for (Collective c : AllCollectives()) {
    if (CollectiveName(c) == name) return c;
  }
  return InvalidArgument(fmt::format(
      "unknown collective '{}' (all_reduce, all_gather, reduce_scatter, all_to_all)", name));
}

double BusBwFactor(Collective c, int nranks) {
  if (nranks < 2) return 0;
  const double n = nranks;
  switch (c) {
    case Collective::kAllReduce:
      return 2 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (n - 1) / n;
  }
  return 0;
}

double AlgBwGbps(int64_t size_bytes, double seconds) {
  if (seconds <= 0) return 0;
  return static_cast<double>(size_bytes) / seconds / 1e9;
}

double BusBwGbps(Collective c, int64_t size_bytes, double seconds, int nranks) {
  return AlgBwGbps(size_bytes, seconds) * BusBwFactor(c, nranks);
}

CollectiveCounts CountsFor(Collective c, int64_t size_bytes, int elem_bytes, int nranks) {
  CollectiveCounts out;
  if (elem_bytes <= 0 || nranks <= 0) return out;
  const int64_t elems = size_bytes / elem_bytes;
  switch (c) {
    case Collective::kAllReduce:
      out.send_count = out.recv_count = out.chunk = elems;
      break;
    case Collective::kAllGather:
      out.chunk = out.send_count = elems / nranks;
      out.recv_count = out.chunk * nranks;
      break;
    case Collective::kReduceScatter:
      out.chunk = out.recv_count = elems / nranks;
      out.send_count = out.chunk * nranks;
      break;
    case Collective::kAllToAll:
      out.chunk = elems / nranks;
      out.send_count = out.recv_count = out.chunk * nranks;
      break;
  }
  out.size_bytes = std::max(out.send_count, out.recv_count) * elem_bytes;
  return out;
}

double ExpectedCollectiveOutput(Collective c, int nranks, int rank, int64_t recv_index,
                                const CollectiveCounts& counts) {
  const int64_t chunk = std::max<int64_t>(counts.chunk, 1);
  switch (c) {
    case Collective::kAllReduce: {
      double sum = 0;
      for (int q = 0; q < nranks; ++q)
        sum += CollectiveInput(q, static_cast<uint64_t>(recv_index));
      return sum;
    }
    case Collective::kAllGather: {
      const int from = static_cast<int>(recv_index / chunk);
      return CollectiveInput(from, static_cast<uint64_t>(recv_index % chunk));
    }
    case Collective::kReduceScatter: {
      double sum = 0;
      const auto index = static_cast<uint64_t>(rank * chunk + recv_index);
      for (int q = 0; q < nranks; ++q)
        sum += CollectiveInput(q, index);
      return sum;
    }
    case Collective::kAllToAll: {
      // Block q of rank r's receive buffer is block r of rank q's send buffer.
      const int from = static_cast<int>(recv_index / chunk);
      return CollectiveInput(from, static_cast<uint64_t>(rank * chunk + recv_index % chunk));
    }
  }
  return 0;
}

std::vector<int64_t> GeometricSizes(int64_t min_bytes, int64_t max_bytes, int factor) {
  std::vector<int64_t> out;
  if (min_bytes <= 0 || max_bytes < min_bytes || factor < 2) return out;
  for (int64_t s = min_bytes; s < max_bytes; s *= factor) {
    out.push_back(s);
    if (s > max_bytes / factor) break;
  }
  if (out.empty() || out.back() != max_bytes) out.push_back(max_bytes);
  return out;
}

std::vector<int64_t> NcclSizes(bool quick, int64_t cap_bytes) {
  const int64_t top = std::min(cap_bytes, kNcclMaxBytes);
  if (top < kNcclMinBytes) return {};
  return GeometricSizes(kNcclMinBytes, top, quick ? 8 : 2);
}

int64_t NcclCapBytes(int64_t free_bytes, double fraction, int64_t limit_bytes) {
  const double budget = static_cast<double>(free_bytes) * fraction / 2;
  int64_t s = kNcclMinBytes;
  while (s * 2 <= limit_bytes && static_cast<double>(s * 2) <= budget)
    s *= 2;
  return static_cast<double>(s) <= budget ? s : 0;
}

}  // namespace shoal::acceptance
