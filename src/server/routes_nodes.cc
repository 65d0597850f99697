// /v1/nodes: the list and one node, drain/resume, and what the agents send
// (register, heartbeat, acceptance results).
#include <fmt/format.h>

#include <string>
#include <utility>

#include "api/node_protocol.h"
#include "server/routes.h"

namespace shoal::server::routes {

namespace {

void ListNodes(const Context& ctx, const Identity&, const httplib::Request&,
               httplib::Response& res) {
  Reply(res, ctx.loop.Call<Json>([](Controller& c, Time) -> Result<Json> {
    return Json{{"nodes", c.NodesJson()}};
  }));
}

void ShowNode(const Context& ctx, const Identity&, const httplib::Request& req,
              httplib::Response& res) {
  const std::string name = req.matches[1].str();
  Reply(res, ctx.loop.Call<Json>([name](Controller& c, Time) { return c.NodeJson(name); }));
}

void RegisterNode(const Context& ctx, const Identity& who, const httplib::Request& req,
                  httplib::Response& res) {
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  auto node = api::RegistrationFromJson(*body);
  if (!node.ok()) return Reply(res, node.status());
  Reply(res, ctx.loop.Call<Json>([who, n = std::move(*node)](Controller& c, Time now) mutable {
    return c.RegisterNode(who, std::move(n), now);
  }));
}

void ReceiveHeartbeat(const Context& ctx, const Identity& who, const httplib::Request& req,
                      httplib::Response& res) {
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  auto hb = api::HeartbeatFromJson(*body);
  if (!hb.ok()) return Reply(res, hb.status());
  const std::string name = req.matches[1].str();
  Reply(res, ctx.loop.Call<Json>([who, name, h = std::move(*hb)](Controller& c, Time now) {
    return c.ReceiveHeartbeat(who, name, h, now);
  }));
}

// drain or resume (the route's second group), with an optional reason.
void DrainOrResume(const Context& ctx, const Identity& who, const httplib::Request& req,
                   httplib::Response& res) {
  const std::string name = req.matches[1].str();
  const std::string action = req.matches[2].str();
  std::string reason;
  if (!req.body.empty()) {
    auto body = api::Parse(req.body);
    if (!body.ok()) return Reply(res, body.status());
    if (!body->is_object() || (body->contains("reason") && !(*body)["reason"].is_string())) {
      return Reply(res, InvalidArgument("body is {\"reason\": \"...\"}"));
    }
    reason = body->value("reason", std::string());
  }
  Reply(res,
        ctx.loop.Call<Json>([who, name, action, reason](Controller& c, Time now) -> Result<Json> {
          SHOAL_RETURN_IF_ERROR(action == "drain" ? c.Drain(who, name, reason, now)
                                                  : c.Resume(who, name, now));
          return Json{{"node", name}, {"done", action}};
        }));
}

void RecordAcceptance(const Context& ctx, const Identity& who, const httplib::Request& req,
                      httplib::Response& res) {
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  auto result = api::AcceptanceFromJson(*body);
  if (!result.ok()) return Reply(res, result.status());
  const std::string name = req.matches[1].str();
  Reply(res,
        ctx.loop.Call<Json>([who, name, r = std::move(*result)](Controller& c, Time now) mutable {
          return c.RecordAcceptance(who, name, std::move(r), now);
        }));
}

}  // namespace

void AddNodeRoutes(httplib::Server& http, const Context& ctx) {
  http.Get("/v1/nodes", HandleAuthed(ctx, ListNodes));
  http.Get(R"(/v1/nodes/([A-Za-z0-9._-]+))", HandleAuthed(ctx, ShowNode));
  http.Post("/v1/nodes/register", HandleAuthed(ctx, RegisterNode));
  http.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/heartbeat)", HandleAuthed(ctx, ReceiveHeartbeat));
  http.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/(drain|resume))", HandleAuthed(ctx, DrainOrResume));
  http.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/acceptance)", HandleAuthed(ctx, RecordAcceptance));
}

}  // namespace shoal::server::routes
