#include "agent/launch/container.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace shoal::agent {
namespace {

using Json = nlohmann::json;

TEST(ContainerTest, RuntimeConfigRunsTheUserWithoutPrivileges) {
  RuntimeSpec s;
  s.root = "/steps/7.1/ctr/root";
  s.uid = 1001;
  s.gid = 1002;
  s.groups = {1002, 27};
  s.argv = {"/bin/sh", "/steps/7.1/script"};
  s.env = {"PATH=/usr/bin", "RANK=0"};
  s.cwd = "/home/alice/run";
  s.binds = {{"/steps/7.1/ctr/mnt/0", "/home/alice", false},
             {"/steps/7.1/ctr/mnt/1", "/data", true}};
  s.devices = {{"/dev/nvidia2", 195, 2, ""}, {"/dev/nvidiactl", 195, 255, ""}};
  s.cgroups_path = "/shoal/ab12/7.1";
  s.cdi_mounts = {{"/usr/lib/libcuda.so.1", "/usr/lib/libcuda.so.1", {"ro", "bind"}}};
  s.hooks = {{"createContainer", "/usr/bin/nvidia-ctk", {"nvidia-ctk", "hook"}, {}}};
  const Json j = Json::parse(RuntimeConfigJson(s));
  EXPECT_EQ(j["hooks"]["createContainer"][0]["path"], "/usr/bin/nvidia-ctk");
  EXPECT_EQ(j["hooks"]["createContainer"][0]["args"], Json({"nvidia-ctk", "hook"}));
  EXPECT_EQ(j["mounts"].back()["destination"], "/usr/lib/libcuda.so.1");
  const Json& p = j["process"];
  EXPECT_EQ(p["user"]["uid"], 1001);
  EXPECT_EQ(p["user"]["gid"], 1002);
  EXPECT_EQ(p["user"]["additionalGids"], Json({1002, 27}));
  EXPECT_TRUE(p["noNewPrivileges"].get<bool>());
  for (const char* set : {"bounding", "effective", "inheritable", "permitted", "ambient"})
    EXPECT_TRUE(p["capabilities"][set].empty()) << set;
  EXPECT_EQ(p["args"], Json(s.argv));
  EXPECT_EQ(p["env"], Json(s.env));
  EXPECT_EQ(p["cwd"], "/home/alice/run");
  EXPECT_EQ(j["root"]["path"], s.root);
  // Only a mount namespace: the host's PID, network and IPC namespaces.
  EXPECT_EQ(j["linux"]["namespaces"], Json::parse(R"([{"type":"mount"}])"));
  EXPECT_EQ(j["linux"]["cgroupsPath"], "/shoal/ab12/7.1");
  // Every device denied, then the step's GPUs allowed and created.
  const Json& rules = j["linux"]["resources"]["devices"];
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_FALSE(rules[0]["allow"].get<bool>());
  EXPECT_EQ(rules[1]["minor"], 2);
  EXPECT_EQ(j["linux"]["devices"][0]["path"], "/dev/nvidia2");
  bool home = false, data_ro = false;
  for (const Json& m : j["mounts"]) {
    const auto options = m["options"].get<std::vector<std::string>>();
    const bool ro = std::find(options.begin(), options.end(), "ro") != options.end();
    if (m["destination"] == "/home/alice") home = m["source"] == "/steps/7.1/ctr/mnt/0" && !ro;
    if (m["destination"] == "/data") data_ro = ro;
    if (m["type"] == "bind") {
      EXPECT_NE(std::find(options.begin(), options.end(), "nosuid"), options.end());
      EXPECT_NE(std::find(options.begin(), options.end(), "nodev"), options.end());
    }
  }
  EXPECT_TRUE(home);
  EXPECT_TRUE(data_ro);
}

// Rootless: a user namespace mapping the user (and no one else) to
// themselves, no groups to set, proc and devices bound from the host side,
// no cgroups (the task is in the step's already).
TEST(ContainerTest, RootlessConfigMapsOnlyTheUser) {
  RuntimeSpec s;
  s.rootless = true;
  s.root = "/steps/7.1/ctr/root";
  s.uid = 1001;
  s.gid = 1002;
  s.groups = {1002, 27};
  s.argv = {"/bin/true"};
  s.devices = {{"/dev/nvidia2", 195, 2, "/steps/7.1/ctr/dev/0"}};
  s.cgroups_path = "/shoal/ab12/7.1/task0";
  const Json j = Json::parse(RuntimeConfigJson(s));
  const Json& linux = j["linux"];
  EXPECT_EQ(linux["namespaces"], Json::parse(R"([{"type":"mount"},{"type":"user"}])"));
  EXPECT_EQ(linux["uidMappings"], Json::parse(R"([{"containerID":1001,"hostID":1001,"size":1}])"));
  EXPECT_EQ(linux["gidMappings"], Json::parse(R"([{"containerID":1002,"hostID":1002,"size":1}])"));
  EXPECT_FALSE(linux.contains("cgroupsPath"));
  EXPECT_FALSE(linux.contains("resources"));
  EXPECT_FALSE(linux.contains("devices"));
  EXPECT_FALSE(j["process"]["user"].contains("additionalGids"));
  EXPECT_EQ(j["process"]["user"]["uid"], 1001);
  EXPECT_TRUE(j["process"]["noNewPrivileges"].get<bool>());
  bool proc_bound = false, gpu_bound = false;
  for (const Json& m : j["mounts"]) {
    const auto options = m["options"].get<std::vector<std::string>>();
    const bool nosuid = std::find(options.begin(), options.end(), "nosuid") != options.end();
    if (m["destination"] == "/proc") proc_bound = m["type"] == "bind" && m["source"] == "/proc";
    if (m["destination"] == "/dev/nvidia2")
      gpu_bound = m["source"] == "/steps/7.1/ctr/dev/0" && nosuid;
  }
  EXPECT_TRUE(proc_bound);
  EXPECT_TRUE(gpu_bound);
}

TEST(ContainerTest, TheUserGetsANameInTheImageUnlessItHasOne) {
  UserAccount alice{
      .name = "alice", .uid = 1001, .gid = 1002, .home = "/home/alice", .shell = "", .groups = {}};
  const std::string passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n";
  const std::string group = "root:x:0:\n";
  UserEntries e = MissingUserEntries(passwd, group, alice, "physics");
  EXPECT_EQ(e.passwd, "alice:x:1001:1002:alice:/home/alice:/bin/sh\n");
  EXPECT_EQ(e.group, "physics:x:1002:\n");
  // An image that has the uid (or the name, or the gid) keeps its own line.
  e = MissingUserEntries(passwd + "ubuntu:x:1001:1001::/home/ubuntu:/bin/bash\n",
                         group + "staff:x:1002:\n", alice, "physics");
  EXPECT_EQ(e.passwd, "");
  EXPECT_EQ(e.group, "");
  EXPECT_EQ(MissingUserEntries("alice:x:5:5::/:/bin/sh", "", alice, "physics").passwd, "");
  // No home: "/".
  alice.home.clear();
  EXPECT_EQ(MissingUserEntries("", "", alice, "physics").passwd,
            "alice:x:1001:1002:alice:/:/bin/sh\n");
}

TEST(ContainerTest, ImageVariablesYieldToShoalsAndTheNamedOnes) {
  const std::vector<std::string> task = {"PATH=/usr/bin:/bin", "HOME=/home/alice",
                                         "NCCL_DEBUG=INFO", "CUDA_VISIBLE_DEVICES=0,1",
                                         "LD_LIBRARY_PATH=/host"};
  const std::vector<std::string> image = {"PATH=/opt/conda/bin:/usr/bin",
                                          "HOME=/root",
                                          "NCCL_DEBUG=WARN",
                                          "CUDA_VISIBLE_DEVICES=all",
                                          "LD_LIBRARY_PATH=/usr/local/cuda/lib64",
                                          "PYTHONPATH=/app",
                                          "NOVALUE"};
  const std::vector<std::string> shoal = {"CUDA_VISIBLE_DEVICES=0,1", "RANK=0"};
  EXPECT_EQ(ContainerEnvironment(task, image, {"NCCL_DEBUG"}, shoal),
            (std::vector<std::string>{"PATH=/opt/conda/bin:/usr/bin", "HOME=/home/alice",
                                      "NCCL_DEBUG=INFO", "CUDA_VISIBLE_DEVICES=0,1",
                                      "LD_LIBRARY_PATH=/usr/local/cuda/lib64", "PYTHONPATH=/app"}));
}

TEST(ContainerTest, CgroupPathIsTheStepsOwn) {
  CgroupLayout v1;
  v1.version = CgroupVersion::kV1;
  v1.v1_memory_dir = "/sys/fs/cgroup/memory/shoal/ab12";
  v1.v1_devices_dir = "/sys/fs/cgroup/devices/shoal/ab12";
  EXPECT_EQ(RuntimeCgroupPath(v1, "7.1"), "/shoal/ab12/7.1");
  CgroupLayout v2;
  v2.version = CgroupVersion::kV2;
  v2.v2_dir = "/sys/fs/cgroup/shoal/cd34";
  EXPECT_EQ(RuntimeCgroupPath(v2, "8.1.2"), "/shoal/cd34/8.1.2");
  EXPECT_EQ(RuntimeCgroupPath(CgroupLayout{}, "9.1"), "/shoal/containers/9.1");
}

TEST(ContainerTest, OnlyTheStepsGpusAreDevices) {
  const std::vector<GpuDeviceNode> node = {{0, 195, 0},        {1, 195, 1},
                                           {2, 195, 2},        {1, 510, 30, 3, -1},
                                           {1, 510, 31, 3, 0}, {1, 510, 40, 4, -1}};
  EXPECT_EQ(StepGpuDevices(node, {{2}}).size(), 1u);
  EXPECT_EQ(StepGpuDevices(node, {{2}})[0].path, "/dev/nvidia2");
  // A MIG slice: its GPU's file and its own instance's capability files.
  const std::vector<ContainerDevice> slice = StepGpuDevices(node, {{1, 3, 0}});
  ASSERT_EQ(slice.size(), 3u);
  EXPECT_EQ(slice[0].path, "/dev/nvidia1");
  EXPECT_EQ(slice[1].path, "/dev/nvidia-caps/nvidia-cap30");
  EXPECT_EQ(slice[2].path, "/dev/nvidia-caps/nvidia-cap31");
  EXPECT_TRUE(StepGpuDevices(node, {}).empty());
}

}  // namespace
}  // namespace shoal::agent
