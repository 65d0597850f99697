#include "agent/launch/cgroup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/launch/device_fence.h"

namespace shoal::agent {
namespace {

TEST(ParseMountInfo, FindsCgroupMountsAndTheirControllers) {
  // The hybrid layout of the build machines, plus a combined v1 mount.
  const std::string text =
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "36 31 0:33 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
      "garbage line\n";
  std::vector<MountEntry> mounts = ParseMountInfo(text);
  ASSERT_EQ(mounts.size(), 5u);
  EXPECT_EQ(mounts[0].fs_type, "tmpfs");
  EXPECT_EQ(mounts[1].mount_point, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(mounts[1].super_options, (std::vector<std::string>{"rw", "cpu"}));
  EXPECT_EQ(mounts[3].mount_point, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(mounts[3].super_options, (std::vector<std::string>{"rw", "cpu", "cpuacct"}));
  EXPECT_EQ(mounts[4].fs_type, "cgroup2");
  EXPECT_EQ(mounts[4].mount_point, "/sys/fs/cgroup/unified");
}

TEST(LimitWrites, PerVersion) {
  struct Case {
    CgroupVersion version;
    int64_t cpu_milli;
    int64_t memory_mib;
    std::vector<std::string> expected;  // "hierarchy/file=value[?]"
  };
  const std::vector<Case> cases = {
      {CgroupVersion::kV2,
       1500,
       64,
       {"/cpu.max=150000 100000", "/memory.max=67108864", "/memory.swap.max=0?"}},
      {CgroupVersion::kV2, 5, 0, {"/cpu.max=1000 100000"}},  // the kernel's least quota
      {CgroupVersion::kV1,
       250,
       1,
       {"cpu/cpu.cfs_period_us=100000", "cpu/cpu.cfs_quota_us=25000",
        "memory/memory.limit_in_bytes=1048576", "memory/memory.memsw.limit_in_bytes=1048576?"}},
      {CgroupVersion::kV1, 0, 0, {}},
      {CgroupVersion::kNone, 1000, 1000, {}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> got;
    for (const CgroupWrite& w : LimitWrites(c.version, c.cpu_milli, c.memory_mib)) {
      got.push_back(w.hierarchy + "/" + w.file + "=" + w.value + (w.optional ? "?" : ""));
    }
    EXPECT_EQ(got, c.expected);
  }
}

// Whole GPUs, by driver index.
std::vector<FencedGpu> Whole(std::initializer_list<int> devices) {
  std::vector<FencedGpu> out;
  for (int d : devices)
    out.push_back({.device = d});
  return out;
}

TEST(GpuDenyRules, DenyEveryGpuButTheGivenOnes) {
  const std::vector<GpuDeviceNode> node = {{0, 195, 0}, {1, 195, 1}, {2, 195, 2}, {3, 195, 7}};
  EXPECT_EQ(GpuDenyRules(node, Whole({1, 2})),
            (std::vector<std::string>{"c 195:0 rwm", "c 195:7 rwm"}));
  EXPECT_TRUE(GpuDenyRules(node, Whole({0, 1, 2, 3})).empty());
  EXPECT_EQ(GpuDenyRules(node, {}).size(), 4u);
  EXPECT_TRUE(FindGpuDeviceNodes("/nonexistent/nvidia%d").empty());
  EXPECT_TRUE(FindGpuDeviceNodes("/dev/null").empty()) << "a pattern without %d names no GPU";
}

// The v2 fence's program: four instructions a denied device, reading the
// device's type, major and minor from bpf_cgroup_dev_ctx; every jump lands
// on an instruction of the program (the kernel's verifier checks the rest).
TEST(DeviceDenyProgram, DeniesEachGivenCharacterDeviceAndAllowsTheRest) {
  const std::vector<GpuDeviceNode> deny = {{0, 195, 0}, {3, 195, 3}};
  const std::vector<bpf_insn> p = DeviceDenyProgram(deny);
  ASSERT_EQ(p.size(), 5u + 4 * deny.size() + 2);
  EXPECT_EQ(p[4].code, BPF_JMP | BPF_JNE | BPF_K);
  EXPECT_EQ(p[4].imm, BPF_DEVCG_DEV_CHAR);
  EXPECT_EQ(4 + 1 + p[4].off, static_cast<int>(p.size()) - 2);  // to "allow"
  for (size_t d = 0; d < deny.size(); ++d) {
    const size_t at = 5 + 4 * d;
    EXPECT_EQ(p[at].imm, 195);
    EXPECT_EQ(p[at + 1].imm, static_cast<int32_t>(deny[d].minor));
    EXPECT_EQ(static_cast<size_t>(at + 1 + p[at].off), at + 4);  // to the next device
    EXPECT_EQ(p[at + 2].imm, 0);                                 // deny
    EXPECT_EQ(p[at + 3].code, BPF_JMP | BPF_EXIT);
  }
  EXPECT_EQ(p[p.size() - 2].imm, 1);  // allow
  EXPECT_EQ(p.back().code, BPF_JMP | BPF_EXIT);
  EXPECT_EQ(DeniedGpus(deny, Whole({3})), (std::vector<GpuDeviceNode>{{0, 195, 0}}));
}

// A MIG slice's step opens its GPU's file and its own instance's capability
// files, never another slice's on the same GPU nor any other GPU's.
TEST(GpuDenyRules, MigSlicesOpenOnlyTheirOwnInstances) {
  const std::string minors =
      "config 1\nmonitor 2\n"
      "gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"
      "gpu0/gi2/access 21\ngpu0/gi2/ci0/access 22\n"
      "gpu1/gi1/access 147\ngpu1/gi1/ci0/access 148\n"
      "gpu1/gi1/ci/access 9\nbogus line here\ngpu2/gix/access 3\n";
  std::vector<GpuDeviceNode> caps = ParseMigMinors(minors, 508);
  ASSERT_EQ(caps.size(), 6u);
  EXPECT_EQ(caps[0], (GpuDeviceNode{.index = 0, .major = 508, .minor = 12, .gi = 1, .ci = -1}));
  EXPECT_EQ(caps[1], (GpuDeviceNode{.index = 0, .major = 508, .minor = 13, .gi = 1, .ci = 0}));
  std::vector<GpuDeviceNode> node = {{0, 195, 0}, {1, 195, 1}};
  node.insert(node.end(), caps.begin(), caps.end());
  const std::vector<FencedGpu> slice = {{.device = 0, .gi = 2, .ci = 0}};
  EXPECT_EQ(GpuDenyRules(node, slice),
            (std::vector<std::string>{"c 195:1 rwm", "c 508:12 rwm", "c 508:13 rwm",
                                      "c 508:147 rwm", "c 508:148 rwm"}));
  // A whole GPU's step opens no instance at all.
  EXPECT_EQ(GpuDenyRules(node, Whole({1})).size(), 1u + caps.size());
  EXPECT_TRUE(FindMigCapNodes("/nonexistent/mig-minors").empty());
}

TEST(DetectCgroups, NoneWhenConfiguredOrNotACgroup) {
  CgroupLayout none = DetectCgroups("none", "t");
  EXPECT_EQ(none.version, CgroupVersion::kNone);
  EXPECT_TRUE(none.description.starts_with("none: disabled by configuration")) << none.description;
  // A plain folder would accept pids and limits and enforce nothing.
  std::string dir = ::testing::TempDir() + "/not-a-cgroup";
  std::filesystem::create_directories(dir + "/memory");
  CgroupLayout plain = DetectCgroups(dir, "t");
  EXPECT_EQ(plain.version, CgroupVersion::kNone);
  EXPECT_TRUE(plain.description.starts_with("none: ")) << plain.description;
  std::filesystem::remove_all(dir);
}

// A step's CPU time comes from its cgroup's own count: v2's cpu.stat, v1's
// cpuacct.usage where cpuacct shares the cpu hierarchy, else none.
TEST(StepCgroupCpu, ReadsTheCountEachVersionKeeps) {
  const std::string root = ::testing::TempDir() + "/cgroup-cpu";
  std::filesystem::create_directories(root + "/v2/s1");
  std::filesystem::create_directories(root + "/cpu/s1");
  std::filesystem::create_directories(root + "/pids/s1");
  std::ofstream(root + "/v2/s1/cpu.stat") << "usage_usec 2500000\nuser_usec 2000000\n";
  CgroupLayout v2;
  v2.version = CgroupVersion::kV2;
  v2.v2_dir = root + "/v2";
  EXPECT_EQ(StepCgroup(v2, "s1").CpuSeconds(), 2.5);
  EXPECT_EQ(StepCgroup(v2, "gone").CpuSeconds(), std::nullopt);

  CgroupLayout v1;
  v1.version = CgroupVersion::kV1;
  v1.v1_cpu_dir = root + "/cpu";
  v1.v1_pids_dir = root + "/pids";
  EXPECT_EQ(StepCgroup(v1, "s1").CpuSeconds(), std::nullopt);  // cpu without cpuacct
  std::ofstream(root + "/cpu/s1/cpuacct.usage") << "750000000\n";
  EXPECT_EQ(StepCgroup(v1, "s1").CpuSeconds(), 0.75);
  EXPECT_EQ(StepCgroup(CgroupLayout{}, "s1").CpuSeconds(), std::nullopt);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace shoal::agent
