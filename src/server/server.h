// `shoal server`: the store, the controller, its control loop, the link to
// the agents and the HTTP API, started and stopped together.
//
// On first start the state directory gets two tokens: admin.token (for the
// operator and the CLI on this host) and node.token (for agents of a
// plain-HTTP cluster), both mode 0600; with TLS also tls/ (server/pki.h).
// The directory is 0711 and nothing in it is open to other users
// (server/state_dir.h).
// The API listens only where it is told (127.0.0.1 by default).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/status.h"
#include "core/time.h"
#include "server/controller.h"
#include "server/loop.h"

namespace shoal::server {

// TLS on the API (see server/pki.h): the controller's certificate for the
// names it is reached by, clients' certificates checked against the
// cluster CA, nodes acting by their own certificates only.
struct ServerTlsOptions {
  bool enabled = false;
  std::vector<std::string> names;  // extra names and addresses for the certificate
  int node_cert_days = 365;        // how long a joined node's certificate lasts
};

struct ServerOptions {
  std::string listen = "127.0.0.1:6820";  // port 0: any free port (tests)
  std::string state_dir;                  // empty: in memory only (tests)
  // The unix socket where local users get a token for their own uid (see
  // net/local_socket.h). Empty: <state_dir>/shoal.sock when there is a state
  // directory (0711, server/state_dir.h: every local user may connect to
  // the socket by name, none may list or read the rest); "none": no socket.
  // The socket file is open to every local user, wherever it is.
  std::string socket;
  // Room for the largest job spec: a 4 MiB batch script (kMaxScriptBytes,
  // JSON-escaped) and a 1 MiB environment. Checked before the body is read.
  size_t max_body_bytes = 8 << 20;
  int http_threads = 16;  // threads kept ready; more start with the requests
  // Open connections, from all clients and from one address (net::ConnectionLimits):
  // every agent keeps one, so a fleet needs more than its node count.
  int max_connections = 16384;
  int connections_per_address = 256;
  bool sqlite_full_sync = true;
  // A PostgreSQL database (libpq connection string) instead of SQLite in
  // state_dir, which still holds this controller's keys and tokens. Several
  // servers may share one database: one leads, the others stand by in
  // Start() and take over when it dies (state/postgres_store.h).
  std::string postgres;
  log::Options log{.program = "server"};  // level and format (core/log.h)
  // GET /metrics without a token (for a Prometheus that has none). The
  // metrics name nodes, users, accounts and job ids.
  bool metrics_public = false;
  // Every GPU's dcgm-exporter series on GET /metrics too (O(GPUs) lines),
  // for a small cluster whose Prometheus scrapes only the controller. Off:
  // the agents serve them, one target per node (docs/metrics.md).
  bool metrics_per_gpu = false;
  // The least time between two samples of a GPU's time series (tests shorten it).
  Duration series_interval = std::chrono::seconds(10);
  // Off in the library (tests, `shoal up`); `shoal server` turns it on
  // unless asked for plain HTTP on loopback.
  ServerTlsOptions tls;
  // The mail program for sbatch --mail-type (sendmail's interface). Empty:
  // the host's sendmail when it has one; "none": no mail.
  std::string mail_program;
  ControllerConfig controller;
  LoopOptions loop;
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options, const Clock& clock);
  ~Server();

  void Stop();
  // Blocks until Stop() (or a signal handler calling Stop()).
  void Wait();

  int port() const;
  std::string address() const;
  std::string socket_path() const;  // empty when there is no local socket
  // The bootstrap tokens' text (empty when they were created by an earlier run).
  const std::string& admin_token() const;
  const std::string& node_token() const;
  // What the start changed or found that the operator should know (modes
  // tightened in the state directory, a socket other users cannot reach).
  const std::vector<std::string>& notes() const;
  // TLS: the cluster CA's file and SHA-256 fingerprint; empty on plain HTTP.
  std::string ca_file() const;
  std::string ca_fingerprint() const;
  ControlLoop& loop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal::server
