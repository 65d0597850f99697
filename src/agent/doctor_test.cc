// `shoal doctor`'s checks (agent/doctor.h) against the fake NVML the test
// suite builds and fake sysfs, /dev and /proc trees: a DGX-like node that
// is ready, and one that is not, with the fix for each shortfall.
#include "agent/doctor.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "fake_nvml.h"

namespace shoal::agent {
namespace {

namespace fs = std::filesystem;
using Level = DoctorCheck::Level;

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        fs::path(::testing::TempDir()) /
        ("doctor-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fake_ = ::dlopen(SHOAL_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(fake_, nullptr);
    reinterpret_cast<FakeNvmlResetFn>(::dlsym(fake_, "fake_nvml_reset"))();
    state_ = reinterpret_cast<FakeNvmlStateFn>(::dlsym(fake_, "fake_nvml_state"))();
    // GPUs 0-3 on NUMA node 0, 4-7 on node 1, as on a two-socket DGX.
    for (int i = 0; i < 8; ++i)
      state_->gpus[i].numa_node = i < 4 ? 0 : 1;
    options_.nvml_library = SHOAL_FAKE_NVML;
    options_.sys = (root_ / "sys").string();
    options_.dev = (root_ / "dev").string();
    options_.proc = (root_ / "proc").string();
    options_.state_dir = (root_ / "state").string();
    options_.steps_dir = "/dev/shm/shoal-doctor-test-no-such/steps";  // /dev/shm: a tmpfs
    options_.cuda_library = SHOAL_FAKE_NVML;                          // any library that loads
    options_.nccl_library = "libshoal-no-such-nccl.so.2";
    options_.cuda_home = (root_ / "cuda").string();  // no toolkit until a test writes one
    fs::create_directories(root_ / "dev");
    fs::create_directories(root_ / "proc" / "self");
  }
  void TearDown() override {
    if (fake_ != nullptr) ::dlclose(fake_);
    fs::remove_all(root_);
  }

  void Write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  // An RDMA port: `state` as the kernel writes it ("4: ACTIVE").
  void Port(const std::string& dev, int numa, const std::string& state) {
    const fs::path d = root_ / "sys" / "class" / "infiniband" / dev;
    Write(d / "device" / "numa_node", std::to_string(numa) + "\n");
    Write(d / "ports" / "1" / "state", state + "\n");
    Write(d / "ports" / "1" / "link_layer", "InfiniBand\n");
    Write(d / "ports" / "1" / "rate", "400 Gb/sec (4X NDR)\n");
  }
  void NvSwitches(int n) {
    Write(root_ / "dev" / "nvidia-nvswitchctl", "");
    for (int i = 0; i < n; ++i)
      Write(root_ / "dev" / ("nvidia-nvswitch" + std::to_string(i)), "");
  }
  // A cgroup v2 mount at <root>/cgroup with these controllers.
  void CgroupV2(const std::string& controllers) {
    Write(root_ / "cgroup" / "cgroup.controllers", controllers + "\n");
    Write(root_ / "proc" / "self" / "mountinfo",
          "30 23 0:26 / " + (root_ / "cgroup").string() +
              " rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
  }

  std::map<std::string, DoctorCheck> Run() {
    std::map<std::string, DoctorCheck> by_name;
    for (DoctorCheck& c : RunDoctor(options_))
      by_name.emplace(c.name, std::move(c));
    return by_name;
  }

  fs::path root_;
  void* fake_ = nullptr;
  FakeNvmlState* state_ = nullptr;
  DoctorOptions options_;
};

TEST_F(DoctorTest, AReadyNodePasses) {
  NvSwitches(4);
  Write(root_ / "proc" / "4242" / "comm", "nv-fabricmanager\n");
  Port("mlx5_0", 0, "4: ACTIVE");
  Port("mlx5_1", 1, "4: ACTIVE");
  CgroupV2("cpuset cpu io memory pids");
  auto checks = Run();
  EXPECT_EQ(checks.at("NVIDIA driver").level, Level::kPass);
  EXPECT_NE(checks.at("NVIDIA driver").detail.find("driver 550.54.15, 8 GPUs"), std::string::npos)
      << checks.at("NVIDIA driver").detail;
  EXPECT_EQ(checks.at("GPU health").level, Level::kPass);
  EXPECT_EQ(checks.at("GPU persistence mode").level, Level::kPass);
  EXPECT_EQ(checks.at("GPU persistence mode").detail, "on for all 8 GPUs");
  EXPECT_EQ(checks.at("NVSwitch fabric manager").level, Level::kPass);
  EXPECT_NE(checks.at("NVSwitch fabric manager").detail.find("4 NVSwitches"), std::string::npos);
  EXPECT_EQ(checks.at("CUDA driver library").level, Level::kPass);
  EXPECT_EQ(checks.at("NCCL").level, Level::kWarn);  // not on this fake host
  EXPECT_FALSE(checks.at("NCCL").fix.empty());
  EXPECT_EQ(checks.at("InfiniBand/RoCE").level, Level::kPass);
  EXPECT_NE(checks.at("InfiniBand/RoCE").detail.find("mlx5_1/1 InfiniBand 400 Gb/sec"),
            std::string::npos)
      << checks.at("InfiniBand/RoCE").detail;
  EXPECT_EQ(checks.at("GPU-NIC NUMA affinity").level, Level::kPass);
  EXPECT_EQ(checks.at("cgroups").level, Level::kPass);
  EXPECT_EQ(checks.at("disk space").level, Level::kPass);
  EXPECT_EQ(checks.at("steps folder").level, Level::kPass) << checks.at("steps folder").detail;
  for (const auto& [name, c] : checks) {
    if (c.level == Level::kPass) {
      EXPECT_TRUE(c.fix.empty()) << name;
    }
  }
}

TEST_F(DoctorTest, WhatIsMissingFailsOrWarnsAndSaysTheFix) {
  NvSwitches(4);  // and no fabric manager running
  Port("mlx5_0", 0, "4: ACTIVE");
  Port("mlx5_1", 0, "1: DOWN");        // node 1's GPUs have no NIC of their own
  state_->gpus[5].temperature_c = 95;  // past its 87 °C slowdown
  state_->gpus[2].ecc_uncorrected = 3;
  state_->gpus[6].persistence_mode = 0;
  state_->gpus[7].persistence_mode = 0;
  CgroupV2("cpuset io pids");                        // no cpu, no memory
  options_.steps_dir = "/proc/shoal-no-such/steps";  // never a tmpfs
  auto checks = Run();
  const DoctorCheck& steps = checks.at("steps folder");
  EXPECT_EQ(steps.level, Level::kWarn);
  EXPECT_NE(steps.detail.find("/proc/shoal-no-such/steps is not on a tmpfs"), std::string::npos)
      << steps.detail;
  const DoctorCheck& fm = checks.at("NVSwitch fabric manager");
  EXPECT_EQ(fm.level, Level::kFail);
  EXPECT_NE(fm.fix.find("nvidia-fabricmanager"), std::string::npos);
  const DoctorCheck& health = checks.at("GPU health");
  EXPECT_EQ(health.level, Level::kFail);
  EXPECT_NE(health.detail.find("GPU 5 at 95"), std::string::npos) << health.detail;
  const DoctorCheck& ib = checks.at("InfiniBand/RoCE");
  EXPECT_EQ(ib.level, Level::kWarn);
  EXPECT_NE(ib.detail.find("mlx5_1/1"), std::string::npos) << ib.detail;
  EXPECT_EQ(ib.detail.find("mlx5_0/1"), std::string::npos) << ib.detail;
  const DoctorCheck& numa = checks.at("GPU-NIC NUMA affinity");
  EXPECT_EQ(numa.level, Level::kWarn);
  EXPECT_NE(numa.detail.find("GPUs 4,5,6,7 on NUMA node 1"), std::string::npos) << numa.detail;
  EXPECT_EQ(checks.at("cgroups").level, Level::kWarn);
  const DoctorCheck& persistence = checks.at("GPU persistence mode");
  EXPECT_EQ(persistence.level, Level::kWarn);
  EXPECT_NE(persistence.detail.find("off on GPUs 6,7"), std::string::npos) << persistence.detail;
  for (const auto& [name, c] : checks) {
    if (c.level != Level::kPass) {
      EXPECT_FALSE(c.fix.empty()) << name;
    }
  }
  // A cooler GPU 5 leaves the ECC errors: a warning.
  state_->gpus[5].temperature_c = 40;
  EXPECT_EQ(Run().at("GPU health").level, Level::kWarn);
}

// --container-image: the runtime on the PATH, and (rootless) unprivileged
// user namespaces; a warning with the fix otherwise.
TEST_F(DoctorTest, ContainersNeedTheRuntimeAndUserNamespaces) {
  const fs::path bin = root_ / "bin";
  Write(bin / "crun", "#!/bin/sh\n");
  fs::permissions(bin / "crun", fs::perms::owner_all);
  options_.path = "/nonexistent:" + bin.string();
  Write(root_ / "proc" / "sys" / "user" / "max_user_namespaces", "63000\n");
  Write(root_ / "proc" / "sys" / "kernel" / "unprivileged_userns_clone", "1\n");
  DoctorCheck c = Run().at("containers");
  EXPECT_EQ(c.level, Level::kPass) << c.detail;
  EXPECT_NE(c.detail.find((bin / "crun").string() + ", rootless"), std::string::npos) << c.detail;
  // Ubuntu 24.04's default: AppArmor refuses them.
  Write(root_ / "proc" / "sys" / "kernel" / "apparmor_restrict_unprivileged_userns", "1\n");
  c = Run().at("containers");
  EXPECT_EQ(c.level, Level::kWarn);
  EXPECT_NE(c.detail.find("apparmor_restrict_unprivileged_userns"), std::string::npos) << c.detail;
  EXPECT_NE(c.fix.find("container_rootless = false"), std::string::npos) << c.fix;
  // ...which a root runtime does not need; a runtime that is not there is.
  options_.container_rootless = false;
  options_.container_runtime = "crun";
  EXPECT_EQ(Run().at("containers").level, Level::kPass);
  options_.container_runtime = "runc";
  c = Run().at("containers");
  EXPECT_EQ(c.level, Level::kWarn);
  EXPECT_NE(c.detail.find("'runc' is not installed"), std::string::npos) << c.detail;
  EXPECT_EQ(c.fix, "apt-get install runc");
}

TEST_F(DoctorTest, TheDriverMustSupportTheCudaJobsNeed) {
  auto cuda = [&] { return Run().at("CUDA version"); };
  EXPECT_EQ(cuda().level, Level::kPass);
  EXPECT_NE(cuda().detail.find("the driver supports CUDA 12.4; no CUDA toolkit"), std::string::npos)
      << cuda().detail;

  // The toolkit installed on the node, as NVIDIA's installer describes it.
  Write(root_ / "cuda" / "version.json",
        R"({"cuda": {"name": "CUDA SDK", "version": "12.2.140"}, "cuda_cudart": {}})");
  EXPECT_EQ(cuda().level, Level::kPass);
  EXPECT_EQ(cuda().detail, "the driver supports CUDA 12.4; jobs need 12.2 (" +
                               (root_ / "cuda" / "version.json").string() + ")");

  // An older driver of the same major version: minor version compatibility.
  state_->cuda_driver_version = 12020;
  options_.cuda_needed = "12.4";
  EXPECT_EQ(cuda().level, Level::kWarn);
  EXPECT_EQ(cuda().detail, "the driver supports CUDA 12.2; jobs need 12.4 (--cuda)");
  EXPECT_NE(cuda().fix.find("minor version compatibility"), std::string::npos);

  // Across a major version it does not run.
  options_.cuda_needed = "13.0";
  EXPECT_EQ(cuda().level, Level::kFail);
  EXPECT_NE(cuda().fix.find("a driver that supports CUDA 13.0"), std::string::npos) << cuda().fix;

  options_.cuda_needed = "twelve";
  EXPECT_EQ(cuda().level, Level::kWarn);
  EXPECT_NE(cuda().detail.find("is not a CUDA version"), std::string::npos);

  options_.cuda_library = "libshoal-no-such-cuda.so.1";
  EXPECT_EQ(cuda().level, Level::kWarn);
  EXPECT_NE(cuda().detail.find("cannot tell"), std::string::npos);
}

TEST_F(DoctorTest, WithoutNvmlTheDriverFailsAndTheGpuChecksAreLeftOut) {
  options_.nvml_library = (root_ / "libnvidia-ml.so.1").string();  // not there
  auto checks = Run();
  EXPECT_EQ(checks.at("NVIDIA driver").level, Level::kFail);
  EXPECT_NE(checks.at("NVIDIA driver").detail.find("NVML"), std::string::npos);
  EXPECT_EQ(checks.count("GPU health"), 0u);
  EXPECT_EQ(checks.count("GPU-NIC NUMA affinity"), 0u);
  EXPECT_EQ(checks.at("NVSwitch fabric manager").level, Level::kPass);
  EXPECT_EQ(checks.at("InfiniBand/RoCE").level, Level::kWarn);  // none here
  EXPECT_EQ(checks.at("cgroups").level, Level::kWarn);          // no mountinfo
}

TEST_F(DoctorTest, TextAndJsonSayTheSame) {
  const std::vector<DoctorCheck> checks = {{"one", Level::kPass, "fine", ""},
                                           {"another", Level::kWarn, "so-so", "do this"},
                                           {"third", Level::kFail, "broken", "do that"}};
  const std::string text = DoctorText(checks);
  EXPECT_NE(text.find("pass  one      fine\n"), std::string::npos) << text;
  EXPECT_NE(text.find("warn  another  so-so\n      fix: do this\n"), std::string::npos) << text;
  EXPECT_NE(text.find("1 pass, 1 warn, 1 fail"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse(DoctorJson(checks));
  EXPECT_EQ(j["fail"], 1);
  EXPECT_EQ(j["checks"][2]["level"], "fail");
  EXPECT_EQ(j["checks"][1]["fix"], "do this");
}

}  // namespace
}  // namespace shoal::agent
