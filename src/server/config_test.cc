// The server's configuration file: the [server] settings and partitions'
// idle-GPU options.
#include "server/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace shoal::server {
namespace {

// Loads `text` as a configuration file (written, read, removed).
Status LoadConfigText(const std::string& text, ServerOptions& o) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("shoal-config-test-" + std::to_string(::getpid()) + ".toml"))
                               .string();
  std::ofstream(path) << text;
  Status s = LoadServerConfig(path, o);
  std::filesystem::remove(path);
  return s;
}

TEST(ServerConfigTest, MetricsPublicAndIdleOptions) {
  ServerOptions o;
  Status loaded = LoadConfigText(R"(
[server]
metrics_public = true
metrics_per_gpu = true
[[partition]]
name = "gpu"
default = true
[[partition]]
name = "interactive"
idle_util_pct = 2.5
idle_minutes = 20
idle_action = "cancel"
require_acceptance = true
)",
                                 o);
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  EXPECT_TRUE(o.metrics_public);
  EXPECT_TRUE(o.metrics_per_gpu);
  ASSERT_EQ(o.controller.partitions.size(), 2u);
  EXPECT_EQ(o.controller.partitions[0].idle_minutes, 30);  // the defaults
  EXPECT_EQ(o.controller.partitions[0].idle_util_pct, 5);
  EXPECT_EQ(o.controller.partitions[0].idle_action, "notify");
  EXPECT_EQ(o.controller.partitions[1].idle_util_pct, 2.5);
  EXPECT_EQ(o.controller.partitions[1].idle_minutes, 20);
  EXPECT_EQ(o.controller.partitions[1].idle_action, "cancel");
  EXPECT_FALSE(o.controller.partitions[0].require_acceptance);
  EXPECT_TRUE(o.controller.partitions[1].require_acceptance);
}

TEST(ServerConfigTest, BadIdleOptionsAreErrors) {
  for (const char* bad : {"idle_action = \"kill\"", "idle_util_pct = 150", "idle_minutes = -1",
                          "require_acceptance = 1"}) {
    ServerOptions o;
    EXPECT_FALSE(
        LoadConfigText(std::string("[[partition]]\nname = \"gpu\"\n") + bad + "\n", o).ok())
        << bad;
  }
  ServerOptions o;
  EXPECT_FALSE(ApplyServerSetting("metrics_public", "yes", o).ok());
  EXPECT_TRUE(ApplyServerSetting("metrics_public", "false", o).ok());
  EXPECT_FALSE(o.metrics_public);
  EXPECT_FALSE(o.metrics_per_gpu) << "the default: the agents serve per-GPU series";
  EXPECT_FALSE(ApplyServerSetting("metrics_per_gpu", "on", o).ok());
}

TEST(ServerConfigTest, RendezvousPorts) {
  ServerOptions o;
  EXPECT_EQ(o.controller.rendezvous_first, 20000);  // below the ephemeral ports
  EXPECT_EQ(o.controller.rendezvous_last, 32767);
  ASSERT_TRUE(ApplyServerSetting("rendezvous_ports", "13000-13999", o).ok());
  EXPECT_EQ(o.controller.rendezvous_first, 13000);
  EXPECT_EQ(o.controller.rendezvous_last, 13999);
  for (const char* bad : {"80-2000", "30000-70000", "20000-20010", "x-y", "20000"}) {
    Status s = ApplyServerSetting("rendezvous_ports", bad, o);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("at least 16 ports"), std::string::npos) << s.message();
  }
}

TEST(ServerConfigTest, MaxHeartbeatRate) {
  ServerOptions o;
  EXPECT_EQ(o.controller.max_heartbeat_rate, 1000);
  ASSERT_TRUE(ApplyServerSetting("max_heartbeat_rate", "4000", o).ok());
  EXPECT_EQ(o.controller.max_heartbeat_rate, 4000);
  for (const char* bad : {"0", "9", "-5", "fast", "2000000"}) {
    Status s = ApplyServerSetting("max_heartbeat_rate", bad, o);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("heartbeats per second"), std::string::npos) << s.message();
  }
  EXPECT_EQ(o.controller.max_heartbeat_rate, 4000);
}

TEST(ServerConfigTest, ConnectionLimits) {
  ServerOptions o;
  EXPECT_EQ(o.max_connections, 16384);
  EXPECT_EQ(o.connections_per_address, 256);
  ASSERT_TRUE(ApplyServerSetting("max_connections", "40000", o).ok());
  ASSERT_TRUE(ApplyServerSetting("connections_per_address", "1024", o).ok());
  EXPECT_EQ(o.max_connections, 40000);
  EXPECT_EQ(o.connections_per_address, 1024);
  for (const char* key : {"max_connections", "connections_per_address"}) {
    for (const char* bad : {"0", "15", "-1", "many", "2000000"}) {
      Status s = ApplyServerSetting(key, bad, o);
      EXPECT_FALSE(s.ok()) << key << "=" << bad;
      EXPECT_NE(s.message().find("16 to 1000000 connections"), std::string::npos) << s.message();
    }
  }
  EXPECT_EQ(o.max_connections, 40000);
  EXPECT_EQ(o.connections_per_address, 1024);
}

}  // namespace
}  // namespace shoal::server
