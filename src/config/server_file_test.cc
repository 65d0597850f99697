#include "config/server_file.h"

#include <gtest/gtest.h>

namespace shoal::config {
namespace {

TEST(ServerFileTest, SettingsPartitionsAndAccounts) {
  auto f = ParseServerToml(R"(
[server]
listen = "127.0.0.1:6820"
metrics_public = true
http_threads = 8
[[account]]
name = "ml"
[[partition]]
name = "gpu"
allowed_accounts = ["ml"]
[[power_budget]]
name = "row-a"
label = "row=a"
kw = 120
)",
                           "server.toml");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->server.at("listen"), "127.0.0.1:6820");
  EXPECT_EQ(f->server.at("metrics_public"), "true");
  EXPECT_EQ(f->server.at("http_threads"), "8");
  ASSERT_EQ(f->cluster.partitions.size(), 1u);
  EXPECT_TRUE(f->cluster.partitions[0].is_default);
  ASSERT_EQ(f->cluster.accounts.size(), 1u);
  EXPECT_TRUE(f->cluster.nodes.empty());
  ASSERT_EQ(f->cluster.power_budgets.size(), 1u);
  EXPECT_EQ(f->cluster.power_budgets[0].label, "row=a");
  EXPECT_DOUBLE_EQ(f->cluster.power_budgets[0].watts, 120000);
}

TEST(ServerFileTest, ErrorsNameFileLineAndKey) {
  const std::pair<std::string, std::string> cases[] = {
      {"[sever]\nlisten = \"x\"\n", "s.toml:1: unknown key 'sever' (did you mean 'server'?)"},
      {"[[nodes]]\ncount = 1\n",
       "s.toml:1: unknown key 'nodes' (known: server, partition, account, power_budget, power)"},
      {"[[power_budget]]\nname = \"site\"\nkw = -3\n",
       "s.toml:3: power_budget[1].kw: must be more than 0 (kilowatts)"},
      {"[server]\nlisten = { a = 1 }\n",
       "s.toml:2: server.listen: must be a string, number, boolean or list of strings"},
      {"server = 1\n", "s.toml:1: server: must be a table, written [server]"},
      {"[[partition]]\nname = \"p\"\nmax_time = \"soon\"\n", "s.toml:3: partition[1].max_time: "},
  };
  for (const auto& [text, want] : cases) {
    auto f = ParseServerToml(text, "s.toml");
    ASSERT_FALSE(f.ok()) << text;
    EXPECT_EQ(f.status().message().rfind(want, 0), 0u) << f.status().message();
  }
}

TEST(SettingsFileTest, OneTableOfSettings) {
  auto s = ParseSettingsToml("[agent]\nlabels = [\"ib\", \"nvme\"]\nallow_root_jobs = true\n",
                             "agent.toml", "agent");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->at("labels"), "ib,nvme");
  EXPECT_EQ(s->at("allow_root_jobs"), "true");
  auto other = ParseSettingsToml("[agnet]\nname = \"x\"\n", "agent.toml", "agent");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(), "agent.toml:1: unknown key 'agnet' (did you mean 'agent'?)");
  auto missing = LoadSettingsFile("/nonexistent/agent.toml", "agent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace shoal::config
