#include "net/http_guard.h"

#include <httplib.h>

#include <charconv>
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace shoal::net {
namespace {

httplib::Server::HandlerResponse Refuse(httplib::Response& res, int status, const char* error,
                                        const std::string& detail) {
  res.status = status;
  res.set_header("Connection", "close");
  res.set_content(fmt::format(R"({{"error":"{}","detail":"{}"}})", error, detail), "application/json");
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

void GuardRequests(httplib::Server& http, RequestGuard guard) {
  http.set_payload_max_length(guard.max_body_bytes);
  http.set_pre_routing_handler([guard = std::move(guard)](const httplib::Request& req, httplib::Response& res) {
    if (req.has_header("Transfer-Encoding")) {
      return Refuse(res, 411, "invalid_argument", "a request body must come with Content-Length; chunked bodies are "
                                                 "not accepted");
    }
    const std::string declared = req.get_header_value("Content-Length");
    uint64_t length = 0;
    if (!declared.empty()) {
      auto [end, error] = std::from_chars(declared.data(), declared.data() + declared.size(), length);
      if (error != std::errc() || end != declared.data() + declared.size()) {
        return Refuse(res, 400, "invalid_argument", "Content-Length is not a number");
      }
    }
    const bool is_public = guard.is_public && guard.is_public(req);
    if (!is_public && !(guard.is_authenticated && guard.is_authenticated(req))) {
      return Refuse(res, 401, "unauthenticated", "a valid token is required");
    }
    if (is_public && length > 0) {
      return Refuse(res, 413, "resource_exhausted", "this request takes no body");
    }
    if (length > guard.max_body_bytes) {
      return Refuse(res, 413, "resource_exhausted",
                    fmt::format("the body is {} bytes; at most {} are accepted", length, guard.max_body_bytes));
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

}  // namespace shoal::net
