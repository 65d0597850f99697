#include "net/client_common.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include "core/strings.h"

namespace shoal::net {

std::string_view SchemeOf(std::string_view base) {
  base = Trim(base);
  if (StartsWith(base, "https://")) return "https";
  if (StartsWith(base, "http://")) return "http";
  return "";
}

Result<std::pair<std::string, int>> ParseHostPort(const std::string& base, int default_port,
                                                  bool allow_any_port) {
  std::string_view s = Trim(base);
  if (StartsWith(s, "https://")) s.remove_prefix(8);
  if (StartsWith(s, "http://")) s.remove_prefix(7);
  while (!s.empty() && s.back() == '/')
    s.remove_suffix(1);
  if (s.empty()) return InvalidArgument("empty server address");
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos) return std::make_pair(std::string(s), default_port);
  auto port = ParseInt(s.substr(colon + 1));
  if (!port.ok() || *port < (allow_any_port ? 0 : 1) || *port > 65535) {
    return InvalidArgument(fmt::format("'{}' has a bad port", base));
  }
  return std::make_pair(std::string(s.substr(0, colon)), static_cast<int>(*port));
}

std::vector<std::string> SplitServers(std::string_view servers) {
  std::vector<std::string> out;
  for (std::string_view s : Split(servers, ',')) {
    if (!Trim(s).empty()) out.emplace_back(Trim(s));
  }
  return out;
}

Result<Servers> ParseServers(const std::string& base, const ClientOptions& options) {
  const std::vector<std::string> servers = SplitServers(base);
  if (servers.empty()) return InvalidArgument("empty server address");
  Servers out;
  const std::string_view scheme = SchemeOf(servers.front());
  for (const std::string& server : servers) {
    SHOAL_ASSIGN_OR_RETURN(auto hp, ParseHostPort(server, 6820));
    if (SchemeOf(server) != scheme)
      return InvalidArgument(fmt::format("{}: the servers' addresses mix schemes", base));
    out.endpoints.push_back(std::move(hp));
  }
  out.tls = scheme == "https" || (scheme.empty() && options.tls.has_value());
  if (out.tls && !options.tls) {
    return InvalidArgument(fmt::format(
        "{}: https needs the cluster's CA certificate (--ca-file or $SHOAL_CA_FILE)", base));
  }
  return out;
}

bool PeerKeepsOpen(int fd) {
  if (fd < 0) return false;
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  if (::poll(&p, 1, 0) < 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
  if ((p.revents & POLLIN) == 0) return true;
  // Readable while idle: bytes the server sent (a TLS session ticket), or
  // its end of the connection.
  char c;
  return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

Status Unreachable(const std::string& base, std::string_view why) {
  return Status(StatusCode::kUnavailable,
                fmt::format("cannot reach the Shoal server at {} ({})", base, why));
}

Status UntrustedServer(const std::string& base) {
  return Status(StatusCode::kUnavailable,
                fmt::format("cannot reach the Shoal server at {}: its TLS certificate is not one "
                            "the cluster's CA issued for that address",
                            base));
}

}  // namespace shoal::net
