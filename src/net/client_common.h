// What Shoal's two HTTP clients share (net::HttpClient for the daemons,
// net::LeanHttpClient for the commands users type): their options, an
// answer, server addresses, and how a failure to reach a server is told.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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

// The addresses of a comma-separated list of servers, blanks dropped.
std::vector<std::string> SplitServers(std::string_view servers);

// "host:port" for a base URL; "http://" and "https://" prefixes are stripped.
// Port 0 (any free port) only when `allow_any_port`, for servers.
Result<std::pair<std::string, int>> ParseHostPort(const std::string& base, int default_port,
                                                  bool allow_any_port = false);

// The scheme a base URL names: "https", "http", or "" when it has none.
std::string_view SchemeOf(std::string_view base);

// The servers a client's address names (a controller and its standbys, in
// order), and whether they are reached over TLS: https://, or no scheme with
// TLS options. Errors: an empty list, a bad port, schemes that differ, https
// without TLS options.
struct Servers {
  std::vector<std::pair<std::string, int>> endpoints;  // host, port
  bool tls = false;
};
Result<Servers> ParseServers(const std::string& base, const ClientOptions& options);

// Whether the kept-alive connection on `fd` is still open: the server has
// not closed it (bytes it sent while idle, such as a TLS session ticket,
// leave it open). The check before a request goes on a kept connection.
bool PeerKeepsOpen(int fd);

// "cannot reach the Shoal server at <base> (<why>)": an Unavailable status,
// which the CLI tells apart from the server's own refusals (exit code 3).
Status Unreachable(const std::string& base, std::string_view why);

// The server's certificate failed the check against the cluster's CA or the
// name it must carry: as Unreachable, with the reason spelt out.
Status UntrustedServer(const std::string& base);

}  // namespace shoal::net
