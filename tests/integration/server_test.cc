// The controller over real HTTP on loopback, with fake agents: the lifecycle,
// authentication and permissions, and bad input that must change nothing.
#include "server/server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <thread>

#include "api/json.h"
#include "integration/fake_agent.h"
#include "net/http_client.h"
#include "testing/fake_clock.h"

namespace shoal {
namespace {

using api::Json;
using std::chrono::milliseconds;

class ServerTest : public ::testing::Test {
 protected:
  static constexpr Duration kNodeTimeout = std::chrono::seconds(10);

  void SetUp() override {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    // Timeouts are crossed by jumps of the clock, not waited out: long enough
    // that a slow heartbeat never crosses one by itself.
    o.controller.node_timeout = kNodeTimeout;
    o.controller.launch_grace = std::chrono::seconds(10);
    o.controller.kill_grace = milliseconds(200);
    o.controller.finished_retention = std::chrono::minutes(30);  // a jump of the clock evicts
    o.loop.pass_interval = milliseconds(2);
    o.loop.tick_interval = milliseconds(50);
    o.max_body_bytes = 1 << 20;
    auto s = server::Server::Start(o, clock_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    admin_ = Client(server_->admin_token());
    alice_ = Client(Token("alice"));
    bob_ = Client(Token("bob"));
  }

  void TearDown() override {
    // Clients first: the server waits for open keep-alive connections when it stops.
    admin_.reset();
    alice_.reset();
    bob_.reset();
    // The server before the agents: its connections to them close with it.
    server_.reset();
    agents_.clear();
  }

  std::unique_ptr<net::HttpClient> Client(const std::string& token) {
    auto c = net::HttpClient::Connect(server_->address(), {.token = token});
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  std::string Token(const std::string& user) {
    auto c = Client(server_->admin_token());
    auto r = c->Post("/v1/tokens", Json{{"user", user}, {"role", "user"}}.dump());
    EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().ToString());
    return Json::parse(r->body)["token"].get<std::string>();
  }

  testing::FakeAgent& Agent(const std::string& name, int gpus = 8) {
    agents_.push_back(std::make_unique<testing::FakeAgent>(name, gpus, server_->address(),
                                                           server_->node_token()));
    Status s = agents_.back()->Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
    return *agents_.back();
  }

  // Submits as `c`; returns the job id, or 0 with the response in *out.
  uint64_t Submit(net::HttpClient& c, const Json& spec, net::HttpResponse* out = nullptr) {
    auto r = c.Post("/v1/jobs", spec.dump());
    EXPECT_TRUE(r.ok());
    if (out != nullptr) *out = *r;
    if (r->status != 201) return 0;
    return Json::parse(r->body)["jobs"][0].get<uint64_t>();
  }

  Json Show(net::HttpClient& c, uint64_t id) {
    auto r = c.Get("/v1/jobs/" + std::to_string(id));
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : "");
    return Json::parse(r->body);
  }

  // Waits up to 5 s for job `id` to reach `state`.
  bool WaitFor(uint64_t id, const std::string& state) {
    for (int i = 0; i < 500; ++i) {
      if (Show(*admin_, id)["state"] == state) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  int QueueLength() {
    auto r = admin_->Get("/v1/jobs?all=1");
    return static_cast<int>(Json::parse(r->body)["jobs"].size());
  }

  testing::JumpingClock clock_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<net::HttpClient> admin_, alice_, bob_;
  std::vector<std::unique_ptr<testing::FakeAgent>> agents_;
};

Json Job(int gpus, const std::string& command = "exit:0:100") {
  return {{"command", command}, {"gpus", gpus}, {"time_limit_s", 3600}};
}

TEST_F(ServerTest, LifecycleOverHttp) {
  testing::FakeAgent& a = Agent("n1");
  const uint64_t id = Submit(*alice_, Job(2));
  ASSERT_GT(id, 0u);
  ASSERT_TRUE(WaitFor(id, "completed"));
  ASSERT_EQ(a.launches().size(), 1u);
  EXPECT_EQ(a.launches()[0].gpus.size(), 2u);
  auto h = alice_->Get("/v1/history");
  ASSERT_TRUE(h.ok());
  Json hist = Json::parse(h->body)["jobs"];
  ASSERT_EQ(hist.size(), 1u);
  EXPECT_EQ(hist[0]["state"], "completed");
  EXPECT_EQ(hist[0]["spec"]["user"], "alice");
}

TEST_F(ServerTest, GangStartsOnBothNodesWithRanks) {
  testing::FakeAgent& a = Agent("n1");
  testing::FakeAgent& b = Agent("n2");
  const uint64_t id = Submit(
      *alice_, {{"command", "forever"}, {"nodes", 2}, {"gpus_per_node", 8}, {"time_limit_s", 600}});
  ASSERT_TRUE(WaitFor(id, "running"));
  for (int i = 0; i < 100 && (a.launches().empty() || b.launches().empty()); ++i)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(a.launches().size(), 1u);
  ASSERT_EQ(b.launches().size(), 1u);
  EXPECT_NE(a.launches()[0].node_rank, b.launches()[0].node_rank);
  EXPECT_EQ(a.launches()[0].nodes, b.launches()[0].nodes);
  auto c = alice_->Post("/v1/jobs/" + std::to_string(id) + "/cancel", "{}");
  ASSERT_TRUE(c.ok() && c->status == 200);
  ASSERT_TRUE(WaitFor(id, "cancelled"));
  EXPECT_GE(a.kills() + b.kills(), 2);
}

TEST_F(ServerTest, UsersCannotTouchEachOthersJobs) {
  Agent("n1");
  const uint64_t id = Submit(*alice_, Job(1, "forever"));
  ASSERT_TRUE(WaitFor(id, "running"));
  auto r = bob_->Post("/v1/jobs/" + std::to_string(id) + "/cancel", "{}");
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(Json::parse(r->body)["error"], "permission_denied");
  EXPECT_EQ(bob_->Get("/v1/jobs/" + std::to_string(id))->status, 403);
  EXPECT_EQ(bob_->Get("/v1/jobs?user=alice")->status, 403);
  EXPECT_EQ(Json::parse(bob_->Get("/v1/jobs")->body)["jobs"].size(), 0u);
  EXPECT_EQ(bob_->Post("/v1/nodes/n1/drain", R"({"reason":"x"})")->status, 403);
  EXPECT_EQ(bob_->Post("/v1/tokens", R"({"user":"bob","role":"admin"})")->status, 403);
  EXPECT_EQ(Show(*admin_, id)["state"], "running");
  EXPECT_EQ(admin_->Post("/v1/jobs/" + std::to_string(id) + "/cancel", "{}")->status, 200);
}

TEST_F(ServerTest, EveryRequestIsAuthenticated) {
  auto none = Client("");
  EXPECT_EQ(none->Get("/v1/jobs")->status, 401);
  EXPECT_EQ(none->Post("/v1/jobs", Job(1).dump())->status, 401);
  auto bad = Client("shoal_000000000000_0000000000000000000000000000000000000000");
  EXPECT_EQ(bad->Get("/v1/nodes")->status, 401);
  auto junk = Client("not-a-token");
  EXPECT_EQ(junk->Get("/v1/nodes")->status, 401);
  // Revoked tokens stop working.
  auto created = admin_->Post("/v1/tokens", R"({"user":"carol","role":"user"})");
  Json t = Json::parse(created->body);
  auto carol = Client(t["token"].get<std::string>());
  EXPECT_EQ(carol->Get("/v1/jobs")->status, 200);
  EXPECT_EQ(admin_->Delete("/v1/tokens/" + t["id"].get<std::string>())->status, 200);
  EXPECT_EQ(carol->Get("/v1/jobs")->status, 401);
  EXPECT_EQ(none->Get("/healthz")->status, 200) << "the health check is open";
}

TEST_F(ServerTest, BadInputGetsA4xxAndChangesNothing) {
  Agent("n1");
  struct Case {
    const char* what;
    std::string body;
    int status;
    const char* mentions;
  } cases[] = {
      {"malformed JSON", R"({"command": "x", "gpus": )", 400, "malformed"},
      {"not an object", R"([1, 2])", 400, "object"},
      {"wrong type", R"({"command": "x", "gpus": "four"})", 400, "gpus"},
      {"unknown field", R"({"command": "x", "gpus": 1, "colour": "red"})", 400, "colour"},
      {"negative GPUs", R"({"command": "x", "gpus": -3})", 400, "negative"},
      {"absurd GPUs", R"({"command": "x", "gpus": 1000000000})", 400, "GPUs"},
      {"unknown GPU model", R"({"command": "x", "gpus": 1, "gpu_models": ["B300"]})", 400, "B300"},
      {"nine per node", R"({"command": "x", "nodes": 1, "gpus_per_node": 9})", 400, "9 GPUs"},
      {"no command", R"({"gpus": 1})", 400, "command"},
      {"unknown partition", R"({"command": "x", "gpus": 1, "partition": "nope"})", 400, "nope"},
      {"a user field from a user",
       R"({"command": "x", "gpus": 1, "user": "root", "time_limit_s": -1})", 400, "negative"},
      // Field limits, each with its own message.
      {"a huge name", R"({"command": "x", "gpus": 1, "name": ")" + std::string(300, 'n') + R"("})",
       400, "the job name is 300 bytes"},
      {"a NUL in the command", R"({"command": "echo a\u0000b", "gpus": 1})", 400, "NUL"},
      {"a NUL in a variable", R"({"command": "x", "gpus": 1, "env": {"A": "b\u0000c"}})", 400,
       "NUL"},
      {"an empty variable name", R"({"command": "x", "gpus": 1, "env": {"": "b"}})", 400,
       "variable name"},
      {"'=' in a variable name", R"({"command": "x", "gpus": 1, "env": {"A=B": "c"}})", 400,
       "variable name"},
      {"a million tasks", R"({"command": "x", "gpus": 1, "tasks": 1000000})", 400,
       "at most 512 per node"},
      {"begin_time 1e300", R"({"command": "x", "gpus": 1, "begin_time": 1e300})", 400,
       "begin_time"},
      {"a huge output path",
       R"({"command": "x", "gpus": 1, "stdout": ")" + std::string(5000, 'o') + R"("})", 400,
       "the output path"},
  };
  for (const Case& c : cases) {
    auto r = alice_->Post("/v1/jobs", c.body);
    ASSERT_TRUE(r.ok()) << c.what;
    EXPECT_EQ(r->status, c.status) << c.what << ": " << r->body;
    Json err = Json::parse(r->body, nullptr, false);
    ASSERT_FALSE(err.is_discarded()) << c.what << ": errors are JSON: " << r->body;
    EXPECT_NE(err.value("detail", "").find(c.mentions), std::string::npos)
        << c.what << ": " << r->body;
  }
  // A body over the limit (16 MB; 8 MiB are taken) is refused before it is read whole.
  std::string huge(16 << 20, ' ');
  auto r = alice_->Post("/v1/jobs", huge);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(Json::parse(r->body)["error"], "resource_exhausted");
  EXPECT_EQ(QueueLength(), 0) << "nothing was accepted";
  // A user's "user" field is ignored: jobs belong to the token's user.
  const uint64_t id = Submit(*alice_, {{"command", "exit:0:10"}, {"gpus", 1}, {"user", "root"}});
  ASSERT_GT(id, 0u);
  EXPECT_EQ(Show(*admin_, id)["spec"]["user"], "alice");
}

TEST_F(ServerTest, ALostNodeFailsItsJobs) {
  testing::FakeAgent& a = Agent("n1");
  const uint64_t id = Submit(*alice_, Job(1, "forever"));
  ASSERT_TRUE(WaitFor(id, "running"));
  a.Stop();  // its last heartbeat has been answered
  clock_.Jump(kNodeTimeout + milliseconds(1));
  ASSERT_TRUE(WaitFor(id, "node_fail"));
  auto n = admin_->Get("/v1/nodes/n1");
  EXPECT_EQ(Json::parse(n->body)["state"], "down");
}

TEST_F(ServerTest, TimeLimitsAreEnforced) {
  testing::FakeAgent& a = Agent("n1");
  const uint64_t id = Submit(*alice_, {{"command", "forever"}, {"gpus", 1}, {"time_limit_s", 1}});
  ASSERT_TRUE(WaitFor(id, "running"));
  // The job is running on the agent too: a kill that came before its launch
  // would find nothing to stop (this fake agent forgets such kills).
  for (int i = 0; i < 500 && !a.Running(id); ++i)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_TRUE(a.Running(id));
  clock_.Jump(std::chrono::seconds(1));  // past the limit: the job ran a little real time too
  EXPECT_TRUE(WaitFor(id, "timeout"));
  EXPECT_EQ(Show(*admin_, id)["state"], "timeout");
}

// Every page of `path` (which ends in '?...&'), `limit` jobs at a time:
// the ids in order. Checks each page on the way.
std::vector<uint64_t> PagedIds(net::HttpClient& c, const std::string& path, int limit) {
  std::vector<uint64_t> ids;
  uint64_t after = 0;
  for (int page = 0; page < 1000; ++page) {
    auto r = c.Get(path + "limit=" + std::to_string(limit) + "&after=" + std::to_string(after));
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
    if (!r.ok() || r->status != 200) break;
    Json body = Json::parse(r->body);
    EXPECT_LE(body["jobs"].size(), static_cast<size_t>(limit));
    for (const Json& j : body["jobs"])
      ids.push_back(j["id"].get<uint64_t>());
    if (!body.contains("next_after")) return ids;
    EXPECT_GT(body["next_after"].get<uint64_t>(), after);
    after = body["next_after"].get<uint64_t>();
  }
  ADD_FAILURE() << "no last page";
  return ids;
}

std::vector<uint64_t> Range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> ids;
  for (uint64_t id = first; id <= last; ++id)
    ids.push_back(id);
  return ids;
}

TEST_F(ServerTest, ListingsComeInPagesOrWholeAndStreamed) {
  // No nodes: every job waits. 2,500 array tasks are more than one streamed
  // page (1,000), then 5 of bob's.
  Json array = Job(1);
  array["array"] = "0-2499";
  ASSERT_EQ(Submit(*alice_, array), 1u);
  for (int i = 0; i < 5; ++i)
    Submit(*bob_, Job(1));
  EXPECT_EQ(PagedIds(*admin_, "/v1/jobs?all=1&", 997), Range(1, 2505));
  EXPECT_EQ(PagedIds(*bob_, "/v1/jobs?", 2), Range(2501, 2505));
  EXPECT_EQ(PagedIds(*admin_, "/v1/jobs?user=bob&", 10000), Range(2501, 2505));
  EXPECT_EQ(PagedIds(*bob_, "/v1/jobs?state=running&", 5), std::vector<uint64_t>{});

  // Without a limit, the whole listing in one (chunked) answer.
  auto whole = admin_->Get("/v1/jobs?all=1");
  ASSERT_TRUE(whole.ok() && whole->status == 200);
  const Json listed = Json::parse(whole->body);
  std::vector<uint64_t> ids;
  for (const Json& j : listed["jobs"])
    ids.push_back(j["id"].get<uint64_t>());
  EXPECT_EQ(ids, Range(1, 2505));

  // Finished jobs, from the controller and then, once it has let them go,
  // from the store: the same listing either way.
  for (uint64_t id : {2502, 2504, 2505})
    ASSERT_EQ(bob_->Post("/v1/jobs/" + std::to_string(id) + "/cancel", "{}")->status, 200);
  const std::vector<uint64_t> cancelled = {2502, 2504, 2505};
  EXPECT_EQ(PagedIds(*bob_, "/v1/jobs?state=cancelled&", 1), cancelled);
  clock_.Jump(std::chrono::hours(1));
  std::this_thread::sleep_for(milliseconds(500));  // ten ticks: evicted by now
  EXPECT_EQ(PagedIds(*bob_, "/v1/jobs?state=cancelled&", 1), cancelled);
  EXPECT_EQ(PagedIds(*bob_, "/v1/jobs?state=pending,cancelled&", 2), Range(2501, 2505));
  EXPECT_EQ(PagedIds(*alice_, "/v1/jobs?state=cancelled&", 3), std::vector<uint64_t>{});

  // brief=1: what a table of the queue needs, without the bulky parts.
  auto brief = bob_->Get("/v1/jobs?limit=1&brief=1");
  ASSERT_TRUE(brief.ok() && brief->status == 200);
  const Json spec = Json::parse(brief->body)["jobs"][0]["spec"];
  EXPECT_EQ(spec["user"], "bob");
  EXPECT_FALSE(spec.contains("command"));
  EXPECT_FALSE(spec.contains("env"));
  auto full = bob_->Get("/v1/jobs?limit=1");
  EXPECT_EQ(Json::parse(full->body)["jobs"][0]["spec"]["command"], "exit:0:100");

  // arrays=collapsed: the pending tasks of an array that follow each other
  // in a page are one object, the first's, listing every one's index.
  struct Collapsed {
    std::vector<uint64_t> objects;  // the ids of the objects listed
    std::vector<int> tasks;         // the pending tasks they list
  };
  auto collapsed = [&](const std::string& paging) {
    Collapsed out;
    std::string after = "0";
    for (int page = 0; page < 10 && !after.empty(); ++page) {
      auto r = admin_->Get("/v1/jobs?all=1&brief=1&arrays=collapsed" + paging + after);
      EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
      if (!r.ok() || r->status != 200) break;
      const Json body = Json::parse(r->body);
      for (const Json& j : body["jobs"]) {
        out.objects.push_back(j["id"].get<uint64_t>());
        for (const Json& t : j.value("pending_tasks", Json::array()))
          out.tasks.push_back(t.get<int>());
      }
      after = body.contains("next_after") ? std::to_string(body["next_after"].get<uint64_t>()) : "";
    }
    return out;
  };
  std::vector<int> all_tasks(2500);
  std::iota(all_tasks.begin(), all_tasks.end(), 0);
  // Pages of 997 jobs: the array's tasks in three runs, then bob's jobs
  // that were not cancelled above.
  const Collapsed paged = collapsed("&limit=997&after=");
  EXPECT_EQ(paged.objects, (std::vector<uint64_t>{1, 998, 1995, 2501, 2503}));
  EXPECT_EQ(paged.tasks, all_tasks);
  // Streamed whole, a page of 1,000 at a time.
  const Collapsed whole_collapsed = collapsed("&after=");
  EXPECT_EQ(whole_collapsed.objects, (std::vector<uint64_t>{1, 1001, 2001, 2501, 2503}));
  EXPECT_EQ(whole_collapsed.tasks, all_tasks);
  EXPECT_EQ(admin_->Get("/v1/jobs?arrays=some")->status, 400);

  for (const char* bad : {"limit=0", "limit=10001", "limit=x", "after=-1", "after=x"})
    EXPECT_EQ(admin_->Get(std::string("/v1/jobs?") + bad)->status, 400) << bad;
  EXPECT_EQ(bob_->Get("/v1/jobs?all=1&limit=5")->status, 403);
}

TEST_F(ServerTest, ABatchIsSubmittedWholeOrNotAtAll) {
  // bob's batch: his jobs, whatever user a spec names; ids in order.
  Json alices = Job(1);
  alices["user"] = "alice";
  auto r = bob_->Post("/v1/jobs/batch", Json{{"jobs", {Job(1), Job(2), alices}}}.dump());
  ASSERT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().ToString());
  const Json ids = Json::parse(r->body)["jobs"];
  ASSERT_EQ(ids.size(), 3u);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(ids[i].get<uint64_t>(), i + 1);
    EXPECT_EQ(Show(*admin_, i + 1)["spec"]["user"], "bob");
  }
  EXPECT_EQ(Show(*admin_, 2)["spec"]["gpus"], 2);

  // One bad spec refuses them all, and says which.
  Json too_big = Job(1);
  too_big["partition"] = "nope";
  Json no_command = Job(1);
  no_command.erase("command");
  struct Case {
    const char* name;
    std::string body;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"one the controller refuses", Json{{"jobs", {Job(1), too_big, Job(1)}}}.dump(),
       "job 2 of 3"},
      {"one that does not parse", Json{{"jobs", {Job(1), Job(1), no_command}}}.dump(),
       "job 3 of 3"},
      {"no jobs", R"({"jobs":[]})", "no jobs"},
      {"not a list", R"({"jobs":{}})", "a batch is"},
      {"not JSON", "[", ""},
  };
  for (const Case& c : cases) {
    auto bad = bob_->Post("/v1/jobs/batch", c.body);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(bad->status / 100, 4) << c.name << ": " << bad->body;
    EXPECT_NE(bad->body.find(c.says), std::string::npos) << c.name << ": " << bad->body;
  }
  EXPECT_EQ(QueueLength(), 3);
  // The next id is the next one: nothing was taken by the refused batches.
  EXPECT_EQ(Submit(*bob_, Job(1)), 4u);
}

}  // namespace
}  // namespace shoal
