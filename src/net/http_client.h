// A small HTTP/1.1 client for Shoal's JSON API: keep-alive, TCP_NODELAY (the
// MACHINE-NOTES measured 11-23 requests/s without it), bearer token, timeouts.
// One client is one connection: use one per thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shoal::net {

struct HttpResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // as the server spelt them
};

// How a client checks the server it talks to over TLS, and who it is to it.
struct TlsClientOptions {
  std::string ca_file{};  // the CA that must have signed the server's certificate
  // Our certificate and key, for a server that asks for one (mutual TLS).
  std::string cert_file{};
  std::string key_file{};
  // When set, the server's certificate must also carry this common name (an
  // agent's node name; the controller's net::kControllerName).
  std::string peer_name{};
  // Off only to fetch a CA certificate whose fingerprint the caller then
  // checks itself (an agent joining with --ca-fingerprint).
  bool verify = true;
};

struct ClientOptions {
  std::string token{};  // sent as "Authorization: Bearer <token>" when set
  int connect_timeout_ms = 2000;
  int read_timeout_ms = 30000;
  // Off for clients that call rarely and must not hold one of the server's
  // worker threads between calls (httplib serves a kept-alive connection
  // with one thread for as long as it stays open); or on, with
  // CloseConnection when the calls pause (agents' heartbeats).
  bool keep_alive = true;
  // TLS settings, for an https:// address or one without a scheme; an
  // address without a scheme is plain HTTP when this is empty.
  std::optional<TlsClientOptions> tls{};
};

class HttpClient {
 public:
  // `base` is "https://host:port", "http://host:port" or "host:port" (TLS
  // when options.tls is set). https without options.tls is an error: Shoal's
  // clients check the server against the cluster's own CA. A comma-separated
  // list names a controller and its standbys: a request whose connection is
  // refused goes to the next, which the client then keeps using.
  static Result<std::unique_ptr<HttpClient>> Connect(const std::string& base,
                                                     const ClientOptions& options);
  ~HttpClient();

  // A transport failure (refused, timeout) is an Unavailable status; any
  // HTTP answer, 4xx and 5xx included, is a response.
  Result<HttpResponse> Get(const std::string& path);
  Result<HttpResponse> Post(const std::string& path, const std::string& body,
                            const char* content_type = "application/json");
  Result<HttpResponse> Patch(const std::string& path, const std::string& json_body);
  Result<HttpResponse> Delete(const std::string& path);
  // The server this client talks to now ("host:port").
  const std::string& base() const;
  // Closes a kept-alive connection now (the next call opens another).
  void CloseConnection();
  // Whether a kept-alive connection is open and the server has not closed
  // it, so that the next call goes on it rather than opening another (the
  // check cpp-httplib makes before a request). Not while a call is in flight.
  bool HoldsConnection() const;
  // The token for later requests on this connection (a load generator acts
  // for many users over few connections).
  void set_token(const std::string& token);

 private:
  struct Impl;
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The addresses of a comma-separated list of servers, blanks dropped.
std::vector<std::string> SplitServers(std::string_view servers);

// "host:port" for a base URL; "http://" and "https://" prefixes are stripped.
// Port 0 (any free port) only when `allow_any_port`, for servers.
Result<std::pair<std::string, int>> ParseHostPort(const std::string& base, int default_port,
                                                  bool allow_any_port = false);

// The scheme a base URL names: "https", "http", or "" when it has none.
std::string_view SchemeOf(std::string_view base);

}  // namespace shoal::net
