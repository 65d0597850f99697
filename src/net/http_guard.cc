#include "net/http_guard.h"

#include <fmt/format.h>
#include <httplib.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>

#include "core/log.h"
#include "core/strings.h"
#include "net/http_server.h"

namespace shoal::net {
namespace {

// The request this thread serves: httplib calls the pre-routing handler,
// the route and the logger on one thread, one request after another.
struct Served {
  std::chrono::steady_clock::time_point start{};
  std::string name{};  // empty: no credentials seen
  std::string role{};
  bool routine = false;
};
thread_local Served served;

std::string PeerAddress(const httplib::Request& req) {
  return fmt::format("{}:{}", req.remote_addr, req.remote_port);
}

bool RoutinePath(const httplib::Request& req) {
  return req.method == "GET" &&
         (req.path == "/healthz" || req.path == "/metrics" || !req.path.starts_with("/v1/"));
}

void LogRequest(const httplib::Request& req, const httplib::Response& res) {
  const log::Level level =
      served.routine || RoutinePath(req) ? log::Level::kDebug : log::Level::kInfo;
  if (!log::Enabled(level)) return;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - served.start)
          .count();
  log::Event(level, "http.request",
             {{"method", req.method},
              {"path", req.path},
              {"status", res.status},
              {"ms", ms},
              {"who", served.name.empty()   ? std::string("-")
                      : served.role.empty() ? served.name
                                            : fmt::format("{} ({})", served.name, served.role)},
              {"peer", PeerAddress(req)}});
}

httplib::Server::HandlerResponse Refuse(httplib::Response& res, int status, const char* error,
                                        const std::string& detail) {
  res.status = status;
  res.set_header("Connection", "close");
  res.set_content(fmt::format(R"({{"error":"{}","detail":"{}"}})", error, JsonEscaped(detail)),
                  "application/json");
  return httplib::Server::HandlerResponse::Handled;
}

// Every body Shoal takes is JSON, whatever the client says it is, and a
// POST without a body is an empty one. cpp-httplib would otherwise refuse
// the bodies that `curl -d` sends (form-encoded, which it parses itself and
// caps at 8 KiB) and answer 400 to a bare `curl -X POST` (no
// Content-Length). The request is httplib's own, not const: only the view
// handed to the pre-routing handler is.
void NormaliseBodyHeaders(const httplib::Request& const_req) {
  auto& req = const_cast<httplib::Request&>(const_req);
  if (req.get_header_value("Content-Type") == "application/x-www-form-urlencoded") {
    req.headers.erase("Content-Type");
    req.headers.emplace("Content-Type", "application/json");
  }
  if ((req.method == "POST" || req.method == "PUT" || req.method == "PATCH") &&
      !req.has_header("Content-Length")) {
    req.headers.emplace("Content-Length", "0");
  }
}

}  // namespace

void GuardRequests(httplib::Server& http, RequestGuard guard) {
  http.set_payload_max_length(guard.max_body_bytes);
  http.set_pre_routing_handler([guard = std::move(guard)](const httplib::Request& req,
                                                          httplib::Response& res) {
    served.start = std::chrono::steady_clock::now();
    served.name.clear();
    served.role.clear();
    served.routine = false;
    if (req.has_header("Transfer-Encoding")) {
      return Refuse(res, 411, "invalid_argument",
                    "a request body must come with Content-Length; chunked bodies are "
                    "not accepted");
    }
    const std::string declared = req.get_header_value("Content-Length");
    uint64_t length = 0;
    if (!declared.empty()) {
      auto [end, error] =
          std::from_chars(declared.data(), declared.data() + declared.size(), length);
      if (error != std::errc() || end != declared.data() + declared.size()) {
        return Refuse(res, 400, "invalid_argument", "Content-Length is not a number");
      }
    }
    const bool is_public = guard.is_public && guard.is_public(req);
    // A request without a body is left to its handler, which authenticates
    // it anyway: checking here too would hash each token twice.
    if (!is_public && length > 0) {
      const Status who = guard.authenticate
                             ? guard.authenticate(req)
                             : Status(StatusCode::kUnauthenticated, "a valid token is required");
      if (!who.ok()) {
        LogAuthRefused(req, who.message());
        const bool denied = who.code() == StatusCode::kPermissionDenied;
        return Refuse(res, denied ? 403 : 401, denied ? "permission_denied" : "unauthenticated",
                      who.message());
      }
      TrustThisConnection();  // it may idle as long as an agent's between beats
    }
    if (is_public && length > 0) {
      return Refuse(res, 413, "resource_exhausted", "this request takes no body");
    }
    if (length > guard.max_body_bytes) {
      return Refuse(res, 413, "resource_exhausted",
                    fmt::format("the body is {} bytes; at most {} are accepted", length,
                                guard.max_body_bytes));
    }
    NormaliseBodyHeaders(req);
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.set_logger(LogRequest);
}

void RequesterIs(std::string_view name, std::string_view role, bool routine) {
  served.name = name;
  served.role = role;
  served.routine = routine;
}

void LogAuthRefused(const httplib::Request& req, std::string_view why) {
  log::Warning(
      "auth.refused",
      {{"method", req.method}, {"path", req.path}, {"peer", PeerAddress(req)}, {"why", why}});
}

}  // namespace shoal::net
