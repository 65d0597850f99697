#include "integration/fake_agent.h"

#include <httplib.h>

#include <chrono>

#include "api/json.h"
#include "core/strings.h"

namespace shoal::testing {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct FakeAgent::Http {
  httplib::Server server;
  int port = 0;
};

FakeAgent::FakeAgent(std::string name, int gpus, std::string server, std::string token)
    : name_(std::move(name)),
      gpus_(gpus),
      server_(std::move(server)),
      token_(std::move(token)),
      http_(std::make_unique<Http>()) {}

FakeAgent::~FakeAgent() {
  Stop();
}

Status FakeAgent::Start() {
  http_->server.Post("/v1/launch", [this](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") != "Bearer " + token_) {
      res.status = 401;
      return;
    }
    api::Json j = api::Json::parse(req.body);
    Launch l;
    l.job = j["job"].get<uint64_t>();
    l.epoch = j["epoch"].get<uint64_t>();
    l.node_rank = j["node_rank"].get<int>();
    for (const auto& n : j["nodes"])
      l.nodes.push_back(n.get<std::string>());
    for (const auto& g : j["allocation"]["gpus"])
      l.gpus.push_back(g.get<int>());
    const std::string command = j["spec"]["command"].get<std::string>();
    Job job;
    job.epoch = l.epoch;
    auto parts = Split(command, ':');
    if (parts.size() == 3 && parts[0] == "exit") {
      job.exit_code = static_cast<int>(*ParseInt(parts[1]));
      job.exit_at_ms = NowMs() + *ParseInt(parts[2]);
    }
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[l.job] = job;
    launches_.push_back(l);
    res.set_content("{}", "application/json");
  });
  http_->server.Post("/v1/kill", [this](const httplib::Request& req, httplib::Response& res) {
    api::Json j = api::Json::parse(req.body);
    std::lock_guard<std::mutex> lock(mu_);
    ++kills_;
    auto it = jobs_.find(j["job"].get<uint64_t>());
    if (it != jobs_.end()) it->second.killed = true;
    res.set_content("{}", "application/json");
  });
  http_->server.set_keep_alive_timeout(
      1);  // so that Stop() does not wait long for idle connections
  http_->port = http_->server.bind_to_any_port("127.0.0.1");
  if (http_->port <= 0) return Internal("fake agent cannot listen");
  http_thread_ = std::thread([this] { http_->server.listen_after_bind(); });
  // Register.
  Node n;
  n.name = name_;
  n.address = "127.0.0.1:" + std::to_string(http_->port);
  n.cpu_milli = 64000;
  n.memory_mib = 512 * 1024;
  for (int i = 0; i < gpus_; ++i) {
    Gpu g;
    g.index = i;
    g.model = "H100-SXM-80GB";
    g.memory_mib = 81920;
    n.gpus.push_back(g);
  }
  httplib::Client c(server_);
  c.set_tcp_nodelay(true);
  auto r = c.Post("/v1/nodes/register", {{"Authorization", "Bearer " + token_}},
                  api::ToJson(n).dump(), "application/json");
  if (!r || r->status != 200)
    return Internal("fake agent cannot register: " + (r ? r->body : std::string("no answer")));
  beat_thread_ = std::thread([this] {
    while (!stopping_) {
      Beat();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  return Status::Ok();
}

void FakeAgent::Beat() {
  api::Json events = api::Json::array();
  api::Json running = api::Json::array();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = NowMs();
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      Job& j = it->second;
      if (j.killed || (j.exit_at_ms >= 0 && now >= j.exit_at_ms)) {
        events.push_back({{"job", it->first},
                          {"epoch", j.epoch},
                          {"type", "exited"},
                          {"exit_code", j.killed ? 0 : j.exit_code},
                          {"signal", j.killed ? 15 : 0}});
        it = jobs_.erase(it);
      } else {
        running.push_back({{"job", it->first}, {"epoch", j.epoch}});
        ++it;
      }
    }
  }
  httplib::Client c(server_);
  c.set_tcp_nodelay(true);
  api::Json body = {{"events", events}, {"running", running}, {"gpus", api::Json::array()}};
  auto r = c.Post("/v1/nodes/" + name_ + "/heartbeat", {{"Authorization", "Bearer " + token_}},
                  body.dump(), "application/json");
  if (!r || r->status != 200) {
    // The server did not take the exits: report them again next time.
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : events) {
      Job j;
      j.epoch = e["epoch"].get<uint64_t>();
      j.exit_at_ms = 0;
      j.exit_code = e["exit_code"].get<int>();
      j.killed = e["signal"].get<int>() != 0;
      jobs_[e["job"].get<uint64_t>()] = j;
    }
  }
}

void FakeAgent::Stop() {
  if (stopping_.exchange(true)) return;
  if (beat_thread_.joinable()) beat_thread_.join();
  http_->server.stop();
  if (http_thread_.joinable()) http_thread_.join();
}

std::vector<FakeAgent::Launch> FakeAgent::launches() {
  std::lock_guard<std::mutex> lock(mu_);
  return launches_;
}

int FakeAgent::kills() {
  std::lock_guard<std::mutex> lock(mu_);
  return kills_;
}

bool FakeAgent::Running(uint64_t job) {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.count(job) > 0;
}

}  // namespace shoal::testing
