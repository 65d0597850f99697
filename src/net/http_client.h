// A small HTTP/1.1 client for Shoal's JSON API on cpp-httplib, for the
// daemons (agents, the controller's calls to agents): keep-alive, TCP_NODELAY
// (the MACHINE-NOTES measured 11-23 requests/s without it), bearer token,
// timeouts, TLS sessions kept between connections. One client is one
// connection: use one per thread. The commands users type use
// net::LeanHttpClient (lean_http_client.h), which starts faster.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "net/client_common.h"

namespace shoal::net {

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

}  // namespace shoal::net
