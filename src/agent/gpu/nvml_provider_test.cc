// The NVML provider against the fake libnvidia-ml.so.1 that the test suite
// builds (tests/agent/fake_nvml): the real dlopen/dlsym path, every declared
// NVML function, and the ways a host can lack NVML.

#include "agent/gpu/nvml_provider.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "agent/gpu/nvml_api.h"
#include "agent/gpu/nvml_mig.h"
#include "fake_nvml.h"

namespace shoal::agent {
namespace {

namespace fs = std::filesystem;

// One variant of the fake, loaded by the test so that it can steer the
// state the provider (which loads the same file) reads.
class FakeNvml {
 public:
  explicit FakeNvml(const char* path) : path_(path) {
    handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    state_ = reinterpret_cast<FakeNvmlStateFn>(dlsym(handle_, "fake_nvml_state"))();
    reset_ = reinterpret_cast<FakeNvmlResetFn>(dlsym(handle_, "fake_nvml_reset"));
    calls_ = reinterpret_cast<FakeNvmlCallsFn>(dlsym(handle_, "fake_nvml_calls"));
    reset_();
  }
  ~FakeNvml() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  FakeNvmlState& state() { return *state_; }
  FakeNvmlGpu& gpu(int i) { return state_->gpus[i]; }
  unsigned int calls(const std::string& function) const { return calls_(function.c_str()); }
  const std::string& path() const { return path_; }

  // Options whose sysfs has no PCI devices, so NUMA comes from NVML.
  NvmlOptions Options(const std::string& sysfs_root = "/nonexistent-sysfs") const {
    NvmlOptions options;
    options.library = path_;
    options.sysfs_pci_root = sysfs_root;
    options.dcgm_libraries = {};  // the DCGM test gives its fake
    return options;
  }

 private:
  std::string path_;
  void* handle_ = nullptr;
  FakeNvmlState* state_ = nullptr;
  FakeNvmlResetFn reset_ = nullptr;
  FakeNvmlCallsFn calls_ = nullptr;
};

class NvmlProviderTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fake_.loaded()) << dlerror(); }
  void TearDown() override {
    // Every provider has shut NVML down and freed its event set.
    EXPECT_EQ(fake_.state().init_depth, 0);
    EXPECT_EQ(fake_.state().event_sets_open, 0);
  }

  std::unique_ptr<GpuProvider> Open() {
    auto provider = OpenNvml(fake_.Options());
    EXPECT_TRUE(provider.ok()) << provider.status().ToString();
    return provider.ok() ? std::move(provider).value() : nullptr;
  }

  // Connects GPUs a-b with one direct NVLink on each side's next free link.
  void Link(int a, int b) {
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      for (int& link : fake_.gpu(from).nvlink) {
        if (link == FAKE_NVML_NO_LINK) {
          link = to;
          break;
        }
      }
    }
  }
  void ClearLinks(int gpus) {
    fake_.state().device_count = static_cast<unsigned int>(gpus);
    for (int i = 0; i < gpus; ++i) {
      for (int& link : fake_.gpu(i).nvlink)
        link = FAKE_NVML_NO_LINK;
    }
  }

  FakeNvml fake_{SHOAL_FAKE_NVML};
};

TEST_F(NvmlProviderTest, DiscoversADgxH100) {
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  EXPECT_EQ(provider->kind(), "nvml");
  auto devices = provider->Discover();
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_EQ(devices->size(), 8u);
  const GpuDevice& d = (*devices)[2];
  EXPECT_EQ(d.index, 2);
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.model, "H100-SXM-80GB");
  EXPECT_EQ(d.uuid, "GPU-00000000-0000-0000-0000-000000000002");
  EXPECT_EQ(d.memory_mib, 81559);
  EXPECT_EQ(d.pci_bus_id, "00000000:52:00.0");
  EXPECT_EQ(d.driver_version, "550.54.15");
  EXPECT_EQ(d.persistence_mode, 1);
  EXPECT_DOUBLE_EQ(d.power_limit_w, 700);
  EXPECT_DOUBLE_EQ(d.temperature_limit_c, 87);
  EXPECT_FALSE(d.mig_enabled);
  EXPECT_EQ(d.numa_node, 0);  // neither sysfs nor NVML knows
  for (const GpuDevice& gpu : *devices)
    EXPECT_EQ(gpu.nvlink_island, 0) << gpu.index;
}

TEST_F(NvmlProviderTest, CapsAGpusPowerWithinItsRangeAndGivesItsOwnLimitBack) {
  fake_.gpu(1).power_limit_mw = 650'000;  // an admin's own limit, below the default
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  ASSERT_TRUE(provider->Discover().ok());
  ASSERT_TRUE(provider->SetPowerCap(1, 300).ok());
  EXPECT_EQ(fake_.gpu(1).power_limit_mw, 300'000u);
  EXPECT_EQ(fake_.gpu(0).power_limit_mw, 700'000u);  // only that GPU
  const Status low = provider->SetPowerCap(1, 100);
  EXPECT_EQ(low.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(low.message().find("GPU 1 takes a power limit from 200 to 700 W, not 100"),
            std::string::npos)
      << low.message();
  EXPECT_EQ(fake_.gpu(1).power_limit_mw, 300'000u);
  ASSERT_TRUE(provider->SetPowerCap(1, 0).ok());
  EXPECT_EQ(fake_.gpu(1).power_limit_mw, 650'000u);  // the limit it was found with
  EXPECT_EQ(provider->SetPowerCap(9, 300).code(), StatusCode::kInvalidArgument);
}

TEST_F(NvmlProviderTest, SamplesEveryReading) {
  FakeNvmlGpu& g = fake_.gpu(5);
  g.util_gpu_pct = 97;
  g.util_memory_pct = 41;
  g.memory_used_bytes = 70000ULL << 20;
  g.temperature_c = 68;
  g.power_mw = 612'345;
  g.energy_mj = 123'456'789;
  g.sm_clock_mhz = 1980;
  g.ecc_corrected = 12;
  g.ecc_uncorrected = 3;
  g.clock_event_reasons = nvmlClocksEventReasonSwPowerCap;
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  auto samples = provider->Sample();
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_EQ(samples->size(), 8u);
  const GpuSample& s = (*samples)[5];
  EXPECT_EQ(s.index, 5);
  EXPECT_DOUBLE_EQ(s.util_pct, 97);
  EXPECT_DOUBLE_EQ(s.mem_copy_util_pct, 41);
  EXPECT_EQ(s.fb_used_mib, 70000);
  EXPECT_EQ(s.fb_free_mib, 81559 - 70000);
  EXPECT_DOUBLE_EQ(s.temperature_c, 68);
  EXPECT_DOUBLE_EQ(s.power_w, 612.345);
  EXPECT_DOUBLE_EQ(s.energy_j, 123'456.789);
  EXPECT_DOUBLE_EQ(s.sm_clock_mhz, 1980);
  EXPECT_EQ(s.ecc_corrected, 12u);  // volatile, not the fake's (doubled) aggregate
  EXPECT_EQ(s.ecc_uncorrected, 3u);
  EXPECT_EQ(s.clock_event_reasons, nvmlClocksEventReasonSwPowerCap);
  EXPECT_EQ(s.xid_errors, 0u);
  EXPECT_EQ(s.last_xid, 0);
  EXPECT_DOUBLE_EQ((*samples)[0].power_w, 70);
}

TEST_F(NvmlProviderTest, CallsEveryDeclaredFunction) {
  fake_.state().xids[0] = {1, 31};
  fake_.state().xid_count = 1;
  {
    auto provider = Open();
    ASSERT_NE(provider, nullptr);
    ASSERT_TRUE(provider->Discover().ok());
    ASSERT_TRUE(provider->Sample().ok());
    // MIG: split a GPU, read its slice, join it again.
    ASSERT_TRUE(provider->SetMigLayout(7, {"1g.10gb"}).ok());
    ASSERT_TRUE(provider->Discover().ok());
    ASSERT_TRUE(provider->Sample().ok());
    ASSERT_TRUE(provider->SetMigLayout(7, {}).ok());
  }
  fake_.state().init_result = NVML_ERROR_DRIVER_NOT_LOADED;  // for nvmlErrorString
  EXPECT_FALSE(OpenNvml(fake_.Options()).ok());
  // The deprecated name is only the fallback; the old-driver test covers it.
  const char* functions[] = {
      "nvmlInit_v2",
      "nvmlShutdown",
      "nvmlErrorString",
      "nvmlSystemGetDriverVersion",
      "nvmlDeviceGetCount_v2",
      "nvmlDeviceGetHandleByIndex_v2",
      "nvmlDeviceGetName",
      "nvmlDeviceGetUUID",
      "nvmlDeviceGetMemoryInfo",
      "nvmlDeviceGetUtilizationRates",
      "nvmlDeviceGetTemperature",
      "nvmlDeviceGetTemperatureThreshold",
      "nvmlDeviceGetPowerUsage",
      "nvmlDeviceGetEnforcedPowerLimit",
      "nvmlDeviceGetPersistenceMode",
      "nvmlDeviceGetTotalEnergyConsumption",
      "nvmlDeviceGetClockInfo",
      "nvmlDeviceGetTotalEccErrors",
      "nvmlDeviceGetCurrentClocksEventReasons",
      "nvmlDeviceGetPciInfo_v3",
      "nvmlDeviceGetNumaNodeId",
      "nvmlDeviceGetNvLinkState",
      "nvmlDeviceGetNvLinkRemotePciInfo_v2",
      "nvmlDeviceGetMigMode",
      "nvmlDeviceGetMaxMigDeviceCount",
      "nvmlDeviceGetMigDeviceHandleByIndex",
      "nvmlDeviceGetGpuInstanceId",
      "nvmlDeviceGetComputeInstanceId",
      "nvmlDeviceGetAttributes_v2",
      "nvmlDeviceSetMigMode",
      "nvmlDeviceGetGpuInstanceProfileInfo",
      "nvmlDeviceCreateGpuInstance",
      "nvmlDeviceGetGpuInstances",
      "nvmlGpuInstanceDestroy",
      "nvmlGpuInstanceGetComputeInstanceProfileInfo",
      "nvmlGpuInstanceCreateComputeInstance",
      "nvmlGpuInstanceGetComputeInstances",
      "nvmlComputeInstanceDestroy",
      "nvmlEventSetCreate",
      "nvmlDeviceRegisterEvents",
      "nvmlEventSetWait_v2",
      "nvmlEventSetFree",
      "nvmlDeviceGetFieldValues",
      "nvmlDeviceGetPcieReplayCounter",
      "nvmlDeviceGetEncoderUtilization",
      "nvmlDeviceGetDecoderUtilization",
      "nvmlDeviceGetRemappedRows",
  };
  for (const char* f : functions)
    EXPECT_GT(fake_.calls(f), 0u) << f;
  EXPECT_EQ(fake_.calls("nvmlDeviceGetCurrentClocksThrottleReasons"), 0u);
}

// dcgm-exporter's other default counters, each when the GPU gives it.
TEST_F(NvmlProviderTest, ReadsDcgmExportersOtherCounters) {
  FakeNvmlGpu& g = fake_.gpu(2);
  g.mem_clock_mhz = 2619;
  g.memory_temp_c = 41;
  g.pcie_replays = 3;
  g.enc_util_pct = 12;
  g.dec_util_pct = 34;
  g.nvlink_tx_kib = 1000;
  g.nvlink_rx_kib = 2500;
  g.remapped_correctable = 5;
  g.remapped_uncorrectable = 1;
  g.remap_failure = 1;
  fake_.gpu(3).links = 0;  // a GPU without NVLink
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  ASSERT_TRUE(provider->Discover().ok());
  auto samples = provider->Sample();
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  const api::GpuCounters& c = (*samples)[2].counters;
  EXPECT_EQ(c.mem_clock_mhz, 2619);
  EXPECT_EQ(c.memory_temp_c, 41);
  EXPECT_EQ(c.pcie_replays, 3u);
  EXPECT_EQ(c.enc_util_pct, 12);
  EXPECT_EQ(c.dec_util_pct, 34);
  EXPECT_EQ(c.nvlink_kib, 3500u);
  EXPECT_EQ(c.remapped_rows_correctable, 5u);
  EXPECT_EQ(c.remapped_rows_uncorrectable, 1u);
  EXPECT_EQ(c.row_remap_failed, true);
  EXPECT_FALSE((*samples)[3].counters.nvlink_kib.has_value()) << "no NVLink, no NVLink counter";
  EXPECT_EQ((*samples)[3].counters.memory_temp_c, 35) << "its other fields still answer";

  // A driver that answers none of them: every counter absent, none zero.
  fake_.state().optional_fail = NVML_ERROR_NOT_SUPPORTED;
  samples = provider->Sample();
  ASSERT_TRUE(samples.ok());
  const api::GpuCounters& none = (*samples)[2].counters;
  EXPECT_FALSE(none.mem_clock_mhz || none.memory_temp_c || none.pcie_replays || none.enc_util_pct ||
               none.dec_util_pct || none.nvlink_kib || none.remapped_rows_correctable ||
               none.remapped_rows_uncorrectable || none.row_remap_failed);
}

// DCGM's profiling fields when libdcgm loads (the fake, after a name that
// does not), each only where DCGM measured it; DCGM stops with the provider.
TEST_F(NvmlProviderTest, ReadsDcgmProfilingFieldsWhenLibdcgmIsThere) {
  void* dcgm = dlopen(SHOAL_FAKE_DCGM, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(dcgm, nullptr) << dlerror();
  auto embedded = reinterpret_cast<int (*)()>(dlsym(dcgm, "fake_dcgm_embedded"));
  auto initialised = reinterpret_cast<int (*)()>(dlsym(dcgm, "fake_dcgm_initialised"));
  auto fail_start = reinterpret_cast<void (*)(int)>(dlsym(dcgm, "fake_dcgm_fail_start"));
  NvmlOptions options = fake_.Options();
  options.dcgm_libraries = {"libshoal-no-such-dcgm.so.4", SHOAL_FAKE_DCGM};
  {
    auto provider = OpenNvml(options);
    ASSERT_TRUE(provider.ok()) << provider.status().ToString();
    EXPECT_EQ(embedded(), 1);
    auto samples = (*provider)->Sample();
    ASSERT_TRUE(samples.ok());
    const api::GpuCounters& c = (*samples)[2].counters;
    ASSERT_TRUE(c.prof_gr_engine_active.has_value());
    EXPECT_DOUBLE_EQ(*c.prof_gr_engine_active, 0.52);
    EXPECT_FALSE(c.prof_sm_active.has_value()) << "DCGM's blank value: not measured";
    EXPECT_FALSE(c.prof_sm_occupancy.has_value()) << "an error status: not measured";
    EXPECT_EQ(c.prof_pcie_tx_bytes, 2000.0);
    EXPECT_EQ(c.prof_dram_active, 0.25);
    EXPECT_EQ(c.mem_clock_mhz, 2619) << "NVML's readings as before";
  }
  EXPECT_EQ(embedded(), 0) << "DCGM stops with the provider";
  EXPECT_EQ(initialised(), 0);

  // A DCGM that refuses to start (no profiling module): no profiling
  // fields, and NVML's readings as ever.
  fail_start(-5);
  {
    auto provider = OpenNvml(options);
    ASSERT_TRUE(provider.ok()) << provider.status().ToString();
    auto samples = (*provider)->Sample();
    ASSERT_TRUE(samples.ok());
    EXPECT_FALSE((*samples)[0].counters.prof_gr_engine_active.has_value());
    EXPECT_EQ((*samples)[0].counters.mem_clock_mhz, 2619);
  }
  EXPECT_EQ(initialised(), 0) << "shut down after the failed start";
  fail_start(0);
  dlclose(dcgm);
}

TEST_F(NvmlProviderTest, MissingLibraryIsAPlainError) {
  for (const std::string library :
       {"/nonexistent/libnvidia-ml.so.1", "libshoal-no-such-nvml.so.1"}) {
    auto provider = OpenNvml(library);
    ASSERT_FALSE(provider.ok());
    EXPECT_EQ(provider.status().code(), StatusCode::kUnavailable);
    const std::string& message = provider.status().message();
    EXPECT_NE(message.find("NVML is not available: "), std::string::npos) << message;
    EXPECT_NE(message.find("cannot open shared object file"), std::string::npos) << message;
    EXPECT_NE(message.find("is the NVIDIA driver installed?"), std::string::npos) << message;
  }
}

TEST_F(NvmlProviderTest, InitFailureSaysWhatToCheck) {
  struct Case {
    nvmlReturn_t code;
    std::string text;
    std::string hint;
  };
  const Case cases[] = {
      {NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded", "kernel driver loaded"},
      {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "version mismatch", "different driver versions"},
      {NVML_ERROR_NO_PERMISSION, "Insufficient Permissions", "/dev/nvidia"},
      {NVML_ERROR_UNKNOWN, "Unknown Error", "nvidia-smi"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    fake_.state().init_result = c.code;
    auto provider = OpenNvml(fake_.Options());
    ASSERT_FALSE(provider.ok());
    EXPECT_EQ(provider.status().code(), StatusCode::kUnavailable);
    const std::string& message = provider.status().message();
    EXPECT_EQ(message.rfind("NVML is not available: nvmlInit_v2 failed: ", 0), 0u) << message;
    EXPECT_NE(message.find(c.text), std::string::npos) << message;
    EXPECT_NE(message.find(c.hint), std::string::npos) << message;
  }
}

TEST_F(NvmlProviderTest, NoGpusIsNotAnError) {
  fake_.state().device_count = 0;
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  EXPECT_TRUE(provider->Discover()->empty());
  EXPECT_TRUE(provider->Sample()->empty());
  EXPECT_EQ(fake_.calls("nvmlEventSetCreate"), 0u);
}

TEST_F(NvmlProviderTest, UnsupportedQueriesLeaveFieldsZero) {
  fake_.state().optional_fail = NVML_ERROR_NOT_SUPPORTED;
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  auto devices = provider->Discover();
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  for (const GpuDevice& d : *devices) {
    EXPECT_EQ(d.model, "H100-SXM-80GB");  // required queries still answer
    EXPECT_EQ(d.pci_bus_id, "");
    EXPECT_EQ(d.driver_version, "");
    EXPECT_EQ(d.nvlink_island, d.index);  // nothing known joins GPUs
    EXPECT_EQ(d.power_limit_w, 0);
    EXPECT_EQ(d.temperature_limit_c, 0);
  }
  auto samples = provider->Sample();
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  const GpuSample& s = (*samples)[0];
  EXPECT_EQ(s.fb_used_mib, 4);
  EXPECT_EQ(s.util_pct, 0);
  EXPECT_EQ(s.power_w, 0);
  EXPECT_EQ(s.temperature_c, 0);
  EXPECT_EQ(s.energy_j, 0);
  EXPECT_EQ(s.clock_event_reasons, 0u);
}

TEST_F(NvmlProviderTest, EccNotSupportedLeavesCountersZero) {
  fake_.gpu(0).ecc_supported = 0;
  fake_.gpu(0).ecc_uncorrected = 9;
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  auto samples = provider->Sample();
  ASSERT_TRUE(samples.ok());
  EXPECT_EQ((*samples)[0].ecc_uncorrected, 0u);
}

TEST_F(NvmlProviderTest, NvLinkIslands) {
  struct Case {
    std::string name;
    int gpus;
    std::vector<std::pair<int, int>> direct;  // GPU pairs joined by NVLink
    std::vector<int> switched;                // GPUs with links to NVSwitch
    int links;                                // links per GPU
    std::vector<int> islands;
  };
  const std::vector<Case> cases = {
      {"pcie only", 4, {}, {}, 0, {0, 1, 2, 3}},
      {"no active link", 4, {}, {}, 12, {0, 1, 2, 3}},
      {"bridged pairs", 4, {{0, 1}, {2, 3}}, {}, 12, {0, 0, 1, 1}},
      {"pairs out of order", 4, {{0, 3}, {1, 2}}, {}, 4, {0, 1, 1, 0}},
      {"hybrid cube-mesh quads",
       8,
       {{0, 1}, {1, 2}, {2, 3}, {4, 5}, {5, 6}, {6, 7}},
       {},
       6,
       {0, 0, 0, 0, 1, 1, 1, 1}},
      {"switch plus a bridged pair", 8, {{6, 7}}, {0, 1, 2, 3, 4, 5}, 18, {0, 0, 0, 0, 0, 0, 1, 1}},
      {"switch, one GPU unlinked", 4, {}, {0, 2, 3}, 18, {0, 1, 0, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClearLinks(c.gpus);
    for (int i = 0; i < c.gpus; ++i)
      fake_.gpu(i).links = static_cast<unsigned int>(c.links);
    for (auto [a, b] : c.direct)
      Link(a, b);
    for (int g : c.switched) {
      fake_.gpu(g).nvlink[0] = FAKE_NVML_NVSWITCH;
      fake_.gpu(g).nvlink[5] = FAKE_NVML_NVSWITCH;
    }
    auto provider = Open();
    ASSERT_NE(provider, nullptr);
    auto devices = provider->Discover();
    ASSERT_TRUE(devices.ok()) << devices.status().ToString();
    std::vector<int> islands;
    for (const GpuDevice& d : *devices)
      islands.push_back(d.nvlink_island);
    EXPECT_EQ(islands, c.islands);
  }
}

TEST_F(NvmlProviderTest, NumaNodeFromSysfsThenNvml) {
  const fs::path root = fs::path(::testing::TempDir()) / "shoal-nvml-sysfs";
  fs::remove_all(root);
  auto write = [&](const std::string& bus, const std::string& value) {
    fs::create_directories(root / bus);
    std::ofstream(root / bus / "numa_node") << value << "\n";
  };
  write("0000:1b:00.0", "0");   // GPU 0
  write("0000:9d:00.0", "1");   // GPU 4
  write("0000:43:00.0", "-1");  // GPU 1: no affinity known; NVML says 3
  fake_.gpu(1).numa_node = 3;
  fake_.gpu(4).numa_node = 7;  // sysfs wins: it names the CPU node
  fake_.state().device_count = 5;
  auto provider = OpenNvml(fake_.Options(root.string()));
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  auto devices = (*provider)->Discover();
  ASSERT_TRUE(devices.ok());
  std::vector<int> numa;
  for (const GpuDevice& d : *devices)
    numa.push_back(d.numa_node);
  EXPECT_EQ(numa, (std::vector<int>{0, 3, 0, 0, 1}));
  fs::remove_all(root);
}

// A GPU in MIG mode offers its MIG devices, each a GPU of its own with its
// MIG UUID, memory, profile and instance ids; without instances, nothing.
TEST_F(NvmlProviderTest, MigDevicesAreGpusOfTheirOwn) {
  fake_.gpu(1).mig_mode = NVML_DEVICE_MIG_ENABLE;
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  auto devices = provider->Discover();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 7u) << "GPU 1 has no instances yet";
  EXPECT_EQ((*devices)[1].device, 2);
  EXPECT_EQ((*devices)[1].index, 1);

  ASSERT_TRUE(provider->SetMigLayout(1, {"3g.40gb", "2g.20gb", "2g.20gb"}).ok());
  devices = provider->Discover();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 10u);
  const GpuDevice& big = (*devices)[1];
  EXPECT_EQ(big.device, 1);
  EXPECT_EQ(big.model, "H100-SXM-80GB/3g.40gb");
  EXPECT_EQ(big.mig_profile, "3g.40gb");
  EXPECT_EQ(big.memory_mib, 40192);
  EXPECT_EQ(big.uuid.rfind("MIG-", 0), 0u);
  EXPECT_EQ(big.mig_ci, 0);
  EXPECT_NEAR(big.power_limit_w, 700.0 * 3 / 7, 1e-6);
  EXPECT_EQ((*devices)[2].mig_profile, "2g.20gb");
  EXPECT_EQ((*devices)[3].mig_profile, "2g.20gb");
  EXPECT_NE((*devices)[2].mig_gi, (*devices)[3].mig_gi);
  // Each slice's NVML MIG index (nvidia-ctk's CDI names them by it).
  std::set<int> mig_indices;
  for (int i : {1, 2, 3}) {
    EXPECT_GE((*devices)[i].mig_index, 0);
    mig_indices.insert((*devices)[i].mig_index);
  }
  EXPECT_EQ(mig_indices.size(), 3u);
  EXPECT_EQ((*devices)[4].device, 2);
  EXPECT_TRUE((*devices)[4].mig_profile.empty());
  EXPECT_EQ((*devices)[4].mig_index, -1);
  for (size_t i = 0; i < devices->size(); ++i)
    EXPECT_EQ((*devices)[i].index, static_cast<int>(i));

  // A slice's reading: its own memory, its GPU's temperature, its share of the power.
  fake_.gpu(1).power_mw = 350'000;
  fake_.gpu(1).temperature_c = 55;
  fake_.gpu(1).mig[0].used_mib = 2048;
  auto samples = provider->Sample();
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 10u);
  const GpuSample& s = (*samples)[1];
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.temperature_c, 55);
  EXPECT_NEAR(s.power_w, 350.0 * 3 / 7, 1e-6);
  EXPECT_EQ(s.fb_used_mib + s.fb_free_mib, 40192);
  EXPECT_EQ(s.util_pct, 0) << "the fake gives no per-instance utilisation";
  // A power cap on a slice would hold the whole GPU: refused.
  EXPECT_FALSE(provider->SetPowerCap(1, 300).ok());
  EXPECT_TRUE(provider->SetPowerCap(4, 300).ok());
  EXPECT_TRUE(provider->SetPowerCap(4, 0).ok());

  // Back to whole: instances destroyed, MIG off.
  ASSERT_TRUE(provider->SetMigLayout(1, {}).ok());
  EXPECT_EQ(fake_.gpu(1).mig_mode, static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE));
  devices = provider->Discover();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 8u);
  EXPECT_TRUE((*devices)[1].mig_profile.empty());
}

// What the driver refuses comes back as the error, and a mode change that
// waits for a GPU reset says so.
TEST_F(NvmlProviderTest, MigLayoutsTheDriverRefusesAreErrors) {
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  ASSERT_TRUE(provider->Discover().ok());
  ASSERT_TRUE(provider->SetMigLayout(0, std::vector<std::string>(7, "1g.10gb")).ok());
  EXPECT_EQ(fake_.gpu(0).mig_mode, static_cast<unsigned>(NVML_DEVICE_MIG_ENABLE));
  Status s = provider->SetMigLayout(0, std::vector<std::string>(8, "1g.10gb"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("nvmlDeviceCreateGpuInstance(1g.10gb)"), std::string::npos)
      << s.message();
  s = provider->SetMigLayout(0, {"1g.5gb"});
  EXPECT_NE(s.message().find("no MIG profile '1g.5gb'"), std::string::npos) << s.message();
  fake_.gpu(2).mig_needs_reset = 1;
  s = provider->SetMigLayout(2, {"7g.80gb"});
  EXPECT_NE(s.message().find("pending until the GPU is reset"), std::string::npos) << s.message();
  EXPECT_FALSE(provider->SetMigLayout(9, {}).ok());
}

TEST(NvmlMigTest, ProfileNamesAsNvidiaSmiGivesThem) {
  constexpr int64_t kH100 = 81559;
  EXPECT_EQ(nvml::MigProfileName(1, 1, 9856, kH100), "1g.10gb");
  EXPECT_EQ(nvml::MigProfileName(1, 1, 19968, kH100), "1g.20gb");
  EXPECT_EQ(nvml::MigProfileName(2, 2, 19968, kH100), "2g.20gb");
  EXPECT_EQ(nvml::MigProfileName(3, 3, 40192, kH100), "3g.40gb");
  EXPECT_EQ(nvml::MigProfileName(7, 7, 80896, kH100), "7g.80gb");
  EXPECT_EQ(nvml::MigProfileName(3, 1, 40192, kH100), "1c.3g.40gb");
  constexpr int64_t kA100_40 = 40536;
  EXPECT_EQ(nvml::MigProfileName(1, 1, 4864, kA100_40), "1g.5gb");
  EXPECT_EQ(nvml::MigProfileName(3, 3, 19968, kA100_40), "3g.20gb");
}

TEST_F(NvmlProviderTest, XidEventsAreCountedPerGpu) {
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  FakeNvmlState& state = fake_.state();
  state.xids[0] = {2, 79};
  state.xids[1] = {5, 13};
  state.xids[2] = {2, 48};
  state.xid_count = 3;
  auto samples = provider->Sample();
  ASSERT_TRUE(samples.ok());
  EXPECT_EQ((*samples)[2].xid_errors, 2u);
  EXPECT_EQ((*samples)[2].last_xid, 48);
  EXPECT_EQ((*samples)[5].xid_errors, 1u);
  EXPECT_EQ((*samples)[5].last_xid, 13);
  EXPECT_EQ((*samples)[0].xid_errors, 0u);
  EXPECT_EQ(state.xid_count, 0u);
  // Totals: a quiet interval changes nothing; a new event adds one.
  samples = provider->Sample();
  EXPECT_EQ((*samples)[2].xid_errors, 2u);
  state.xids[0] = {2, 31};
  state.xid_count = 1;
  samples = provider->Sample();
  EXPECT_EQ((*samples)[2].xid_errors, 3u);
  EXPECT_EQ((*samples)[2].last_xid, 31);
}

TEST_F(NvmlProviderTest, LostGpuCountsAsXid79Once) {
  auto provider = Open();
  ASSERT_NE(provider, nullptr);
  fake_.gpu(3).lost = 1;
  for (int round = 0; round < 2; ++round) {
    auto samples = provider->Sample();
    ASSERT_TRUE(samples.ok()) << samples.status().ToString();
    EXPECT_EQ((*samples)[3].xid_errors, 1u);
    EXPECT_EQ((*samples)[3].last_xid, 79);
    EXPECT_EQ((*samples)[3].power_w, 0);
    EXPECT_EQ((*samples)[4].xid_errors, 0u);
  }
}

TEST_F(NvmlProviderTest, DeviceNamesMapToTheCatalogue) {
  struct Case {
    std::string name;
    int64_t memory_mib;
    std::string model;
  };
  const Case cases[] = {
      {"NVIDIA H100 80GB HBM3", 81559, "H100-SXM-80GB"},
      {"NVIDIA H200", 143771, "H200-SXM-141GB"},
      {"NVIDIA A100-SXM4-40GB", 40960, "A100-SXM4-40GB"},
      {"NVIDIA L40S", 46068, "L40S-48GB"},
      {"NVIDIA GeForce RTX 4090", 24564, "NVIDIA GeForce RTX 4090"},  // unknown: the driver's name
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    fake_.state().device_count = 1;
    std::snprintf(fake_.gpu(0).name, sizeof fake_.gpu(0).name, "%s", c.name.c_str());
    fake_.gpu(0).memory_total_bytes = static_cast<unsigned long long>(c.memory_mib) << 20;
    auto provider = Open();
    ASSERT_NE(provider, nullptr);
    auto devices = provider->Discover();
    ASSERT_TRUE(devices.ok());
    EXPECT_EQ((*devices)[0].name, c.name);
    EXPECT_EQ((*devices)[0].model, c.model);
    EXPECT_EQ((*devices)[0].memory_mib, c.memory_mib);
  }
}

// A driver from before R535 and Ampere: no clocks event reasons (the
// throttle-reasons name instead), NUMA id, MIG, energy counter or
// nvmlEventSetWait_v2.
TEST(NvmlProviderOldDriverTest, OptionalFunctionsMissingDegradeToZero) {
  FakeNvml fake(SHOAL_FAKE_NVML_OLD);
  ASSERT_TRUE(fake.loaded()) << dlerror();
  fake.gpu(0).clock_event_reasons = nvmlClocksEventReasonSwThermalSlowdown;
  fake.gpu(0).numa_node = 1;
  fake.gpu(0).mig_mode = NVML_DEVICE_MIG_ENABLE;
  fake.state().xids[0] = {0, 79};
  fake.state().xid_count = 1;
  {
    auto provider = OpenNvml(fake.Options());
    ASSERT_TRUE(provider.ok()) << provider.status().ToString();
    auto devices = (*provider)->Discover();
    ASSERT_TRUE(devices.ok()) << devices.status().ToString();
    EXPECT_EQ((*devices)[0].model, "H100-SXM-80GB");
    EXPECT_EQ((*devices)[0].numa_node, 0);
    EXPECT_FALSE((*devices)[0].mig_enabled);
    auto samples = (*provider)->Sample();
    ASSERT_TRUE(samples.ok()) << samples.status().ToString();
    EXPECT_EQ((*samples)[0].clock_event_reasons, nvmlClocksEventReasonSwThermalSlowdown);
    EXPECT_EQ((*samples)[0].energy_j, 0);
    EXPECT_EQ((*samples)[0].xid_errors, 0u);
    EXPECT_DOUBLE_EQ((*samples)[0].power_w, 70);
    // No remapped rows or field values on this driver; the rest still answer.
    EXPECT_FALSE((*samples)[0].counters.remapped_rows_correctable.has_value());
    EXPECT_FALSE((*samples)[0].counters.memory_temp_c.has_value());
    EXPECT_EQ((*samples)[0].counters.mem_clock_mhz, 2619);
  }
  EXPECT_GT(fake.calls("nvmlDeviceGetCurrentClocksThrottleReasons"), 0u);
  EXPECT_EQ(fake.calls("nvmlEventSetCreate"), 0u);  // no way to wait, so no set
  EXPECT_EQ(fake.state().init_depth, 0);
}

TEST(NvmlProviderBrokenLibraryTest, MissingRequiredFunctionIsAPlainError) {
  FakeNvml fake(SHOAL_FAKE_NVML_BROKEN);
  ASSERT_TRUE(fake.loaded()) << dlerror();
  auto provider = OpenNvml(fake.Options());
  ASSERT_FALSE(provider.ok());
  EXPECT_EQ(provider.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(provider.status().message().find("has no nvmlDeviceGetUUID"), std::string::npos)
      << provider.status().message();
  EXPECT_EQ(fake.calls("nvmlInit_v2"), 0u);
}

}  // namespace
}  // namespace shoal::agent
