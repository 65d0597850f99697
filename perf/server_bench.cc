// The controller under load, as users see it: a real `shoal server` process
// with durable state (SQLite, full sync) on loopback, driven over HTTP/1.1
// keep-alive connections.
//
//   server_bench --shoal build/release/src/cli/shoal [--jobs 100000] [--users 100]
//                [--compare-only] [--rounds 3]
//   server_bench --shoal ... --postgres CONNINFO [--rounds 3]
//     (perf/postgres-vs-sqlite.sh starts a PostgreSQL of its own for it)
//
// Prints:
//  - durable submissions per second with 1, 4 and 16 connections (each
//    acknowledged submission is committed to disk first), over TLS (the
//    default) and over plain HTTP on loopback, side by side (all that
//    --compare-only measures), the median of --rounds rounds;
//  - with --jobs jobs in the system: where an idle scheduling pass over them
//    spends its time (gathering them, Schedule, applying the plan); p50/p99
//    latency of a submission, of one user's queue and of the whole queue
//    (admin), one request at a time;
//  - the server's resident memory, empty and with --jobs jobs;
//  - how long a restart takes to load them back.
// With --postgres: durable submissions with SQLite and with PostgreSQL, side
// by side (ComparePostgres), and nothing else.
// No node is registered: jobs stay pending, and each scheduling pass screens
// all of them. Everything runs on 127.0.0.1 and stops by itself.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

// A `shoal server` child process on a free loopback port, state in
// `state_dir`: TLS (the default) or plain HTTP.
class ServerProcess {
 public:
  ServerProcess(std::string shoal, std::string state_dir, bool tls, std::string postgres = "")
      : shoal_(std::move(shoal)),
        state_dir_(std::move(state_dir)),
        tls_(tls),
        postgres_(std::move(postgres)) {}

  // Returns how long it took to serve (it has loaded its state by then).
  double Start() {
    const auto t0 = Clock::now();
    std::vector<std::string> argv = {shoal_,     "server",   "--state-dir",
                                     state_dir_, "--listen", "127.0.0.1:0"};
    if (!tls_) argv.push_back("--plain-http");
    if (!postgres_.empty()) argv.insert(argv.end(), {"--postgres", postgres_});
    address_ = std::string(tls_ ? "https://" : "http://") +
               AddressIn(child_.Start(argv, state_dir_ + ".log", "listening on"));
    return Ms(Clock::now() - t0);
  }
  // How a client reaches it.
  shoal::net::ClientOptions Options(const std::string& token) const {
    shoal::net::ClientOptions o{.token = token, .read_timeout_ms = 120000};
    if (tls_) o.tls = shoal::net::TlsClientOptions{.ca_file = state_dir_ + "/tls/ca.crt"};
    return o;
  }
  void Stop() { child_.Stop(); }
  double RssMib() const { return child_.RssMib(); }
  double CpuSeconds() const { return child_.CpuSeconds(); }
  const std::string& address() const { return address_; }

 private:
  std::string shoal_;
  std::string state_dir_;
  bool tls_;
  std::string postgres_;
  std::string address_;
  Child child_;
};

std::unique_ptr<shoal::net::HttpClient> Connect(const ServerProcess& server,
                                                const std::string& token) {
  auto c = shoal::net::HttpClient::Connect(server.address(), server.Options(token));
  if (!c.ok()) Die(c.status().ToString());
  return std::move(*c);
}

// One token per user, made with the admin's.
std::vector<std::string> UserTokens(const ServerProcess& server, const std::string& dir,
                                    int users) {
  std::string admin;
  std::ifstream(dir + "/admin.token") >> admin;
  auto admin_client = Connect(server, admin);
  std::vector<std::string> tokens;
  for (int u = 0; u < users; ++u) {
    auto r = admin_client->Post(
        "/v1/tokens", Json{{"user", "user" + std::to_string(u)}, {"role", "user"}}.dump());
    if (!r.ok() || r->status != 201) Die("cannot create a token");
    tokens.push_back(Json::parse(r->body)["token"].get<std::string>());
  }
  return tokens;
}

const std::string kJob =
    R"({"command":"python3 train.py --epochs 10","gpus":1,"time_limit_s":3600})";

// Sends `count` POSTs of `body` to `path` (each submitting `jobs_each`
// jobs) over `connections` connections, spreading them over the users'
// tokens; returns the jobs submitted per second.
double FloodRequests(const ServerProcess& server, const std::vector<std::string>& tokens, int count,
                     int connections, const std::string& path, const std::string& body,
                     int jobs_each) {
  std::atomic<int> next{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int t = 0; t < connections; ++t) {
    threads.emplace_back([&] {
      auto client = Connect(server, tokens[0]);
      for (int i; (i = next.fetch_add(1)) < count;) {
        client->set_token(tokens[static_cast<size_t>(i) % tokens.size()]);
        auto r = client->Post(path, body);
        if (!r.ok() || r->status != 201) {
          if (failed.fetch_add(1) == 0) {
            std::fprintf(stderr, "first failure: %s\n",
                         r.ok() ? (std::to_string(r->status) + " " + r->body).c_str()
                                : r.status().ToString().c_str());
          }
        }
      }
    });
  }
  for (auto& t : threads)
    t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (failed > 0) Die(std::to_string(failed.load()) + " submissions failed");
  return static_cast<double>(count) * jobs_each / seconds;
}

// One job per request (POST /v1/jobs).
double Flood(const ServerProcess& server, const std::vector<std::string>& tokens, int count,
             int connections) {
  return FloodRequests(server, tokens, count, connections, "/v1/jobs", kJob, 1);
}

// POST /v1/jobs/batch: `batches` requests of `per_batch` jobs each.
double FloodBatches(const ServerProcess& server, const std::string& token, int batches,
                    int per_batch, int connections) {
  Json list = Json::array();
  for (int i = 0; i < per_batch; ++i)
    list.push_back(Json::parse(kJob));
  return FloodRequests(server, {token}, batches, connections, "/v1/jobs/batch",
                       Json{{"jobs", list}}.dump(), per_batch);
}

// The server's resident memory after 2,000 single jobs and after one array
// of 2,000 tasks, each server fresh: jobs with an environment of 60
// variables (about 4 KB), as `shoal submit` sends one.
void ArrayMemory(const std::string& shoal, const std::string& dir) {
  constexpr int kTasks = 2000;
  Json spec = Json::parse(kJob);
  for (int i = 0; i < 60; ++i)
    spec["env"]["VARIABLE_" + std::to_string(i)] = std::string(56, static_cast<char>('a' + i % 26));
  Json array = spec;
  array["array"] = "0-" + std::to_string(kTasks - 1);
  double rss[2] = {0, 0};
  for (int arrays = 0; arrays < 2; ++arrays) {
    const std::string state = dir + (arrays ? "-array" : "-single");
    ServerProcess server(shoal, state, /*tls=*/false);
    server.Start();
    std::string admin;
    std::ifstream(state + "/admin.token") >> admin;
    auto c = Connect(server, admin);
    for (int i = 0; i < (arrays ? 1 : kTasks); ++i) {
      auto r = c->Post("/v1/jobs", (arrays ? array : spec).dump());
      if (!r.ok() || r->status != 201) Die("a submission failed");
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));  // a scheduling pass over them
    rss[arrays] = server.RssMib();
    c.reset();
    server.Stop();
    std::filesystem::remove_all(state);
    std::filesystem::remove(state + ".log");
  }
  std::printf(
      "server resident memory with %d pending jobs: %.1f MiB as single jobs, %.1f MiB as "
      "one array (%.2fx)\n",
      kTasks, rss[0], rss[1], rss[1] / rss[0]);
}

// The middle of `v` (of an odd count; the upper middle of an even one).
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Durable submissions with SQLite and with PostgreSQL (the database at
// `postgres`, emptied by the caller), both over plain HTTP, rounds
// alternating which goes first; one job per request and batches of 100.
void ComparePostgres(const std::string& shoal, const std::string& dir, const std::string& postgres,
                     int rounds) {
  ServerProcess sqlite(shoal, dir + "-sqlite", /*tls=*/false);
  ServerProcess pg(shoal, dir + "-postgres", /*tls=*/false, postgres);
  sqlite.Start();
  pg.Start();
  const std::vector<std::string> sqlite_tokens = UserTokens(sqlite, dir + "-sqlite", 16);
  const std::vector<std::string> pg_tokens = UserTokens(pg, dir + "-postgres", 16);
  std::printf(
      "durable submissions, SQLite (WAL, synchronous=FULL) against PostgreSQL (synchronous_commit "
      "on), plain HTTP on loopback, in this run:\n");
  for (int connections : {1, 4, 16}) {
    const int n = connections == 1 ? 1000 : 4000;
    std::vector<double> a, b, a_cpu, b_cpu;
    auto flood = [&](const ServerProcess& s, const std::vector<std::string>& t,
                     std::vector<double>& rates, std::vector<double>& cpu) {
      const double cpu0 = s.CpuSeconds();
      rates.push_back(Flood(s, t, n, connections));
      cpu.push_back((s.CpuSeconds() - cpu0) * 1e6 / n);
    };
    for (int round = 0; round < rounds; ++round) {
      if (round % 2 == 0) flood(sqlite, sqlite_tokens, a, a_cpu);
      flood(pg, pg_tokens, b, b_cpu);
      if (round % 2 == 1) flood(sqlite, sqlite_tokens, a, a_cpu);
    }
    std::printf(
        "  %2d connection%s  SQLite %6.0f/s (server %4.0f us CPU each)   PostgreSQL %6.0f/s "
        "(%4.0f us)   PostgreSQL/SQLite %.2f  (median of %d x %d)\n",
        connections, connections == 1 ? " " : "s", Median(a), Median(a_cpu), Median(b),
        Median(b_cpu), Median(b) / Median(a), rounds, n);
  }
  std::string admin_sqlite, admin_pg;
  std::ifstream(dir + "-sqlite/admin.token") >> admin_sqlite;
  std::ifstream(dir + "-postgres/admin.token") >> admin_pg;
  std::vector<double> a, b;
  for (int round = 0; round < rounds; ++round) {
    a.push_back(FloodBatches(sqlite, admin_sqlite, 100, 100, 4));
    b.push_back(FloodBatches(pg, admin_pg, 100, 100, 4));
  }
  std::printf(
      "  batches of 100 jobs, 4 connections: SQLite %6.0f jobs/s   PostgreSQL %6.0f jobs/s   "
      "PostgreSQL/SQLite %.2f\n",
      Median(a), Median(b), Median(b) / Median(a));
  sqlite.Stop();
  pg.Stop();
  for (const char* s : {"-sqlite", "-postgres"}) {
    std::filesystem::remove_all(dir + s);
    std::filesystem::remove(dir + s + ".log");
  }
}

struct Measured {
  Latency latency;
  size_t bytes = 0;
};

template <typename F>
Measured Measure(int n, F&& request) {
  std::vector<double> ms;
  Measured m;
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    m.bytes = request();
    ms.push_back(Ms(Clock::now() - t0));
  }
  m.latency = Percentiles(ms);
  return m;
}

}  // namespace

// Where a scheduling pass over a queue that stays the same spends its
// time (the server's shoal_scheduling_phase_seconds_total), per pass, over
// the idle passes of `seconds` of quiet: the live figure to set beside
// sched_bench's offline one.
void PassPhases(shoal::net::HttpClient& admin, int seconds) {
  auto read = [&](std::vector<double>& phases) -> double {
    phases.clear();
    auto m = admin.Get("/metrics");
    auto st = admin.Get("/v1/stats");
    if (!m.ok() || m->status != 200 || !st.ok() || st->status != 200) Die("metrics failed");
    for (const char* phase : {"inventory", "snapshot", "schedule", "apply"}) {
      const std::string key =
          std::string("shoal_scheduling_phase_seconds_total{phase=\"") + phase + "\"} ";
      const size_t at = m->body.find(key);
      phases.push_back(at == std::string::npos ? 0 : std::atof(m->body.c_str() + at + key.size()));
    }
    return static_cast<double>(Json::parse(st->body)["passes"].get<unsigned long long>());
  };
  std::vector<double> before, after;
  const double passes0 = read(before);
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const double passes = read(after) - passes0;
  if (passes < 1) return;
  std::printf("  a pass over the same queue, over %.0f idle passes:", passes);
  const char* names[] = {"inventory", "snapshot", "schedule", "apply"};
  double total = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    const double ms = (after[i] - before[i]) * 1000 / passes;
    total += ms;
    std::printf(" %s %.1f ms,", names[i], ms);
  }
  std::printf(" in all %.1f ms\n", total);
}

int main(int argc, char** argv) {
  std::string shoal;
  int jobs = 100000;
  int users = 100;
  bool compare_only = false;
  bool array_memory_only = false;  // ArrayMemory alone
  std::string postgres;            // ComparePostgres alone, against this database
  int rounds = 3;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--compare-only") {
      compare_only = true;
      --i;  // a flag without a value
    } else if (flag == "--array-memory-only") {
      array_memory_only = true;
      --i;
    } else if (i + 1 >= argc) {
      Die("missing a value for " + flag);
    } else if (flag == "--shoal")
      shoal = argv[i + 1];
    else if (flag == "--jobs")
      jobs = std::atoi(argv[i + 1]);
    else if (flag == "--users")
      users = std::atoi(argv[i + 1]);
    else if (flag == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else if (flag == "--postgres")
      postgres = argv[i + 1];
    else
      Die("unknown flag " + flag);
  }
  // The comparison submits 9,000 jobs a round to the TLS server; --jobs fills it further.
  if (shoal.empty() || users < 1 || rounds < 1 || rounds > 25 ||
      (!compare_only && postgres.empty() && jobs < 9000 * rounds + 1000))
    Die("usage: server_bench --shoal PATH [--jobs N>9000 x rounds] [--users N] [--compare-only] "
        "[--array-memory-only] [--postgres CONNINFO] [--rounds 1-25]");
  ::signal(SIGPIPE, SIG_IGN);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // figures appear as they are measured

  char tmpl[] = "/tmp/shoal-server-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) Die("mkdtemp");
  const std::string dir = tmpl;
  if (!postgres.empty()) {
    ComparePostgres(shoal, dir, postgres, rounds);
    std::filesystem::remove_all(dir);
    return 0;
  }
  if (array_memory_only) {
    ArrayMemory(shoal, dir);
    std::filesystem::remove_all(dir);
    return 0;
  }
  const std::string plain_dir = dir + "-plain";
  ServerProcess server(shoal, dir, /*tls=*/true);
  ServerProcess plain(shoal, plain_dir, /*tls=*/false);
  server.Start();
  plain.Start();
  const double empty_rss = server.RssMib();
  std::string admin;
  std::ifstream(dir + "/admin.token") >> admin;
  auto admin_client = Connect(server, admin);
  const std::vector<std::string> tokens = UserTokens(server, dir, users);
  const std::vector<std::string> plain_tokens = UserTokens(plain, plain_dir, users);

  std::printf(
      "durable submissions over HTTP keep-alive (SQLite WAL, synchronous=FULL, group commit),\n"
      "TLS (the default) and plain HTTP on loopback, one after the other in this run:\n");
  // What TLS itself costs a request, without the work of a submission:
  // 20,000 GET /healthz on one kept-alive connection to each server.
  for (const ServerProcess* s : {&plain, &server}) {
    auto c = Connect(*s, "");
    constexpr int kProbes = 20000;
    const double server0 = s->CpuSeconds(), client0 = RusageCpuSeconds(RUSAGE_SELF);
    const auto t0 = Clock::now();
    for (int i = 0; i < kProbes; ++i) {
      if (auto r = c->Get("/healthz"); !r.ok() || r->status != 200) Die("healthz failed");
    }
    std::printf("  GET /healthz, %s: %6.0f/s, server %.1f us and client %.1f us of CPU each\n",
                s == &plain ? "plain" : "TLS  ", kProbes / (Ms(Clock::now() - t0) / 1000),
                (s->CpuSeconds() - server0) * 1e6 / kProbes,
                (RusageCpuSeconds(RUSAGE_SELF) - client0) * 1e6 / kProbes);
  }
  // Rounds of the two servers alternating (which goes first alternates too),
  // and the median of each: the machine's other load shifts from second to
  // second.
  int submitted = 0;
  for (int connections : {1, 4, 16}) {
    const int n = connections == 1 ? 1000 : 4000;
    std::vector<double> tls_rates, plain_rates, tls_cpu, plain_cpu;
    // CPU of the server and of this process (the clients) per submission.
    auto flood = [&](const ServerProcess& s, const std::vector<std::string>& t,
                     std::vector<double>& rates, std::vector<double>& cpu) {
      const double server0 = s.CpuSeconds(), client0 = RusageCpuSeconds(RUSAGE_SELF);
      rates.push_back(Flood(s, t, n, connections));
      cpu.push_back((s.CpuSeconds() - server0 + RusageCpuSeconds(RUSAGE_SELF) - client0) * 1e6 / n);
    };
    for (int round = 0; round < rounds; ++round) {
      if (round % 2 == 0) flood(plain, plain_tokens, plain_rates, plain_cpu);
      flood(server, tokens, tls_rates, tls_cpu);
      if (round % 2 == 1) flood(plain, plain_tokens, plain_rates, plain_cpu);
      submitted += n;
    }
    const double rate = Median(tls_rates), plain_rate = Median(plain_rates);
    std::printf(
        "  %2d connection%s  TLS %6.0f/s %5.0f us CPU each   plain %6.0f/s %5.0f us   TLS/plain "
        "%.2f rate, %.2f CPU  (median of %d x %d)\n",
        connections, connections == 1 ? " " : "s", rate, Median(tls_cpu), plain_rate,
        Median(plain_cpu), rate / plain_rate, Median(tls_cpu) / Median(plain_cpu), rounds, n);
  }
  plain.Stop();
  std::filesystem::remove_all(plain_dir);
  std::filesystem::remove(plain_dir + ".log");
  if (compare_only) {
    admin_client.reset();
    server.Stop();
    std::filesystem::remove_all(dir);
    std::filesystem::remove(dir + ".log");
    return 0;
  }
  const double fill_rate = Flood(server, tokens, jobs - submitted, 16);
  std::printf("  filling to %d jobs: %.0f submissions/s with 16 connections\n", jobs, fill_rate);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // a scheduling pass over all of them

  std::printf("\nwith %d pending jobs of %d users, one request at a time:\n", jobs, users);
  PassPhases(*admin_client, 8);
  auto user_client = Connect(server, tokens[1]);
  const Measured submit = Measure(1000, [&] {
    auto r = user_client->Post("/v1/jobs", kJob);
    if (!r.ok() || r->status != 201) Die("submit failed");
    return r->body.size();
  });
  const Measured mine = Measure(200, [&] {
    auto r = user_client->Get("/v1/jobs");
    if (!r.ok() || r->status != 200) Die("queue failed");
    return r->body.size();
  });
  const Measured all = Measure(10, [&] {
    auto r = admin_client->Get("/v1/jobs?all=1");
    if (!r.ok() || r->status != 200) Die("queue --all failed");
    return r->body.size();
  });
  // The pages `shoal queue` reads (1,000 jobs) and a dashboard's first
  // screen (100), at the start and in the middle of every job's listing.
  auto page = [&](int limit, int after) {
    return Measure(100, [&, limit, after] {
      auto r = admin_client->Get("/v1/jobs?all=1&limit=" + std::to_string(limit) +
                                 "&after=" + std::to_string(after));
      if (!r.ok() || r->status != 200) Die("a page of the queue failed");
      return r->body.size();
    });
  };
  const Measured first_100 = page(100, 0);
  const Measured first_1000 = page(1000, 0);
  const Measured middle_1000 = page(1000, jobs / 2);
  const Measured one = Measure(500, [&] {
    auto r = user_client->Get("/v1/jobs/" + std::to_string(jobs / 2));
    if (!r.ok()) Die("show failed");
    return r->body.size();
  });
  auto row = [](const char* what, const Measured& m) {
    std::printf("  %-34s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (%zu bytes)\n", what,
                m.latency.p50_ms, m.latency.p99_ms, m.latency.max_ms, m.bytes);
  };
  row("submit", submit);
  row("queue, one user's jobs", mine);
  row("queue --all (every job, streamed)", all);
  row("first page of 100 of every job", first_100);
  row("first page of 1,000", first_1000);
  row("a page of 1,000 in the middle", middle_1000);
  row("show one job", one);

  // Many jobs per request, all or none, one commit each.
  constexpr int kBatches = 20, kPerBatch = 1000;
  for (int connections : {1, 4}) {
    std::printf("  POST /v1/jobs/batch, %d x %d jobs, %d connection%s: %.0f jobs/s\n", kBatches,
                kPerBatch, connections, connections == 1 ? "" : "s",
                FloodBatches(server, tokens[2], kBatches, kPerBatch, connections));
  }
  const int total = jobs + 1000 + 2 * kBatches * kPerBatch;

  if (auto st = admin_client->Get("/v1/stats"); st.ok() && st->status == 200) {
    const Json j = Json::parse(st->body);
    std::printf(
        "  scheduling passes: %llu, last %.1f ms, mean %.1f ms; %llu calls in %llu transactions\n",
        j["passes"].get<unsigned long long>(), j["last_pass_ms"].get<double>(),
        j["mean_pass_ms"].get<double>(), j["calls"].get<unsigned long long>(),
        j["transactions"].get<unsigned long long>());
  }
  std::printf("\nserver resident memory: %.1f MiB empty, %.1f MiB with %d jobs\n", empty_rss,
              server.RssMib(), total);
  user_client.reset();
  admin_client.reset();
  server.Stop();
  const double restart_ms = server.Start();
  std::printf("restart with %d jobs: serving again after %.0f ms, %.1f MiB\n", total, restart_ms,
              server.RssMib());
  server.Stop();
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".log");
  ArrayMemory(shoal, dir);
  return 0;
}
