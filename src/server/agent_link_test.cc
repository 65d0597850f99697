// AgentLink against a fake agent on loopback: orders about one job to one
// node arrive in the order given (a stop never passes the launch it stops,
// however slow the agent is to answer that launch), while orders about other
// jobs go meanwhile.
#include "server/agent_link.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace shoal::server {
namespace {

using Clock = std::chrono::steady_clock;

// What the fake agent saw of one order: which, and when it came and was answered.
struct Seen {
  std::string path;
  uint64_t job = 0;
  uint32_t step = 0;  // a launch's
  Clock::time_point came, answered;
};

class FakeAgent {
 public:
  // Launches of `slow_job` are answered after `delay`.
  FakeAgent(uint64_t slow_job, std::chrono::milliseconds delay) {
    auto handle = [this, slow_job, delay](const httplib::Request& req, httplib::Response& res) {
      const nlohmann::json body = nlohmann::json::parse(req.body);
      const auto step = body.find("step");
      Seen s{req.path,
             body.at("job").get<uint64_t>(),
             step != body.end() && step->is_number() ? step->get<uint32_t>() : 0u,
             Clock::now(),
             {}};
      if (s.path == "/v1/launch" && s.job == slow_job) std::this_thread::sleep_for(delay);
      s.answered = Clock::now();
      res.set_content("{}", "application/json");
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(s);
      cv_.notify_all();
    };
    server_.Post("/v1/launch", handle);
    server_.Post("/v1/kill", handle);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeAgent() {
    server_.stop();
    thread_.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // The orders seen once `n` have been answered (or what came in 10 s).
  std::vector<Seen> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return seen_.size() >= n; });
    return seen_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Seen> seen_;
};

LaunchOrder Launch(uint64_t job, uint32_t step, const std::string& address) {
  LaunchOrder o;
  o.job = JobId(job);
  o.epoch = 1;
  o.step = step;
  o.node = "n1";
  o.address = address;
  return o;
}

KillOrder Kill(uint64_t job, const std::string& address) {
  KillOrder o;
  o.job = JobId(job);
  o.epoch = 1;
  o.node = "n1";
  o.address = address;
  return o;
}

TEST(AgentLinkTest, AJobsOrdersToANodeArriveInTheOrderGiven) {
  FakeAgent agent(/*slow_job=*/7, std::chrono::milliseconds(1000));
  AgentLink link(AgentCredentials{.node_token = "t"}, /*workers=*/4);
  Outbox first;
  first.launches.push_back(Launch(7, 0, agent.address()));
  link.Send(std::move(first));
  // While job 7's launch is being answered: its step, its stop, and another
  // job's launch.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Outbox then;
  then.launches.push_back(Launch(7, 1, agent.address()));
  then.launches.push_back(Launch(8, 0, agent.address()));
  link.Send(std::move(then));
  Outbox last;
  last.kills.push_back(Kill(7, agent.address()));
  link.Send(std::move(last));

  const std::vector<Seen> seen = agent.WaitFor(4);
  ASSERT_EQ(seen.size(), 4u);
  // Job 7's orders, as answered: each came after the one before was answered.
  std::vector<const Seen*> job7;
  for (const Seen& s : seen) {
    if (s.job == 7) job7.push_back(&s);
  }
  ASSERT_EQ(job7.size(), 3u);
  std::sort(job7.begin(), job7.end(),
            [](const Seen* a, const Seen* b) { return a->came < b->came; });
  EXPECT_EQ(job7[0]->path + job7[1]->path + job7[2]->path, "/v1/launch/v1/launch/v1/kill");
  EXPECT_EQ(job7[0]->step, 0u) << "the step passed its job's launch";
  for (size_t i = 1; i < job7.size(); ++i)
    EXPECT_GE(job7[i]->came, job7[i - 1]->answered) << "order " << i << " passed the one before";
  const Seen* other = nullptr;
  for (const Seen& s : seen) {
    if (s.job == 8) other = &s;
  }
  ASSERT_NE(other, nullptr);
  EXPECT_LT(other->came, job7[0]->answered) << "another job's order waited for this one's";
  // Counted once the answer is read, a moment after the agent saw the order.
  for (int i = 0; i < 500 && link.Delivered() < 4; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(link.Delivered(), 4u);
  EXPECT_EQ(link.Failed(), 0u);
}

}  // namespace
}  // namespace shoal::server
