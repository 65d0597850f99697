// The controller's GET /metrics at scale: a real `shoal server --memory` on
// loopback with --nodes fake nodes of --gpus GPUs each (1,000 x 8 by
// default), registered and heartbeating with telemetry over HTTP as agents
// do, the cluster filled with running 4-GPU jobs (so every GPU carries job
// labels). Then --scrapes scrapes, one at a time. Twice: with the default
// (aggregates and a few lines per node; the agents serve per-GPU series),
// then with --metrics-per-gpu (every GPU's dcgm-exporter series too), unless
// --default-only.
//
//   metrics_bench --shoal build/release/src/cli/shoal [--nodes 1000] [--gpus 8] [--scrapes 50]
//                 [--default-only]
//
// Prints bytes per scrape and p50/p99/max milliseconds per scrape, and the
// server's resident memory, for each. Everything stops by itself.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "child.h"
#include "net/http_client.h"

namespace {

using namespace shoal::acceptance;
using Json = nlohmann::json;

// `shoal server --memory` as a child, with its address and admin token.
struct ServerProcess {
  Child child;
  std::string address;
  std::string token;

  void Start(const std::string& shoal, const std::string& log, bool per_gpu) {
    std::vector<std::string> args = {shoal,      "server", "--memory", "--plain-http",
                                     "--socket", "none",   "--listen", "127.0.0.1:0"};
    if (per_gpu) args.push_back("--metrics-per-gpu");
    const std::string line = child.Start(args, log, "admin token: ");
    address = AddressIn(child.Log());
    token = line.substr(line.find("admin token: ") + 13);
  }
  // SIGKILL: the state is in memory only; nothing to stop cleanly.
  void Stop() { child.Stop(SIGKILL); }
  double RssMib() const { return child.RssMib(); }
};

std::unique_ptr<shoal::net::HttpClient> Connect(const std::string& address,
                                                const std::string& token) {
  auto c = shoal::net::HttpClient::Connect(address, {.token = token, .read_timeout_ms = 120000});
  if (!c.ok()) Die(c.status().ToString());
  return std::move(*c);
}

// Runs fn(client, i) for i in [0, count) on `threads` connections.
template <typename F>
void Parallel(const ServerProcess& s, int count, int threads, F fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto client = Connect(s.address, s.token);
      for (int i; (i = next.fetch_add(1)) < count;)
        fn(*client, i);
    });
  }
  for (auto& t : pool)
    t.join();
}

std::string NodeName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "gpu%04d", i);
  return buf;
}

Json Telemetry(int index, int node) {
  const double util = (node * 7 + index * 13) % 100;
  return {{"index", index},
          {"healthy", true},
          {"util", util},
          {"mem_copy_util", util / 2},
          {"fb_used_mib", 30000 + index * 1000},
          {"fb_free_mib", 51920 - index * 1000},
          {"power_w", 300 + util * 4},
          {"temp_c", 40 + util / 3},
          {"sm_clock_mhz", 1980},
          {"energy_j", 1.0e6 + node * 100.0},
          {"ecc_corrected", 0},
          {"ecc_uncorrected", 0},
          {"xid_errors", 0},
          {"last_xid", 0},
          {"clock_events", 0}};
}

// Registers the nodes, fills them with running jobs and sends one heartbeat
// with telemetry from each, over HTTP as agents and users would.
void Fill(const ServerProcess& server, int nodes, int gpus) {
  const int threads = 8;
  auto t0 = Clock::now();
  Parallel(server, nodes, threads, [&](shoal::net::HttpClient& c, int i) {
    Json g = Json::array();
    for (int k = 0; k < gpus; ++k) {
      g.push_back({{"index", k},
                   {"uuid", "GPU-" + std::to_string(i) + "-" + std::to_string(k)},
                   {"model", "H100-SXM-80GB"},
                   {"memory_mib", 81920},
                   {"nvlink_island", 0},
                   {"numa_node", k / 4}});
    }
    const Json body = {{"name", NodeName(i)},
                       {"address", "127.0.0.1:1"},
                       {"cpus", 224},
                       {"memory_mib", 2097152},
                       {"gpus", g}};
    auto r = c.Post("/v1/nodes/register", body.dump());
    if (!r.ok() || r->status != 200) Die("register failed");
  });
  std::printf("registered %d nodes x %d GPUs in %.0f ms\n", nodes, gpus, Ms(Clock::now() - t0));

  // Fill the cluster with 4-GPU jobs (their launches go nowhere; the
  // heartbeats below report them running).
  t0 = Clock::now();
  const int per_job = std::min(4, gpus);
  const int jobs = nodes * (gpus / per_job);
  Parallel(server, jobs, threads, [&](shoal::net::HttpClient& c, int) {
    auto r =
        c.Post("/v1/jobs", R"({"command":"python3 train.py","gpus":)" + std::to_string(per_job) +
                               R"(,"time_limit_s":3600,"account":""})");
    if (!r.ok() || r->status != 201) Die("submit failed");
  });
  auto admin = Connect(server.address, server.token);
  Json node_list;
  for (int tries = 0;; ++tries) {
    auto r = admin->Get("/v1/nodes");
    if (!r.ok() || r->status != 200) Die("GET /v1/nodes failed");
    node_list = Json::parse(r->body)["nodes"];
    int used = 0;
    for (const Json& n : node_list)
      used += n["gpus_used"].get<int>();
    if (used >= jobs * per_job || tries > 200) {
      std::printf("%d jobs submitted and running on %d GPUs in %.0f ms\n", jobs, used,
                  Ms(Clock::now() - t0));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // One heartbeat per node with telemetry and the jobs it runs.
  t0 = Clock::now();
  Parallel(server, nodes, threads, [&](shoal::net::HttpClient& c, int i) {
    const Json& n = node_list[static_cast<size_t>(i)];
    Json running = Json::array();
    for (const Json& j : n["jobs"])
      running.push_back({{"job", j["job"]}, {"epoch", 1}});
    Json g = Json::array();
    for (int k = 0; k < gpus; ++k)
      g.push_back(Telemetry(k, i));
    const Json body = {{"running", running}, {"events", Json::array()}, {"gpus", g}};
    auto r = c.Post("/v1/nodes/" + n["name"].get<std::string>() + "/heartbeat", body.dump());
    if (!r.ok() || r->status != 200) Die("heartbeat failed");
  });
  std::printf("heartbeats with telemetry from %d nodes in %.0f ms\n", nodes, Ms(Clock::now() - t0));
}

// `scrapes` scrapes one at a time, and what they cost.
void Scrape(const ServerProcess& server, int scrapes, bool per_gpu, int total_gpus) {
  auto admin = Connect(server.address, server.token);
  std::vector<double> ms;
  size_t bytes = 0;
  for (int i = 0; i < scrapes; ++i) {
    const auto s0 = Clock::now();
    auto r = admin->Get("/metrics");
    ms.push_back(Ms(Clock::now() - s0));
    if (!r.ok() || r->status != 200) Die("scrape failed");
    bytes = r->body.size();
    if (i > 0) continue;
    if (r->body.find("shoal_node_state{") == std::string::npos) Die("no node states in the scrape");
    const bool dcgm = r->body.find("DCGM_FI_DEV_GPU_UTIL{") != std::string::npos;
    if (dcgm != per_gpu) Die(per_gpu ? "no per-GPU series" : "per-GPU series by default");
    if (per_gpu && r->body.find(",hpc_job=") == std::string::npos) Die("no GPU job labels");
  }
  const Latency l = Percentiles(ms);
  std::printf(
      "GET /metrics (%s) with %d GPUs: %zu bytes (%.2f MiB) per scrape; p50 %.1f ms, p99 %.1f ms, "
      "max %.1f ms over %d scrapes\n",
      per_gpu ? "--metrics-per-gpu" : "default", total_gpus, bytes,
      static_cast<double>(bytes) / (1 << 20), l.p50_ms, l.p99_ms, l.max_ms, scrapes);
  std::printf("server resident memory: %.0f MiB\n", server.RssMib());
}

}  // namespace

int main(int argc, char** argv) {
  const char* kUsage =
      "usage: metrics_bench --shoal PATH [--nodes N] [--gpus G] [--scrapes S] [--default-only]";
  std::string shoal;
  int nodes = 1000, gpus = 8, scrapes = 50;
  bool default_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] {
      return i + 1 < argc ? std::string(argv[++i]) : (Die(a + " needs a value"), std::string());
    };
    if (a == "--shoal") {
      shoal = next();
    } else if (a == "--nodes") {
      nodes = std::atoi(next().c_str());
    } else if (a == "--gpus") {
      gpus = std::atoi(next().c_str());
    } else if (a == "--scrapes") {
      scrapes = std::atoi(next().c_str());
    } else if (a == "--default-only") {
      default_only = true;
    } else {
      Die(kUsage);
    }
  }
  if (shoal.empty() || nodes < 1 || gpus < 1 || gpus > 64 || scrapes < 1) Die(kUsage);
  char log[] = "/tmp/shoal-metrics-bench-XXXXXX";
  const int fd = ::mkstemp(log);
  if (fd < 0) Die("mkstemp");
  ::close(fd);
  for (const bool per_gpu : {false, true}) {
    if (per_gpu && default_only) break;
    ServerProcess server;
    server.Start(shoal, log, per_gpu);
    Fill(server, nodes, gpus);
    Scrape(server, scrapes, per_gpu, nodes * gpus);
    server.Stop();
  }
  ::unlink(log);
  return 0;
}
