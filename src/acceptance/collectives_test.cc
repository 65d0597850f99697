#include "acceptance/collectives.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include "acceptance/pattern.h"
#include "core/strings.h"

namespace shoal::acceptance {
namespace {

TEST(CollectivesTest, BusBwFactorsAreNcclTestsFormulas) {
  // doc/PERFORMANCE.md of NVIDIA nccl-tests: all-reduce 2(n-1)/n, the others (n-1)/n.
  struct Row {
    Collective c;
    int n;
    double factor;
  };
  const Row rows[] = {
      {Collective::kAllReduce, 2, 1.0},      {Collective::kAllReduce, 4, 1.5},
      {Collective::kAllReduce, 8, 1.75},     {Collective::kAllReduce, 16, 1.875},
      {Collective::kAllGather, 2, 0.5},      {Collective::kAllGather, 8, 0.875},
      {Collective::kReduceScatter, 4, 0.75}, {Collective::kReduceScatter, 8, 0.875},
      {Collective::kAllToAll, 8, 0.875},     {Collective::kAllToAll, 64, 63.0 / 64},
      {Collective::kAllReduce, 1, 0.0},      {Collective::kAllToAll, 0, 0.0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(fmt::format("{} n={}", CollectiveName(r.c), r.n));
    EXPECT_DOUBLE_EQ(BusBwFactor(r.c, r.n), r.factor);
  }
}

TEST(CollectivesTest, AlgBwIsSizeOverTime) {
  EXPECT_DOUBLE_EQ(AlgBwGbps(int64_t{1} << 30, 0.01), 107.3741824);
  EXPECT_DOUBLE_EQ(AlgBwGbps(1000, 0), 0);
  // busbw = algbw x factor.
  EXPECT_DOUBLE_EQ(BusBwGbps(Collective::kAllReduce, int64_t{1} << 30, 0.01, 8),
                   107.3741824 * 1.75);
}

// Rows printed by nccl-tests' all_reduce_perf on 8 A100s (vTrain's
// trace/a100/AR_GPU8_1M_1024M_LUT, MIT): size (B), time (ns), busbw (GB/s).
// Recomputing busbw from size and time must give what nccl-tests printed.
TEST(CollectivesTest, ReproducesNcclTestsOutput) {
  struct Row {
    int64_t size;
    double time_ns;
    double busbw;
  };
  const Row rows[] = {
      {1048576, 92790, 19.78},
      {4194304, 95800, 76.62},
      {7340032, 119200, 107.77},
      {1073741824, 8193000, 229.35},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.size);
    // Time is printed to four or five significant digits, busbw to two decimals.
    EXPECT_NEAR(BusBwGbps(Collective::kAllReduce, r.size, r.time_ns * 1e-9, 8), r.busbw,
                0.006 + r.busbw * 4e-4);
  }
}

// Every row of vTrain's nccl-tests tables for 2..8 GPUs (data/vtrain).
TEST(CollectivesTest, ReproducesEveryVtrainTable) {
  const std::filesystem::path dir =
      std::filesystem::path(SHOAL_DATA_DIR) / "vtrain/allreduce_lut_a100";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  const std::regex name(R"(AR_GPU(\d+)_.*\.csv)");
  int rows = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::smatch m;
    const std::string file = entry.path().filename().string();
    if (!std::regex_match(file, m, name)) continue;
    const int n = std::stoi(m[1]);
    std::ifstream in(entry.path());
    std::string line;
    std::getline(in, line);  // header: size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)
    while (std::getline(in, line)) {
      const auto cells = Split(line, ',');
      if (cells.size() < 5) continue;
      const int64_t size = *ParseInt(cells[0]);
      const double time_ns = *ParseDouble(cells[3]);
      const double busbw = *ParseDouble(cells[4]);
      // Time is printed to four significant digits, busbw to two decimals.
      EXPECT_NEAR(BusBwGbps(Collective::kAllReduce, size, time_ns * 1e-9, n), busbw,
                  0.006 + busbw * 4e-4)
          << file << ": " << line;
      ++rows;
    }
  }
  EXPECT_GT(rows, 1000);
}

TEST(CollectivesTest, CountsFollowNcclTestsSizeConvention) {
  struct Row {
    Collective c;
    int64_t size;
    int n;
    int64_t send, recv, chunk, size_bytes;
  };
  const Row rows[] = {
      {Collective::kAllReduce, 1 << 20, 8, 262144, 262144, 262144, 1 << 20},
      // All-gather: S is the gathered array; each rank sends S / n.
      {Collective::kAllGather, 1 << 20, 8, 32768, 262144, 32768, 1 << 20},
      // Reduce-scatter: each rank sends all of S, receives S / n.
      {Collective::kReduceScatter, 1 << 20, 8, 262144, 32768, 32768, 1 << 20},
      {Collective::kAllToAll, 1 << 20, 8, 262144, 262144, 32768, 1 << 20},
      // Sizes that do not split evenly are rounded down.
      {Collective::kAllGather, 100, 8, 3, 24, 3, 96},
      {Collective::kAllReduce, 10, 8, 2, 2, 2, 8},
      {Collective::kAllToAll, 8, 8, 0, 0, 0, 0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(fmt::format("{} {} B n={}", CollectiveName(r.c), r.size, r.n));
    const CollectiveCounts got = CountsFor(r.c, r.size, 4, r.n);
    EXPECT_EQ(got.send_count, r.send);
    EXPECT_EQ(got.recv_count, r.recv);
    EXPECT_EQ(got.chunk, r.chunk);
    EXPECT_EQ(got.size_bytes, r.size_bytes);
  }
}

// A plain simulation of each collective over host buffers, element by
// element, against which ExpectedCollectiveOutput is checked everywhere.
std::vector<std::vector<double>> Simulate(Collective c, int n, const CollectiveCounts& k) {
  std::vector<std::vector<double>> send(static_cast<size_t>(n)), recv(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < k.send_count; ++i)
      send[r].push_back(CollectiveInput(r, static_cast<uint64_t>(i)));
    recv[r].assign(static_cast<size_t>(k.recv_count), 0.0);
  }
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < k.recv_count; ++i) {
      double& out = recv[r][static_cast<size_t>(i)];
      const int64_t block = i / k.chunk, offset = i % k.chunk;
      switch (c) {
        case Collective::kAllReduce:
          for (int q = 0; q < n; ++q)
            out += send[q][static_cast<size_t>(i)];
          break;
        case Collective::kAllGather:
          out = send[static_cast<size_t>(block)][static_cast<size_t>(offset)];
          break;
        case Collective::kReduceScatter:
          for (int q = 0; q < n; ++q)
            out += send[q][static_cast<size_t>(r * k.chunk + i)];
          break;
        case Collective::kAllToAll:
          out = send[static_cast<size_t>(block)][static_cast<size_t>(r * k.chunk + offset)];
          break;
      }
    }
  }
  return recv;
}

TEST(CollectivesTest, ExpectedOutputMatchesASimulation) {
  for (Collective c : AllCollectives()) {
    for (int n : {2, 3, 5}) {
      SCOPED_TRACE(fmt::format("{} n={}", CollectiveName(c), n));
      const CollectiveCounts k = CountsFor(c, 4 * 4 * n * 3, 4, n);
      const auto recv = Simulate(c, n, k);
      for (int r = 0; r < n; ++r) {
        for (int64_t i = 0; i < k.recv_count; ++i) {
          ASSERT_EQ(ExpectedCollectiveOutput(c, n, r, i, k), recv[r][static_cast<size_t>(i)])
              << "rank " << r << " [" << i << "]";
        }
      }
    }
  }
}

TEST(CollectivesTest, NamesRoundTrip) {
  for (Collective c : AllCollectives())
    EXPECT_EQ(*ParseCollective(CollectiveName(c)), c);
  EXPECT_FALSE(ParseCollective("broadcast").ok());
}

TEST(CollectivesTest, SizeLists) {
  const auto full = NcclSizes(false, kNcclMaxBytes);
  ASSERT_EQ(full.size(), 31u);  // 2^3 .. 2^33
  EXPECT_EQ(full.front(), 8);
  EXPECT_EQ(full.back(), int64_t{8} << 30);
  for (size_t i = 1; i < full.size(); ++i)
    EXPECT_EQ(full[i], 2 * full[i - 1]);

  const auto quick = NcclSizes(true, kNcclMaxBytes);
  EXPECT_EQ(quick.size(), 11u);  // 2^3, 2^6, ..., 2^30, then 8 GiB
  EXPECT_EQ(quick.back(), int64_t{8} << 30);
  EXPECT_LT(quick.size(), full.size());

  // A cap stops the list there, and is itself the last size.
  EXPECT_EQ(NcclSizes(false, int64_t{1} << 30).back(), int64_t{1} << 30);
  EXPECT_EQ(GeometricSizes(8, 100, 2), (std::vector<int64_t>{8, 16, 32, 64, 100}));
  EXPECT_TRUE(NcclSizes(false, 4).empty());
  EXPECT_TRUE(GeometricSizes(8, 4, 2).empty());
}

TEST(CollectivesTest, CapFitsBuffersInFreeMemory) {
  const int64_t gib = int64_t{1} << 30;
  // An H200 with 140 GB free: the full 8 GiB.
  EXPECT_EQ(NcclCapBytes(140'000'000'000, 0.7, kNcclMaxBytes), 8 * gib);
  // 10 GiB free: send + receive within 7 GiB, so 2 GiB each (a power of two).
  EXPECT_EQ(NcclCapBytes(10 * gib, 0.7, kNcclMaxBytes), 2 * gib);
  EXPECT_EQ(NcclCapBytes(140'000'000'000, 0.7, 512 << 20), 512 << 20);
  EXPECT_EQ(NcclCapBytes(10, 0.7, kNcclMaxBytes), 0);
}

}  // namespace
}  // namespace shoal::acceptance
