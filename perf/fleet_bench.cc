// A fleet against one controller (issue "A controller for 10,000 nodes"): a
// real `shoal server` child (plain HTTP on 127.0.0.1, durable SQLite state in
// a temporary folder) and N simulated node agents in this one process, on a
// few sender threads, speaking the real node protocol
// (api/node_protocol.h); one listener takes the server's orders for them all.
//
//   fleet_bench --shoal build/release/src/cli/shoal [--nodes 1000,5000,10000]
//               [--heartbeat-seconds 10] [--interval 1] [--connections 8] [--gpus 8]
//               [--node-timeout 30] [--fixed-interval] [--tls] [--no-node-sessions]
//               [--beat-connections node|beat|sender]
//
// A node beats every --interval s, or as seldom as the server's answers ask
// (`heartbeat_s`, as real agents do) unless --fixed-interval, the beats spread
// evenly over the interval. Each node keeps a connection of its own open
// between beats, as an agent does (--beat-connections node); `beat` opens a
// new connection for each beat (agents before they kept theirs), `sender`
// has the nodes of one sender thread share its connection. --tls: the
// server speaks TLS (its own CA, as `shoal server` sets up): each node
// registers with a certificate of its own (its key loaded before the clock
// starts, as an agent's is when it starts) and beats on that connection;
// when its time comes (api::SessionDelay) or that connection is gone (the
// restart), it connects, as agents do, with the node session its
// registration gave it and no certificate (--no-node-sessions: with its
// certificate every time, as agents did before). For each fleet size,
// against a fresh server:
//  1. registration of every node over --connections connections: seconds,
//     server CPU per registration, latency (each node beats from its
//     registration on, as an agent does, so the CPU includes those beats);
//     over TLS with node sessions, then until every node has taken its
//     session up: how long, and the server's CPU meanwhile;
//  2. --heartbeat-seconds of beats (every GPU's telemetry, varying, and the
//     node's running steps): beats/s achieved of those offered, server CPU per
//     beat and in % of a core, latency p50/p99, this generator's own CPU;
//  3. one user submits one-GPU `true` jobs at 20/s for 10 s meanwhile: submit
//     latency, submit -> launch order at the node; a step runs 2 s, its exit
//     going out at once in an extra beat (as an agent's does); completions;
//  4. 10 nodes fall silent: seconds until the server shows them down, then up;
//  5. the server's RSS; GET /v1/nodes whole, a first page, the down nodes,
//     the summary, and GET /metrics (time and size);
//  6. a restart (SIGTERM) on the same state, every node registering again
//     while a user submits at 20/s: seconds, and submit latency.
// Every phase is bounded in time; child processes die with this one.
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <queue>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/json.h"
#include "api/node_protocol.h"
#include "child.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/tls.h"

namespace {

using namespace shoal::acceptance;
using Json = nlohmann::json;
namespace api = shoal::api;
using std::chrono::milliseconds;

constexpr double kPhaseLimitS = 300;  // registration's cap
constexpr double kSubmitRate = 20;    // jobs per second, one user
constexpr double kSubmitSeconds = 10;
constexpr double kStepSeconds = 2;  // how long a simulated step runs
constexpr int kLostNodes = 10;

struct Options {
  std::string shoal;
  std::vector<int> sizes = {1000, 5000, 10000};
  double heartbeat_seconds = 10, interval = 1;
  int connections = 8, gpus = 8, node_timeout_s = 30;
  bool fixed_interval = false, tls = false;
  // Over TLS, nodes take the session their registration gives them and
  // connect without their certificate after it, as agents do.
  bool node_sessions = true;
  std::string beat_connections = "node";  // node, beat or sender
};

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
Clock::duration After(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// The server's CA certificate, for a TLS server (`shoal server` keeps it
// in <state>/tls); empty for plain HTTP.
std::string ca_file;  // NOLINT: set once, before any connection

std::unique_ptr<shoal::net::HttpClient> Connect(const std::string& address,
                                                const std::string& token) {
  std::optional<shoal::net::TlsClientOptions> tls;
  if (!ca_file.empty()) tls = shoal::net::TlsClientOptions{.ca_file = ca_file};
  auto c = shoal::net::HttpClient::Connect(address,
                                           {.token = token, .read_timeout_ms = 60000, .tls = tls});
  if (!c.ok()) Die(c.status().ToString());
  return std::move(*c);
}

std::string Failure(const shoal::Result<shoal::net::HttpResponse>& r) {
  return r.ok() ? std::to_string(r->status) + " " + r->body.substr(0, 300) : r.status().ToString();
}

// `shoal server` on a free loopback port, plain HTTP or TLS, state in `dir`;
// as many connections from this one address as the fleet makes.
struct Server {
  std::string shoal, dir;
  int timeout_s = 10, starts = 0;
  bool tls = false;
  std::string address, admin, node;  // and its tokens
  Child child;

  // Milliseconds until it serves (its state loaded). A restart listens where
  // the first start did, as a real controller's address stays.
  double Start() {
    const auto t0 = Clock::now();
    const std::string listen =
        address.empty() ? "127.0.0.1:0" : address.substr(address.find("://") + 3);
    const std::string config = dir + ".toml";
    std::ofstream(config) << "[server]\nmax_connections = 100000\n"
                             "connections_per_address = 100000\n";
    std::vector<std::string> args = {shoal,      "server",         "--config",
                                     config,     "--state-dir",    dir,
                                     "--listen", listen,           "--socket",
                                     "none",     "--node-timeout", std::to_string(timeout_s) + "s"};
    if (!tls) args.push_back("--plain-http");
    address =
        (tls ? "https://" : "http://") +
        AddressIn(child.Start(args, dir + "-" + std::to_string(starts++) + ".log", "listening on"));
    std::ifstream(dir + "/admin.token") >> admin;
    std::ifstream(dir + "/node.token") >> node;
    if (admin.empty() || node.empty()) Die("no tokens in " + dir);
    return Ms(Clock::now() - t0);
  }
  // Milliseconds from SIGTERM to its exit.
  double Stop() {
    const auto t0 = Clock::now();
    child.Stop();
    return Ms(Clock::now() - t0);
  }
};

// A simulated step: runs until `ends`.
struct FakeStep {
  api::RunningStep key;
  Clock::time_point ends;
  int signal = 0;  // 15 when the server killed it
};

struct FakeNode {
  std::string name, beat_path;
  std::atomic<bool> registered{false};
  std::atomic<bool> silent{false};           // a lost node: sends nothing
  std::atomic<Clock::time_point> last_ok{};  // its last heartbeat the server took
  // Its registration's node_session, until it takes it up (Fleet::Own) at
  // session_due or when the connection its certificate opened is gone.
  std::string session;
  Clock::time_point session_due{};
  std::mutex mu;
  std::vector<FakeStep> running;     // under mu
  std::vector<api::JobEvent> ended;  // under mu: exits not yet reported
  std::vector<double> energy_j;      // the sender's own
  uint64_t noise = 0;                // the sender's own
};

// What the sender threads counted.
struct BeatStats {
  unsigned long long sent = 0, failed = 0, extra = 0;
  double max_lag_s = 0;
  std::vector<double> ms;
  std::string first_failure;
};

// The simulated nodes: registration bodies, heartbeats (one thread per
// connection; node i on thread i % connections) and the listener that takes
// the server's orders for all of them.
class Fleet {
 public:
  Fleet(const Options& o, int n)
      : o_(o), nodes_(static_cast<size_t>(n)), wakes_(static_cast<size_t>(o.connections)) {
    for (int i = 0; i < n; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "fleet-%05d", i);
      FakeNode& f = nodes_[static_cast<size_t>(i)];
      f.name = name;
      f.beat_path = std::string("/v1/nodes/") + name + "/heartbeat";
      f.energy_j.assign(static_cast<size_t>(o.gpus), 1e6 + i);
      f.noise = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
      by_name_[f.name] = i;
    }
    own_.resize(nodes_.size());
    Listen();
  }
  ~Fleet() {
    StopBeating();
    http_.stop();
    http_thread_.join();
  }

  int size() const { return static_cast<int>(nodes_.size()); }
  bool node_sessions() const { return o_.node_sessions; }
  FakeNode& node(int i) { return nodes_[static_cast<size_t>(i)]; }
  // Node i's own client for `server`, made at its first use: over TLS with
  // the node's certificate (IssueCertificates), else with `token`. As an
  // agent, a node given a node session keeps the connection its certificate
  // opened until its time comes (api::SessionDelay) or that connection is
  // gone (a controller restart), then takes the session up: a client without
  // a certificate, presenting it. One thread uses it at a time (the
  // registering one, or the node's sender).
  shoal::net::HttpClient& Own(int i, const std::string& server, const std::string& token);
  // How many nodes have taken their sessions up.
  int sessions_taken() const { return sessions_taken_; }
  // Every node's client made now, as agents load their keys when they
  // start, before they register.
  void MakeClients(const std::string& server, const std::string& token) {
    for (int i = 0; i < size(); ++i)
      Own(i, server, token);
  }
  // Over TLS a node proves itself with a certificate the cluster's CA
  // signed for its name: one per node, signed here with the server's CA key
  // (as `shoal agent --join` would have it signed), in `dir`.
  void IssueCertificates(const std::string& state_dir, const std::string& dir);
  std::string RegistrationBody(int i) const;
  // The interval the nodes beat at: ours, or the server's when longer.
  double Interval() const {
    return o_.fixed_interval ? o_.interval : std::max(o_.interval, server_interval_s.load());
  }
  std::atomic<double> server_interval_s{0};  // what the server's last answer asked for

  void StartBeating(const std::string& server, const std::string& token) {
    beating_ = true;
    for (int t = 0; t < o_.connections; ++t)
      threads_.emplace_back([this, t, server, token] { Send(t, server, token); });
  }
  void StopBeating() {
    beating_ = false;
    for (std::thread& t : threads_)
      t.join();
    threads_.clear();
  }
  // The senders' counts since the last call.
  BeatStats Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(stats_, BeatStats{});
  }
  // When the (first) launch order of each job arrived.
  std::map<uint64_t, Clock::time_point> Launches() {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    return launched_;
  }

 private:
  // A sender's (when, node) to look at for ended steps, soonest first.
  using WakeAt = std::pair<Clock::time_point, int>;
  using Wakes = std::priority_queue<WakeAt, std::vector<WakeAt>, std::greater<>>;

  void Listen();
  using Request = httplib::Request;
  using Response = httplib::Response;
  void Launch(const Request& req, Response& res);
  void Kill(const Request& req, Response& res);
  void Send(int t, const std::string& server, const std::string& token);
  // lag: how late a regular beat is (< 0: an extra one, for exits).
  void Beat(shoal::net::HttpClient& c, int i, double lag);
  void FillGpus(FakeNode& f, int busy, api::Heartbeat& hb);
  void Wake(int i, Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mu_);
    wakes_[static_cast<size_t>(i % o_.connections)].push({at, i});
  }

  const Options& o_;
  std::vector<FakeNode> nodes_;
  std::vector<std::unique_ptr<shoal::net::HttpClient>> own_;
  std::atomic<int> sessions_taken_{0};
  std::string certs_;  // where node i's <name>.crt and .key are, over TLS
  std::unordered_map<std::string, int> by_name_;
  std::mutex mu_;
  std::vector<Wakes> wakes_;  // under mu_: each sender's
  BeatStats stats_;           // under mu_
  std::vector<std::thread> threads_;
  std::atomic<bool> beating_{false};
  shoal::net::HttpServer http_;
  std::thread http_thread_;
  std::string address_;
  std::mutex jobs_mu_;
  std::map<uint64_t, Clock::time_point> launched_;  // under jobs_mu_
};

// A node as `shoal agent --gpus simulated:dgx-h100` describes its own.
std::string Fleet::RegistrationBody(int i) const {
  shoal::Node n;
  n.name = nodes_[static_cast<size_t>(i)].name;
  n.address = address_;
  n.cpu_milli = 224000;
  n.memory_mib = 2048 * 1024;
  n.gpus.resize(static_cast<size_t>(o_.gpus));
  for (int g = 0; g < o_.gpus; ++g) {
    shoal::Gpu& gpu = n.gpus[static_cast<size_t>(g)];
    gpu.index = g, gpu.model = "H100-SXM-80GB", gpu.memory_mib = 81920;
    gpu.uuid = "GPU-" + n.name + "-" + std::to_string(g), gpu.numa_node = g * 2 / o_.gpus;
  }
  return api::RegistrationToJson(n).dump();
}

void Fleet::Listen() {
  // As an agent's listener, but for every node at once: the server keeps a
  // connection per node (and per order worker) to this one address.
  http_.SetLimits(
      {.idle_timeout = milliseconds(1000), .per_client = 100000, .max_connections = 100000});
  http_.Post("/v1/launch", [this](const Request& req, Response& res) { Launch(req, res); });
  http_.Post("/v1/kill", [this](const Request& req, Response& res) { Kill(req, res); });
  const int port = http_.Bind("127.0.0.1", 0);
  if (port <= 0) Die("the fleet cannot listen on 127.0.0.1");
  address_ = "127.0.0.1:" + std::to_string(port);
  http_thread_ = std::thread([this] { http_.listen_after_bind(); });
  while (!http_.is_running())
    std::this_thread::sleep_for(milliseconds(1));
}

void Reply(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

// POST /v1/launch: the step runs kStepSeconds, then exits 0. Answered as
// the agent answers (agent.cc, HandleLaunch); no authentication.
void Fleet::Launch(const Request& req, Response& res) {
  auto body = api::Parse(req.body);
  auto m =
      body.ok() ? api::LaunchFromJson(*body) : shoal::Result<api::LaunchMessage>(body.status());
  const size_t rank = m.ok() ? static_cast<size_t>(m->node_rank) : 0;
  auto it = m.ok() && rank < m->nodes.size() ? by_name_.find(m->nodes[rank]) : by_name_.end();
  if (it == by_name_.end()) return Reply(res, 400, {{"error", "invalid_argument"}});
  const int i = it->second;
  const auto now = Clock::now(), ends = now + After(kStepSeconds);
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    launched_.emplace(m->job.value(), now);
  }
  FakeNode& f = node(i);
  const api::RunningStep key{m->job, m->epoch, m->step};
  {
    std::lock_guard<std::mutex> lock(f.mu);
    if (std::any_of(f.running.begin(), f.running.end(), [&](auto& s) { return s.key == key; }))
      return Reply(res, 409, {{"error", "failed_precondition"}, {"detail", "already launched"}});
    f.running.push_back({key, ends});
  }
  Wake(i, ends);
  Reply(res, 200,
        {{"job", m->job.value()}, {"epoch", m->epoch}, {"step", m->step}, {"started", true}});
}

// POST /v1/kill: the step (or the epoch's steps) ends with SIGTERM at once.
void Fleet::Kill(const Request& req, Response& res) {
  auto body = api::Parse(req.body);
  auto k = body.ok() ? api::KillFromJson(*body) : shoal::Result<api::KillMessage>(body.status());
  if (!k.ok()) return Reply(res, 400, {{"error", "invalid_argument"}});
  for (int i = 0; i < size() && k->signal == 0; ++i) {  // kills are rare: a scan
    FakeNode& f = node(i);
    std::lock_guard<std::mutex> lock(f.mu);
    for (FakeStep& s : f.running) {
      if (s.key.job != k->job || s.key.epoch != k->epoch || (k->step && *k->step != s.key.step))
        continue;
      s.ends = Clock::now(), s.signal = 15;
      Wake(i, s.ends);
    }
  }
  Reply(res, 200, {{"job", k->job.value()}, {"epoch", k->epoch}, {"stopping", true}});
}

// Telemetry as NVML would give it: busy GPUs (one per running step) near
// full load, idle ones near nothing, a little noise on every value.
void Fleet::FillGpus(FakeNode& f, int busy, api::Heartbeat& hb) {
  const double dt = Interval();
  for (int g = 0; g < o_.gpus; ++g) {
    f.noise = f.noise * 6364136223846793005ull + 1442695040888963407ull;  // Knuth's MMIX LCG
    const double r = static_cast<double>(f.noise >> 11) * 0x1p-53;        // in [0, 1)
    const bool on = g < busy;
    api::GpuReport rep;
    rep.index = g;
    api::GpuTelemetry& t = rep.telemetry;
    t.present = true;
    t.util_pct = on ? 90 + 10 * r : 2 * r;
    t.mem_copy_util_pct = on ? 30 + 20 * r : r;
    t.fb_used_mib = on ? 60000 + static_cast<int64_t>(4000 * r) : 512;
    t.fb_free_mib = 81920 - t.fb_used_mib;
    t.power_w = on ? 550 + 150 * r : 70 + 10 * r;
    t.temperature_c = on ? 65 + 10 * r : 35 + 3 * r;
    t.sm_clock_mhz = on ? 1980 : 345 + 10 * r;
    f.energy_j[static_cast<size_t>(g)] += t.power_w * dt;
    t.energy_j = f.energy_j[static_cast<size_t>(g)];
    hb.gpus.push_back(std::move(rep));
  }
}

// One heartbeat of node i: its running steps, the exits not yet reported,
// and (on its tick) every GPU.
void Fleet::Beat(shoal::net::HttpClient& c, int i, double lag) {
  FakeNode& f = node(i);
  const bool with_gpus = lag >= 0;
  api::Heartbeat hb;
  const auto now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(f.mu);
    for (auto it = f.running.begin(); it != f.running.end();) {
      if (it->ends > now) {
        hb.running.push_back((it++)->key);
        continue;
      }
      api::JobEvent e;
      e.job = it->key.job, e.epoch = it->key.epoch, e.step = it->key.step, e.signal = it->signal;
      f.ended.push_back(std::move(e));
      it = f.running.erase(it);
    }
    hb.events = f.ended;
  }
  if (!with_gpus && hb.events.empty()) return;
  hb.has_gpus = with_gpus;
  if (with_gpus) FillGpus(f, static_cast<int>(hb.running.size()), hb);
  const std::string body = api::ToJson(hb).dump();
  const auto t0 = Clock::now();
  auto r = c.Post(f.beat_path, body);
  const double ms = Ms(Clock::now() - t0);
  const bool ok = r.ok() && r->status == 200;
  if (ok) {
    f.last_ok = t0;
    if (!hb.events.empty()) {
      std::lock_guard<std::mutex> lock(f.mu);
      f.ended.erase(f.ended.begin(), f.ended.begin() + static_cast<long>(hb.events.size()));
    }
    if (const size_t at = r->body.find("\"heartbeat_s\":"); at != std::string::npos)
      server_interval_s = std::atof(r->body.c_str() + at + 14);
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.max_lag_s = std::max(stats_.max_lag_s, lag);
  ++(ok ? stats_.sent : stats_.failed);
  stats_.extra += with_gpus ? 0 : 1;
  if (ok) stats_.ms.push_back(ms);
  if (!ok && stats_.first_failure.empty()) stats_.first_failure = f.name + ": " + Failure(r);
}

shoal::net::HttpClient& Fleet::Own(int i, const std::string& server, const std::string& token) {
  std::unique_ptr<shoal::net::HttpClient>& c = own_[static_cast<size_t>(i)];
  FakeNode& f = node(i);
  if (c != nullptr && !f.session.empty() &&
      (Clock::now() >= f.session_due || !c->HoldsConnection())) {
    c = Connect(server, std::exchange(f.session, ""));  // the CA only: no certificate
    ++sessions_taken_;
  }
  if (c != nullptr) return *c;
  if (!o_.tls) {
    c = Connect(server, token);
    return *c;
  }
  const std::string& name = node(i).name;
  auto made = shoal::net::HttpClient::Connect(
      server, {.read_timeout_ms = 60000,
               .tls = shoal::net::TlsClientOptions{.ca_file = ca_file,
                                                   .cert_file = certs_ + "/" + name + ".crt",
                                                   .key_file = certs_ + "/" + name + ".key"}});
  if (!made.ok()) Die(made.status().ToString());
  c = std::move(*made);
  return *c;
}

void Fleet::IssueCertificates(const std::string& state_dir, const std::string& dir) {
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const shoal::net::KeyAndCert ca{read(state_dir + "/tls/ca.key"), read(state_dir + "/tls/ca.crt")};
  if (ca.key_pem.empty() || ca.cert_pem.empty()) Die("no CA in " + state_dir + "/tls");
  certs_ = dir;
  std::filesystem::create_directories(dir);
  for (const FakeNode& f : nodes_) {
    auto issued = shoal::net::IssueCertificate(ca, f.name, {"127.0.0.1"}, 1);
    if (!issued.ok()) Die(issued.status().ToString());
    std::ofstream(dir + "/" + f.name + ".crt") << issued->cert_pem;
    std::ofstream(dir + "/" + f.name + ".key") << issued->key_pem;
  }
}

// Sender t: its nodes' beats at their places in each interval, and the
// extra beats of ended steps meanwhile. Falling more than an interval
// behind, it starts its schedule afresh (an agent waits an interval after
// its last beat; none of them catches up).
void Fleet::Send(int t, const std::string& server, const std::string& token) {
  Wakes& wakes = wakes_[static_cast<size_t>(t)];
  // Node i's connection: its own, or (plain HTTP) the sender's.
  const bool per_node = o_.beat_connections == "node" || o_.tls;
  auto shared = Connect(server, token);
  auto client = [&](int i) -> shoal::net::HttpClient& {
    return per_node ? Own(i, server, token) : *shared;
  };
  Clock::time_point round = Clock::now();
  while (beating_) {
    const double interval = Interval();
    for (int i = t, n = size(); i < n && beating_; i += o_.connections) {
      const auto due = round + After(interval * i / n);
      while (beating_) {  // ended steps until the node's turn
        int wake = -1;
        const auto now = Clock::now();
        if (std::lock_guard<std::mutex> lock(mu_);
            !wakes.empty() && wakes.top().first <= now && wakes.top().first <= due) {
          wake = wakes.top().second;
          wakes.pop();
        }
        if (wake >= 0) {
          if (!node(wake).silent) Beat(client(wake), wake, -1);
          continue;
        }
        // A beat up to 2 ms early rather than a sleep each (a thread's
        // beats come every interval x connections / nodes).
        if (now >= due - milliseconds(2)) break;
        std::this_thread::sleep_until(std::min(due - milliseconds(2), now + milliseconds(5)));
      }
      FakeNode& f = node(i);
      if (!beating_ || !f.registered || f.silent) continue;
      shoal::net::HttpClient& c = client(i);
      Beat(c, i, std::max(0.0, Seconds(Clock::now() - due)));
      if (o_.beat_connections == "beat") c.CloseConnection();
    }
    round += After(interval);
    if (Clock::now() - round > After(interval)) round = Clock::now();
  }
}

// Jobs submitted by one user at kSubmitRate until `stop`, `max_jobs` or
// `max_s`: their latencies and (id, when sent).
struct Submitted {
  std::vector<double> ms;
  std::vector<std::pair<uint64_t, Clock::time_point>> jobs;
  int failed = 0;
  std::string first_failure;
};

Submitted SubmitJobs(const Server& server, int max_jobs, double max_s,
                     const std::atomic<bool>& stop) {
  Submitted out;
  auto c = Connect(server.address, server.admin);
  // Over TLS the fleet's one listener cannot answer launch orders as each
  // node (the controller checks the node's name in its certificate): the
  // jobs are held, and only their submission is timed.
  const std::string spec =
      Json{{"command", "true"}, {"gpus", 1}, {"time_limit_s", 600}, {"hold", server.tls}}.dump();
  const auto t0 = Clock::now();
  for (int k = 0; k < max_jobs && !stop && Seconds(Clock::now() - t0) < max_s; ++k) {
    std::this_thread::sleep_until(t0 + After(k / kSubmitRate));
    const auto sent = Clock::now();
    auto r = c->Post("/v1/jobs", spec);
    out.ms.push_back(Ms(Clock::now() - sent));
    if (r.ok() && r->status == 201)
      out.jobs.push_back({Json::parse(r->body)["jobs"][0].get<uint64_t>(), sent});
    else if (out.failed++ == 0)
      out.first_failure = Failure(r);
  }
  return out;
}

void PrintSubmitted(const char* what, Submitted sub) {
  const Latency l = Percentiles(sub.ms);
  std::printf(
      "  %s: %zu one-GPU jobs at %.0f/s (%d failed): submit p50 %.1f ms p99 %.1f ms max "
      "%.1f ms\n",
      what, sub.jobs.size(), kSubmitRate, sub.failed, l.p50_ms, l.p99_ms, l.max_ms);
  if (sub.failed > 0) std::printf("  first failed submission: %s\n", sub.first_failure.c_str());
}

// Every node registers over `connections` connections, for at most
// kPhaseLimitS; prints what it took.
int RegisterAll(Fleet& fleet, const Server& server, int connections, const char* what) {
  std::atomic<int> next{0}, registered{0}, failed{0}, retried{0};
  std::mutex mu;
  std::vector<double> all_ms;
  std::string first_failure;
  const double cpu0 = server.child.CpuSeconds(), self0 = RusageCpuSeconds(RUSAGE_SELF);
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < connections; ++t) {
    threads.emplace_back([&] {
      auto shared = Connect(server.address, server.node);
      for (int i; Seconds(Clock::now() - t0) < kPhaseLimitS && (i = next++) < fleet.size();) {
        // Over TLS each node registers with its certificate, on its own connection.
        shoal::net::HttpClient& c =
            server.tls ? fleet.Own(i, server.address, server.node) : *shared;
        const std::string body = fleet.RegistrationBody(i);
        const auto sent = Clock::now();
        auto r = c.Post("/v1/nodes/register", body);
        if (!r.ok()) {  // as an agent: once more, on a new connection
          ++retried;
          c.CloseConnection();
          r = c.Post("/v1/nodes/register", body);
        }
        const double ms = Ms(Clock::now() - sent);
        const bool ok = r.ok() && r->status == 200;
        if (ok) {
          const Json a = Json::parse(r->body);
          if (a.contains("heartbeat_s")) fleet.server_interval_s = a["heartbeat_s"].get<double>();
          if (server.tls && fleet.node_sessions() && a.contains("node_session")) {
            FakeNode& f = fleet.node(i);
            f.session = a["node_session"].get<std::string>();
            f.session_due =
                sent + api::SessionDelay(f.name, shoal::DurationFromSeconds(fleet.Interval()));
          }
          fleet.node(i).registered = true;  // its sender may beat now, on its own connection
          ++registered;
        }
        std::lock_guard<std::mutex> lock(mu);
        all_ms.push_back(ms);
        if (!ok && failed++ == 0) first_failure = Failure(r);
      }
    });
  }
  for (std::thread& t : threads)
    t.join();
  const double s = Seconds(Clock::now() - t0);
  const int n = registered;
  if (n < fleet.size())
    std::printf("  %s did not finish: %d of %d registered in %.0f s\n", what, n, fleet.size(), s);
  const Latency l = Percentiles(all_ms);
  std::printf(
      "  %s: %d nodes in %.2f s (%.0f/s); server CPU %.2f ms per registration; latency "
      "p50 %.1f ms p99 %.1f ms max %.1f ms; generator CPU %.0f us each\n",
      what, n, s, n / s, (server.child.CpuSeconds() - cpu0) * 1e3 / std::max(1, n), l.p50_ms,
      l.p99_ms, l.max_ms, (RusageCpuSeconds(RUSAGE_SELF) - self0) * 1e6 / std::max(1, n));
  if (failed > 0) std::printf("  %d failed; first: %s\n", failed.load(), first_failure.c_str());
  if (retried > 0) std::printf("  %d sent again on a new connection\n", retried.load());
  return n;
}

// The nodes take the node sessions their registrations gave up, at the
// moments agents do (api::SessionDelay: spread over ten intervals); waits
// for all `expected` and prints what the server spent meanwhile, beats
// included.
void TakeSessions(Fleet& fleet, const Server& server, int expected) {
  const double cpu0 = server.child.CpuSeconds();
  (void)fleet.Take();
  const auto t0 = Clock::now();
  const double limit = (api::kSessionSpreadBeats + 2) * fleet.Interval() + 10;
  while (fleet.sessions_taken() < expected && Seconds(Clock::now() - t0) < limit)
    std::this_thread::sleep_for(milliseconds(50));
  const double s = Seconds(Clock::now() - t0), cpu = server.child.CpuSeconds() - cpu0;
  const BeatStats beats = fleet.Take();
  std::printf(
      "  node sessions: %d of %d nodes took theirs up in %.1f s (%.0f/s); server CPU %.1f %% of "
      "one core meanwhile, with %llu beats (%.0f/s)\n",
      fleet.sessions_taken(), expected, s, fleet.sessions_taken() / s, 100 * cpu / s, beats.sent,
      beats.sent / s);
}

// Heartbeats, server CPU and our CPU over a window of the fleet's beating.
struct Window {
  const Fleet& fleet;
  const Server& server;
  int beating;  // nodes
  Clock::time_point t0 = Clock::now();
  double server0 = server.child.CpuSeconds(), self0 = RusageCpuSeconds(RUSAGE_SELF);
  std::map<int, double> threads0 = ThreadCpu(server.child.pid());

  void Print(const char* indent, BeatStats b) const {
    const double s = Seconds(Clock::now() - t0), n = std::max<double>(1, b.sent);
    const double rate = static_cast<double>(b.sent) / s, target = beating / fleet.Interval();
    const double server_cpu = server.child.CpuSeconds() - server0;
    const double self = RusageCpuSeconds(RUSAGE_SELF) - self0;
    double busiest = 0;  // one server thread's CPU, in % of a core (the control loop's first)
    for (const auto& [tid, now] : ThreadCpu(server.child.pid()))
      busiest = std::max(busiest, (now - (threads0.count(tid) ? threads0.at(tid) : 0)) / s * 100);
    const Latency l = Percentiles(b.ms);
    std::printf(
        "%sheartbeats: %.0f/s achieved of %.0f/s offered (%llu in %.1f s, %llu of them "
        "extra beats for exits, %llu failed); latency p50 %.2f ms p99 %.2f ms max %.1f "
        "ms\n",
        indent, rate, target, b.sent, s, b.extra, b.failed, l.p50_ms, l.p99_ms, l.max_ms);
    std::printf(
        "%sserver CPU %.0f us per heartbeat, %.1f %% of one core (busiest thread %.1f "
        "%%); generator (this process) CPU %.1f %% of one core, %.0f us per beat\n",
        indent, server_cpu * 1e6 / n, server_cpu / s * 100, busiest, self / s * 100,
        self * 1e6 / n);
    if (rate < 0.95 * target) {
      std::printf("%sDID NOT KEEP UP: %.0f of %.0f beats/s (up to %.1f s behind schedule): %s\n",
                  indent, rate, target, b.max_lag_s,
                  busiest > 90 ? "one server thread used a whole core"
                  : (server_cpu + self) / s > 0.75 * std::thread::hardware_concurrency()
                      ? "server and generator kept this machine's cores mostly busy"
                  : self / s > 0.8 ? "the generator itself was busy (see its CPU)"
                                   : "the answers' latency was the limit (connections / latency)");
    }
    if (b.failed > 0)
      std::printf("%sfirst failed heartbeat: %s\n", indent, b.first_failure.c_str());
  }
};

// Phase 3: one user's jobs while the fleet beats; then how they ended.
void ControlLoop(Fleet& fleet, const Server& server, int beating) {
  fleet.Take();
  const Window w{fleet, server, beating};
  std::atomic<bool> never{false};
  const Submitted sub = SubmitJobs(server, static_cast<int>(kSubmitRate * kSubmitSeconds),
                                   kSubmitSeconds + 30, never);
  if (server.tls) {  // held jobs: nothing launches
    PrintSubmitted("control loop while the fleet beats (held jobs)", sub);
    w.Print("  meanwhile ", fleet.Take());
    return;
  }
  auto admin = Connect(server.address, server.admin);
  const auto waited = Clock::now();
  size_t active = 0;
  do {
    std::this_thread::sleep_for(milliseconds(500));
    auto r = admin->Get("/v1/jobs?all=1");  // the jobs not yet ended
    active = r.ok() && r->status == 200 ? Json::parse(r->body)["jobs"].size() : 1;
  } while (active > 0 && Seconds(Clock::now() - waited) < 60);
  const double drained_s = Seconds(Clock::now() - waited);
  int completed = 0, other = 0;
  if (auto h = admin->Get("/v1/history?all=1&limit=10000"); h.ok() && h->status == 200) {
    const Json history = Json::parse(h->body);
    for (const Json& j : history["jobs"])
      ++(j["state"] == "completed" ? completed : other);
  }
  const auto launches = fleet.Launches();
  std::vector<double> to_launch;
  for (const auto& [id, sent] : sub.jobs) {
    if (auto it = launches.find(id); it != launches.end())
      to_launch.push_back(Ms(it->second - sent));
  }
  PrintSubmitted("control loop while the fleet beats", sub);
  const Latency l = Percentiles(to_launch);
  std::printf(
      "  submit -> launch order at the node: p50 %.1f ms p99 %.1f ms max %.1f ms (%zu "
      "launched); %d completed, %d ended otherwise, %zu still active %.1f s after the "
      "last submission (each runs %.0f s)\n",
      l.p50_ms, l.p99_ms, l.max_ms, to_launch.size(), completed, other, active, drained_s,
      kStepSeconds);
  w.Print("  meanwhile ", fleet.Take());
}

// When each node was first seen in `state` (polling every 100 ms), for at
// most `limit` s; time_point::max() for those never seen so.
std::vector<Clock::time_point> UntilState(shoal::net::HttpClient& admin,
                                          const std::vector<FakeNode*>& nodes,
                                          const std::string& state, double limit) {
  const auto t0 = Clock::now();
  std::vector<Clock::time_point> seen(nodes.size(), Clock::time_point::max());
  size_t left = nodes.size();
  while (left > 0 && Seconds(Clock::now() - t0) < limit) {
    for (size_t k = 0; k < nodes.size(); ++k) {
      if (seen[k] != Clock::time_point::max()) continue;
      auto r = admin.Get("/v1/nodes/" + nodes[k]->name);
      if (!r.ok() || r->status != 200 || Json::parse(r->body).value("state", "") != state) continue;
      seen[k] = Clock::now();
      --left;
    }
    if (left > 0) std::this_thread::sleep_for(milliseconds(100));
  }
  return seen;
}

// Phase 4: kLostNodes nodes fall silent, then beat again.
void LostNodes(Fleet& fleet, const Server& server, int timeout_s) {
  auto admin = Connect(server.address, server.admin);
  std::vector<FakeNode*> lost;
  for (int k = 0; k < kLostNodes; ++k) {
    if (FakeNode& f = fleet.node(k * fleet.size() / kLostNodes); f.registered) lost.push_back(&f);
  }
  const auto silent = Clock::now();
  for (FakeNode* f : lost)
    f->silent = true;
  const auto down = UntilState(*admin, lost, "down", timeout_s + 60.0);
  double after_last_min = 1e9, after_last_max = 0;  // from each one's last heartbeat
  for (size_t k = 0; k < lost.size() && down[k] != Clock::time_point::max(); ++k) {
    const double s = Seconds(down[k] - lost[k]->last_ok.load());
    after_last_min = std::min(after_last_min, s), after_last_max = std::max(after_last_max, s);
  }
  const auto resumed = Clock::now();
  for (FakeNode* f : lost)
    f->silent = false;
  const auto up = UntilState(*admin, lost, "up", 60);
  // Seconds from `from` until the last of them was seen; -1: not all were.
  auto until = [](const std::vector<Clock::time_point>& seen, Clock::time_point from) {
    const auto last = *std::max_element(seen.begin(), seen.end());
    return last == Clock::time_point::max() ? -1.0 : Seconds(last - from);
  };
  const double all_down = until(down, silent), all_up = until(up, resumed);
  std::printf(
      "  lost nodes: %zu fell silent (node timeout %d s): all down %.1f s later, %.1f-%.1f "
      "s after their last heartbeat; all up %.1f s after beating again%s\n",
      lost.size(), timeout_s, all_down, after_last_min, after_last_max, all_up,
      all_down < 0 || all_up < 0
          ? (" (-1: not all of them within " + std::to_string(timeout_s + 60) + " s / 60 s)")
                .c_str()
          : "");
}

// Phase 5: the server's memory and its answers about the fleet (median of 3).
void Footprint(const Server& server) {
  auto admin = Connect(server.address, server.admin);
  const std::vector<std::string> paths = {"/v1/nodes", "/v1/nodes?limit=100",
                                          "/v1/nodes?state=down&limit=100", "/v1/nodes?summary=1",
                                          "/metrics"};
  std::vector<std::vector<double>> ms(paths.size());
  std::vector<std::string> body(paths.size());
  for (int round = 0; round < 3; ++round) {
    for (size_t k = 0; k < paths.size(); ++k) {
      const auto t0 = Clock::now();
      auto r = admin->Get(paths[k]);
      ms[k].push_back(Ms(Clock::now() - t0));
      if (!r.ok() || r->status != 200) Die("GET " + paths[k] + " failed: " + Failure(r));
      body[k] = std::move(r->body);
    }
  }
  std::printf("  server RSS %.1f MiB; GET (median of 3):", server.child.RssMib());
  for (size_t k = 0; k < paths.size(); ++k)
    std::printf(" %s %.1f ms (%.2f MB);", paths[k].c_str(), Percentiles(ms[k]).p50_ms,
                body[k].size() / 1e6);
  std::printf(" /metrics has %ld lines\n",
              std::count(body.back().begin(), body.back().end(), '\n'));
  if (auto st = admin->Get("/v1/stats"); st.ok() && st->status == 200) {
    const Json j = Json::parse(st->body);
    // The time passes spent rebuilding the scheduler's inventory, all of it
    // while the fleet joined (a node that joins or changes marks the layout
    // changed; the next pass rebuilds it once for all of them).
    const std::string& metrics = body.back();
    const std::string series = "shoal_scheduling_phase_seconds_total{phase=\"inventory\"} ";
    const size_t at = metrics.find(series);
    const double inventory_s =
        at == std::string::npos ? -1 : std::atof(metrics.c_str() + at + series.size());
    std::printf(
        "  scheduling passes: %llu, last %.1f ms, mean %.1f ms; %.2f s of them rebuilding the "
        "inventory\n",
        j.value("passes", 0ull), j.value("last_pass_ms", 0.0), j.value("mean_pass_ms", 0.0),
        inventory_s);
  }
}

// Phase 6: SIGTERM, start again on the same state, every node registers
// again while one user submits.
void Restart(Fleet& fleet, Server& server, int connections) {
  const double stop_ms = server.Stop(), start_ms = server.Start();
  std::printf(
      "  restart: SIGTERM -> exited %.0f ms; serving again after %.0f ms (%.1f MiB, "
      "state loaded)\n",
      stop_ms, start_ms, server.child.RssMib());
  // Each node's client keeps its TLS context and session, as an agent's
  // does: its next request finds its connection closed and opens another
  // (resuming the session when the server kept its ticket keys).
  for (int i = 0; i < fleet.size(); ++i)
    fleet.node(i).registered = false;
  std::atomic<bool> done{false};
  Submitted sub;
  std::thread submitter([&] { sub = SubmitJobs(server, 1 << 30, kPhaseLimitS, done); });
  RegisterAll(fleet, server, connections, "re-registration");
  done = true;
  submitter.join();
  PrintSubmitted("meanwhile", sub);
}

// One fleet size against a fresh server.
void RunFleet(const Options& o, int n) {
  char tmpl[] = "/tmp/shoal-fleet-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) Die("mkdtemp");
  const std::string dir = tmpl;
  {
    Server server;
    server.shoal = o.shoal, server.dir = dir + "/state", server.timeout_s = o.node_timeout_s;
    server.tls = o.tls;
    server.Start();
    ca_file = o.tls ? server.dir + "/tls/ca.crt" : "";
    Fleet fleet(o, n);
    if (o.tls) fleet.IssueCertificates(server.dir, dir + "/certs");
    std::printf(
        "\n== %d nodes x %d GPUs: server %s on %s (%s, SQLite in %s, node timeout %d s), %d "
        "sender threads; heartbeats on %s\n",
        n, o.gpus, o.shoal.c_str(), server.address.c_str(), o.tls ? "TLS" : "plain HTTP",
        dir.c_str(), o.node_timeout_s, o.connections,
        o.beat_connections == "node"   ? "a kept connection per node"
        : o.beat_connections == "beat" ? "a new connection per beat"
                                       : "one kept connection per sender thread");
    // Nodes beat from their registration on, as agents do: waiting for the
    // whole fleet, the first ones would pass the node timeout while 10,000
    // register over TLS, and come back up (a write and a pass each) in the
    // heartbeat phase.
    if (o.tls) {  // not in the registration's time: an agent loads its key before it registers
      const auto t0 = Clock::now();
      fleet.MakeClients(server.address, server.node);
      std::printf("  %d nodes loaded their keys and certificates in %.2f s\n", n,
                  Seconds(Clock::now() - t0));
    }
    fleet.StartBeating(server.address, server.node);
    const int beating = RegisterAll(fleet, server, o.connections, "registration");
    if (o.tls && o.node_sessions) TakeSessions(fleet, server, beating);
    std::printf(
        "  beating: the server asks for a beat every %.2f s, --interval %.2f s%s: each "
        "node beats every %.2f s\n",
        fleet.server_interval_s.load(), o.interval, o.fixed_interval ? " (fixed)" : "",
        fleet.Interval());
    fleet.Take();  // the beats while the fleet registered are not this phase's
    const Window w{fleet, server, beating};
    std::this_thread::sleep_for(After(o.heartbeat_seconds));
    w.Print("  ", fleet.Take());
    ControlLoop(fleet, server, beating);
    LostNodes(fleet, server, o.node_timeout_s);
    Footprint(server);
    fleet.StopBeating();
    Restart(fleet, server, o.connections);
    server.Stop();
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const std::map<std::string, std::function<void(const char*)>> flags = {
      {"--shoal", [&](const char* v) { o.shoal = v; }},
      {"--nodes",
       [&](const char* v) {
         o.sizes.clear();
         std::stringstream in(v);
         for (std::string part; std::getline(in, part, ',');)
           o.sizes.push_back(std::atoi(part.c_str()));
       }},
      {"--heartbeat-seconds", [&](const char* v) { o.heartbeat_seconds = std::atof(v); }},
      {"--interval", [&](const char* v) { o.interval = std::atof(v); }},
      {"--connections", [&](const char* v) { o.connections = std::atoi(v); }},
      {"--gpus", [&](const char* v) { o.gpus = std::atoi(v); }},
      {"--node-timeout", [&](const char* v) { o.node_timeout_s = std::atoi(v); }},
      {"--beat-connections", [&](const char* v) { o.beat_connections = v; }}};
  for (int i = 1; i < argc; ++i) {
    auto it = flags.find(argv[i]);
    if (std::string(argv[i]) == "--fixed-interval")
      o.fixed_interval = true;
    else if (std::string(argv[i]) == "--tls")
      o.tls = true;
    else if (std::string(argv[i]) == "--no-node-sessions")
      o.node_sessions = false;
    else if (it == flags.end() || i + 1 >= argc)
      Die(std::string("unknown flag or missing value: ") + argv[i]);
    else
      it->second(argv[++i]);
  }
  bool sizes_ok = !o.sizes.empty();
  for (int n : o.sizes)
    sizes_ok = sizes_ok && n >= kLostNodes && n <= 100000;
  if (o.shoal.empty() || !sizes_ok || o.heartbeat_seconds <= 0 || o.heartbeat_seconds > 600 ||
      o.interval <= 0 || o.interval > 60 || o.connections < 1 || o.connections > 256 ||
      o.gpus < 1 || o.gpus > shoal::kMaxGpusPerNode || o.node_timeout_s < 1 ||
      (o.beat_connections != "node" && o.beat_connections != "beat" &&
       o.beat_connections != "sender")) {
    Die("usage: fleet_bench --shoal PATH [--nodes N,N,... (10-100000)] [--heartbeat-seconds S] "
        "[--interval S] [--connections N] [--gpus N] [--node-timeout S] [--fixed-interval] "
        "[--tls] [--no-node-sessions] [--beat-connections node|beat|sender]");
  }
  ::signal(SIGPIPE, SIG_IGN);
  shoal::net::RaiseOpenFileLimit();  // the server's order connections to the fleet's listener
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  for (int n : o.sizes)
    RunFleet(o, n);
  return 0;
}
