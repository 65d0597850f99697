// The HTTP server of every Shoal listener: cpp-httplib's routing and
// parsing, with connection handling that no client can stretch and that
// holds thousands of idle connections without a thread each. cpp-httplib
// 0.11 serves each connection with one thread of a fixed pool for as long as
// it stays open, applies its read timeout to each recv() alone (a client
// sending a header byte every few seconds holds a thread for ever) and polls
// idle kept-alive connections every 10 ms. Here instead:
//   - a request must arrive whole (request line, headers, body) within
//     `request_deadline` of its first byte;
//   - between requests a connection keeps its thread for `linger` (a client
//     sending requests back to back loses no time), then waits in one epoll
//     set shared by all idle connections, and a thread takes it up again
//     when its next request arrives; so an agent can keep its connection
//     between heartbeats (over TLS: no handshake per beat) at the cost of a
//     descriptor and a few KB, not a thread;
//   - a connection may idle `idle_timeout` between requests, or
//     `trusted_idle_timeout` once it has shown credentials (a verified
//     client certificate, or a request whose credentials the guard checked:
//     TrustThisConnection), so that strangers cannot hold connections long;
//   - one client address may hold `per_client` connections at once, and all
//     clients together `max_connections`; beyond either, a new connection is
//     answered 503 and closed at once;
//   - threads grow with the requests in progress (up to `max_threads`) and
//     go when idle, so that slow clients cannot take every thread from the
//     agents' heartbeats and the users' requests.
// Thread-safe as httplib::Server is.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "net/tls.h"

namespace shoal::net {

struct ConnectionLimits {
  std::chrono::milliseconds request_deadline{10000};
  std::chrono::milliseconds idle_timeout{2000};
  // Longer than any heartbeat interval the controller asks for (a third of
  // the node timeout), so that an agent's connection outlives its pauses.
  std::chrono::milliseconds trusted_idle_timeout{120000};
  std::chrono::milliseconds linger{10};
  std::chrono::milliseconds write_timeout{5000};
  int per_client = 256;
  int max_connections = 16384;
  int max_threads = 4096;
  int min_threads = 4;
};

// Called by a request's handler (the request guard, once credentials have
// checked out), on the thread serving it: its connection may idle for
// trusted_idle_timeout from now on. Does nothing outside a request.
void TrustThisConnection();

class SocketStream;

// Raises this process's soft limit on open files to its hard limit, so that
// connections held by clients cannot run a listener out of descriptors
// before its own limits act. Returns the limit now in force.
uint64_t RaiseOpenFileLimit();

class HttpServer : public httplib::Server {
 public:
  HttpServer();
  // Before listening.
  void SetLimits(const ConnectionLimits& limits) { limits_ = limits; }
  // Before listening: serve TLS only (a plain request fails its handshake).
  // The deadlines above hold for the handshake too.
  Status EnableTls(const TlsServerOptions& options);
  bool tls() const { return ssl_ctx_ != nullptr; }

  // Binds `host`:`port` (0: any free port) and returns the port, or -1.
  // cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG,
  // compiled into Debian's library): past five connections waiting to be
  // accepted, a new one's SYN is dropped and retried a second later. Bind
  // widens it to 4,096 (the kernel caps it at somaxconn).
  int Bind(const std::string& host, int port);

  // Connections refused for a limit since the start, for metrics and tests.
  uint64_t refused_connections() const;
  // Connections open now, and how many of them wait idle without a thread.
  int open_connections() const;
  int idle_connections() const;

  ~HttpServer() override;

 private:
  friend void TrustThisConnection();
  struct Connection;
  class IdleSet;
  // The connection whose request this thread serves.
  static thread_local Connection* serving_;
  bool process_and_close_socket(socket_t sock) override;
  // Serves `c`'s requests until it closes, or idles past the linger and
  // goes to the idle set; `resumed`: it comes from the idle set.
  void Serve(std::shared_ptr<Connection> c, bool resumed);
  // One request on `c`; false when the connection ends after it.
  bool ServeOne(Connection& c, SocketStream& stream);
  // Takes a connection slot for `client`; false when a limit is reached.
  bool Admit(const std::string& client);
  void Release(const std::string& client);

  ConnectionLimits limits_;
  std::shared_ptr<ssl_ctx_st> ssl_ctx_;
  std::unique_ptr<IdleSet> idle_;
  // The thread pool, made when the server starts listening.
  std::atomic<httplib::TaskQueue*> pool_{nullptr};
  mutable std::mutex mu_;
  std::map<std::string, int> per_client_;
  int open_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace shoal::net
