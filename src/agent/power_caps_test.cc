// Jobs' --gpu-power-cap on a node's GPUs (agent/power_caps.h).
#include "agent/power_caps.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <utility>

namespace shoal::agent {
namespace {

// Records every cap it is asked for; refuses GPU 3.
class RecordingProvider final : public GpuProvider {
 public:
  std::string_view kind() const override { return "recording"; }
  Result<std::vector<GpuDevice>> Discover() override { return std::vector<GpuDevice>{}; }
  Result<std::vector<GpuSample>> Sample() override { return std::vector<GpuSample>{}; }
  Status SetPowerCap(int index, double watts) override {
    calls.emplace_back(index, watts);
    if (index == 3) return InvalidArgument("GPU 3 refuses");
    return Status::Ok();
  }
  std::vector<std::pair<int, double>> calls;
};

std::pair<StepKey, GpuHold> Hold(uint64_t job, std::vector<int> gpus, int cap) {
  GpuHold h;
  h.job = job;
  h.gpus = std::move(gpus);
  h.power_cap_w = cap;
  return {StepKey{job, 1, 0}, h};
}

std::vector<GpuDevice> FourGpus() {
  std::vector<GpuDevice> devices(4);
  for (int i = 0; i < 4; ++i)
    devices[static_cast<size_t>(i)].index = i;
  return devices;
}

TEST(PowerCapsTest, HoldsEachGpuToTheLowestCapOnItAndGivesItBackAfter) {
  const std::vector<GpuDevice> devices = FourGpus();
  RecordingProvider gpus;
  PowerCaps caps;
  caps.Apply(gpus, devices, {Hold(1, {0, 1}, 400), Hold(2, {1}, 300), Hold(3, {2}, 0)});
  EXPECT_EQ(gpus.calls, (std::vector<std::pair<int, double>>{{0, 400}, {1, 300}}));
  EXPECT_EQ(caps.applied(), (std::vector<int>{400, 300, 0, 0}));

  gpus.calls.clear();  // nothing changed: nothing is asked again
  caps.Apply(gpus, devices, {Hold(1, {0, 1}, 400), Hold(2, {1}, 300), Hold(3, {2}, 0)});
  EXPECT_TRUE(gpus.calls.empty());

  caps.Apply(gpus, devices, {Hold(1, {0, 1}, 400)});  // job 2 ended
  EXPECT_EQ(gpus.calls, (std::vector<std::pair<int, double>>{{1, 400}}));
  gpus.calls.clear();
  caps.Apply(gpus, devices, {});  // every job ended: each GPU's own limit again
  EXPECT_EQ(gpus.calls, (std::vector<std::pair<int, double>>{{0, 0}, {1, 0}}));
  EXPECT_EQ(caps.applied(), (std::vector<int>{0, 0, 0, 0}));
}

TEST(PowerCapsTest, ARefusedCapIsNotAskedForAgainUntilTheCapChanges) {
  const std::vector<GpuDevice> devices = FourGpus();
  RecordingProvider gpus;
  PowerCaps caps;
  caps.Apply(gpus, devices, {Hold(1, {3}, 250)});
  EXPECT_EQ(caps.applied()[3], 0);
  caps.Apply(gpus, devices, {Hold(1, {3}, 250)});  // the next beat
  EXPECT_EQ(gpus.calls.size(), 1u);
  caps.Apply(gpus, devices, {Hold(2, {3}, 260)});
  EXPECT_EQ(gpus.calls.size(), 2u);
}

TEST(PowerCapsTest, AGpuWithoutACapGetsItsOwnLimitBack) {
  std::vector<GpuDevice> devices = FourGpus();
  devices[1].power_limit_w = 650;
  RecordingProvider gpus;
  PowerCaps caps;
  caps.Apply(gpus, devices, {Hold(1, {1}, 300)});
  caps.Apply(gpus, devices, {});
  EXPECT_EQ(gpus.calls, (std::vector<std::pair<int, double>>{{1, 300}, {1, 650}}));
}

// An agent restarted while a job held GPU 0 at 300 W finds 300 W there; the
// file it kept says 700 W, which the GPU gets back and registers as its rating.
TEST(PowerCapsTest, OwnLimitsOutliveAnAgentRestartedWhileACapHeld) {
  const std::string dir = ::testing::TempDir() + "/own-power-limits";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/gpu-power-limits.json";
  auto gpu = [](int index, std::string uuid, double watts) {
    GpuDevice d;
    d.index = index;
    d.uuid = std::move(uuid);
    d.power_limit_w = watts;
    return d;
  };
  std::vector<GpuDevice> first = {gpu(0, "GPU-a", 700), gpu(1, "GPU-b", 700)};
  ASSERT_TRUE(KeepOwnPowerLimits(path, first).ok());
  std::vector<GpuDevice> after_restart = first;
  after_restart[0].power_limit_w = 300;           // still capped
  after_restart.push_back(gpu(2, "GPU-c", 400));  // a new GPU
  ASSERT_TRUE(KeepOwnPowerLimits(path, after_restart).ok());
  EXPECT_EQ(after_restart[0].power_limit_w, 700);
  EXPECT_EQ(after_restart[2].power_limit_w, 400);
  std::vector<GpuDevice> again = {gpu(2, "GPU-c", 250)};
  ASSERT_TRUE(KeepOwnPowerLimits(path, again).ok());
  EXPECT_EQ(again[0].power_limit_w, 400);  // kept from the second start
  std::ofstream(path) << "not json";
  EXPECT_FALSE(KeepOwnPowerLimits(path, again).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shoal::agent
