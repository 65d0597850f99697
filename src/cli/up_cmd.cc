// shoal up: a whole cluster on this machine. A server and N agents run in
// this one process on loopback, with simulated GPUs (or this host's real
// ones through NVML), state under one directory, and job steps under their
// supervisors as on a real node. Ctrl-C stops everything, jobs included.
#include <fmt/format.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "agent/agent.h"
#include "agent/config.h"
#include "agent/gpu/simulated_provider.h"
#include "catalog/profiles.h"
#include "cli/app.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/paths.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/strings.h"
#include "net/http_client.h"
#include "net/local_socket.h"
#include "server/config.h"
#include "server/server.h"

namespace shoal::cli {

namespace {

using nlohmann::json;

constexpr int kNodesPerLeaf = 4;

// The demonstration workload of `make run`: single-GPU jobs, a two-node job,
// an array, and one job that must wait for GPUs until the others are done.
Status SubmitDemo(const std::string& url, const std::string& ca_file, const std::string& token,
                  const std::string& work_dir, int nodes, int gpus_per_node) {
  SHOAL_ASSIGN_OR_RETURN(net::ClientOptions options, ConnectOptions(url, ca_file, token));
  auto c = net::HttpClient::Connect(url, options);
  if (!c.ok()) return c.status();
  std::vector<json> jobs;
  for (int i = 1; i <= 4; ++i) {
    jobs.push_back(
        {{"name", fmt::format("single-{}", i)},
         {"command",
          "echo \"job $SHOAL_JOB_ID on $(hostname): GPU $CUDA_VISIBLE_DEVICES\"; sleep 40"},
         {"gpus", 1},
         {"time_limit_s", 600}});
  }
  if (nodes >= 2) {
    jobs.push_back(
        {{"name", "two-nodes"},
         {"command",
          "echo \"rank $RANK of $WORLD_SIZE on node $NODE_RANK, master $MASTER_ADDR:$MASTER_PORT, "
          "GPUs $CUDA_VISIBLE_DEVICES\"; cat $SHOAL_HOSTFILE; sleep 30"},
         {"nodes", 2},
         {"gpus_per_node", gpus_per_node},
         {"tasks", 2},
         {"time_limit_s", 600}});
  }
  jobs.push_back({{"name", "sweep"},
                  {"command", "echo \"array task $SHOAL_ARRAY_TASK_ID\"; sleep 20"},
                  {"gpus", 1},
                  {"array", "0-7%4"},
                  {"time_limit_s", 600}});
  jobs.push_back({{"name", "whole-cluster"},
                  {"command", "echo \"all $WORLD_SIZE nodes at last\"; sleep 10"},
                  {"nodes", nodes},
                  {"gpus_per_node", gpus_per_node},
                  {"time_limit_s", 600}});
  for (json& j : jobs) {
    j["work_dir"] = work_dir;
    auto r = (*c)->Post("/v1/jobs", j.dump());
    if (!r.ok()) return r.status();
    if (r->status != 201)
      return Internal(
          fmt::format("the demo job '{}' was refused: {}", j["name"].get<std::string>(), r->body));
  }
  return Status::Ok();
}

// A join token for node `name`, made with the admin's token.
Result<std::string> JoinToken(const std::string& url, const std::string& ca_file,
                              const std::string& admin_token, const std::string& name) {
  SHOAL_ASSIGN_OR_RETURN(net::ClientOptions options, ConnectOptions(url, ca_file, admin_token));
  SHOAL_ASSIGN_OR_RETURN(auto c, net::HttpClient::Connect(url, options));
  json body = {{"role", "join"}, {"ttl_s", 600}};
  if (!name.empty()) body["node"] = name;
  SHOAL_ASSIGN_OR_RETURN(net::HttpResponse r, c->Post("/v1/tokens", body.dump()));
  if (r.status != 201) return Internal(fmt::format("cannot make a join token: {}", r.body));
  return json::parse(r.body).at("token").get<std::string>();
}

// A folder of ours (not a link), made if missing: where others may make
// names too (/dev/shm), one they made first is refused, not used.
bool OwnFolder(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) return false;
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
}

bool IsTmpfs(const char* path) {
  struct statfs st {};
  return ::statfs(path, &st) == 0 && st.f_type == TMPFS_MAGIC;
}

// Where the agents keep their running steps: on a tmpfs, in a folder named
// after the state folder, so that a `shoal up` started again on the same
// state finds steps that outlived the last one. A step's files cost little
// there; on a disk file system that has seen many files come and go, making
// them costs more CPU than the rest of a job's start (docs/agent.md). Root's
// go in /run/shoal-up (not /run/shoal, which the packaged server's unit
// empties when it stops), a user's in $XDG_RUNTIME_DIR/shoal-up ($XDG_RUNTIME_DIR
// is private to the user), where these are tmpfs; else in /dev/shm. Empty
// where none will do: the steps then go under the state folder.
std::string StepsRoot(const std::string& state_dir) {
  std::error_code ec;
  const std::string state = std::filesystem::canonical(state_dir, ec).string();
  if (ec) return "";
  const std::string name = fmt::format("up-{:016x}", Fnv1a(state));
  const bool root = ::geteuid() == 0;
  // Root's jobs run as their users, who pass through to their steps' files.
  const mode_t mode = root ? 0711 : 0700;
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  struct stat st {};
  std::string base;
  if (root && IsTmpfs("/run")) {
    base = "/run/shoal-up";
  } else if (!root && xdg != nullptr && xdg[0] == '/' && IsTmpfs(xdg) && ::stat(xdg, &st) == 0 &&
             st.st_uid == ::geteuid() && (st.st_mode & 077) == 0) {
    base = std::string(xdg) + "/shoal-up";
  }
  if (!base.empty() && OwnFolder(base, mode) && OwnFolder(base + "/" + name, mode))
    return base + "/" + name;
  const std::string shm = fmt::format("/dev/shm/shoal-{}-{}", ::geteuid(), name);
  return IsTmpfs("/dev/shm") && OwnFolder(shm, mode) ? shm : "";
}

// What the agents of `shoal up` are started with.
struct UpAgents {
  const std::string& url;
  server::Server& server;
  const std::string& state_dir;
  const std::string& steps_root;  // empty: under state_dir
  std::string gpus;               // "nvml" or "simulated:<profile>"
  int count = 1;
  bool real = false;
  bool tls = false;
  bool root = false;  // jobs run as their submitter; root's must be allowed when that is us
  // Faults for the simulated GPUs, by node name (--sim-fault NODE=FAULT).
  std::map<std::string, std::vector<std::string>> faults;
  std::string image_dir;  // --image-dir: the nodes' container images (empty: the default)
};

// Starts the agents (node01.., or one for this host's real GPUs), each
// joining with a join token of its own on a TLS cluster.
Status StartAgents(const UpAgents& up, const Clock& clock, std::vector<agent::AgentConfig>& configs,
                   std::vector<std::unique_ptr<agent::Agent>>& agents) {
  for (int i = 1; i <= up.count; ++i) {
    agent::AgentConfig c;
    c.agent.server = up.url;
    c.agent.name = up.real ? "" : fmt::format("node{:02}", i);
    // Each node on an address of its own (all of 127/8 is this machine's
    // loopback), so that host lists name every node apart, as on a cluster.
    c.agent.listen = up.real ? "127.0.0.1:0" : fmt::format("127.0.1.{}:0", i);
    c.agent.place = fmt::format("spine1/leaf{}", (i - 1) / kNodesPerLeaf + 1);
    c.gpus = up.gpus;
    c.seed = static_cast<uint64_t>(i);
    c.allow_root_jobs = up.root;
    c.agent.slurm_commands = CompanionPath("shoal");
    const std::string folder = up.real ? "local" : c.agent.name;
    c.state_dir = fmt::format("{}/agents/{}", up.state_dir, folder);
    if (!up.steps_root.empty()) c.steps_dir = fmt::format("{}/{}", up.steps_root, folder);
    if (auto f = up.faults.find(c.agent.name); f != up.faults.end()) c.sim_faults = f->second;
    if (!up.image_dir.empty()) c.container.image_dir = up.image_dir;
    if (up.tls) {
      SHOAL_ASSIGN_OR_RETURN(std::string join, JoinToken(up.url, up.server.ca_file(),
                                                         up.server.admin_token(), c.agent.name));
      c.agent.tls = true;
      c.agent.join = {
          .dir = c.state_dir + "/tls", .ca_file = up.server.ca_file(), .join_token = join};
    } else {
      c.agent.token = up.server.node_token();
    }
    SHOAL_ASSIGN_OR_RETURN(auto gpus, agent::OpenGpus(c, clock));
    SHOAL_ASSIGN_OR_RETURN(auto steps, agent::OpenSteps(c, CompanionPath("shoal-step")));
    SHOAL_ASSIGN_OR_RETURN(auto a,
                           agent::Agent::Start(c.agent, std::move(gpus), std::move(steps), clock));
    agents.push_back(std::move(a));
    configs.push_back(c);
  }
  return Status::Ok();
}

// Stops every step still running in the agents' steps folders. Where they
// are under a root of their own (StepsRoot), removes each folder that holds
// no step, and then the root if that left it empty (its base stays).
void StopSteps(const std::vector<agent::AgentConfig>& configs, const std::string& root) {
  for (const agent::AgentConfig& c : configs) {
    auto steps = agent::OpenSteps(c, CompanionPath("shoal-step"));
    if (!steps.ok()) continue;
    const std::vector<agent::StepState> found = (*steps)->Scan();
    for (const agent::StepState& st : found) {
      if (st.phase == agent::StepPhase::kRunning || st.phase == agent::StepPhase::kStarting) {
        (void)(*steps)->Stop(st.key(), std::chrono::seconds(2));
      }
    }
    if (root.empty() || !found.empty()) continue;
    steps->reset();
    std::error_code ignored;
    std::filesystem::remove_all(c.steps_dir, ignored);
  }
  if (!root.empty()) ::rmdir(root.c_str());
}

// N of a simulated node's name, nodeNN (as StartAgents names them).
std::optional<int> NodeNumber(const std::string& name) {
  if (name.size() < 6 || !name.starts_with("node")) return std::nullopt;
  auto n = ParseInt(name.substr(4));
  if (!n.ok() || *n < 1 || fmt::format("node{:02}", *n) != name) return std::nullopt;
  return static_cast<int>(*n);
}

// `--demo`: submits the demonstration workload and shows the queue.
void StartDemo(server::Server& srv, const std::string& url, const std::string& work_dir, int nodes,
               int gpus_per_node) {
  std::error_code ec;
  std::filesystem::create_directories(work_dir, ec);
  std::string token = srv.admin_token();
  if (auto local = net::RequestLocalToken(srv.socket_path()); local.ok()) token = local->token;
  Status s = SubmitDemo(url, srv.ca_file(), token, work_dir, nodes, gpus_per_node);
  if (!s.ok()) {
    std::cerr << "shoal up: the demonstration workload failed: " << s.message() << "\n";
    return;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::printf("A demonstration workload is running (output in %s):\n", work_dir.c_str());
  std::fflush(stdout);
  RunQueue({});
  std::printf("\n");
  std::fflush(stdout);
}

// What to type next, in another terminal.
void PrintTry(const std::string& url, const std::string& state_dir, bool own_state_dir, bool real) {
  std::printf("\nTry, in another terminal:\n");
  // The CLI finds a server on its default address and socket by itself;
  // anything else it is told through the environment.
  if (own_state_dir) std::printf("  export SHOAL_STATE_DIR=%s\n", state_dir.c_str());
  // Simulated GPUs have no driver behind them: no nvidia-smi there.
  std::printf("  shoal nodes\n%s", real ? "  shoal submit --gpus 1 -- nvidia-smi -L\n"
                                        : "  shoal submit --gpus 1 --wrap 'echo GPU "
                                          "$CUDA_VISIBLE_DEVICES on $SHOAL_NODE_NAME'\n");
  std::printf(
      "  shoal submit job.sh                          # a batch script with #SBATCH lines\n"
      "  shoal queue\n"
      "  shoal logs <job> -f\n"
      "  shoal history\n");
  // The token itself never goes to the terminal (nor to a log that keeps it).
  std::printf("  open %s/   # the dashboard: sign in with the admin token in %s/admin.token\n",
              url.c_str(), state_dir.c_str());
}

// --sim-fault NODE=FAULT, each checked, by node name.
Result<std::map<std::string, std::vector<std::string>>> FaultsByNode(
    const std::vector<std::string>& sim_faults, int nodes, bool real) {
  std::map<std::string, std::vector<std::string>> faults;
  for (const std::string& nf : sim_faults) {
    auto refuse = [&nf](const std::string& why) {
      return InvalidArgument(fmt::format("--sim-fault {}: {}", nf, why));
    };
    if (real) return refuse("there are no simulated GPUs with --real");
    const size_t eq = nf.find('=');
    const std::optional<int> node =
        eq == std::string::npos ? std::nullopt : NodeNumber(nf.substr(0, eq));
    if (!node || *node > nodes)
      return refuse(fmt::format("NODE=FAULT, NODE one of node01 to node{:02}", nodes));
    if (auto fault = agent::SimFault::Parse(nf.substr(eq + 1)); !fault.ok())
      return refuse(fault.status().message());
    faults[nf.substr(0, eq)].push_back(nf.substr(eq + 1));
  }
  return faults;
}

// As the server makes it (server::SecureStateDir): others may pass
// through to the local socket, never list or read.
void MakeStateDir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
}

}  // namespace

int RunUp(const std::vector<std::string>& raw) {
  CLI::App app{"A Shoal cluster on this machine: a server and agents on loopback.", "shoal up"};
  int nodes = 4;
  std::string profile = "dgx-h100", state_dir, listen, policy, config;
  bool real = false, demo = false, tls = false;
  std::string log_level = "warning";  // the terminal is the user's: only what goes wrong
  std::vector<std::string> sim_faults;
  std::string image_dir;
  app.add_option("--nodes", nodes, "simulated nodes (default 4)")->check(CLI::Range(1, 256));
  app.add_option("--profile", profile, "their hardware: " + Join(catalog::ProfileNames(), ", "));
  app.add_flag("--real", real,
               "one node with this machine's GPUs (NVML) instead of simulated ones");
  app.add_option("--state-dir", state_dir, "where state lives (default ~/.local/share/shoal)");
  app.add_option("--listen", listen, "the server's address (default 127.0.0.1:6820)");
  app.add_option("--policy", policy, "scheduling policy (default backfill)");
  app.add_option("--config", config,
                 "a server configuration file (partitions, accounts; see shoal server)");
  app.add_flag("--demo", demo, "submit a small demonstration workload once the nodes are up");
  app.add_flag("--tls", tls,
               "TLS as on a multi-host cluster: the nodes join with join tokens and act by their "
               "own certificates (default: plain HTTP on loopback)");
  app.add_option("--sim-fault", sim_faults,
                 "NODE=FAULT: a fault on a simulated GPU, e.g. node02=ecc:1:14 or "
                 "node03=xid:5:79@30s (repeatable; docs/agent-gpus.md)")
      ->type_name("NODE=FAULT");
  app.add_option("--image-dir", image_dir,
                 "where the nodes find container images by name (default /var/lib/shoal/images; "
                 "docs/containers.md)");
  app.add_option("--log-level", log_level,
                 "the server's and agents' logs on stderr: debug, info, warning (the default) "
                 "or error");
  if (int code = ParseApp(app, raw, "shoal up"); code >= 0) return code;
  auto level = log::ParseLevel(log_level);
  if (!level.ok()) {
    std::cerr << "shoal up: " << level.status().message() << "\n";
    return 2;
  }
  log::Configure({.level = *level});
  auto faults = FaultsByNode(sim_faults, nodes, real);
  if (!faults.ok()) {
    std::cerr << "shoal up: " << faults.status().message() << "\n";
    return 2;
  }
  const catalog::NodeProfile* p = catalog::FindProfile(profile);
  if (!real && p == nullptr) {
    std::cerr << "shoal up: no node profile '" << profile
              << "' (known: " << Join(catalog::ProfileNames(), ", ") << ")\n";
    return 2;
  }
  // Before this process sets SHOAL_STATE_DIR.
  const std::string default_state_dir = DefaultStateDir();
  if (state_dir.empty()) state_dir = default_state_dir;
  MakeStateDir(state_dir);

  server::ServerOptions so;
  // A few nodes on one host: the controller's /metrics may as well show
  // every GPU, so that one scrape target shows the whole demo (a
  // configuration file may still say otherwise).
  so.metrics_per_gpu = true;
  if (!config.empty()) {
    if (Status s = server::LoadServerConfig(config, so); !s.ok()) {
      std::cerr << "shoal up: " << s.message() << "\n";
      return 2;
    }
  }
  so.state_dir = state_dir;
  so.listen = listen.empty() ? std::string(kDefaultServerAddress) : listen;
  so.tls.enabled = tls;
  if (!policy.empty()) {
    if (Status s = server::ApplyServerSetting("policy", policy, so); !s.ok()) {
      std::cerr << "shoal up: " << s.message() << "\n";
      return 2;
    }
  }
  SystemClock clock;
  auto srv = server::Server::Start(so, clock);
  if (!srv.ok()) {
    std::cerr << "shoal up: " << srv.status().message() << "\n";
    return 1;
  }
  // Commands run from this process (and the user's, with no flags) find it.
  const std::string url = fmt::format("{}://{}", tls ? "https" : "http", (*srv)->address());
  ::setenv("SHOAL_SERVER", url.c_str(), 1);
  ::setenv("SHOAL_STATE_DIR", state_dir.c_str(), 1);

  const bool root = ::geteuid() == 0;
  const int count = real ? 1 : nodes;
  const std::string steps_root = StepsRoot(state_dir);
  std::vector<agent::AgentConfig> configs;
  std::vector<std::unique_ptr<agent::Agent>> agents;
  if (Status st = StartAgents({.url = url,
                               .server = **srv,
                               .state_dir = state_dir,
                               .steps_root = steps_root,
                               .gpus = real ? "nvml" : "simulated:" + profile,
                               .count = count,
                               .real = real,
                               .tls = tls,
                               .root = root,
                               .faults = *faults,
                               .image_dir = image_dir},
                              clock, configs, agents);
      !st.ok()) {
    std::cerr << "shoal up: " << st.message() << "\n";
    return 1;
  }
  for (int waited_ms = 0; waited_ms < 10000; waited_ms += 20) {
    if (std::all_of(agents.begin(), agents.end(), [](const auto& a) { return a->registered(); }))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const int gpus_per_node = real ? 0 : p->gpus;
  std::printf("Shoal is up: server on %s, %d node%s", url.c_str(), count, count == 1 ? "" : "s");
  if (!real)
    std::printf(" x %d simulated %.*s GPUs (%s)", p->gpus, static_cast<int>(p->gpu_model.size()),
                p->gpu_model.data(), profile.c_str());
  std::printf("\nstate in %s\n", state_dir.c_str());
  if (!steps_root.empty()) std::printf("running job steps in %s\n", steps_root.c_str());
  if (root)
    std::printf(
        "running as root: root's own jobs are allowed on these nodes (other users' run as "
        "themselves)\n");
  PrintTry(url, state_dir, state_dir != default_state_dir, real);
  std::printf("Ctrl-C stops the cluster and its jobs.\n\n");
  std::fflush(stdout);
  if (demo && !real) StartDemo(**srv, url, state_dir + "/demo", count, gpus_per_node);
  WaitForStopSignal();
  std::printf("\nstopping: agents, jobs, server\n");
  for (auto& a : agents)
    a->Stop();
  StopSteps(configs, steps_root);
  (*srv)->Stop();
  return 0;
}

}  // namespace shoal::cli
