// /v1/nodes: the list and one node, drain/resume, and what the agents send
// (register, heartbeat, acceptance results).
#include <fmt/format.h>

#include <string>
#include <utility>

#include "api/node_protocol.h"
#include "net/tls.h"
#include "server/routes.h"

namespace shoal::server::routes {

namespace {

// An agent partitions its GPUs within two minutes (agent_mig.cc).
constexpr int kMigReadTimeoutMs = 130'000;

// The page of nodes `f` selects: captured on the loop, written as JSON here.
Result<ListingPage> ReadNodePage(const Context& ctx, const NodeFilter& f) {
  SHOAL_ASSIGN_OR_RETURN(NodePage nodes, ctx.loop.Call<NodePage>([f](Controller& c, Time) {
    return Result<NodePage>(c.ListNodes(f));
  }));
  ListingPage page;
  for (const NodeView& v : nodes.nodes) {
    if (!page.objects.empty()) page.objects += ',';
    page.objects += NodeViewJson(v).dump();
  }
  if (nodes.next_after) page.next_after = Json(*nodes.next_after);
  return page;
}

// GET /v1/nodes?state=&partition=&model=&limit=&after=: with `limit`, one page
// in name order ({"nodes": [...], "next_after": name} while more follow);
// without, every node, streamed a page at a time. ?summary=1: nodes and GPUs
// by model and state instead.
void ListNodes(const Context& ctx, const Identity&, const httplib::Request& req,
               httplib::Response& res) {
  constexpr size_t kStreamPage = 500;
  if (req.get_param_value("summary") == "1") {
    return Reply(res, ctx.loop.Call<Json>(
                          [](Controller& c, Time) -> Result<Json> { return c.NodeSummary(); }));
  }
  NodeFilter f;
  if (req.has_param("state")) {
    auto state = ParseNodeState(req.get_param_value("state"));
    if (!state.ok()) return Reply(res, state.status());
    f.state = *state;
  }
  f.partition = req.get_param_value("partition");
  f.model = req.get_param_value("model");
  f.after = req.get_param_value("after");
  const bool paged = req.has_param("limit");
  auto limit = PageLimit(req, kStreamPage);
  if (!limit.ok()) return Reply(res, limit.status());
  f.limit = *limit;
  auto first = ReadNodePage(ctx, f);
  if (!first.ok()) return Reply(res, first.status());
  ReplyListing(res, "nodes", paged, std::move(*first), [&ctx, f](const Json& after) {
    NodeFilter next = f;
    next.after = after.get<std::string>();
    return ReadNodePage(ctx, next);
  });
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
  Result<Json> answer =
      ctx.loop.Call<Json>([who, n = std::move(*node)](Controller& c, Time now) mutable {
        return c.RegisterNode(who, std::move(n), now);
      });
  // A node that proved itself by certificate gets a session for its later
  // connections (TokenCache::NodeSession); one that came with a session
  // keeps it.
  if (answer.ok() && ctx.tls()) {
    if (const net::PeerCertificate peer = net::PeerOf(req.ssl); !peer.empty()) {
      const std::string session =
          ctx.tokens.NodeSession(peer, net::PeerNotAfter(req.ssl), ctx.clock.Now());
      if (!session.empty()) (*answer)["node_session"] = session;
    }
  }
  Reply(res, answer);
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

// POST /v1/nodes/{name}/mig {"layout": "7x1g.10gb", "gpus": [0]}: checked
// here, applied by the node's agent, which registers the new GPUs before
// it answers; its answer (the GPUs now) is the reply.
void PartitionNode(const Context& ctx, const Identity& who, const httplib::Request& req,
                   httplib::Response& res) {
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  auto order = api::MigOrderFromJson(*body);
  if (!order.ok()) return Reply(res, order.status());
  const std::string name = req.matches[1].str();
  auto address = ctx.loop.Call<std::string>([who, name, o = *order](Controller& c, Time) {
    return c.MigTarget(who, name, o.layout, o.gpus);
  });
  if (!address.ok()) return Reply(res, address.status());
  ProxyAgentPost(ctx, name, *address, "/v1/mig", api::ToJson(*order).dump(), res,
                 kMigReadTimeoutMs);
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

// The cluster CA's certificate, for a client that checks it against a
// fingerprint it was given (an agent joining with --ca-fingerprint).
void ShowCa(const Context& ctx, const httplib::Request&, httplib::Response& res) {
  if (!ctx.tls()) return Reply(res, NotFound("this server serves plain HTTP: it has no CA"));
  Reply(res,
        Json{{"ca", ctx.agents.pki->ca.cert_pem}, {"fingerprint", ctx.agents.pki->ca_fingerprint}});
}

// A node joins: a join token, its name (or the one the token names) and a
// certificate request for its own key; the answer is its certificate.
void JoinNode(const Context& ctx, const httplib::Request& req, httplib::Response& res) {
  auto who = ctx.Auth(req, /*allow_join=*/true);
  if (!who.ok()) return Reply(res, who.status());
  if (!ctx.tls()) {
    return Reply(res, FailedPrecondition("this server serves plain HTTP: agents use the node "
                                         "token instead of joining"));
  }
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  auto join = api::JoinRequestFromJson(*body);
  if (!join.ok()) return Reply(res, join.status());
  // The name asked for; a token bound to a node refuses any other (Join).
  const std::string name = join->name.empty() ? who->node_name : join->name;
  if (!IsValidNodeName(name))
    return Reply(res, InvalidArgument(fmt::format("'{}' is not a node name", name)));
  auto cert = net::SignRequest(ctx.agents.pki->ca, join->csr, name, join->names,
                               ctx.options.tls.node_cert_days);
  if (!cert.ok()) return Reply(res, cert.status());
  auto fingerprint = net::Fingerprint(*cert);
  if (!fingerprint.ok()) return Reply(res, fingerprint.status());
  const api::JoinAnswer answer{
      .name = name, .certificate = *cert, .ca = ctx.agents.pki->ca.cert_pem};
  Reply(res, ctx.loop.Call<Json>([w = *who, name, fp = *fingerprint, answer](
                                     Controller& c, Time now) -> Result<Json> {
    SHOAL_RETURN_IF_ERROR(c.Join(w, name, fp, now));
    return api::ToJson(answer);
  }));
}

}  // namespace

void AddNodeRoutes(httplib::Server& http, const Context& ctx) {
  http.Get("/v1/ca", Handle(ctx, ShowCa));
  http.Post("/v1/join", Handle(ctx, JoinNode));
  http.Get("/v1/nodes", HandleAuthed(ctx, ListNodes));
  http.Get(R"(/v1/nodes/([A-Za-z0-9._-]+))", HandleAuthed(ctx, ShowNode));
  http.Post("/v1/nodes/register", HandleAuthed(ctx, RegisterNode));
  http.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/heartbeat)", HandleAuthed(ctx, ReceiveHeartbeat));
  http.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/(drain|resume))", HandleAuthed(ctx, DrainOrResume));
  http.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/acceptance)", HandleAuthed(ctx, RecordAcceptance));
  http.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/mig)", HandleAuthed(ctx, PartitionNode));
}

}  // namespace shoal::server::routes
