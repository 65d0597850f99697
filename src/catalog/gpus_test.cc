#include "catalog/gpus.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "catalog/profiles.h"
#include "core/strings.h"

namespace shoal::catalog {
namespace {

namespace fs = std::filesystem;

TEST(GpusTest, EveryEntryIsWellFormed) {
  std::set<std::string_view> names;
  for (const GpuSpec& g : Gpus()) {
    SCOPED_TRACE(g.model);
    EXPECT_TRUE(names.insert(g.model).second) << "duplicate model";
    EXPECT_TRUE(g.vendor == "NVIDIA" || g.vendor == "AMD");
    EXPECT_FALSE(g.form.empty());
    EXPECT_GT(g.memory_mib, 0);
    EXPECT_GT(g.memory_bw_gbps, 0);
    EXPECT_GT(g.tdp_w, 0);
    EXPECT_GT(g.pcie_bw_gbps, 0);
    EXPECT_GE(g.scaleup_domain, 1);
    EXPECT_EQ(g.scaleup_bw_gbps > 0, g.scaleup_domain > 1) << "a scale-up link needs a domain";
    // Training needs a 16-bit tensor unit; every GPU in the catalogue has one.
    EXPECT_GT(g.PeakTflops(Precision::kFp16), 0);
    EXPECT_GE(g.PeakTflops(Precision::kFp16), g.PeakTflops(Precision::kFp32));
    EXPECT_GT(g.source.size(), 60u) << "every figure needs its source";
    EXPECT_EQ(FindGpu(g.model), &g);
  }
  EXPECT_EQ(GpuNames().size(), Gpus().size());
}

TEST(GpusTest, AnUnknownGpuIsToldItsNearMissAmongNamesAndAliases) {
  EXPECT_EQ(UnknownGpuMessage("h101"), "unknown GPU 'h101' (did you mean 'h100'?)");
  EXPECT_EQ(UnknownGpuMessage("H100-SXM-80G"),
            "unknown GPU 'H100-SXM-80G' (did you mean 'H100-SXM-80GB'?)");
  const std::string far = UnknownGpuMessage("tpu-v5");
  EXPECT_NE(far.find("(known: A100-SXM4-40GB, "), std::string::npos) << far;
  EXPECT_EQ(far.find("h100-sxm"), std::string::npos) << "aliases are not listed: " << far;
}

// The node profiles and the catalogue describe the same parts; they must agree.
TEST(GpusTest, NodeProfilesAgreeWithTheCatalogue) {
  for (const NodeProfile& p : Profiles()) {
    SCOPED_TRACE(p.name);
    const GpuSpec* g = FindGpu(p.gpu_model);
    ASSERT_NE(g, nullptr) << p.gpu_model << " is not in the catalogue";
    EXPECT_EQ(g->model, p.gpu_model) << "profiles use canonical names";
    EXPECT_EQ(g->memory_mib, p.gpu_memory_mib);
    EXPECT_EQ(g->tdp_w, p.gpu_tdp_w);
    if (p.nvlink_island_size > 1) {
      EXPECT_EQ(g->scaleup_domain, p.nvlink_island_size);
    }
  }
}

TEST(GpusTest, PrecisionsHaveNamesAndPeaks) {
  const GpuSpec& h100 = *FindGpu("H100-SXM-80GB");
  struct Case {
    Precision p;
    std::string_view name;
    double peak;
  };
  const Case cases[] = {
      {Precision::kFp64, "fp64", 34},   {Precision::kFp64Tensor, "fp64-tensor", 67},
      {Precision::kFp32, "fp32", 67},   {Precision::kTf32, "tf32", 494.5},
      {Precision::kBf16, "bf16", 989},  {Precision::kFp16, "fp16", 989},
      {Precision::kFp8, "fp8", 1979},   {Precision::kFp4, "fp4", 0},
      {Precision::kInt8, "int8", 1979},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PrecisionName(c.p), c.name);
    EXPECT_DOUBLE_EQ(h100.PeakTflops(c.p), c.peak) << c.name;
  }
}

TEST(GpusTest, AliasesAndCase) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"H100", "H100-SXM-80GB"},
      {"h100-sxm", "H100-SXM-80GB"},
      {"h100-sxm-80gb", "H100-SXM-80GB"},
      {"A100-80GB", "A100-SXM4-80GB"},
      {"a100", "A100-SXM4-80GB"},
      {"A100-40GB", "A100-SXM4-40GB"},
      {"H100-PCIe", "H100-PCIE-80GB"},
      {" gb200 ", "GB200-186GB"},
      {"MI300X", "MI300X-192GB"},
      {"l4", "L4-24GB"},
      {"L40S", "L40S-48GB"},
  };
  for (const auto& [alias, model] : cases) {
    const GpuSpec* g = FindGpu(alias);
    ASSERT_NE(g, nullptr) << alias;
    EXPECT_EQ(g->model, model) << alias;
  }
  EXPECT_EQ(FindGpu("H800"), nullptr);
  EXPECT_EQ(FindGpu(""), nullptr);
}

TEST(GpusTest, DeviceNamesFromDrivers) {
  struct Case {
    std::string_view device;
    int64_t memory_mib;
    std::string_view model;  // empty: unknown
  };
  const Case cases[] = {
      {"NVIDIA H100 80GB HBM3", 81559, "H100-SXM-80GB"},
      {"NVIDIA H100 PCIe", 81559, "H100-PCIE-80GB"},
      {"NVIDIA H100 NVL", 95830, "H100-NVL-94GB"},
      {"NVIDIA H200", 143771, "H200-SXM-141GB"},
      {"NVIDIA H200 NVL", 143771, "H200-NVL-141GB"},
      {"NVIDIA A100-SXM4-80GB", 81920, "A100-SXM4-80GB"},
      {"NVIDIA A100-SXM4-40GB", 40960, "A100-SXM4-40GB"},
      {"NVIDIA A100-SXM4-80GB", 0, "A100-SXM4-80GB"},
      {"NVIDIA A100-PCIE-40GB", 40536, "A100-PCIE-40GB"},
      {"NVIDIA A100 80GB PCIe", 81920, "A100-PCIE-80GB"},
      {"NVIDIA B200", 183359, "B200-SXM-180GB"},
      {"NVIDIA GB200", 189471, "GB200-186GB"},
      {"NVIDIA L40S", 46068, "L40S-48GB"},
      {"NVIDIA L4", 23034, "L4-24GB"},
      {"NVIDIA A10", 23028, "A10-24GB"},
      {"Tesla T4", 15360, "T4-16GB"},
      {"Tesla V100-SXM2-32GB", 32768, "V100-SXM2-32GB"},
      {"AMD Instinct MI300X", 196592, "MI300X-192GB"},
      {"Tesla V100-SXM2-16GB", 16384, ""},  // a size the catalogue does not have
      {"NVIDIA L40", 46068, ""},
      {"NVIDIA A10G", 23028, ""},
      {"NVIDIA GH200 480GB", 97871, ""},
      {"", 0, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.device);
    const GpuSpec* g = FindGpuByDeviceName(c.device, c.memory_mib);
    if (c.model.empty()) {
      EXPECT_EQ(g, nullptr) << g->model;
    } else {
      ASSERT_NE(g, nullptr);
      EXPECT_EQ(g->model, c.model);
    }
  }
}

// The leading number of a CSV cell ("400 (350-400 cfg)" -> 400); 0 when empty.
double Leading(std::string_view cell) {
  cell = Trim(cell);
  size_t end = 0;
  while (end < cell.size() &&
         (std::isdigit(static_cast<unsigned char>(cell[end])) || cell[end] == '.'))
    ++end;
  if (end == 0) return 0;
  auto v = ParseDouble(cell.substr(0, end));
  return v.ok() ? *v : 0;
}

// Every figure transcribed from data/compiled/gpu_specs.csv equals the
// CSV's: the catalogue is checked against its source, not against itself.
TEST(GpusTest, FiguresMatchTheShippedSpecSheet) {
  const fs::path csv = fs::path(SHOAL_DATA_DIR) / "compiled" / "gpu_specs.csv";
  ASSERT_TRUE(fs::exists(csv)) << csv;
  // CSV (gpu, form) -> canonical model; `scaleup` false where the catalogue
  // deliberately models an optional bridge as absent.
  struct Row {
    std::string_view gpu, form, model;
    bool scaleup;
  };
  const Row rows[] = {
      {"A100-40GB", "SXM4", "A100-SXM4-40GB", true},
      {"A100-80GB", "SXM4", "A100-SXM4-80GB", true},
      {"A100-40GB", "PCIe", "A100-PCIE-40GB", false},
      {"A100-80GB", "PCIe", "A100-PCIE-80GB", false},
      {"H100", "SXM5", "H100-SXM-80GB", true},
      {"H100", "PCIe", "H100-PCIE-80GB", false},
      {"H100-NVL", "PCIe dual-slot", "H100-NVL-94GB", true},
      {"H200", "SXM5", "H200-SXM-141GB", true},
      {"H200-NVL", "PCIe dual-slot", "H200-NVL-141GB", true},
      {"B200", "SXM (HGX/DGX B200)", "B200-SXM-180GB", true},
      {"GB200 (per GPU)", "NVL72 superchip", "GB200-186GB", true},
      {"L40S", "PCIe dual-slot", "L40S-48GB", true},
      {"L4", "PCIe low-profile", "L4-24GB", true},
      {"MI300X", "OAM", "MI300X-192GB", true},
      {"MI325X", "OAM", "MI325X-256GB", true},
  };
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  int checked = 0;
  while (std::getline(in, line)) {
    std::vector<std::string_view> f = Split(line, ',');
    ASSERT_GE(f.size(), 17u) << line;
    const Row* row = nullptr;
    for (const Row& r : rows) {
      if (r.gpu == f[0] && r.form == f[1]) row = &r;
    }
    ASSERT_NE(row, nullptr) << "CSV row without a catalogue entry: " << f[0] << " " << f[1];
    SCOPED_TRACE(row->model);
    const GpuSpec* g = FindGpu(row->model);
    ASSERT_NE(g, nullptr);
    EXPECT_DOUBLE_EQ(g->fp64_tflops, Leading(f[2]));
    EXPECT_DOUBLE_EQ(g->fp64_tensor_tflops, Leading(f[3]));
    EXPECT_DOUBLE_EQ(g->fp32_tflops, Leading(f[4]));
    EXPECT_DOUBLE_EQ(g->tf32_tflops, Leading(f[5]));
    EXPECT_DOUBLE_EQ(g->bf16_tflops, Leading(f[6]));
    EXPECT_DOUBLE_EQ(g->fp8_tflops, Leading(f[7]));
    EXPECT_DOUBLE_EQ(g->fp4_tflops, Leading(f[8]));
    EXPECT_DOUBLE_EQ(g->int8_tops, Leading(f[9]));
    EXPECT_EQ(g->memory_mib, static_cast<int64_t>(Leading(f[10])) * 1024);
    EXPECT_DOUBLE_EQ(g->memory_bw_gbps, Leading(f[12]));
    if (row->scaleup) {
      EXPECT_DOUBLE_EQ(g->scaleup_bw_gbps, Leading(f[14]));
    }
    EXPECT_DOUBLE_EQ(g->tdp_w, Leading(f[16]));
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(std::size(rows)));
}

}  // namespace
}  // namespace shoal::catalog
