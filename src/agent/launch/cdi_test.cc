#include "agent/launch/cdi.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/files.h"

namespace shoal::agent {
namespace {

// As `nvidia-ctk cdi generate` writes it (abridged): per-GPU device files,
// and the driver's libraries, control files and hooks for any of them.
constexpr char kSpec[] = R"(---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
- name: "1"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia1
- name: "0:1"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
    - path: /dev/nvidia-caps/nvidia-cap21
- name: MIG-7a1c
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia-caps/nvidia-cap30
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
    - path: /dev/nvidia1
containerEdits:
  env:
  - NVIDIA_VISIBLE_DEVICES=void
  deviceNodes:
  - path: /dev/nvidiactl
  hooks:
  - hookName: createContainer
    path: /usr/bin/nvidia-ctk
    args: [nvidia-ctk, hook, update-ldcache, --folder, /usr/lib/x86_64-linux-gnu]
  mounts:
  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
    options: [ro, nosuid, nodev, bind]
)";

StepGpu Whole(int device, std::string uuid = "") {
  return {.fence = {.device = device, .gi = -1, .ci = -1},
          .cuda_name = std::to_string(device),
          .uuid = std::move(uuid),
          .mig_index = -1};
}

StepGpu Slice(int device, int gi, int mig_index, std::string uuid) {
  return {.fence = {.device = device, .gi = gi, .ci = 0},
          .cuda_name = uuid,
          .uuid = uuid,
          .mig_index = mig_index};
}

TEST(CdiTest, AStepGetsItsGpusDevicesAndTheSharedEditsOnce) {
  Result<CdiSpec> spec = ParseCdiSpec(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->kind, "nvidia.com/gpu");
  ASSERT_EQ(spec->devices.size(), 5u);
  const CdiEdits one = CdiEditsFor({*spec}, {Whole(1)});
  ASSERT_EQ(one.devices.size(), 2u);
  EXPECT_EQ(one.devices[0].path, "/dev/nvidia1");
  EXPECT_EQ(one.devices[1].path, "/dev/nvidiactl");
  EXPECT_EQ(one.env, std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void"});
  ASSERT_EQ(one.hooks.size(), 1u);
  EXPECT_EQ(one.hooks[0].stage, "createContainer");
  EXPECT_EQ(one.hooks[0].args.size(), 5u);
  ASSERT_EQ(one.mounts.size(), 1u);
  EXPECT_EQ(one.mounts[0].options, (std::vector<std::string>{"ro", "nosuid", "nodev", "bind"}));
  // Two GPUs: both files, the shared edits once; none of "all"'s.
  EXPECT_EQ(CdiEditsFor({*spec}, {Whole(0), Whole(1)}).devices.size(), 3u);
  EXPECT_EQ(CdiEditsFor({*spec}, {Whole(0), Whole(1)}).hooks.size(), 1u);
  // No GPU of the spec, a slice the spec does not name, or another kind:
  // nothing.
  EXPECT_TRUE(CdiEditsFor({*spec}, {Whole(5)}).empty());
  EXPECT_TRUE(CdiEditsFor({*spec}, {Slice(0, 3, 4, "MIG-ffff")}).empty());
  CdiSpec other = *spec;
  other.kind = "vendor.com/fpga";
  EXPECT_TRUE(CdiEditsFor({other}, {Whole(0)}).empty());
}

// A MIG slice by nvidia-ctk's index name ("<GPU>:<MIG index>", not its
// instance id) or by its UUID gets its own device files and the driver.
TEST(CdiTest, SlicesAreMatchedByMigIndexOrUuid) {
  Result<CdiSpec> spec = ParseCdiSpec(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const CdiEdits by_index = CdiEditsFor({*spec}, {Slice(0, 9, 1, "MIG-0000")});
  ASSERT_EQ(by_index.devices.size(), 3u);
  EXPECT_EQ(by_index.devices[1].path, "/dev/nvidia-caps/nvidia-cap21");
  EXPECT_EQ(by_index.mounts.size(), 1u) << "the driver's library";
  const CdiEdits by_uuid = CdiEditsFor({*spec}, {Slice(0, 2, 7, "MIG-7a1c")});
  ASSERT_EQ(by_uuid.devices.size(), 2u);
  EXPECT_EQ(by_uuid.devices[0].path, "/dev/nvidia-caps/nvidia-cap30");
  EXPECT_EQ(CdiNamesOf(Whole(3, "GPU-5f2c")), (std::vector<std::string>{"3", "GPU-5f2c"}));
  EXPECT_EQ(CdiNamesOf(Slice(3, 1, 2, "MIG-ab")), (std::vector<std::string>{"3:2", "MIG-ab"}));
}

TEST(CdiTest, JsonSpecsAndMistakes) {
  Result<CdiSpec> json = ParseCdiSpec(
      R"({"cdiVersion":"0.6.0","kind":"nvidia.com/gpu","devices":[{"name":"0","containerEdits":)"
      R"({"deviceNodes":[{"path":"/dev/nvidia0"}]}}]})");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(CdiEditsFor({*json}, {Whole(0)}).devices.size(), 1u);
  for (const char* bad :
       {"[1, 2]", "kind: x\ndevices:\n- containerEdits: {}\n",
        "kind: x\ncontainerEdits:\n  hooks:\n  - hookName: whenever\n    path: /bin/true\n",
        "kind: x\ncontainerEdits:\n  mounts:\n  - hostPath: /a\n", "kind: [unclosed"}) {
    EXPECT_FALSE(ParseCdiSpec(bad).ok()) << bad;
  }
}

TEST(CdiTest, OnlyRootsUnwritableFilesAreRead) {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("shoal-cdi-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteFile(dir + "/a.yaml", kSpec, 0644).ok());
  ASSERT_TRUE(WriteFile(dir + "/b.yaml", kSpec, 0666).ok());
  ::chmod((dir + "/b.yaml").c_str(), 0666);  // past the umask
  ASSERT_TRUE(WriteFile(dir + "/c.json", "{not json", 0644).ok());
  ASSERT_TRUE(WriteFile(dir + "/notes.txt", "ignored", 0644).ok());
  std::vector<std::string> problems;
  const std::vector<CdiSpec> specs = LoadCdiSpecs({dir, dir + "/missing"}, problems);
  if (::geteuid() == 0) {
    EXPECT_EQ(specs.size(), 1u);
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_NE(problems[0].find("b.yaml: not a root-owned file"), std::string::npos) << problems[0];
    EXPECT_NE(problems[1].find("c.json"), std::string::npos) << problems[1];
  } else {
    EXPECT_TRUE(specs.empty());  // nothing here is root's
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal::agent
