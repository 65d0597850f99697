// A real server and real agents (simulated GPUs, real job steps under
// shoal-step supervisors) on loopback: what runs where, with which
// environment, and how it stops.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "agent/agent.h"
#include "agent/config.h"
#include "agent/gpu/simulated_provider.h"
#include "agent/launch/launcher.h"
#include "api/json.h"
#include "core/strings.h"
#include "net/http_client.h"
#include "server/agent_link.h"
#include "server/server.h"

namespace shoal {
namespace {

using api::Json;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Fields(const std::string& text, char sep) {
  std::vector<std::string> out;
  for (std::string_view f : Split(text, sep))
    out.emplace_back(f);
  return out;
}

bool Alive(pid_t pid) {
  return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH);
}

// A TCP relay from a port of its own to `target`, that can be cut (every
// connection closed, new ones refused): a network partition between an
// agent and the server, with both processes alive.
class Relay {
 public:
  explicit Relay(int target_port) : target_(target_port) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    EXPECT_EQ(::bind(listen_, reinterpret_cast<sockaddr*>(&a), n), 0);
    EXPECT_EQ(::listen(listen_, 64), 0);
    EXPECT_EQ(::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &n), 0);
    port_ = ntohs(a.sin_port);
    accept_ = std::thread([this] { Accept(); });
  }
  ~Relay() {
    Cut();
    ::shutdown(listen_, SHUT_RDWR);
    ::close(listen_);
    accept_.join();
    for (std::thread& t : pipes_)
      t.join();
  }
  int port() const { return port_; }
  // The partition: open connections are closed and new ones dropped.
  void Cut() {
    std::lock_guard<std::mutex> lock(mu_);
    cut_ = true;
    for (int fd : open_)
      ::shutdown(fd, SHUT_RDWR);
  }

 private:
  void Accept() {
    while (true) {
      const int client = ::accept(listen_, nullptr, nullptr);
      if (client < 0) return;
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(target_));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      std::lock_guard<std::mutex> lock(mu_);
      if (cut_ || ::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(client);
        ::close(server);
        continue;
      }
      open_.insert(client);
      open_.insert(server);
      pipes_.emplace_back([this, client, server] { Pipe(client, server); });
    }
  }
  void Pipe(int a, int b) {
    char buf[16384];
    pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    while (::poll(fds, 2, -1) > 0) {
      bool done = false;
      for (int i = 0; i < 2 && !done; ++i) {
        if (fds[i].revents == 0) continue;
        const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        done = n <= 0 || ::send(fds[1 - i].fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n;
      }
      if (done) break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    open_.erase(a);
    open_.erase(b);
    ::close(a);
    ::close(b);
  }

  int target_;
  int listen_ = -1;
  int port_ = 0;
  std::mutex mu_;
  bool cut_ = false;
  std::set<int> open_;
  std::thread accept_;
  std::vector<std::thread> pipes_;
};

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-cluster-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // Jobs of users other than root write here.
    fs::create_directories(dir_ / "work");
    ::chmod((dir_ / "work").c_str(), 01777);
    ::chmod(dir_.c_str(), 0755);

    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.controller.node_timeout = milliseconds(3000);
    o.controller.launch_grace = milliseconds(3000);
    o.controller.kill_grace = milliseconds(500);
    o.controller.fence_margin = milliseconds(500);
    o.loop.pass_interval = milliseconds(2);
    o.loop.tick_interval = milliseconds(50);
    auto s = server::Server::Start(o, clock_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    admin_ = Client(server_->admin_token());
  }

  void TearDown() override {
    // Whatever still runs is cancelled, so that no supervisor outlives the test.
    if (admin_ != nullptr) {
      auto r = admin_->Get("/v1/jobs");
      if (r.ok() && r->status == 200) {
        const Json queue = Json::parse(r->body);
        for (const Json& j : queue["jobs"]) {
          (void)admin_->Post("/v1/jobs/" + std::to_string(j["id"].get<uint64_t>()) + "/cancel",
                             "{}");
        }
        for (int i = 0; i < 100 && Running() > 0; ++i)
          std::this_thread::sleep_for(milliseconds(20));
      }
    }
    admin_.reset();
    users_.clear();
    server_.reset();
    agents_.clear();
    std::error_code ec;
    if (std::getenv("SHOAL_KEEP_TEST_DIRS") == nullptr) fs::remove_all(dir_, ec);
  }

  int Running() {
    auto r = admin_->Get("/v1/jobs?state=running");
    return r.ok() && r->status == 200 ? static_cast<int>(Json::parse(r->body)["jobs"].size()) : 0;
  }

  std::unique_ptr<net::HttpClient> Client(const std::string& token) {
    auto c = net::HttpClient::Connect(server_->address(), {.token = token});
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  net::HttpClient& User(const std::string& user) {
    auto r = admin_->Post("/v1/tokens", Json{{"user", user}, {"role", "user"}}.dump());
    EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().ToString());
    users_.push_back(Client(Json::parse(r->body)["token"].get<std::string>()));
    return *users_.back();
  }

  agent::AgentConfig Config(const std::string& name) {
    agent::AgentConfig c;
    c.agent.server = server_->address();
    c.agent.token = server_->node_token();
    c.agent.name = name;
    c.agent.listen = "127.0.0.1:0";
    c.agent.heartbeat = milliseconds(200);
    c.gpus = "simulated:dgx-h100";
    c.allow_root_jobs = true;  // the tests' own jobs run as root (the test's user)
    c.state_dir = (dir_ / "agents" / name).string();
    if (!steps_root_.empty()) c.steps_dir = (steps_root_ / name).string();
    c.gpu_device_path = gpu_device_path_;
    c.cgroup_root = cgroup_root_;
    return c;
  }

  // Starts agent `name` (again, with the same state, after StopAgent),
  // reaching the server at `server` (default: its own address).
  void StartAgent(const std::string& name, const std::string& server = "") {
    agent::AgentConfig c = Config(name);
    if (!server.empty()) c.agent.server = server;
    auto gpus = agent::SimulatedProvider::Create("dgx-h100", name, 1, clock_);
    ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
    auto steps = agent::OpenSteps(c, SHOAL_STEP_BINARY);
    ASSERT_TRUE(steps.ok()) << steps.status().ToString();
    isolation_ = (*steps)->Isolation();
    simulated_[name] = gpus->get();
    auto a = agent::Agent::Start(c.agent, std::move(*gpus), std::move(*steps), clock_);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    for (int i = 0; i < 500 && !(*a)->registered(); ++i)
      std::this_thread::sleep_for(milliseconds(10));
    ASSERT_TRUE((*a)->registered());
    agents_[name] = std::move(*a);
  }

  void StopAgent(const std::string& name) {
    agents_.at(name)->Stop();
    agents_.erase(name);
    simulated_.erase(name);
  }

  uint64_t Submit(net::HttpClient& c, Json spec, std::string* error = nullptr) {
    if (!spec.contains("time_limit_s")) spec["time_limit_s"] = 600;
    if (!spec.contains("work_dir")) spec["work_dir"] = (dir_ / "work").string();
    auto r = c.Post("/v1/jobs", spec.dump());
    EXPECT_TRUE(r.ok());
    if (r->status != 201) {
      if (error != nullptr) *error = r->body;
      ADD_FAILURE() << r->body;
      return 0;
    }
    return Json::parse(r->body)["jobs"][0].get<uint64_t>();
  }

  Json Show(uint64_t id) {
    auto r = admin_->Get("/v1/jobs/" + std::to_string(id));
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : "");
    return r.ok() && r->status == 200 ? Json::parse(r->body) : Json::object();
  }

  // Waits up to `ms` for job `id` to reach `state`.
  bool WaitFor(uint64_t id, const std::string& state, int ms = 10000) {
    for (int i = 0; i < ms / 20; ++i) {
      if (Show(id)["state"] == state) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    ADD_FAILURE() << "job " << id << " is " << Show(id).dump() << ", not " << state;
    return false;
  }

  std::string Log(net::HttpClient& c, uint64_t id) {
    auto r = c.Get("/v1/jobs/" + std::to_string(id) + "/log");
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
    return r.ok() ? r->body : "";
  }

  // Waits for a file a job writes, with at least `lines` lines.
  std::vector<std::string> WaitForLines(const fs::path& p, size_t lines, int ms = 10000) {
    std::vector<std::string> out;
    for (int i = 0; i < ms / 20; ++i) {
      out = Fields(ReadFile(p), '\n');
      while (!out.empty() && out.back().empty())
        out.pop_back();
      if (out.size() >= lines) break;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return out;
  }

  Json Node(const std::string& name) {
    auto r = admin_->Get("/v1/nodes/" + name);
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : "");
    return r.ok() && r->status == 200 ? Json::parse(r->body) : Json::object();
  }

  bool CgroupIsolation() const { return isolation_.rfind("cgroup", 0) == 0; }

  SystemClock clock_;
  fs::path dir_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<net::HttpClient> admin_;
  std::vector<std::unique_ptr<net::HttpClient>> users_;
  std::map<std::string, std::unique_ptr<agent::Agent>> agents_;
  std::map<std::string, agent::SimulatedProvider*> simulated_;
  std::string isolation_;
  std::string gpu_device_path_ = "/dev/nvidia%d";
  std::string cgroup_root_;  // empty: the agent detects
  fs::path steps_root_;      // the agents' steps_dir is <steps_root_>/<name> (empty: the default)
};

TEST_F(ClusterTest, JobRunsOnItsGpusAndItsLogIsReadable) {
  StartAgent("n1");
  const uint64_t id =
      Submit(*admin_, {{"command", "echo gpus=$CUDA_VISIBLE_DEVICES; echo oops >&2"}, {"gpus", 2}});
  ASSERT_TRUE(WaitFor(id, "completed"));
  const Json job = Show(id);
  EXPECT_EQ(job["exit_code"], 0);
  std::vector<std::string> expect;
  for (const Json& g : job["allocation"][0]["gpus"])
    expect.push_back(std::to_string(g.get<int>()));
  ASSERT_EQ(expect.size(), 2u) << job.dump();
  const std::string log = Log(*admin_, id);
  EXPECT_NE(log.find("gpus=" + Join(expect, ",")), std::string::npos) << log;
  EXPECT_NE(log.find("oops"), std::string::npos) << log;  // stderr joins stdout by default
  EXPECT_TRUE(fs::exists(dir_ / "work" / ("slurm-" + std::to_string(id) + ".out")));
}

TEST_F(ClusterTest, TwoJobsNeverShareAGpu) {
  StartAgent("n1");
  StartAgent("n2");
  // Eight 2-GPU jobs fill both nodes at once; each records what it sees
  // while all of them run.
  std::vector<uint64_t> ids;
  for (int i = 0; i < 8; ++i) {
    ids.push_back(Submit(
        *admin_,
        {{"command", "echo $CUDA_VISIBLE_DEVICES > seen.$SHOAL_JOB_ID; sleep 2"}, {"gpus", 2}}));
  }
  std::set<std::pair<std::string, int>> used;
  for (uint64_t id : ids) {
    ASSERT_TRUE(WaitFor(id, "running"));
    const Json job = Show(id);
    ASSERT_EQ(job["allocation"].size(), 1u);
    const std::string node = job["allocation"][0]["node"];
    std::vector<std::string> want;
    for (const Json& g : job["allocation"][0]["gpus"]) {
      EXPECT_TRUE(used.insert({node, g.get<int>()}).second)
          << node << " GPU " << g << " given twice";
      want.push_back(std::to_string(g.get<int>()));
    }
    const auto seen = WaitForLines(dir_ / "work" / ("seen." + std::to_string(id)), 1);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0], Join(want, ",")) << "job " << id;
  }
  EXPECT_EQ(used.size(), 16u);
  EXPECT_EQ(Running(), 8);
}

TEST_F(ClusterTest, GangGetsRanksHostfileAndTfConfig) {
  StartAgent("n1");
  StartAgent("n2");
  const std::string cmd =
      "printf '%s %s %s %s %s %s %s\\n' $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK "
      "$MASTER_ADDR "
      "$MASTER_PORT > rank.$RANK; echo \"$TF_CONFIG\" > tf.$RANK; cp $SHOAL_HOSTFILE "
      "hostfile.$RANK";
  const uint64_t id =
      Submit(*admin_, {{"command", cmd}, {"nodes", 2}, {"gpus_per_node", 2}, {"tasks", 4}});
  ASSERT_TRUE(WaitFor(id, "completed"));
  // Every node started at once (a gang): both have the job in its allocation.
  EXPECT_EQ(Show(id)["allocation"].size(), 2u);
  std::string port;
  for (int rank = 0; rank < 4; ++rank) {
    const auto line = WaitForLines(dir_ / "work" / ("rank." + std::to_string(rank)), 1);
    ASSERT_EQ(line.size(), 1u) << "rank " << rank;
    const auto f = Fields(line[0], ' ');
    ASSERT_EQ(f.size(), 7u) << line[0];
    EXPECT_EQ(f[0], std::to_string(rank));
    EXPECT_EQ(f[1], "4");
    EXPECT_EQ(f[2], std::to_string(rank % 2));
    EXPECT_EQ(f[3], "2");
    EXPECT_EQ(f[4], std::to_string(rank / 2));
    EXPECT_EQ(f[5], "127.0.0.1");
    if (rank == 0) port = f[6];
    EXPECT_EQ(f[6], port);  // one rendezvous for all
    const Json tf = Json::parse(ReadFile(dir_ / "work" / ("tf." + std::to_string(rank))));
    EXPECT_EQ(tf["cluster"]["worker"].size(), 4u);
    EXPECT_EQ(tf["task"]["type"], "worker");
    EXPECT_EQ(tf["task"]["index"], rank);
    // Both nodes are this host: one line with every slot.
    EXPECT_EQ(ReadFile(dir_ / "work" / ("hostfile." + std::to_string(rank))),
              "127.0.0.1 slots=4\n");
  }
  EXPECT_GT(std::stoi(port), 0);
}

TEST_F(ClusterTest, CancelKillsTheWholeTree) {
  StartAgent("n1");
  // A child, a grandchild and one that left the job's session with setsid.
  const uint64_t id =
      Submit(*admin_, {{"command",
                        "sleep 300 & echo $! >> pids; (sleep 301 & echo $! >> pids; wait) & "
                        "setsid sleep 302 & echo $! >> pids; echo $$ >> pids; wait"},
                       {"gpus", 1}});
  ASSERT_TRUE(WaitFor(id, "running"));
  const auto pids = WaitForLines(dir_ / "work" / "pids", 4);
  ASSERT_EQ(pids.size(), 4u);
  for (const auto& p : pids)
    EXPECT_TRUE(Alive(std::stoi(p))) << p;
  auto r = admin_->Post("/v1/jobs/" + std::to_string(id) + "/cancel", "{}");
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : "");
  ASSERT_TRUE(WaitFor(id, "cancelled"));
  // The job's GPU is free only when nothing of it is left.
  for (size_t i = 0; i < pids.size(); ++i) {
    const pid_t pid = std::stoi(pids[i]);
    const bool escaped = i == 2;  // the setsid one: only a cgroup can find it
    if (escaped && !CgroupIsolation()) {
      GTEST_LOG_(INFO) << "no cgroup here (" << isolation_
                       << "): a setsid process escapes; killing it";
      ::kill(pid, SIGKILL);
      continue;
    }
    for (int k = 0; k < 100 && Alive(pid); ++k)
      std::this_thread::sleep_for(milliseconds(20));
    EXPECT_FALSE(Alive(pid)) << "process " << pid << " (#" << i << ") outlived its job";
  }
  EXPECT_EQ(Show(id)["exit_signal"], SIGTERM) << Show(id).dump();
}

// A step's cgroup holds the limits it was given: under v1 it joins the
// cpu and memory hierarchies only for a limit, and always one to track it.
TEST_F(ClusterTest, StepCgroupsHoldTheLimitsTheJobAskedFor) {
  StartAgent("n1");
  if (!CgroupIsolation()) GTEST_SKIP() << "[privilege] no cgroups here: " << isolation_;
  const uint64_t limited = Submit(*admin_, {{"command", "cat /proc/self/cgroup > limited.cg"},
                                            {"gpus", 1},
                                            {"cpus_per_node", 1},
                                            {"mem_per_node_mib", 256}});
  const uint64_t plain =
      Submit(*admin_, {{"command", "cat /proc/self/cgroup > plain.cg"}, {"gpus", 1}});
  ASSERT_TRUE(WaitFor(limited, "completed"));
  ASSERT_TRUE(WaitFor(plain, "completed"));
  const std::string step = "/" + std::to_string(limited) + ".1\n";
  const std::string limited_cg = ReadFile(dir_ / "work" / "limited.cg");
  const std::string plain_cg = ReadFile(dir_ / "work" / "plain.cg");
  auto hierarchies_with = [](const std::string& text, const std::string& suffix) {
    std::set<std::string> out;
    for (const std::string& line : Fields(text, '\n')) {
      if (!line.ends_with(suffix.substr(0, suffix.size() - 1))) continue;
      const std::vector<std::string> f = Fields(line, ':');
      if (f.size() >= 3) out.insert(f[1]);
    }
    return out;
  };
  const auto limited_in = hierarchies_with(limited_cg, step);
  const auto plain_in = hierarchies_with(plain_cg, "/" + std::to_string(plain) + ".1\n");
  ASSERT_FALSE(limited_in.empty()) << limited_cg;
  ASSERT_FALSE(plain_in.empty()) << plain_cg;
  if (limited_in.count("") == 0) {  // v1: hierarchies by controller
    EXPECT_TRUE(limited_in.count("memory") == 1) << limited_cg;
    EXPECT_TRUE(std::any_of(limited_in.begin(), limited_in.end(), [](const std::string& h) {
      return h.find("cpu") != std::string::npos;
    })) << limited_cg;
    EXPECT_EQ(plain_in.count("memory"), 0u) << plain_cg;
    EXPECT_LT(plain_in.size(), limited_in.size()) << plain_cg;
  }
}

TEST_F(ClusterTest, TimeLimitTermsThenKills) {
  StartAgent("n1");
  // Ignores SIGTERM: the SIGKILL after the grace period ends it.
  const uint64_t id =
      Submit(*admin_, {{"command", "trap '' TERM; echo $$ > pid; while :; do sleep 0.1; done"},
                       {"gpus", 1},
                       {"time_limit_s", 1}});
  ASSERT_TRUE(WaitFor(id, "timeout", 15000));
  const Json job = Show(id);
  EXPECT_EQ(job["exit_signal"], SIGKILL) << job.dump();
  const auto pid = WaitForLines(dir_ / "work" / "pid", 1);
  ASSERT_EQ(pid.size(), 1u);
  EXPECT_FALSE(Alive(std::stoi(pid[0])));
}

// `shoal node mig` through a real server and agent: the drained node's GPU 0
// becomes seven slices, registered before the answer, and a job that names
// the profile runs on two of them, seeing their MIG UUIDs.
TEST_F(ClusterTest, AMigOrderSplitsAGpuAndJobsRunOnItsSlices) {
  StartAgent("n1");
  auto order = [&] {
    return admin_->Post("/v1/nodes/n1/mig", Json{{"layout", "7x1g.10gb"}, {"gpus", {0}}}.dump());
  };
  auto up = order();
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->status, 409) << up->body;
  ASSERT_TRUE(admin_->Post("/v1/nodes/n1/drain", Json{{"reason", "MIG"}}.dump()).ok());
  auto r = order();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Json::parse(r->body)["gpus"].size(), 14u);
  EXPECT_EQ(Node("n1")["gpus"].size(), 14u) << "registered before the answer";
  ASSERT_TRUE(admin_->Post("/v1/nodes/n1/resume", "{}").ok());
  const uint64_t id = Submit(
      *admin_,
      {{"command", "echo cvd=$CUDA_VISIBLE_DEVICES"}, {"gpus", 2}, {"gpu_models", {"1g.10gb"}}});
  ASSERT_TRUE(WaitFor(id, "completed"));
  const std::string log = Log(*admin_, id);
  EXPECT_NE(log.find("cvd=MIG-"), std::string::npos) << log;
  EXPECT_NE(log.find(",MIG-"), std::string::npos) << log;
}

TEST_F(ClusterTest, AgentRestartLeavesJobsRunningAndAccounted) {
  StartAgent("n1");
  const uint64_t id =
      Submit(*admin_, {{"command", "echo $$ > pid; sleep 4; echo done"}, {"gpus", 4}});
  ASSERT_TRUE(WaitFor(id, "running"));
  const auto pid = WaitForLines(dir_ / "work" / "pid", 1);
  ASSERT_EQ(pid.size(), 1u);
  StopAgent("n1");
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_TRUE(Alive(std::stoi(pid[0])));  // the supervisor keeps the job
  EXPECT_EQ(Show(id)["state"], "running");
  StartAgent("n1");  // within node_timeout: the node never went down
  ASSERT_TRUE(WaitFor(id, "completed"));
  EXPECT_EQ(Show(id)["exit_code"], 0);
  EXPECT_NE(Log(*admin_, id).find("done"), std::string::npos);
  EXPECT_EQ(Node("n1")["state"], "up");
}

// The pid of the launcher serving `steps_dir` (holding its lock), or 0.
pid_t LauncherOf(const fs::path& steps_dir) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find("--launcher " + steps_dir.string() + " ") != std::string::npos)
      return std::stoi(name);
  }
  return 0;
}

// A request on the launcher's socket; what came back before it closed.
std::string AskLauncher(const fs::path& steps_dir, const std::string& request) {
  const std::optional<sockaddr_un> address = agent::LauncherAddress(steps_dir.string());
  if (!address) return "(no address)";
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0) {
    if (fd >= 0) ::close(fd);
    return "(no connection)";
  }
  (void)!::write(fd, request.data(), request.size());
  std::string answer;
  char buffer[64];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
    answer.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return answer;
}

TEST_F(ClusterTest, AStepsFolderTooLongForTheLauncherSocketIsRefusedAtStart) {
  agent::AgentConfig c = Config("n1");
  c.state_dir = (dir_ / std::string(100, 'x')).string();
  auto steps = agent::OpenSteps(c, SHOAL_STEP_BINARY);
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.status().message().find("too long a path"), std::string::npos)
      << steps.status().ToString();
}

TEST_F(ClusterTest, StepsOutliveTheirLauncherAndAKilledLauncherIsReplaced) {
  StartAgent("n1");
  const fs::path steps = dir_ / "agents" / "n1" / "steps";
  const uint64_t first = Submit(*admin_, {{"command", "sleep 4; echo done"}, {"gpus", 1}});
  ASSERT_TRUE(WaitFor(first, "running"));
  // "running" once the launch is sent: the agent may still be starting it.
  pid_t launcher = 0;
  for (int i = 0; i < 500 && (launcher = LauncherOf(steps)) == 0; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_GT(launcher, 0);
  // One launcher for many steps: a second job does not start another.
  const uint64_t second = Submit(*admin_, {{"command", "echo second"}, {"gpus", 1}});
  ASSERT_TRUE(WaitFor(second, "completed"));
  EXPECT_EQ(LauncherOf(steps), launcher);

  ASSERT_EQ(::kill(launcher, SIGKILL), 0);  // started by this test's agent
  for (int i = 0; i < 100 && fs::exists(fs::path("/proc") / std::to_string(launcher) / "cmdline") &&
                  !ReadFile(fs::path("/proc") / std::to_string(launcher) / "cmdline").empty();
       ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  // The agent collects it at once, with no step event to prompt it: no zombie
  // stays behind (the first job's end, the next event, is seconds away).
  const fs::path proc = fs::path("/proc") / std::to_string(launcher);
  for (int i = 0; i < 50 && fs::exists(proc); ++i)
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(fs::exists(proc)) << "the killed launcher is left a zombie";
  const uint64_t third = Submit(*admin_, {{"command", "echo third"}, {"gpus", 1}});
  ASSERT_TRUE(WaitFor(third, "completed"));  // through a new launcher
  const pid_t replacement = LauncherOf(steps);
  EXPECT_GT(replacement, 0);
  EXPECT_NE(replacement, launcher);
  ASSERT_TRUE(WaitFor(first, "completed"));  // its supervisor never needed the launcher
  EXPECT_EQ(Show(first)["exit_code"], 0);
  EXPECT_NE(Log(*admin_, first).find("done"), std::string::npos);

  // The launcher takes nothing but a step's name, and only forks for it.
  EXPECT_EQ(AskLauncher(steps, "launch ../../etc\n"), "");
  EXPECT_EQ(AskLauncher(steps, "run /bin/sh\n"), "");
  EXPECT_EQ(LauncherOf(steps), replacement);
  // A stopping agent lets it go.
  StopAgent("n1");
  for (int i = 0; i < 100 && LauncherOf(steps) != 0; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(LauncherOf(steps), 0);
  EXPECT_FALSE(fs::exists(steps / "launcher.sock"));
}

// GPUs are fenced by the devices cgroup, as Slurm's ConstrainDevices does: a
// job opens only the device files of its own GPUs, even after unsetting
// CUDA_VISIBLE_DEVICES. Character devices with the NVIDIA major (195) stand
// in for /dev/nvidiaN: nothing is behind them, so opening one the job was
// given fails with ENXIO, and one it was not given with EPERM.
// A job that unsets CUDA_VISIBLE_DEVICES still opens only its own GPUs'
// device files (fake ones with the NVIDIA major: the given ones fail with
// ENXIO, as nothing is behind them; the others with EPERM, the fence).
class GpuFenceTest : public ClusterTest {
 protected:
  // Fake /dev/nvidia0..7 under the test's folder; false when not root.
  bool MakeDevices() {
    if (::geteuid() != 0) return false;
    const fs::path dev = dir_ / "dev";
    fs::create_directories(dev);
    for (int i = 0; i < 8; ++i) {
      const fs::path node = dev / ("nvidia" + std::to_string(i));
      EXPECT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(195, i)), 0) << std::strerror(errno);
    }
    gpu_device_path_ = (dev / "nvidia%d").string();
    return true;
  }

  void ExpectOnlyOwnGpus(const std::string& fence) {
    StartAgent("n1");
    if (isolation_.find("GPU devices fenced (" + fence) == std::string::npos) {
      GTEST_SKIP() << "[privilege] no " << fence << " fence here: " << isolation_;
    }
    const fs::path dev = dir_ / "dev";
    const std::string probe =
        "echo gpus=$CUDA_VISIBLE_DEVICES > devices.out; unset CUDA_VISIBLE_DEVICES; "
        "for i in 0 1 2 3 4 5 6 7; do cat " +
        dev.string() + "/nvidia$i 2>&1 | sed \"s/^/$i /\" >> devices.out; done";
    const uint64_t id = Submit(*admin_, {{"command", probe}, {"gpus", 2}});
    ASSERT_TRUE(WaitFor(id, "completed"));
    const auto lines = WaitForLines(dir_ / "work" / "devices.out", 9);
    ASSERT_EQ(lines.size(), 9u) << ReadFile(dir_ / "work" / "devices.out");
    ASSERT_TRUE(lines[0].starts_with("gpus="));
    std::set<std::string> given;
    for (const auto& g : Fields(lines[0].substr(5), ','))
      given.insert(g);
    ASSERT_EQ(given.size(), 2u) << lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      const std::string index = lines[i].substr(0, lines[i].find(' '));
      if (given.count(index)) {
        EXPECT_NE(lines[i].find("No such device or address"), std::string::npos)
            << "GPU " << lines[i];
      } else {
        EXPECT_NE(lines[i].find("Operation not permitted"), std::string::npos)
            << "GPU " << lines[i];
      }
    }
  }
};

TEST_F(GpuFenceTest, JobsOpenOnlyTheirOwnGpuDevices) {
  if (!MakeDevices()) GTEST_SKIP() << "[privilege] making device files needs root";
  ExpectOnlyOwnGpus("v1 devices");
}

// This host's cgroup v2 hierarchy (/sys/fs/cgroup/unified on a hybrid
// layout); empty when it has none.
std::string CgroupV2Root() {
  for (const char* root : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (fs::exists(fs::path(root) / "cgroup.controllers")) return root;
  }
  return "";
}

// The same on cgroup v2, where a BPF device program is the fence (this
// host's v2 hierarchy, /sys/fs/cgroup/unified on a hybrid layout).
TEST_F(GpuFenceTest, OnCgroupV2ABpfProgramFencesTheGpus) {
  if (!MakeDevices()) GTEST_SKIP() << "[privilege] making device files needs root";
  cgroup_root_ = CgroupV2Root();
  if (cgroup_root_.empty()) GTEST_SKIP() << "[privilege] no cgroup2 hierarchy on this host";
  ExpectOnlyOwnGpus("cgroup v2 BPF");
}

// On cgroup v2 each task starts inside its step's cgroup (clone3 with
// CLONE_INTO_CGROUP, or vfork and a write to cgroup.procs where the kernel
// refuses): it is there before it runs any code of the job's.
TEST_F(ClusterTest, OnCgroupV2TasksStartInTheirStepsCgroup) {
  if (::geteuid() != 0) GTEST_SKIP() << "[privilege] cgroups need root";
  cgroup_root_ = CgroupV2Root();
  if (cgroup_root_.empty()) GTEST_SKIP() << "[privilege] no cgroup2 hierarchy on this host";
  StartAgent("n1");
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(Submit(
        *admin_,
        {{"command", "grep '^0::' /proc/self/cgroup > v2." + std::to_string(i)}, {"gpus", 1}}));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(WaitFor(ids[i], "completed"));
    const std::string line = ReadFile(dir_ / "work" / ("v2." + std::to_string(i)));
    EXPECT_TRUE(line.ends_with("/" + std::to_string(ids[i]) + ".1\n")) << line;
  }
}

// A finished job's log stays readable after its step's folder is gone and
// the agent has restarted, even with the running steps kept apart (a tmpfs,
// as /run) and emptied, as a restart of the machine empties them.
TEST_F(ClusterTest, FinishedJobsLogsSurviveAnAgentRestart) {
  steps_root_ = dir_ / "run";
  StartAgent("n1");
  const uint64_t id = Submit(*admin_, {{"command", "echo kept"}, {"gpus", 1}});
  ASSERT_TRUE(WaitFor(id, "completed"));
  const fs::path step = steps_root_ / "n1" / (std::to_string(id) + ".1");
  for (int i = 0; i < 250 && fs::exists(step); ++i)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_FALSE(fs::exists(step)) << "the agent never forgot the step";
  ASSERT_TRUE(fs::exists(steps_root_ / "n1" / "events")) << "the steps were not where asked";
  // The agent's own state stays in its state folder, which a restart keeps.
  EXPECT_TRUE(fs::exists(dir_ / "agents" / "n1" / "gpu-power-limits.json"));
  EXPECT_FALSE(fs::exists(steps_root_ / "gpu-power-limits.json"));
  StopAgent("n1");
  fs::remove_all(steps_root_);
  StartAgent("n1");
  EXPECT_EQ(Log(*admin_, id), "kept\n");
  // The record names the user's file; only the agent reads it.
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "agents" / "n1" / "steps" / "outputs" / "journal").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// A launch order that arrives after its deadline (the server has given the
// epoch up and queued the job again) is refused, and starts nothing.
TEST_F(ClusterTest, ALaunchPastItsDeadlineIsRefused) {
  StartAgent("n1");
  auto launch = [&](uint64_t job, Duration from_now) {
    server::LaunchOrder o;
    o.node = "n1";
    o.address = agents_.at("n1")->address();
    o.job = JobId(job);
    o.epoch = 1;
    o.spec.user = "root";
    o.spec.command = "echo late > late-" + std::to_string(job) + ".out";
    o.spec.work_dir = (dir_ / "work").string();
    o.allocation.gpu_mask = 1;
    o.nodes = {"n1"};
    o.addresses = {o.address};
    o.not_after = clock_.Now() + from_now;
    auto c = net::HttpClient::Connect(o.address, {.token = server_->node_token()});
    EXPECT_TRUE(c.ok());
    auto r = (*c)->Post("/v1/launch", server::AgentLink::LaunchBody(o));
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : net::HttpResponse{};
  };
  const net::HttpResponse late = launch(9001, -std::chrono::seconds(5));
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_NE(late.body.find("expired"), std::string::npos) << late.body;
  EXPECT_FALSE(fs::exists(dir_ / "agents" / "n1" / "steps" / "9001.1")) << "a step was started";
  // In time, the same order starts.
  const net::HttpResponse in_time = launch(9002, std::chrono::seconds(30));
  EXPECT_EQ(in_time.status, 200) << in_time.body;
  EXPECT_EQ(WaitForLines(dir_ / "work" / "late-9002.out", 1), std::vector<std::string>{"late"});
  EXPECT_FALSE(fs::exists(dir_ / "work" / "late-9001.out"));
}

// A stop that reaches the agent before the launch it stops (from another
// controller, after a failover: one controller's orders about a job go in
// order) keeps that launch from running; a later epoch of the job starts.
TEST_F(ClusterTest, AStopThatArrivesBeforeItsLaunchKeepsItFromRunning) {
  StartAgent("n1");
  const std::string address = agents_.at("n1")->address();
  auto c = net::HttpClient::Connect(address, {.token = server_->node_token()});
  ASSERT_TRUE(c.ok());
  server::KillOrder kill;
  kill.node = "n1";
  kill.address = address;
  kill.job = JobId(9003);
  kill.epoch = 1;
  auto stopped = (*c)->Post("/v1/kill", server::AgentLink::KillBody(kill));
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->status, 200) << stopped->body;
  auto launch = [&](uint64_t epoch) {
    server::LaunchOrder o;
    o.node = "n1";
    o.address = address;
    o.job = JobId(9003);
    o.epoch = epoch;
    o.spec.user = "root";
    o.spec.command = "sleep 5";
    o.spec.work_dir = (dir_ / "work").string();
    o.allocation.gpu_mask = 1;
    o.nodes = {"n1"};
    o.addresses = {o.address};
    o.not_after = clock_.Now() + std::chrono::seconds(30);
    auto r = (*c)->Post("/v1/launch", server::AgentLink::LaunchBody(o));
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : net::HttpResponse{};
  };
  const net::HttpResponse late = launch(1);
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_NE(late.body.find("stopped before its launch arrived"), std::string::npos) << late.body;
  EXPECT_FALSE(fs::exists(dir_ / "agents" / "n1" / "steps" / "9003.1")) << "a step was started";
  // The job requeued (a new epoch) starts. (This test's server knows no job
  // 9003 and has the agent stop it at its next beat: what it runs is not
  // looked at.)
  const net::HttpResponse again = launch(2);
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_NE(again.body.find("\"started\":true"), std::string::npos) << again.body;
}

// A supervisor killed outright takes its step's tasks with it: nothing runs
// on after the server has freed the step's GPUs.
TEST_F(ClusterTest, AKilledSupervisorTakesItsTasksWithIt) {
  StartAgent("n1");
  const uint64_t id = Submit(
      *admin_,
      {{"command",
        "sleep 300 & echo $! >> sup.pids; echo $$ >> sup.pids; echo $PPID >> sup.pids; wait"},
       {"gpus", 1}});
  ASSERT_TRUE(WaitFor(id, "running"));
  const auto pids = WaitForLines(dir_ / "work" / "sup.pids", 3);
  ASSERT_EQ(pids.size(), 3u);
  ASSERT_NE(ReadFile(fs::path("/proc") / pids[2] / "cmdline").find("shoal-step"), std::string::npos)
      << "the task's parent is its supervisor";
  ASSERT_EQ(::kill(std::stoi(pids[2]), SIGKILL), 0);  // started by this test's agent
  for (int i = 0; i < 500 && Show(id)["state"] == "running"; ++i)
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_NE(Show(id)["state"], "running") << Show(id).dump();
  for (size_t i = 0; i < 2; ++i) {
    const pid_t pid = std::stoi(pids[i]);
    for (int k = 0; k < 250 && Alive(pid); ++k)
      std::this_thread::sleep_for(milliseconds(20));
    EXPECT_FALSE(Alive(pid)) << "task process " << pid << " outlived its supervisor";
  }
}

TEST_F(ClusterTest, LostAgentDownsTheNodeAndItsJobsFollowTheirPolicy) {
  StartAgent("n1");
  const uint64_t keep = Submit(*admin_, {{"command", "sleep 60"}, {"gpus", 1}});
  const uint64_t again = Submit(*admin_, {{"command", "sleep 60"}, {"gpus", 1}, {"requeue", true}});
  ASSERT_TRUE(WaitFor(keep, "running"));
  ASSERT_TRUE(WaitFor(again, "running"));
  StopAgent("n1");
  ASSERT_TRUE(WaitFor(keep, "node_fail", 8000));
  EXPECT_TRUE(WaitFor(again, "pending", 8000));
  EXPECT_EQ(Node("n1")["state"], "down");
  // Back again: the node reports the step of the failed job, which the
  // server no longer runs there, and the agent is told to kill it; the
  // requeued job starts again under a new epoch.
  StartAgent("n1");
  ASSERT_TRUE(WaitFor(again, "running"));
  EXPECT_EQ(Node("n1")["state"], "up");
  for (int i = 0;
       i < 250 && fs::exists(dir_ / "agents" / "n1" / "steps" / (std::to_string(keep) + ".1"));
       ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_FALSE(fs::exists(dir_ / "agents" / "n1" / "steps" / (std::to_string(keep) + ".1")))
      << "the failed job's step is still on the node";
}

// Fencing: an agent cut off from the server stops its requeueable jobs'
// steps itself within node timeout + kill grace, and the server runs them
// again only after that (plus a margin): never twice at once. A job that
// may not be requeued keeps running on the cut-off node (the server counts
// it as node_fail; the reconcile kills it when the node is back).
TEST_F(ClusterTest, ACutOffAgentStopsItsRequeueableJobsBeforeTheServerRunsThemAgain) {
  const int server_port = std::stoi(server_->address().substr(server_->address().rfind(':') + 1));
  Relay relay(server_port);
  StartAgent("n1", "127.0.0.1:" + std::to_string(relay.port()));
  const uint64_t again = Submit(
      *admin_, {{"command", "echo $$ > again.pid; exec sleep 60"}, {"gpus", 1}, {"requeue", true}});
  const uint64_t stays =
      Submit(*admin_, {{"command", "echo $$ > stays.pid; exec sleep 60"}, {"gpus", 1}});
  const auto again_pid = WaitForLines(dir_ / "work" / "again.pid", 1);
  const auto stays_pid = WaitForLines(dir_ / "work" / "stays.pid", 1);
  ASSERT_EQ(again_pid.size(), 1u);
  ASSERT_EQ(stays_pid.size(), 1u);
  ASSERT_TRUE(WaitFor(again, "running"));
  const auto cut = std::chrono::steady_clock::now();
  relay.Cut();
  // Until the server takes the job back, see when its task dies.
  std::optional<double> died_s, requeued_s;
  for (int i = 0; i < 600 && !requeued_s; ++i) {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
    if (!died_s && !Alive(std::stoi(again_pid[0]))) died_s = t;
    if (Show(again)["state"] == "pending") requeued_s = t;
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_TRUE(requeued_s) << Show(again).dump();
  ASSERT_TRUE(died_s) << "the requeueable job still ran on the cut-off node when it was requeued";
  EXPECT_LE(*died_s, *requeued_s);
  // Node timeout 3 s, kill grace 0.5 s, margin 0.5 s.
  EXPECT_GE(*requeued_s, 3.5);
  EXPECT_EQ(Show(stays)["state"], "node_fail");
  EXPECT_TRUE(Alive(std::stoi(stays_pid[0])));
}

TEST_F(ClusterTest, JobsRunAsTheirUser) {
  StartAgent("n1");
  net::HttpClient& nobody = User("nobody");
  const uint64_t id = Submit(nobody, {{"command", "id -un; id -u"}, {"gpus", 1}});
  ASSERT_TRUE(WaitFor(id, "completed"));
  EXPECT_EQ(Log(nobody, id), "nobody\n65534\n");
  // Others cannot read it.
  net::HttpClient& alice = User("alice");
  auto r = alice.Get("/v1/jobs/" + std::to_string(id) + "/log");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->status == 403 || r->status == 404) << r->status;
}

// A job reports its progress through $SHOAL_PROGRESS_FILE, and the server
// keeps the mean of what the agent read there. The file is the job's to
// write and nothing else: the job cannot put a link to a file of root's in
// its place.
TEST_F(ClusterTest, AJobsProgressFileReachesItsRecord) {
  StartAgent("n1");
  net::HttpClient& nobody = User("nobody");
  const uint64_t id = Submit(
      nobody,
      {{"command",
        "ln -sf /etc/shadow \"$SHOAL_PROGRESS_FILE\" 2>/dev/null && echo replaced || echo kept; "
        "for i in 1 2 3 4 5 6 7 8 9 10; do echo '250 samples/s' >> \"$SHOAL_PROGRESS_FILE\"; "
        "sleep 0.3; done"},
       {"gpus", 1}});
  ASSERT_TRUE(WaitFor(id, "completed"));
  EXPECT_EQ(Log(nobody, id), "kept\n");
  const Json job = Show(id);
  ASSERT_TRUE(job.contains("efficiency")) << job.dump();
  EXPECT_GE(job["efficiency"].value("progress_samples", 0), 1) << job.dump();
  EXPECT_EQ(job["efficiency"].value("progress_rate", 0.0), 250.0) << job.dump();
}

TEST_F(ClusterTest, UnknownUserIsRefused) {
  StartAgent("n1");
  net::HttpClient& ghost = User("no-such-user-shoal");
  const uint64_t id = Submit(ghost, {{"command", "touch ran"}, {"gpus", 1}});
  ASSERT_TRUE(WaitFor(id, "failed"));
  const Json job = Show(id);
  EXPECT_NE(job.dump().find("no-such-user-shoal"), std::string::npos) << job.dump();
  EXPECT_FALSE(fs::exists(dir_ / "work" / "ran"));
}

TEST_F(ClusterTest, RootJobsAreRefusedUnlessAllowed) {
  agent::AgentConfig c = Config("strict");
  c.allow_root_jobs = false;
  auto gpus = agent::SimulatedProvider::Create("dgx-h100", "strict", 1, clock_);
  auto steps = agent::OpenSteps(c, SHOAL_STEP_BINARY);
  ASSERT_TRUE(gpus.ok() && steps.ok());
  auto a = agent::Agent::Start(c.agent, std::move(*gpus), std::move(*steps), clock_);
  ASSERT_TRUE(a.ok());
  net::HttpClient& root = User("root");
  const uint64_t id = Submit(root, {{"command", "touch ran"}, {"gpus", 1}});
  ASSERT_TRUE(WaitFor(id, "failed"));
  EXPECT_NE(Show(id).dump().find("root"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "work" / "ran"));
  (*a)->Stop();
}

// A simulated GPU is as busy as the step that holds it (the CPU its
// processes use): a step that spins shows its GPU busy, one that sleeps
// shows its GPU idle, as the dashboard's idle detection needs.
TEST_F(ClusterTest, SimulatedGpusAreAsBusyAsTheirSteps) {
  StartAgent("n1");
  const uint64_t sleeper = Submit(*admin_, {{"command", "sleep 8"}, {"gpus", 1}});
  const uint64_t spinner = Submit(
      *admin_, {{"command", "end=$(($(date +%s) + 8)); while [ $(date +%s) -lt $end ]; do :; done"},
                {"gpus", 1}});
  ASSERT_TRUE(WaitFor(sleeper, "running"));
  ASSERT_TRUE(WaitFor(spinner, "running"));
  const size_t idle_gpu = Show(sleeper)["allocation"][0]["gpus"][0].get<size_t>();
  const size_t busy_gpu = Show(spinner)["allocation"][0]["gpus"][0].get<size_t>();
  // Utilisation as the server last heard it, once both readings have settled.
  double idle = -1, busy = -1;
  for (int i = 0; i < 100; ++i) {
    const Json gpus = Node("n1")["gpus"];
    idle = gpus[idle_gpu]["telemetry"].value("util", -1.0);
    busy = gpus[busy_gpu]["telemetry"].value("util", -1.0);
    if (idle >= 0 && idle < 20 && busy > 50) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_GE(idle, 0);
  EXPECT_LT(idle, 20) << "GPU " << idle_gpu << " held by `sleep`";
  EXPECT_GT(busy, 50) << "GPU " << busy_gpu << " held by a busy loop";
}

TEST_F(ClusterTest, GpuWithNewXidDrainsItsNode) {
  StartAgent("n1");
  EXPECT_EQ(Node("n1")["state"], "up");
  ASSERT_TRUE(simulated_.at("n1")->InjectXid(3, 79).ok());
  Json node;
  for (int i = 0; i < 250; ++i) {
    node = Node("n1");
    if (node["state"] == "drained" || node["state"] == "draining") break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(node["state"] == "drained" || node["state"] == "draining") << node.dump();
  EXPECT_NE(node.dump().find("XID 79"), std::string::npos) << node.dump();
  // Nothing new lands there until an admin resumes it.
  const uint64_t id = Submit(*admin_, {{"command", "true"}, {"gpus", 1}});
  Json job;  // until a scheduling pass has looked at it
  for (int i = 0; i < 500; ++i) {
    job = Show(id);
    if (job["state"] != "pending" || job["reason"] != "none") break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(job["state"], "pending") << job.dump();
  EXPECT_EQ(job["reason"], "nodes_unavailable") << job.dump();
  auto r = admin_->Post("/v1/nodes/n1/resume", "{}");
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : "");
  EXPECT_TRUE(WaitFor(id, "completed"));
}

}  // namespace
}  // namespace shoal
