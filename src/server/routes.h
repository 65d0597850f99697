// The HTTP API's routes, one file per resource (routes_*.cc), and what they
// share: the server's parts they reach, authentication and the JSON replies.
// Internal to the server: included by server.cc and routes_*.cc only (it
// brings httplib and nlohmann/json along).
#pragma once

#include <httplib.h>

#include <functional>
#include <optional>
#include <string>

#include "api/json.h"
#include "core/job.h"
#include "core/status.h"
#include "core/strings.h"
#include "core/time.h"
#include "net/http_guard.h"
#include "server/agent_link.h"
#include "server/auth.h"
#include "server/loop.h"
#include "server/server.h"
#include "server/telemetry_store.h"
#include "state/store.h"

namespace shoal::net {
class HttpServer;
}  // namespace shoal::net

namespace shoal::server::routes {

using api::Json;

// What the handlers use of the server. It lives as long as the server; the
// handlers run on the HTTP threads and reach the controller only through the
// loop.
struct Context {
  ControlLoop& loop;
  state::Store& store;  // the history, for jobs the controller no longer holds
  TelemetryStore& telemetry;
  const TokenCache& tokens;
  const Clock& clock;
  const ServerOptions& options;
  // How requests to the agents (log reads) prove the controller; its pki
  // is the controller's TLS identity and CA, null on a plain-HTTP server.
  const AgentCredentials& agents;
  // The API listener, for its connection counts on /metrics (null in tests
  // that route without one).
  const net::HttpServer* listener = nullptr;

  bool tls() const { return agents.pki != nullptr; }
  // Who asks, noted for the access log (net/http_guard.h); a refusal is logged.
  Result<Identity> Auth(const httplib::Request& req, bool allow_join = false) const {
    Result<Identity> who =
        tokens.IdentityOf(net::PeerOf(req.ssl), req.get_header_value("Authorization"), clock.Now(),
                          tls(), allow_join);
    if (!who.ok()) {
      net::LogAuthRefused(req, who.status().message());
    } else {
      net::RequesterIs(who->node() && !who->node_name.empty() ? who->node_name : who->user,
                       who->role, who->node());
    }
    return who;
  }
};

inline void Reply(httplib::Response& res, const Status& s) {
  res.status = api::HttpStatus(s);
  res.set_content(api::ErrorBody(s).dump(), "application/json");
}

inline void Reply(httplib::Response& res, const Json& body, int status = 200) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

template <typename T>
void Reply(httplib::Response& res, const Result<T>& r, int status = 200) {
  if (!r.ok()) {
    Reply(res, r.status());
    return;
  }
  Reply(res, *r, status);
}

// A route's handler, with the server's parts at hand.
using Handler = void (*)(const Context& ctx, const httplib::Request& req, httplib::Response& res);
// One for an authenticated caller: the route answers 401 before it runs
// when the request carries no valid token.
using AuthedHandler = void (*)(const Context& ctx, const Identity& who, const httplib::Request& req,
                               httplib::Response& res);

inline httplib::Server::Handler Handle(const Context& ctx, Handler h) {
  return [c = &ctx, h](const httplib::Request& req, httplib::Response& res) { h(*c, req, res); };
}

inline httplib::Server::Handler HandleAuthed(const Context& ctx, AuthedHandler h) {
  return [c = &ctx, h](const httplib::Request& req, httplib::Response& res) {
    auto who = c->Auth(req);
    if (!who.ok()) {
      Reply(res, who.status());
      return;
    }
    // A job token works only while its job runs.
    if (who->job != 0) {
      auto live = c->loop.Call<Json>([w = *who](Controller& ctl, Time) -> Result<Json> {
        SHOAL_RETURN_IF_ERROR(ctl.CheckJobToken(w));
        return Json();
      });
      if (!live.ok()) return Reply(res, live.status());
    }
    h(*c, *who, req, res);
  };
}

// The job id of a route whose first group is (\d+).
inline Result<JobId> JobIdOf(const httplib::Request& req) {
  auto v = ParseInt(req.matches[1].str());
  if (!v.ok() || *v <= 0) return InvalidArgument("bad job id");
  return JobId(static_cast<uint64_t>(*v));
}

// One page of a listing: its objects' JSON, comma-separated, and the cursor
// of the page after it (a job id, a node name), none on the last page.
struct ListingPage {
  std::string objects;
  std::optional<Json> next_after;
};
// A listing's `limit` parameter (1 to state::kMaxHistoryLimit), or
// `stream_page` when the request has none (then every page is sent).
Result<size_t> PageLimit(const httplib::Request& req, size_t stream_page);
// Reads the page after a cursor (on an HTTP thread, reaching the loop once).
using PageReader = std::function<Result<ListingPage>(const Json& after)>;
// Answers a listing as {"KEY": [...], "next_after": cursor}: `first` alone
// when `paged` (the cursor while more follow), else every page, streamed
// one at a time so that neither the server nor the loop holds the whole
// listing. A page that cannot be read ends the connection before the
// closing bracket: the client sees a broken listing, never a short one
// that looks whole.
void ReplyListing(httplib::Response& res, const std::string& key, bool paged, ListingPage first,
                  PageReader next);

// Each adds its resource's routes to `http`; `ctx` must outlive `http`.
void AddJobRoutes(httplib::Server& http, const Context& ctx);      // jobs, their logs, history
void AddNodeRoutes(httplib::Server& http, const Context& ctx);     // nodes and what agents send
void AddAccountRoutes(httplib::Server& http, const Context& ctx);  // whoami, partitions,
                                                                   // accounts, tokens
void AddMetricsRoutes(httplib::Server& http, const Context& ctx);  // /metrics, stats, series
void AddStepRoutes(httplib::Server& http, const Context& ctx);     // a job's steps (shoal run)
void AddQosRoutes(httplib::Server& http, const Context& ctx);      // QoS and reservations

// Answers with the bytes of `path` on the agent of `node` (a job's or a
// task's output), its size and path in X-Shoal-Size and X-Shoal-Path.
void ProxyAgentOutput(const Context& ctx, const std::string& node, const std::string& address,
                      const std::string& path, httplib::Response& res);
// Posts `body` (bytes) to `path` on the agent of `node` and answers as it did.
void ProxyAgentPost(const Context& ctx, const std::string& node, const std::string& address,
                    const std::string& path, const std::string& body, httplib::Response& res,
                    int read_timeout_ms = 10000);
// What one request may type into a --pty step's terminal.
inline constexpr size_t kMaxTerminalInputBytes = 64 * 1024;

}  // namespace shoal::server::routes
