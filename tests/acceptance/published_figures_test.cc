// Healthy hardware must pass: the figures published for healthy nodes (the
// anchors in data/compiled/measured_bandwidth_anchors.csv), judged
// with the real catalogue, pass their expectation. A failure here means a
// fraction, a margin or a catalogue figure would reject good nodes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "acceptance/expect.h"
#include "acceptance/report.h"
#include "catalog/gpus.h"
#include "core/strings.h"

namespace shoal::acceptance {
namespace {

struct Anchor {
  std::string metric;  // the CSV's metric column
  std::string system;  // its system column
  TestKind test;
  std::string bench_metric;
  std::string model;  // catalogue name
  int node_gpus;
};

// The anchor rows that are a single-node figure of a GPU in the catalogue.
const Anchor kAnchors[] = {
    {"gemm_bf16", "A100 SXM", TestKind::kGemm, "bf16", "a100", 8},
    {"gemm_bf16", "H100 SXM", TestKind::kGemm, "bf16", "h100", 8},
    {"gemm_bf16", "B200 SXM", TestKind::kGemm, "bf16", "b200", 8},
    {"gemm_fp8", "H100 SXM", TestKind::kGemm, "fp8", "h100", 8},
    {"gemm_fp8", "H200 SXM", TestKind::kGemm, "fp8", "h200", 8},
    {"gemm_fp8", "B200 SXM", TestKind::kGemm, "fp8", "b200", 8},
    {"h2d", "8xH200 PCIe5 x16", TestKind::kPcie, "h2d", "h200", 8},
    {"d2h", "8xH200 PCIe5 x16", TestKind::kPcie, "d2h", "h200", 8},
    {"p2p_unidir", "8xA100", TestKind::kP2p, "bw", "a100", 8},
    {"p2p_unidir", "8xH100", TestKind::kP2p, "bw", "h100", 8},
    {"allreduce_busbw", "8xA100 NVLink3", TestKind::kNccl, "all_reduce", "a100", 8},
    {"allreduce_busbw", "8xH200 NVLink4", TestKind::kNccl, "all_reduce", "h200", 8},
    {"allreduce_busbw", "NVLink4 H100 8 GPU", TestKind::kNccl, "all_reduce", "h100", 8},
    {"allreduce_busbw", "8xB200 NVLink5 (AWS P6-B200)", TestKind::kNccl, "all_reduce", "b200", 8},
};

TEST(PublishedFiguresTest, HealthyNodesPass) {
  const std::filesystem::path csv =
      std::filesystem::path(SHOAL_DATA_DIR) / "compiled/measured_bandwidth_anchors.csv";
  ASSERT_TRUE(std::filesystem::exists(csv)) << csv;
  std::multimap<std::pair<std::string, std::string>, double> values;
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);  // metric,system,config,value,unit,...
  while (std::getline(in, line)) {
    const auto cells = Split(line, ',');
    if (cells.size() < 4) continue;
    auto v = ParseDouble(cells[3]);
    if (v.ok()) values.emplace(std::make_pair(std::string(cells[0]), std::string(cells[1])), *v);
  }
  int judged = 0;
  for (const Anchor& a : kAnchors) {
    SCOPED_TRACE(a.metric + " " + a.system);
    const catalog::GpuSpec* spec = catalog::FindGpu(a.model);
    ASSERT_NE(spec, nullptr) << a.model;
    auto [begin, end] = values.equal_range({a.metric, a.system});
    ASSERT_NE(begin, end) << "no such row in the anchors";
    for (auto it = begin; it != end; ++it) {
      Measurement m;
      m.test = a.test;
      m.metric = a.bench_metric;
      m.value = it->second;
      ExpectContext ctx;
      ctx.node_gpus = a.node_gpus;
      const auto e = Expect(m, *spec, ctx);
      ASSERT_TRUE(e.has_value());
      EXPECT_GE(m.value, e->min_pass) << spec->model << ": " << e->basis;
      ++judged;
    }
  }
  EXPECT_GE(judged, static_cast<int>(std::size(kAnchors)));
}

// The driver's names for common GPUs reach the catalogue, so a real node is judged.
TEST(PublishedFiguresTest, DriverNamesAreJudged) {
  const auto lookup = CatalogLookup("");
  ASSERT_TRUE(lookup.ok());
  struct Row {
    std::string name;
    int64_t memory_mib;
  };
  const Row rows[] = {
      {"NVIDIA H200", 143771}, {"NVIDIA H100 80GB HBM3", 81559}, {"NVIDIA A100-SXM4-80GB", 81920}};
  for (const Row& r : rows) {
    GpuInfo g;
    g.name = r.name;
    g.memory_mib = r.memory_mib;
    EXPECT_NE((*lookup)(g), nullptr) << r.name;
  }
  EXPECT_FALSE(CatalogLookup("no-such-gpu").ok());
  EXPECT_TRUE(CatalogLookup("h200").ok());
}

}  // namespace
}  // namespace shoal::acceptance
