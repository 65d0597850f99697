// An agent's own GET /metrics, on a real agent (simulated GPUs, a real job
// step) reporting to a real server on loopback: dcgm-exporter's series with
// the node's labels and the job's, behind the node token unless public.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "agent/agent.h"
#include "agent/config.h"
#include "agent/gpu/simulated_provider.h"
#include "api/json.h"
#include "net/http_client.h"
#include "server/server.h"

namespace shoal {
namespace {

using api::Json;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

class AgentMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-agent-metrics-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "work");
    ::chmod((dir_ / "work").c_str(), 01777);
    ::chmod(dir_.c_str(), 0755);
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.loop.pass_interval = milliseconds(2);
    o.loop.tick_interval = milliseconds(50);
    auto s = server::Server::Start(o, clock_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    admin_ = Client(server_->address(), server_->admin_token());
  }

  void TearDown() override {
    if (job_ != 0) {
      (void)admin_->Post("/v1/jobs/" + std::to_string(job_) + "/cancel", "{}");
      for (int i = 0; i < 250 && JobState(job_) == "running"; ++i)
        std::this_thread::sleep_for(milliseconds(20));
    }
    admin_.reset();
    server_.reset();
    agents_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::unique_ptr<net::HttpClient> Client(const std::string& address,
                                                 const std::string& token) {
    auto c = net::HttpClient::Connect(address, {.token = token});
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  agent::Agent& StartAgent(const std::string& name, bool metrics_public) {
    agent::AgentConfig c;
    c.agent.server = server_->address();
    c.agent.token = server_->node_token();
    c.agent.name = name;
    c.agent.listen = "127.0.0.1:0";
    c.agent.heartbeat = milliseconds(100);
    c.agent.metrics_public = metrics_public;
    c.allow_root_jobs = true;  // the test's jobs run as the test's user
    c.state_dir = (dir_ / "agents" / name).string();
    auto gpus = agent::SimulatedProvider::Create("dgx-h100", name, 1, clock_);
    EXPECT_TRUE(gpus.ok()) << gpus.status().ToString();
    auto steps = agent::OpenSteps(c, SHOAL_STEP_BINARY);
    EXPECT_TRUE(steps.ok()) << steps.status().ToString();
    auto a = agent::Agent::Start(c.agent, std::move(*gpus), std::move(*steps), clock_);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    for (int i = 0; i < 500 && !((*a)->registered() && (*a)->heartbeats() > 0); ++i)
      std::this_thread::sleep_for(milliseconds(10));
    EXPECT_TRUE((*a)->registered());
    agents_.push_back(std::move(*a));
    return *agents_.back();
  }

  std::string JobState(uint64_t id) {
    auto r = admin_->Get("/v1/jobs/" + std::to_string(id));
    return r.ok() && r->status == 200 ? Json::parse(r->body).value("state", "") : "";
  }

  // The line of `family` for GPU `gpu` in `text`, or "".
  static std::string Line(const std::string& text, const std::string& family, int gpu) {
    const std::string start = family + "{gpu=\"" + std::to_string(gpu) + "\",";
    const size_t at = text.find(start);
    return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
  }

  SystemClock clock_;
  fs::path dir_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<net::HttpClient> admin_;
  std::vector<std::unique_ptr<agent::Agent>> agents_;
  uint64_t job_ = 0;
};

TEST_F(AgentMetricsTest, DcgmSeriesWithNodeAndJobLabelsBehindTheNodeToken) {
  agent::Agent& n1 = StartAgent("n1", /*metrics_public=*/false);
  auto anonymous = Client(n1.address(), "");
  auto denied = anonymous->Get("/metrics");
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->status, 401);
  auto wrong = Client(n1.address(), server_->admin_token())->Get("/metrics");
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(wrong->status, 401) << "only the node token";

  auto r = admin_->Post("/v1/jobs", Json{{"command", "sleep 60"},
                                         {"gpus", 2},
                                         {"account", "physics"},
                                         {"time_limit_s", 600},
                                         {"work_dir", (dir_ / "work").string()}}
                                        .dump());
  ASSERT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().ToString());
  job_ = Json::parse(r->body)["jobs"][0].get<uint64_t>();
  Json job = Json::object();
  for (int i = 0; i < 500 && job.value("state", "") != "running"; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
    job = Json::parse(admin_->Get("/v1/jobs/" + std::to_string(job_))->body);
  }
  ASSERT_EQ(job.value("state", ""), "running") << job.dump();
  const Json held = job["allocation"][0]["gpus"];
  ASSERT_EQ(held.size(), 2u) << job.dump();

  auto node = Client(n1.address(), server_->node_token());
  std::string text;
  const std::string job_labels = ",hpc_job=\"" + std::to_string(job_) + "\",user=\"" +
                                 job["spec"]["user"].get<std::string>() + "\",account=\"physics\"}";
  // The job's labels come with its launch; poll in case the order is still on its way.
  for (int i = 0; i < 250; ++i) {
    auto m = node->Get("/metrics");
    ASSERT_TRUE(m.ok());
    ASSERT_EQ(m->status, 200) << m->body;
    EXPECT_EQ(m->headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8");
    text = m->body;
    if (Line(text, "DCGM_FI_DEV_GPU_UTIL", held[0].get<int>()).find(job_labels) !=
        std::string::npos)
      break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  for (int gpu = 0; gpu < 8; ++gpu) {
    const std::string line = Line(text, "DCGM_FI_DEV_GPU_UTIL", gpu);
    ASSERT_FALSE(line.empty()) << "GPU " << gpu << "\n" << text;
    const std::string device = "device=\"nvidia" + std::to_string(gpu) + "\"";
    EXPECT_NE(line.find(device + ",modelName=\"H100-SXM-80GB\",Hostname=\"n1\",hostname=\"n1\""),
              std::string::npos)
        << line;
    EXPECT_NE(line.find(",UUID=\"GPU-"), std::string::npos) << line;
    EXPECT_NE(line.find(",pci_bus_id=\"00000000:"), std::string::npos) << line;
    const bool mine = std::find(held.begin(), held.end(), Json(gpu)) != held.end();
    EXPECT_EQ(line.find(job_labels) != std::string::npos, mine) << line;
    EXPECT_EQ(line.find("hpc_job=") != std::string::npos, mine) << line;
  }
  for (const char* family : {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED",
                             "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_XID_ERRORS"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + family + " "), std::string::npos) << family;
  }
  // The other routes are still the controller's only.
  auto launch = anonymous->Post("/v1/launch", "{}");
  ASSERT_TRUE(launch.ok());
  EXPECT_EQ(launch->status, 401);
}

TEST_F(AgentMetricsTest, PublicMetricsNeedNoToken) {
  agent::Agent& n2 = StartAgent("n2", /*metrics_public=*/true);
  auto anonymous = Client(n2.address(), "");
  std::string text;
  for (int i = 0; i < 250 && text.empty(); ++i) {
    auto m = anonymous->Get("/metrics");
    ASSERT_TRUE(m.ok());
    ASSERT_EQ(m->status, 200) << m->body;
    text = m->body;
    if (text.empty()) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\","), std::string::npos) << text;
  // Nothing else opens up.
  auto kill = anonymous->Post("/v1/kill", "{}");
  ASSERT_TRUE(kill.ok());
  EXPECT_EQ(kill->status, 401);
  auto output = anonymous->Get("/v1/jobs/1/output");
  ASSERT_TRUE(output.ok());
  EXPECT_EQ(output->status, 401);
}

}  // namespace
}  // namespace shoal
