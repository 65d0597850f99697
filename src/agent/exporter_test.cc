// The agent's /metrics text: dcgm-exporter's labels for each sampled GPU,
// and the jobs that hold it.
#include "agent/exporter.h"

#include <gtest/gtest.h>

namespace shoal::agent {
namespace {

GpuDevice Device(int index) {
  GpuDevice d;
  d.index = index;
  d.device = index;
  d.uuid = "GPU-" + std::to_string(index);
  d.model = "H100-SXM-80GB";
  d.pci_bus_id = "00000000:1" + std::to_string(index) + ":00.0";
  d.driver_version = "550.54.15";
  return d;
}

GpuSample Reading(int index, double util) {
  GpuSample s;
  s.index = index;
  s.util_pct = util;
  s.fb_used_mib = 1024;
  s.energy_j = 2.5;
  return s;
}

TEST(NodeMetricsTest, DcgmLabelsAndJobs) {
  const std::vector<GpuDevice> devices = {Device(0), Device(1), Device(2)};
  // Job 7's two steps on GPU 0 (labelled once); jobs 9 and 8 share GPU 1.
  const std::vector<GpuHold> holds = {{9, "bob", "bio", {1}},
                                      {7, "alice", "physics", {0}},
                                      {7, "alice", "physics", {0}},
                                      {8, "carol", "", {1}}};
  const std::string text =
      RenderNodeMetrics("gpu01", devices, {Reading(0, 87), Reading(1, 12.5), Reading(2, 0)}, holds);
  EXPECT_NE(text.find("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
                      "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"),
            std::string::npos);
  EXPECT_NE(
      text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:10:00.0\","
                "device=\"nvidia0\",modelName=\"H100-SXM-80GB\",Hostname=\"gpu01\","
                "hostname=\"gpu01\",DCGM_FI_DRIVER_VERSION=\"550.54.15\",hpc_job=\"7\","
                "user=\"alice\",account=\"physics\"} 87\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find(",hpc_job=\"8,9\",user=\"carol,bob\",account=\",bio\"} 12.5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"2\",UUID=\"GPU-2\",pci_bus_id=\"00000000:12:00.0\","
                "device=\"nvidia2\",modelName=\"H100-SXM-80GB\",Hostname=\"gpu01\","
                "hostname=\"gpu01\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 0\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("} 2500\n"), std::string::npos) << "2.5 J in mJ";
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{gpu=\"1\""), std::string::npos);
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n"), std::string::npos);
}

// A MIG slice's series carry its physical GPU and dcgm-exporter's
// GPU_I_PROFILE and GPU_I_ID, and its own UUID.
TEST(NodeMetricsTest, MigSlicesNameTheirGpuAndInstance) {
  GpuDevice slice = Device(3);
  slice.device = 1;
  slice.uuid = "MIG-3";
  slice.model = "H100-SXM-80GB/1g.10gb";
  slice.mig_profile = "1g.10gb";
  slice.mig_gi = 9;
  slice.mig_ci = 0;
  const std::string text =
      RenderNodeMetrics("gpu01", {slice}, {Reading(3, 40)}, {{7, "alice", "physics", {3}}});
  EXPECT_NE(
      text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"MIG-3\",pci_bus_id=\"00000000:13:00.0\","
                "device=\"nvidia1\",modelName=\"H100-SXM-80GB/1g.10gb\","
                "GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"9\",Hostname=\"gpu01\","),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("hpc_job=\"7\""), std::string::npos) << text;
}

// dcgm-exporter's other default counters: a series for each GPU that has
// the value, none (not a 0) for one that does not, no family when no GPU has it.
TEST(NodeMetricsTest, OtherCountersOnlyWhereKnown) {
  const std::vector<GpuDevice> devices = {Device(0), Device(1)};
  GpuSample a = Reading(0, 50);
  a.counters.mem_clock_mhz = 2619;
  a.counters.nvlink_kib = 123456;
  a.counters.row_remap_failed = false;
  a.counters.remapped_rows_uncorrectable = 2;
  a.counters.prof_tensor_active = 0.375;  // from DCGM, when libdcgm is there
  GpuSample b = Reading(1, 50);
  b.counters.mem_clock_mhz = 2619;  // and no NVLink
  const std::string text = RenderNodeMetrics("gpu01", devices, {a, b}, {});
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_MEM_CLOCK gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_MEM_CLOCK{gpu=\"1\","), std::string::npos);
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL counter\n"), std::string::npos);
  EXPECT_NE(text.find("hostname=\"gpu01\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 123456\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{gpu=\"1\""), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS counter\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge\n"), std::string::npos);
  EXPECT_NE(text.find("\"550.54.15\"} 0.375\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("DCGM_FI_PROF_DRAM_ACTIVE"), std::string::npos);
  EXPECT_EQ(text.find("DCGM_FI_DEV_ENC_UTIL"), std::string::npos) << "no GPU gave it";
  EXPECT_EQ(text.find("DCGM_FI_DEV_MEMORY_TEMP"), std::string::npos);
}

TEST(NodeMetricsTest, NothingBeforeTheFirstSampleAndUnknownGpusLeftOut) {
  EXPECT_EQ(RenderNodeMetrics("gpu01", {Device(0)}, {}, {}), "");
  GpuDevice bare = Device(0);
  bare.pci_bus_id.clear();
  bare.driver_version.clear();
  const std::string text = RenderNodeMetrics("gpu01", {bare}, {Reading(0, 1), Reading(5, 1)}, {});
  EXPECT_EQ(text.find("gpu=\"5\""), std::string::npos) << text;
  EXPECT_EQ(text.find("pci_bus_id"), std::string::npos) << "unknown labels are left out";
  EXPECT_EQ(text.find("DCGM_FI_DRIVER_VERSION"), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",device=\"nvidia0\","),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace shoal::agent
