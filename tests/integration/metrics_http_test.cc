// GET /metrics and the series endpoints over real HTTP on loopback, fed by a
// node registered and heartbeating with telemetry like an agent.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "api/json.h"
#include "net/http_client.h"
#include "server/server.h"
#include "testing/fake_clock.h"

namespace shoal {
namespace {

using api::Json;
using std::chrono::milliseconds;

Json Telemetry(int index, double util) {
  return {{"index", index},        {"healthy", true},      {"util", util},
          {"mem_copy_util", 10.0}, {"fb_used_mib", 40000}, {"fb_free_mib", 41920},
          {"power_w", 612.5},      {"temp_c", 63.0},       {"sm_clock_mhz", 1980.0},
          {"energy_j", 1234.5},    {"ecc_corrected", 0},   {"ecc_uncorrected", 0},
          {"xid_errors", 0},       {"last_xid", 0},        {"clock_events", 0}};
}

class MetricsHttpTest : public ::testing::Test {
 protected:
  static constexpr Duration kSeriesInterval = std::chrono::seconds(1);

  void Start(bool metrics_public, bool per_gpu = false) {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.metrics_public = metrics_public;
    o.metrics_per_gpu = per_gpu;
    o.series_interval = kSeriesInterval;
    o.loop.pass_interval = milliseconds(2);
    o.loop.tick_interval = milliseconds(50);
    o.controller.launch_grace = std::chrono::seconds(60);
    auto s = server::Server::Start(o, clock_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    admin_ = Client(server_->admin_token());
    anonymous_ = Client("");
  }

  void TearDown() override {
    admin_.reset();
    anonymous_.reset();
    server_.reset();
  }

  std::unique_ptr<net::HttpClient> Client(const std::string& token) {
    auto c = net::HttpClient::Connect(server_->address(), {.token = token});
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  std::string Token(const std::string& user) {
    auto r = admin_->Post("/v1/tokens", Json{{"user", user}, {"role", "user"}}.dump());
    EXPECT_TRUE(r.ok() && r->status == 201);
    return Json::parse(r->body)["token"].get<std::string>();
  }

  void RegisterNode() {
    Json gpus = Json::array();
    for (int i = 0; i < 2; ++i) {
      gpus.push_back({{"index", i},
                      {"uuid", "GPU-" + std::to_string(i)},
                      {"model", "H100-SXM-80GB"},
                      {"memory_mib", 81920}});
    }
    auto r = admin_->Post("/v1/nodes/register", Json{{"name", "gpu01"},
                                                     {"address", "127.0.0.1:1"},
                                                     {"cpus", 64},
                                                     {"memory_mib", 524288},
                                                     {"gpus", gpus}}
                                                    .dump());
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : "");
  }

  void Beat(double util, const Json& running = Json::array()) {
    auto r = admin_->Post("/v1/nodes/gpu01/heartbeat",
                          Json{{"running", running},
                               {"events", Json::array()},
                               {"gpus", {Telemetry(0, util), Telemetry(1, 0)}}}
                              .dump());
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : "");
  }

  testing::JumpingClock clock_;  // jumps across the series interval
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<net::HttpClient> admin_, anonymous_;
};

TEST_F(MetricsHttpTest, ScrapeNeedsATokenAndShowsTheTelemetrySent) {
  Start(false);
  RegisterNode();
  Beat(42.5);
  auto denied = anonymous_->Get("/metrics");
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->status, 401);
  auto alice = Client(Token("alice"));
  auto r = alice->Get("/metrics");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8");
  // By default the controller keeps to aggregates and one line per node and
  // family: per-GPU series are the agents'.
  EXPECT_EQ(r->body.find("DCGM_FI_"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("shoal_node_state{node=\"gpu01\",state=\"up\"} 1\n"), std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find("shoal_gpu_utilization_ratio{model=\"H100-SXM-80GB\"} 0.2125\n"),
            std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find("shoal_nodes{state=\"up\"} 1\n"), std::string::npos);
  // The scrape's own connection is serving a request.
  EXPECT_EQ(r->body.find("shoal_http_connections{state=\"active\"} 0\n"), std::string::npos);
  EXPECT_NE(r->body.find("shoal_http_connections{state=\"active\"} "), std::string::npos);
  EXPECT_NE(r->body.find("shoal_http_connections_refused_total 0\n"), std::string::npos);
  alice.reset();
}

TEST_F(MetricsHttpTest, PerGpuSeriesWhenAskedFor) {
  Start(false, /*per_gpu=*/true);
  RegisterNode();
  Beat(42.5);
  auto r = admin_->Get("/metrics");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",device=\"nvidia0\","
                         "modelName=\"H100-SXM-80GB\","
                         "Hostname=\"gpu01\",hostname=\"gpu01\"} 42.5\n"),
            std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find("DCGM_FI_DEV_POWER_USAGE{gpu=\"1\""), std::string::npos);
  EXPECT_NE(r->body.find("shoal_node_state{node=\"gpu01\",state=\"up\"} 1\n"), std::string::npos);
}

TEST_F(MetricsHttpTest, PublicMetricsNeedNoToken) {
  Start(true);
  RegisterNode();
  Beat(7);
  auto r = anonymous_->Get("/metrics");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("shoal_gpu_utilization_ratio{model=\"H100-SXM-80GB\"} 0.035\n"),
            std::string::npos)
      << r->body;
  // The API itself still needs one.
  EXPECT_EQ(anonymous_->Get("/v1/cluster/series")->status, 401);
}

TEST_F(MetricsHttpTest, NodeJobAndClusterSeries) {
  Start(false);
  RegisterNode();
  Beat(55);
  auto node = admin_->Get("/v1/nodes/gpu01/series");
  ASSERT_TRUE(node.ok() && node->status == 200) << (node.ok() ? node->body : "");
  Json j = Json::parse(node->body);
  EXPECT_EQ(j["node"], "gpu01");
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["index"], 0);
  ASSERT_EQ(j["gpus"][0]["points"].size(), 1u);
  const Json p = j["gpus"][0]["points"][0];
  EXPECT_EQ(p[1].get<double>(), 55);
  EXPECT_EQ(p[2].get<double>(), 40000);
  EXPECT_EQ(p[3].get<double>(), 612.5);
  EXPECT_EQ(p[4].get<double>(), 63);
  EXPECT_EQ(
      admin_->Get("/v1/nodes/gpu01/series?since=" + std::to_string(p[0].get<int64_t>() + 1))->body,
      R"({"node":"gpu01","step_s":1,"gpus":[{"index":0,"points":[]},{"index":1,"points":[]}]})");
  // until: the points up to it, both ends included.
  const std::string at = std::to_string(p[0].get<int64_t>());
  EXPECT_EQ(Json::parse(admin_->Get("/v1/nodes/gpu01/series?since=" + at + "&until=" + at)
                            ->body)["gpus"][0]["points"]
                .size(),
            1u);
  EXPECT_EQ(admin_->Get("/v1/nodes/nope/series")->status, 404);
  EXPECT_EQ(admin_->Get("/v1/nodes/gpu01/series?since=soon")->status, 400);
  auto backwards = admin_->Get("/v1/nodes/gpu01/series?since=200&until=100");
  EXPECT_EQ(backwards->status, 400);
  EXPECT_NE(backwards->body.find("until must not be before since"), std::string::npos);

  // A job of alice's on GPU 0: its series is hers (and admins'), not bob's.
  auto alice = Client(Token("alice"));
  auto bob = Client(Token("bob"));
  auto sub = alice->Post("/v1/jobs",
                         Json{{"command", "sleep 100"}, {"gpus", 1}, {"time_limit_s", 600}}.dump());
  ASSERT_TRUE(sub.ok() && sub->status == 201);
  for (int i = 0; i < 200; ++i) {
    if (Json::parse(alice->Get("/v1/jobs/1")->body)["state"] == "running") break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  clock_.Jump(kSeriesInterval);  // the next heartbeat is the next sample
  Beat(99, Json::array({{{"job", 1}, {"epoch", 1}}}));
  auto js = alice->Get("/v1/jobs/1/series");
  ASSERT_TRUE(js.ok() && js->status == 200) << (js.ok() ? js->body : "");
  Json jj = Json::parse(js->body);
  EXPECT_EQ(jj["job"], 1);
  ASSERT_EQ(jj["gpus"].size(), 1u);
  EXPECT_EQ(jj["gpus"][0]["node"], "gpu01");
  ASSERT_GE(jj["gpus"][0]["points"].size(), 1u);
  EXPECT_EQ(jj["gpus"][0]["points"].back()[1].get<double>(), 99);
  EXPECT_EQ(bob->Get("/v1/jobs/1/series")->status, 403);
  EXPECT_EQ(alice->Get("/v1/jobs/9/series")->status, 404);
  // The job's efficiency is in its JSON (from the next tick of the loop on).
  Json shown;
  for (int i = 0; i < 100; ++i) {
    shown = Json::parse(alice->Get("/v1/jobs/1")->body);
    if (shown.contains("efficiency")) break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(shown.contains("efficiency")) << shown.dump();
  EXPECT_EQ(shown["efficiency"]["util_peak_pct"].get<double>(), 99) << shown.dump();

  for (int i = 0; i < 100; ++i) {
    auto c = Json::parse(admin_->Get("/v1/cluster/series")->body);
    if (!c["points"].empty()) {
      EXPECT_EQ(c["points"][0].size(), 3u);
      break;
    }
    ASSERT_LT(i, 99) << "no cluster sample";
    std::this_thread::sleep_for(milliseconds(20));
  }
  alice.reset();
  bob.reset();
}

}  // namespace
}  // namespace shoal
