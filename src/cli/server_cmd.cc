// shoal server: the controller.
#include <fmt/format.h>
#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/paths.h"
#include "core/log.h"
#include "net/http_client.h"
#include "server/config.h"
#include "server/server.h"

namespace shoal::cli {

namespace {

// Plain HTTP carries tokens in clear: only where nothing else can listen in.
Status CheckPlainHttp(const server::ServerOptions& options) {
  if (options.tls.enabled) {
    if (options.state_dir.empty())
      return InvalidArgument("--memory keeps no keys: use it with --plain-http on loopback");
    return Status::Ok();
  }
  auto hp = net::ParseHostPort(options.listen, 6820, /*allow_any_port=*/true);
  if (!hp.ok()) return hp.status();
  const std::string& host = hp->first;
  if (host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]")
    return Status::Ok();
  return InvalidArgument(fmt::format(
      "plain HTTP is refused on {}: tokens would travel in clear; listen on 127.0.0.1, or "
      "drop --plain-http (tls = true) for TLS",
      host));
}

}  // namespace

int RunServer(const std::vector<std::string>& raw) {
  CLI::App app{"The Shoal controller: API, scheduler and durable state.", "shoal server"};
  std::string config, listen, state_dir, socket, policy, node_timeout, postgres, log_level,
      log_format;
  bool memory = false;
  bool metrics_public = false;
  bool metrics_per_gpu = false;
  bool plain_http = false;
  std::vector<std::string> tls_names;
  app.add_option("--config", config,
                 "configuration file (TOML: [server], [[partition]], [[account]])");
  app.add_option("--listen", listen,
                 "address to listen on (default 127.0.0.1:6820; 0.0.0.0 listens everywhere)");
  app.add_option("--state-dir", state_dir,
                 "where the database and tokens live (default ~/.local/share/shoal)");
  app.add_option("--log-level", log_level, "debug, info (the default), warning or error");
  app.add_option("--log-format", log_format, "text (the default) or json, one event a line");
  app.add_option("--postgres", postgres,
                 "keep the state in this PostgreSQL database (a libpq connection string) "
                 "instead of SQLite; servers that share one stand by for its lead");
  app.add_option(
      "--socket", socket,
      "unix socket where local users get a token for their uid (default <state-dir>/shoal.sock; "
      "none: off)");
  app.add_option("--policy", policy,
                 "scheduling policy (fifo, backfill, multifactor, las, gittins, ...)");
  app.add_option("--node-timeout", node_timeout,
                 "missed heartbeats before a node is down (e.g. 30s)");
  app.add_flag("--metrics-public", metrics_public,
               "serve GET /metrics without a token (default: any token)");
  app.add_flag("--metrics-per-gpu", metrics_per_gpu,
               "GET /metrics has every GPU's DCGM series too (small clusters; default: the "
               "agents serve them)");
  app.add_flag("--plain-http", plain_http,
               "serve plain HTTP instead of TLS (only on a loopback address, for a cluster on "
               "this one host)");
  app.add_option("--tls-name", tls_names,
                 "a host name or address clients and agents reach the server by, for its "
                 "certificate (repeatable; the listen address and host name are always in)");
  app.add_flag("--memory", memory,
               "keep state in memory only (for trying things out; nothing survives)");
  if (int code = ParseApp(app, raw, "shoal server"); code >= 0) return code;
  server::ServerOptions options;
  options.state_dir = DefaultStateDir();
  options.tls.enabled = true;  // unless the file or --plain-http says otherwise
  if (!config.empty()) {
    Status s = server::LoadServerConfig(config, options);
    if (!s.ok()) {
      std::cerr << "shoal server: " << s.message() << "\n";
      return 2;
    }
  }
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"listen", listen},
                                                        {"state_dir", state_dir},
                                                        {"socket", socket},
                                                        {"policy", policy},
                                                        {"node_timeout", node_timeout},
                                                        {"postgres", postgres},
                                                        {"log_level", log_level},
                                                        {"log_format", log_format}}) {
    if (value.empty()) continue;
    Status s = server::ApplyServerSetting(key, value, options);
    if (!s.ok()) {
      std::cerr << "shoal server: " << s.message() << "\n";
      return 2;
    }
  }
  if (memory) options.state_dir.clear();
  if (metrics_public) options.metrics_public = true;
  if (metrics_per_gpu) options.metrics_per_gpu = true;
  if (plain_http) options.tls.enabled = false;
  if (!tls_names.empty()) options.tls.names = tls_names;
  log::Configure(options.log);
  if (Status s = CheckPlainHttp(options); !s.ok()) {
    std::cerr << "shoal server: " << s.message() << "\n";
    return 2;
  }
  // Large buffers (a listing of every job runs to tens of MB) come from mmap
  // and go back to the system when freed; glibc would otherwise raise its
  // mmap threshold after the first and keep such memory in its heaps.
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  SystemClock clock;
  auto srv = server::Server::Start(options, clock);
  if (!srv.ok()) {
    std::cerr << "shoal server: " << srv.status().message() << "\n";
    return 1;
  }
  for (const std::string& note : (*srv)->notes())
    std::printf("note: %s\n", note.c_str());
  std::printf("shoal server listening on %s://%s (policy %s)\n",
              options.tls.enabled ? "https" : "http", (*srv)->address().c_str(),
              options.controller.policy.c_str());
  if (options.tls.enabled) {
    std::printf("cluster CA %s, fingerprint %s\n", (*srv)->ca_file().c_str(),
                (*srv)->ca_fingerprint().c_str());
  }
  if (options.state_dir.empty()) {
    std::printf("state in memory only; admin token: %s\n", (*srv)->admin_token().c_str());
  } else {
    std::printf("state in %s; admin token in %s/admin.token, node token in %s/node.token\n",
                options.state_dir.c_str(), options.state_dir.c_str(), options.state_dir.c_str());
  }
  if (const std::string sock = (*srv)->socket_path(); !sock.empty()) {
    std::printf("local users get a token for their own uid on %s\n", sock.c_str());
  }
  std::fflush(stdout);
  WaitForStopSignal();
  (*srv)->Stop();
  std::printf("shoal server stopped\n");
  return 0;
}

}  // namespace shoal::cli
