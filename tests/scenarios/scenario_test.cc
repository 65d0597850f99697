// Runs every tests/scenarios/*.scen file through the real scheduler.
#include "testing/scenario.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace shoal::testing {
namespace {

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> out;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(SHOAL_SOURCE_DIR) + "/tests/scenarios")) {
    if (e.path().extension() == ".scen") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioTest, DecisionsMatch) {
  ScenarioResult r = RunScenarioFile(GetParam());
  std::string failures;
  for (const std::string& f : r.failures)
    failures += f + "\n";
  EXPECT_TRUE(r.ok) << failures << "plan:\n" << r.plan_text;
}

INSTANTIATE_TEST_SUITE_P(Files, ScenarioTest, ::testing::ValuesIn(ScenarioFiles()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = std::filesystem::path(param.param).stem().string();
                           std::replace_if(
                               name.begin(), name.end(),
                               [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); },
                               '_');
                           return name;
                         });

TEST(ScenarioFilesTest, ThereAreScenarios) {
  EXPECT_GE(ScenarioFiles().size(), 10u);
}

}  // namespace
}  // namespace shoal::testing
