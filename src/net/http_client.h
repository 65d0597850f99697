// A small HTTP/1.1 client for Shoal's JSON API: keep-alive, TCP_NODELAY (the
// MACHINE-NOTES measured 11-23 requests/s without it), bearer token, timeouts.
// One client is one connection: use one per thread.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/status.h"

namespace shoal::net {

struct HttpResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // as the server spelt them
};

struct ClientOptions {
  std::string token;  // sent as "Authorization: Bearer <token>" when set
  int connect_timeout_ms = 2000;
  int read_timeout_ms = 30000;
  // Off for clients that call rarely and must not hold one of the server's
  // worker threads between calls (httplib serves a kept-alive connection
  // with one thread for as long as it stays open); or on, with
  // CloseConnection when the calls pause (agents' heartbeats).
  bool keep_alive = true;
};

class HttpClient {
 public:
  // `base` is "http://host:port" or "host:port".
  static Result<std::unique_ptr<HttpClient>> Connect(const std::string& base,
                                                     const ClientOptions& options);
  ~HttpClient();

  // A transport failure (refused, timeout) is an Unavailable status; any
  // HTTP answer, 4xx and 5xx included, is a response.
  Result<HttpResponse> Get(const std::string& path);
  Result<HttpResponse> Post(const std::string& path, const std::string& json_body);
  Result<HttpResponse> Patch(const std::string& path, const std::string& json_body);
  Result<HttpResponse> Delete(const std::string& path);
  const std::string& base() const { return base_; }
  // Closes a kept-alive connection now (the next call opens another).
  void CloseConnection();
  // The token for later requests on this connection (a load generator acts
  // for many users over few connections).
  void set_token(const std::string& token);

 private:
  struct Impl;
  HttpClient(std::unique_ptr<Impl> impl, std::string base);
  std::unique_ptr<Impl> impl_;
  std::string base_;
};

// "host:port" for a base URL; "http://" prefixes are stripped, https refused.
// Port 0 (any free port) only when `allow_any_port`, for servers.
Result<std::pair<std::string, int>> ParseHostPort(const std::string& base, int default_port,
                                                  bool allow_any_port = false);

}  // namespace shoal::net
