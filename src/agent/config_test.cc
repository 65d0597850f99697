// The agent's configuration file: its [agent] table, read by config/server_file.h.
#include "agent/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace shoal::agent {
namespace {

// Loads `text` as a configuration file (written, read, removed).
Status LoadConfigText(const std::string& text, AgentConfig& c) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("shoal-agent-config-test-" + std::to_string(::getpid()) + ".toml"))
                               .string();
  std::ofstream(path) << text;
  Status s = LoadAgentConfig(path, c);
  std::filesystem::remove(path);
  return s;
}

TEST(AgentConfigTest, TypedValuesReachTheirSettings) {
  AgentConfig c;
  Status loaded = LoadConfigText(R"([agent]
name = "gpu01"
labels = ["ib", "nvme"]
heartbeat = "2s"
cpus = 64
allow_root_jobs = true
sim_faults = ["ecc:1:14", "xid:5:79@30s"]
metrics_public = true
steps_dir = "/run/shoal-agent/steps"
)",
                                 c);
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  EXPECT_EQ(c.agent.name, "gpu01");
  EXPECT_EQ(c.agent.labels, (std::vector<std::string>{"ib", "nvme"}));
  EXPECT_EQ(c.agent.heartbeat, std::chrono::seconds(2));
  EXPECT_EQ(c.agent.cpu_milli, 64'000);
  EXPECT_TRUE(c.allow_root_jobs) << "a TOML boolean arrives as \"true\"";
  EXPECT_EQ(c.sim_faults, (std::vector<std::string>{"ecc:1:14", "xid:5:79@30s"}));
  EXPECT_TRUE(c.agent.metrics_public);
  EXPECT_EQ(c.steps_dir, "/run/shoal-agent/steps");
}

TEST(AgentConfigTest, MistakesAreErrors) {
  const std::pair<std::string, std::string> cases[] = {
      {"[agnet]\nname = \"x\"\n", ":1: unknown key 'agnet' (did you mean 'agent'?)"},
      {"[agent]\nheartbeat = \"soon\"\n", "heartbeat:"},
      {"[agent]\nlabels = [1]\n", ":2: agent.labels: must be a list of strings"},
      {"[agent]\nservre = \"x\"\n", "unknown agent setting 'servre'"},
      {"[agent]\nmetrics_public = \"yes\"\n", "metrics_public: true or false"},
      {"[agent]\nsteps_dir = \"run/steps\"\n", "steps_dir: an absolute path"},
      {"[agent]\nsim_faults = [\"xid:5\"]\n", "sim_faults: fault 'xid:5': too few parts"},
  };
  for (const auto& [text, want] : cases) {
    AgentConfig c;
    Status s = LoadConfigText(text, c);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  }
  AgentConfig c;
  EXPECT_EQ(LoadAgentConfig("/nonexistent/agent.toml", c).code(), StatusCode::kNotFound);
  // Faults are for simulated GPUs, on a GPU the node has.
  SystemClock clock;
  c.sim_faults = {"xid:5:79"};
  auto nvml = OpenGpus(c, clock);
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().message(), "sim_faults: only for simulated GPUs");
  c.gpus = "simulated:dgx-h100";
  EXPECT_TRUE(OpenGpus(c, clock).ok());
  c.sim_faults = {"xid:8:79"};
  auto beyond = OpenGpus(c, clock);
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.status().message().find("no GPU 8 on this node"), std::string::npos)
      << beyond.status().ToString();
}

}  // namespace
}  // namespace shoal::agent
