// A server killed with SIGKILL during a flood of submissions loses nothing it
// acknowledged: after a restart on the same state directory every job that
// got a 201 exists, exactly once.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "api/json.h"
#include "integration/fake_agent.h"
#include "net/http_client.h"
#include "server/server.h"

namespace shoal {
namespace {

using api::Json;

TEST(CrashTest, AcknowledgedSubmissionsSurviveSigkill) {
  // Writing to the killed server's sockets must not kill the test.
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/shoal-crash-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The server, in its own process, until it is killed (or the test dies).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(pipefd[0]);
    SystemClock clock;
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.state_dir = dir;
    auto s = server::Server::Start(o, clock);
    if (!s.ok()) _exit(1);
    const std::string hello = std::to_string((*s)->port()) + " " + (*s)->admin_token() + "\n";
    if (write(pipefd[1], hello.data(), hello.size()) != static_cast<ssize_t>(hello.size()))
      _exit(1);
    while (true)
      pause();
  }
  close(pipefd[1]);
  char buf[256] = {};
  ssize_t n = 0;
  while (n < static_cast<ssize_t>(sizeof(buf)) - 1) {
    const ssize_t r = read(pipefd[0], buf + n, sizeof(buf) - 1 - n);
    if (r <= 0) break;
    n += r;
    if (std::string(buf).find('\n') != std::string::npos) break;
  }
  close(pipefd[0]);
  std::string hello(buf);
  ASSERT_NE(hello.find(' '), std::string::npos) << "the server did not start";
  const std::string port = hello.substr(0, hello.find(' '));
  const std::string token =
      hello.substr(hello.find(' ') + 1, hello.find('\n') - hello.find(' ') - 1);

  std::mutex mu;
  std::condition_variable progress;
  std::vector<uint64_t> acked;  // guarded by mu
  int flooding = 4;             // threads still submitting; guarded by mu
  std::atomic<bool> stop{false};
  std::vector<std::thread> flood;
  for (int t = 0; t < 4; ++t) {
    flood.emplace_back([&] {
      auto c = net::HttpClient::Connect(
          "127.0.0.1:" + port,
          {.token = token, .connect_timeout_ms = 500, .read_timeout_ms = 2000});
      const std::string body = Json{{"command", "echo hi"}, {"gpus", 1}}.dump();
      while (c.ok() && !stop) {
        auto r = (*c)->Post("/v1/jobs", body);
        if (!r.ok()) break;  // the server is gone
        if (r->status != 201) continue;
        std::lock_guard<std::mutex> lock(mu);
        acked.push_back(Json::parse(r->body)["jobs"][0].get<uint64_t>());
        progress.notify_all();
      }
      std::lock_guard<std::mutex> lock(mu);
      --flooding;
      progress.notify_all();
    });
  }
  {
    // Kill it mid-flood: once enough submissions went through (or every
    // submitter gave up, or a deadline that only bounds a stuck server).
    std::unique_lock<std::mutex> lock(mu);
    progress.wait_for(lock, std::chrono::seconds(60),
                      [&] { return acked.size() >= 200 || flooding == 0; });
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  waitpid(child, &status, 0);
  stop = true;
  for (std::thread& t : flood)
    t.join();
  ASSERT_GT(acked.size(), 50u) << "the flood should have got some submissions through";

  // Restart on the same directory and look.
  SystemClock clock;
  server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.state_dir = dir;
  auto s = server::Server::Start(o, clock);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto c = net::HttpClient::Connect((*s)->address(), {.token = token});
  ASSERT_TRUE(c.ok());
  auto r = (*c)->Get("/v1/jobs?all=1");
  ASSERT_TRUE(r.ok() && r->status == 200);
  std::multiset<uint64_t> present;
  const Json listed = Json::parse(r->body);
  for (const Json& j : listed["jobs"])
    present.insert(j["id"].get<uint64_t>());
  for (uint64_t id : acked)
    EXPECT_EQ(present.count(id), 1u) << "acknowledged job " << id;
  for (uint64_t id : present)
    EXPECT_EQ(present.count(id), 1u) << "job " << id << " twice";
  EXPECT_LE(present.size(), acked.size() + 4 * 2000) << "at most the unanswered batch in flight";
  // New ids continue after the old ones.
  auto next = (*c)->Post("/v1/jobs", Json{{"command", "x"}, {"gpus", 1}}.dump());
  ASSERT_TRUE(next.ok() && next->status == 201);
  EXPECT_GT(Json::parse(next->body)["jobs"][0].get<uint64_t>(), *present.rbegin());
  c->reset();
  s->reset();
  std::filesystem::remove_all(dir);
  std::printf("crash test: %zu acknowledged submissions, %zu jobs after restart\n", acked.size(),
              present.size());
}

TEST(CrashTest, OneServerPerStateDirectory) {
  char tmpl[] = "/tmp/shoal-lock-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  SystemClock clock;
  server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.state_dir = tmpl;
  auto first = server::Server::Start(o, clock);
  ASSERT_TRUE(first.ok());
  auto second = server::Server::Start(o, clock);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("another shoal server"), std::string::npos);
  first->reset();
  EXPECT_TRUE(server::Server::Start(o, clock).ok()) << "free again once the first has stopped";
  std::filesystem::remove_all(tmpl);
}

TEST(CrashTest, JobsThatEndedBeforeARestartAreStillListedByState) {
  char tmpl[] = "/tmp/shoal-ended-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  SystemClock clock;
  server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.state_dir = tmpl;
  o.loop.pass_interval = std::chrono::milliseconds(2);
  uint64_t done = 0;
  std::string token;
  {
    auto s = server::Server::Start(o, clock);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    token = (*s)->admin_token();
    testing::FakeAgent agent("n1", 1, (*s)->address(), (*s)->node_token());
    ASSERT_TRUE(agent.Start().ok());
    auto c = net::HttpClient::Connect((*s)->address(), {.token = token});
    ASSERT_TRUE(c.ok());
    auto r = (*c)->Post("/v1/jobs", Json{{"command", "exit:0:1"}, {"gpus", 1}}.dump());
    ASSERT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : "");
    done = Json::parse(r->body)["jobs"][0].get<uint64_t>();
    bool completed = false;
    for (int i = 0; i < 500 && !completed; ++i) {  // 5 s at most
      auto show = (*c)->Get("/v1/jobs/" + std::to_string(done));
      completed = show.ok() && Json::parse(show->body)["state"] == "completed";
      if (!completed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(completed);
    c->reset();
    s->reset();
  }
  auto s = server::Server::Start(o, clock);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto c = net::HttpClient::Connect((*s)->address(), {.token = (*s)->admin_token()});
  ASSERT_TRUE(c.ok());
  for (const char* query :
       {"/v1/jobs?all=1&state=completed", "/v1/jobs?all=1&state=running,completed"}) {
    auto r = (*c)->Get(query);
    ASSERT_TRUE(r.ok() && r->status == 200);
    const Json jobs = Json::parse(r->body)["jobs"];
    ASSERT_EQ(jobs.size(), 1u) << query << ": " << r->body;
    EXPECT_EQ(jobs[0]["id"], done);
    EXPECT_EQ(jobs[0]["state"], "completed");
  }
  // squeue's codes and "all" name the same states; ended_since leaves out
  // what ended before it (shoal queue -t all: the last 5 minutes).
  auto ids = [&](const std::string& query) {
    auto r = (*c)->Get(query);
    EXPECT_TRUE(r.ok() && r->status == 200) << query;
    const Json listed = Json::parse(r.ok() ? r->body : "{\"jobs\":[]}");
    std::vector<uint64_t> out;
    for (const Json& j : listed["jobs"])
      out.push_back(j["id"].get<uint64_t>());
    return out;
  };
  const std::vector<uint64_t> just_done{done};
  EXPECT_EQ(ids("/v1/jobs?all=1&state=CD"), just_done);
  EXPECT_EQ(ids("/v1/jobs?all=1&state=pd,r,cd"), just_done);
  EXPECT_EQ(ids("/v1/jobs?all=1&state=all"), just_done);
  EXPECT_EQ(ids("/v1/jobs?all=1&state=ALL&ended_since=0"), just_done);
  EXPECT_EQ(ids("/v1/jobs?all=1&state=all&ended_since=99999999990"), std::vector<uint64_t>{});
  for (const char* bad_time : {"soon", "-1", "1e300", "nan"}) {
    auto bad = (*c)->Get(std::string("/v1/jobs?state=all&ended_since=") + bad_time);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(bad->status, 400) << bad_time;
    EXPECT_NE(bad->body.find("ended_since must be a time"), std::string::npos) << bad->body;
  }
  auto active = (*c)->Get("/v1/jobs?all=1");  // no state: active jobs only, as before
  ASSERT_TRUE(active.ok());
  EXPECT_TRUE(Json::parse(active->body)["jobs"].empty());
  c->reset();
  s->reset();
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace shoal
