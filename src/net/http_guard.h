// What every Shoal listener checks before it reads a request's body, so that
// no stranger can make it buffer anything: the caller's credentials, and the
// body's size as declared by Content-Length. Bodies without a declared
// length (Transfer-Encoding: chunked) are refused with 411: every Shoal
// client sends Content-Length, and cpp-httplib 0.11 applies no size limit to
// a chunked body. A refused request's connection is closed, since its body
// was never read.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace shoal::net {

struct RequestGuard {
  size_t max_body_bytes = 1 << 20;
  // Requests served without credentials (health checks, the dashboard's
  // static files); they may carry no body.
  std::function<bool(const httplib::Request&)> is_public;
  // Whether the request's credentials are good, asked before a body is read
  // (requests without one are authenticated by their handlers, which also
  // decide what the credentials allow): OK, or why not, which the 401 (403
  // for kPermissionDenied) answer tells.
  std::function<Status(const httplib::Request&)> authenticate;
};

// Installs the guard as the server's pre-routing handler, and the access
// log: each request once, after its answer, as an `http.request` event
// (core/log.h) with its method, path, status, time and who asked (the
// query string and headers never: they may carry secrets). Requests that
// RequesterIs marks routine (agents' beats), health checks, scrapes and the
// dashboard's files are logged at debug, the others at info. A refusal for
// credentials is an `auth.refused` warning too.
void GuardRequests(httplib::Server& http, RequestGuard guard);

// Who the request this thread serves comes from (`name` and `role`, shown
// as "alice (user)"), for its access log line; `routine`: log it at debug.
// Cheap: the line is only formatted when it is written.
void RequesterIs(std::string_view name, std::string_view role, bool routine);
// A request refused for its credentials: logged as an `auth.refused` warning.
void LogAuthRefused(const httplib::Request& req, std::string_view why);

}  // namespace shoal::net
