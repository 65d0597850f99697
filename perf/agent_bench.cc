// The node agent under work, as separate processes on loopback: a real
// `shoal server` (durable state) and --nodes `shoal agent` processes with
// simulated GPUs (dgx-h100: 8 each), whose job steps are real processes
// under shoal-step supervisors.
//
//   agent_bench --shoal build/release/src/cli/shoal [--nodes 8] [--jobs 2000]
//               [--samples 50] [--gap-ms 300] [--idle-seconds 30] [--cgroup-root none|PATH]
//               [--history FILE]   (the jobs' records, as the server returned them)
//               [--agent-dir DIR]  (the agents' step folders; default on /dev/shm)
//               [--command CMD]    (the throughput jobs' command instead of `true`)
//               [--connections N]  (submitting at once; default 4)
//               [--work-dir DIR]   (the jobs' work folder, where their output files
//                                   go; default beside the step folders)
//
// Prints:
//  - submit -> process started: from just before the submission is sent to
//    the job's first process reading the clock (`date +%s%N`), on an idle
//    cluster, one job at a time (p50/p99), each after --gap-ms of nothing
//    (an idle cluster is idle: back to back, the kernel's slow paths for a
//    task joining a cgroup stay warm and the figure looks better than a
//    user's first job of the hour sees; docs/agent.md); then the same with
//    each job submitted by `shoal submit` started as a new process;
//  - throughput: --jobs one-GPU `true` jobs, from the first submission to
//    the last completion (the latest end time the server recorded), and
//    the CPU time spent per job by the server, the agents and the jobs'
//    supervisors and processes (counted in the agents' launchers, which
//    reap the supervisors, and here, the subreaper of any left behind);
//  - each agent's resident memory and CPU use over --idle-seconds of 1 s
//    telemetry with 8 GPUs, and the server's.
// Everything stops by itself; jobs run as the benchmark's user (root is
// allowed on these agents: they are this machine's own).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "child.h"
#include "net/http_client.h"

namespace {

using namespace shoal::acceptance;
using Json = nlohmann::json;
namespace fs = std::filesystem;

std::unique_ptr<shoal::net::HttpClient> Connect(const std::string& address,
                                                const std::string& token) {
  auto c = shoal::net::HttpClient::Connect(address, {.token = token, .read_timeout_ms = 60000});
  if (!c.ok()) Die(c.status().ToString());
  return std::move(*c);
}

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Jobs not yet finished.
size_t Active(shoal::net::HttpClient& admin) {
  auto r = admin.Get("/v1/jobs?all=1");
  if (!r.ok() || r->status != 200) Die("queue failed");
  return Json::parse(r->body)["jobs"].size();
}

// Polls the queue every `every` (a listing of every active job: not too
// often while thousands wait, or the polling itself loads the server).
void WaitIdle(shoal::net::HttpClient& admin, int timeout_s, std::chrono::milliseconds every) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  while (Active(admin) > 0) {
    if (Clock::now() > deadline) Die("jobs did not finish in time");
    std::this_thread::sleep_for(every);
  }
}

std::string Submit(shoal::net::HttpClient& c, const Json& spec) {
  auto r = c.Post("/v1/jobs", spec.dump());
  if (!r.ok() || r->status != 201)
    Die("submit failed: " + (r.ok() ? r->body : r.status().ToString()));
  return std::to_string(Json::parse(r->body)["jobs"][0].get<uint64_t>());
}

// Starts `argv` in `dir` (fork + exec, no shell, its output to /dev/null)
// and waits for it. `ours` keeps the benchmark's reaper thread off it.
void RunProgram(const std::vector<std::string>& argv, const std::string& dir,
                std::vector<pid_t>& ours, std::mutex& ours_mu) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  {
    std::lock_guard<std::mutex> lock(ours_mu);
    pid = ::fork();
    if (pid == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      if (::chdir(dir.c_str()) != 0 || null < 0 || ::dup2(null, STDOUT_FILENO) < 0) ::_exit(127);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    if (pid < 0) Die("fork failed");
    ours.push_back(pid);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::lock_guard<std::mutex> lock(ours_mu);
  ours.erase(std::find(ours.begin(), ours.end(), pid));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die(argv[0] + " failed");
}

// Starts `/bin/sh -c command` in `dir` as the jobs' processes start.
void RunShell(const std::string& command, const std::string& dir, std::vector<pid_t>& ours,
              std::mutex& ours_mu) {
  RunProgram({"/bin/sh", "-c", command}, dir, ours, ours_mu);
}

// Waits for the time a job's `date +%s%N` wrote into `file`.
int64_t StartedAt(const std::string& file, const std::string& what) {
  for (int w = 0; w < 10000; ++w) {
    int64_t started = 0;
    if (std::ifstream in(file); in >> started) return started;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  Die(what + " did not start");
}

// The floor under Shoal's figures, measured in the same run: the latency
// sample's command started directly (from just before the fork to its
// clock reading), and the CPU of a throughput job's processes alone.
struct Floor {
  Latency start;
  double cpu_ms_per_job = 0;
};

Floor MeasureFloor(const std::string& work, const std::string& command, int samples, int gap_ms,
                   int runs, std::vector<pid_t>& ours, std::mutex& ours_mu) {
  Floor f;
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
    const std::string file = work + "/floor-" + std::to_string(i) + ".t";
    const int64_t t0 = WallNs();
    RunShell("date +%s%N > " + file, work, ours, ours_mu);
    int64_t started = 0;
    std::ifstream(file) >> started;
    if (started == 0) Die("the floor's sample wrote no time");
    ms.push_back(static_cast<double>(started - t0) / 1e6);
  }
  f.start = Percentiles(ms);
  const double cpu0 = RusageCpuSeconds(RUSAGE_CHILDREN);
  for (int i = 0; i < runs; ++i)
    RunShell(command, work, ours, ours_mu);
  f.cpu_ms_per_job = (RusageCpuSeconds(RUSAGE_CHILDREN) - cpu0) * 1e3 / runs;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shoal;
  int nodes = 8, jobs = 2000, samples = 50, idle_seconds = 30, gap_ms = 300;
  std::string cgroup_root;  // empty: the agents detect
  std::string history_file;
  std::string agent_dir;         // where the agents keep their steps
  std::string command = "true";  // the throughput jobs' command
  std::string work;              // the jobs' work folder
  int connections = 4;           // submitting at once
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--shoal")
      shoal = argv[i + 1];
    else if (flag == "--nodes")
      nodes = std::atoi(argv[i + 1]);
    else if (flag == "--jobs")
      jobs = std::atoi(argv[i + 1]);
    else if (flag == "--samples")
      samples = std::atoi(argv[i + 1]);
    else if (flag == "--gap-ms")
      gap_ms = std::atoi(argv[i + 1]);
    else if (flag == "--idle-seconds")
      idle_seconds = std::atoi(argv[i + 1]);
    else if (flag == "--cgroup-root")
      cgroup_root = argv[i + 1];
    else if (flag == "--history")
      history_file = argv[i + 1];
    else if (flag == "--agent-dir")
      agent_dir = argv[i + 1];
    else if (flag == "--command")
      command = argv[i + 1];
    else if (flag == "--work-dir")
      work = argv[i + 1];
    else if (flag == "--connections")
      connections = std::atoi(argv[i + 1]);
    else
      Die("unknown flag " + flag);
  }
  if (shoal.empty() || nodes < 1 || jobs < 1 || samples < 1 || idle_seconds < 1 ||
      connections < 1 || gap_ms < 0) {
    Die("usage: agent_bench --shoal PATH [--nodes N] [--jobs N] [--samples N] [--gap-ms MS] "
        "[--idle-seconds S]");
  }
  shoal = fs::absolute(shoal).string();
  ::signal(SIGPIPE, SIG_IGN);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // Launchers and supervisors whose parent has gone come to us (the agents
  // reap their launchers, the launchers their supervisors, while they run).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::atomic<bool> reaping{true};
  std::vector<pid_t> ours;  // the server and agents, reaped by Child::Stop
  std::mutex ours_mu;
  std::thread reaper([&] {
    while (reaping) {
      siginfo_t info{};
      while (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) {
        std::lock_guard<std::mutex> lock(ours_mu);
        if (std::find(ours.begin(), ours.end(), info.si_pid) != ours.end()) break;
        ::waitpid(info.si_pid, nullptr, 0);
        info = {};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // orphans are rare: a light poll
    }
  });

  // The server's state on disk (durable, as in production); the agents'
  // step folders, which live as long as their jobs, on tmpfs (/dev/shm, as
  // /run would be on a node: docs/agent.md) unless --agent-dir says otherwise.
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/shoal-agent-bench-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp in " + tmpl);
  const std::string dir = tmpl;
  if (agent_dir.empty()) {
    std::string shm = "/dev/shm/shoal-agent-bench-XXXXXX";
    agent_dir =
        fs::is_directory("/dev/shm") && ::mkdtemp(shm.data()) != nullptr ? shm : dir + "/agents";
  }
  // Each job writes its output file there (Slurm's slurm-<id>.out). On a
  // disk file system that has seen much churn, ext4's inode allocation
  // alone can cost more than a job's whole launch (it skips recently
  // deleted inodes): beside the step folders by default, --work-dir to
  // measure another place.
  if (work.empty()) work = agent_dir + "/work";
  fs::create_directories(work);
  // Before the cluster starts, so that nothing else runs meanwhile.
  const Floor floor =
      MeasureFloor(work, command, samples, gap_ms, std::min(jobs, 500), ours, ours_mu);

  Child server;
  // Plain HTTP on loopback: this measures launches, not TLS (server_bench
  // compares the two).
  const std::string address =
      "http://" + AddressIn(server.Start({shoal, "server", "--plain-http", "--state-dir",
                                          dir + "/state", "--listen", "127.0.0.1:0"},
                                         dir + "/server.log", "listening on"));
  {
    std::lock_guard<std::mutex> lock(ours_mu);
    ours.push_back(server.pid());
  }
  std::string admin_token;
  std::ifstream(dir + "/state/admin.token") >> admin_token;
  std::vector<std::unique_ptr<Child>> agents;
  for (int n = 1; n <= nodes; ++n) {
    char name[16];
    std::snprintf(name, sizeof name, "node%02d", n);
    std::vector<std::string> args = {shoal,
                                     "agent",
                                     "--server",
                                     address,
                                     "--token-file",
                                     dir + "/state/node.token",
                                     "--name",
                                     name,
                                     "--gpus",
                                     "simulated:dgx-h100",
                                     "--state-dir",
                                     agent_dir + "/" + name,
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--heartbeat",
                                     "1s",
                                     "--allow-root-jobs"};
    if (!cgroup_root.empty()) args.insert(args.end(), {"--cgroup-root", cgroup_root});
    agents.push_back(std::make_unique<Child>());
    agents.back()->Start(args, dir + "/" + name + ".log", "listening on");
    std::lock_guard<std::mutex> lock(ours_mu);
    ours.push_back(agents.back()->pid());
  }
  auto admin = Connect(address, admin_token);
  for (int i = 0;; ++i) {
    auto r = admin->Get("/v1/nodes");
    int up = 0;
    if (r.ok() && r->status == 200) {
      const Json body = Json::parse(r->body);
      for (const Json& n : body["nodes"])
        up += n["state"] == "up";
    }
    if (up == nodes) break;
    if (i > 1000) Die("the agents did not register: " + (r.ok() ? r->body : r.status().ToString()));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf(
      "%d agents x 8 simulated H100 GPUs, server on %s (state in %s), agents' steps in %s, jobs' "
      "output in %s\n\n",
      nodes, address.c_str(), dir.c_str(), agent_dir.c_str(), work.c_str());

  // 1. Submit -> process started, on an idle cluster.
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
    const int64_t t0 = WallNs();
    const std::string id = Submit(*admin, {{"command", "date +%s%N > $SHOAL_JOB_ID.t"},
                                           {"gpus", 1},
                                           {"work_dir", work},
                                           {"time_limit_s", 60}});
    const int64_t started = StartedAt(work + "/" + id + ".t", "job " + id);
    ms.push_back(static_cast<double>(started - t0) / 1e6);
    WaitIdle(*admin, 30, std::chrono::milliseconds(5));
  }
  const Latency start = Percentiles(ms);
  // The same through the CLI: `shoal submit` started as a new process.
  std::vector<double> cli_ms;
  ::setenv("SHOAL_TOKEN_FILE", (dir + "/state/admin.token").c_str(), 1);
  for (int i = 0; i < samples; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
    const std::string file = "cli-" + std::to_string(i) + ".t";
    const int64_t t0 = WallNs();
    RunProgram({shoal, "submit", "--server", address, "-G", "1", "-t", "1", "-D", work, "--wrap",
                "date +%s%N > " + file},
               work, ours, ours_mu);
    const int64_t started = StartedAt(work + "/" + file, "the CLI's job " + file);
    cli_ms.push_back(static_cast<double>(started - t0) / 1e6);
    WaitIdle(*admin, 30, std::chrono::milliseconds(5));
  }
  const Latency cli_start = Percentiles(cli_ms);
  std::printf("submit -> process started (idle cluster, %d jobs one at a time, %d ms apart):\n",
              samples, gap_ms);
  std::printf("  p50 %.1f ms  p99 %.1f ms  max %.1f ms   (target: p50 <= 10 ms, p99 <= 2x p50)\n",
              start.p50_ms, start.p99_ms, start.max_ms);
  std::printf(
      "  floor: the same command started directly (fork + exec of /bin/sh): p50 %.1f ms, p99 "
      "%.1f ms; Shoal adds p50 %.1f ms\n\n",
      floor.start.p50_ms, floor.start.p99_ms, start.p50_ms - floor.start.p50_ms);
  std::printf(
      "submit -> process started through the CLI (`shoal submit --wrap`, a new process each):\n"
      "  p50 %.1f ms  p99 %.1f ms  max %.1f ms   (target: p50 <= 20 ms)\n\n",
      cli_start.p50_ms, cli_start.p99_ms, cli_start.max_ms);

  // 2. Throughput of trivial jobs.
  double agents_cpu0 = 0;
  for (const auto& a : agents)
    agents_cpu0 += a->CpuSeconds();
  const double server_cpu_start = server.CpuSeconds();
  // Supervisors (with their jobs' CPU) count where they are reaped: by
  // their agent's launcher (a child of the agent), or by us when it has gone.
  auto steps_cpu_now = [&] {
    double sum = RusageCpuSeconds(RUSAGE_CHILDREN);
    for (const auto& a : agents)
      sum += a->ChildrenCpuSeconds() + a->LiveChildrenCpuSeconds();
    return sum;
  };
  const double steps_cpu0 = steps_cpu_now();
  const double t_first = static_cast<double>(WallNs()) / 1e9;
  std::atomic<int> next{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < connections; ++t) {
    submitters.emplace_back([&] {
      auto c = Connect(address, admin_token);
      const std::string spec =
          Json{{"command", command}, {"gpus", 1}, {"work_dir", work}, {"time_limit_s", 60}}.dump();
      while (next.fetch_add(1) < jobs) {
        auto r = c->Post("/v1/jobs", spec);
        if (!r.ok() || r->status != 201) Die("submit failed");
      }
    });
  }
  for (auto& t : submitters)
    t.join();
  const double t_submitted = static_cast<double>(WallNs()) / 1e9;
  WaitIdle(*admin, 600, std::chrono::milliseconds(250));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the last supervisors reaped
  double agents_cpu = -agents_cpu0;
  for (const auto& a : agents)
    agents_cpu += a->CpuSeconds();
  const double server_cpu = server.CpuSeconds() - server_cpu_start;
  const double steps_cpu = steps_cpu_now() - steps_cpu0;
  auto h = admin->Get("/v1/history?all=1&limit=" + std::to_string(jobs + samples + 10));
  if (!h.ok() || h->status != 200) Die("history failed");
  double t_last = 0;
  int completed = 0;
  const Json history = Json::parse(h->body);
  if (!history_file.empty()) std::ofstream(history_file) << h->body;
  for (const Json& j : history["jobs"]) {
    if (j["spec"]["command"] != command) continue;
    completed += j["state"] == "completed";
    t_last = std::max(t_last, j["end_time"].get<double>());
  }
  std::printf("%d one-GPU `%s` jobs on %d GPUs (%d submitting connections):\n", jobs,
              command.c_str(), nodes * 8, connections);
  std::printf(
      "  %d completed; submitted in %.2f s; first submission to last completion %.2f s: %.0f jobs/s"
      "   (target: >= 600 jobs/s)\n",
      completed, t_submitted - t_first, t_last - t_first, completed / (t_last - t_first));
  if (completed != jobs) Die("not every job completed");
  std::printf(
      "  CPU per job: server %.2f ms, agents %.2f ms, supervisors and jobs %.2f ms (total %.2f ms; "
      "2 cores give %.2f ms per job at 600 jobs/s)\n",
      server_cpu * 1e3 / jobs, agents_cpu * 1e3 / jobs, steps_cpu * 1e3 / jobs,
      (server_cpu + agents_cpu + steps_cpu) * 1e3 / jobs, 2e3 / 600);
  std::printf(
      "  floor: `/bin/sh -c %s` started directly costs %.2f ms of CPU; Shoal's own share per job "
      "(total less that) %.2f ms   (target: <= 3 ms)\n",
      command.c_str(), floor.cpu_ms_per_job,
      (server_cpu + agents_cpu + steps_cpu) * 1e3 / jobs - floor.cpu_ms_per_job);
  if (auto st = admin->Get("/v1/stats"); st.ok() && st->status == 200) {
    const Json j = Json::parse(st->body);
    std::printf(
        "  server: %llu scheduling passes (mean %.2f ms), %llu calls in %llu transactions\n",
        j["passes"].get<unsigned long long>(), j["mean_pass_ms"].get<double>(),
        j["calls"].get<unsigned long long>(), j["transactions"].get<unsigned long long>());
  }
  std::printf("\n");

  // 3. Idle agents: memory and CPU at 1 s telemetry, each with its step
  // launcher (a child of the agent, part of its footprint). A child that
  // ends in the window moves its CPU from the live children's sum to the
  // agent's reaped children's: both count (without the second, a child
  // still running at the start made the mean negative).
  auto agent_cpu = [](const Child& a) {
    return a.CpuSeconds() + a.ChildrenCpuSeconds() + a.LiveChildrenCpuSeconds();
  };
  std::vector<double> cpu0;
  for (const auto& a : agents)
    cpu0.push_back(agent_cpu(*a));
  const double server_cpu0 = server.CpuSeconds();
  std::this_thread::sleep_for(std::chrono::seconds(idle_seconds));
  double max_rss = 0, sum_rss = 0, max_cpu = 0, sum_cpu = 0;
  for (size_t i = 0; i < agents.size(); ++i) {
    const double rss = agents[i]->RssMib() + agents[i]->LiveChildrenRssMib();
    const double cpu = (agent_cpu(*agents[i]) - cpu0[i]) / idle_seconds * 100;
    max_rss = std::max(max_rss, rss);
    sum_rss += rss;
    max_cpu = std::max(max_cpu, cpu);
    sum_cpu += cpu;
  }
  std::printf("agents (with their step launchers) at 1 s telemetry, 8 GPUs each, over %d s:\n",
              idle_seconds);
  std::printf("  resident memory: mean %.1f MiB, max %.1f MiB   (target: <= 20 MB)\n",
              sum_rss / nodes, max_rss);
  std::printf("  CPU: mean %.2f %%, max %.2f %% of one core   (target: <= 1 %%)\n", sum_cpu / nodes,
              max_cpu);
  std::printf("server: %.1f MiB resident, %.2f %% of a core with %d agents\n", server.RssMib(),
              (server.CpuSeconds() - server_cpu0) / idle_seconds * 100, nodes);

  admin.reset();
  {
    std::lock_guard<std::mutex> lock(ours_mu);
    reaping = false;
  }
  reaper.join();
  for (auto& a : agents)
    a->Stop();
  server.Stop();
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::remove_all(agent_dir, ec);
  return 0;
}
