// The HTTP/1.1 client of the commands users type (`shoal submit`, `queue`,
// `show`, ...): a socket, OpenSSL for TLS, and nothing else.
//
// Such a command is a new process each time, and what it costs is mostly its
// start: Debian ships cpp-httplib only as a shared library, which brings
// libssl, libcrypto, brotli and zlib with it and loads OpenSSL's error
// strings as it starts. This client needs none of that, so the `shoal`
// binary links it with OpenSSL, the C++ runtime and libc compiled in and
// loads nothing (docs/performance.md). The daemons keep net::HttpClient, which also
// keeps TLS sessions between connections.
//
// It speaks what Shoal's server answers: a head, then a body of a stated
// length, chunked, or up to the end of the connection. One connection, kept
// alive between calls when asked; a comma-separated address names a
// controller and its standbys, and a connection refused goes to the next.
// One thread at a time.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "net/client_common.h"

namespace shoal::net {

class LeanHttpClient {
 public:
  // Addresses and options as net::HttpClient::Connect takes them (a list of
  // standbys included); the TLS files are read now, nothing is sent yet.
  static Result<std::unique_ptr<LeanHttpClient>> Connect(const std::string& base,
                                                         const ClientOptions& options);
  ~LeanHttpClient();
  LeanHttpClient(const LeanHttpClient&) = delete;
  LeanHttpClient& operator=(const LeanHttpClient&) = delete;

  // An answer of any status is a response. No server reached, one that
  // fails the TLS check, or an answer that is not HTTP: Unavailable.
  Result<HttpResponse> Get(const std::string& path);
  Result<HttpResponse> Post(const std::string& path, const std::string& body,
                            const char* content_type = "application/json");
  Result<HttpResponse> Patch(const std::string& path, const std::string& json_body);
  Result<HttpResponse> Delete(const std::string& path);
  // The server this client talks to now ("host:port").
  const std::string& base() const;

 private:
  struct Impl;
  explicit LeanHttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shoal::net
