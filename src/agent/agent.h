// `shoal agent`: one per node. It tells the server what the node has
// (registration), what runs and how the GPUs are (heartbeats with telemetry
// and job events), and runs what the server orders (launch, kill) as job
// steps under their own supervisors (launch/steps.h), so that jobs outlive
// an agent restart. On start it registers and reports the steps it finds on
// disk: the server kills what it does not know and fails what the agent has
// lost.
//
// Threads: an HTTP server for the server's orders and log reads (and
// Prometheus' scrapes of GET /metrics, agent/exporter.h), and one
// loop that samples the GPUs and sends heartbeats: on each telemetry tick,
// and at once when a step ends or cannot start (so that the server can
// reuse its GPUs without waiting for the next tick). All public methods are
// thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/gpu/provider.h"
#include "agent/health.h"
#include "agent/join.h"
#include "agent/launch/steps.h"
#include "core/cluster.h"
#include "core/status.h"
#include "core/time.h"

namespace shoal::agent {

struct AgentOptions {
  std::string server = "127.0.0.1:6820";  // the server's API
  std::string token;                      // a node token (plain HTTP only)
  // Mutual TLS with the server, the node acting by its own certificate
  // (agent/join.h; `join` says where it lives and how to get one: its
  // server, name and names are filled in from these options). Off: plain
  // HTTP with the node token, for a cluster on one trusted host.
  bool tls = false;
  JoinOptions join;
  std::string name;                       // the node's name; empty: the host name
  std::string listen = "127.0.0.1:6821";  // where the server reaches this agent (port 0: any)
  std::string advertise;                  // the address to give the server; empty: `listen`'s
  std::vector<std::string> labels;
  std::vector<std::string> partitions;
  std::string place;                                      // "spine1/leaf3"
  int64_t cpu_milli = 0;                                  // 0: this host's CPUs
  int64_t memory_mib = 0;                                 // 0: this host's memory
  Duration heartbeat = std::chrono::seconds(1);           // telemetry and heartbeat interval
  Duration min_event_gap = std::chrono::milliseconds(5);  // at most one extra heartbeat this often
  int http_threads = 8;  // threads kept ready; more start with the connections
  // GET /metrics (this node's GPUs, dcgm-exporter's names) without
  // credentials, for a Prometheus that has none. Off: the node token, or
  // over TLS the controller's certificate, as every other route.
  bool metrics_public = false;
  // The shoal binary that `srun` and `scontrol` run inside jobs (first on
  // their tasks' PATH; it acts as them by the name it is called by).
  // Empty: jobs get no such commands.
  std::string slurm_commands;
  HealthOptions health;
};

class Agent {
 public:
  static Result<std::unique_ptr<Agent>> Start(const AgentOptions& options,
                                              std::unique_ptr<GpuProvider> gpus,
                                              std::unique_ptr<Steps> steps, const Clock& clock);
  ~Agent();

  // Stops the loop and the HTTP server. Job steps keep running.
  void Stop();

  std::string address() const;  // where the agent listens ("127.0.0.1:41235")
  const std::string& name() const;
  bool registered() const;      // the server has accepted the registration
  uint64_t heartbeats() const;  // heartbeats the server accepted

  struct Impl;

 private:
  explicit Agent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The node's inventory for registration: its GPUs as discovered, this
// host's CPUs and memory unless the options name them.
Result<Node> DescribeNode(const AgentOptions& options, const std::vector<GpuDevice>& devices,
                          const std::string& address);

}  // namespace shoal::agent
