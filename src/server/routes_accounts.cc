// Who may do what: /v1/whoami, /v1/partitions, /v1/accounts, /v1/tokens.
#include <string>

#include "api/json_reader.h"
#include "server/routes.h"

namespace shoal::server::routes {

namespace {

void WhoAmI(const Context&, const Identity& who, const httplib::Request&, httplib::Response& res) {
  Reply(res, Json{{"user", who.user}, {"role", who.role}});
}

void ListPartitions(const Context& ctx, const Identity&, const httplib::Request&,
                    httplib::Response& res) {
  Reply(res, ctx.loop.Call<Json>([](Controller& c, Time) -> Result<Json> {
    return Json{{"partitions", c.PartitionsJson()}};
  }));
}

void PutPartition(const Context& ctx, const Identity& who, const httplib::Request& req,
                  httplib::Response& res) {
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  auto p = api::PartitionFromJson(*body);
  if (!p.ok()) return Reply(res, p.status());
  Reply(res, ctx.loop.Call<Json>([who, p = *p](Controller& c, Time) -> Result<Json> {
    SHOAL_RETURN_IF_ERROR(c.PutPartition(who, p));
    return api::ToJson(p);
  }));
}

void ListAccounts(const Context& ctx, const Identity&, const httplib::Request&,
                  httplib::Response& res) {
  Reply(res, ctx.loop.Call<Json>([](Controller& c, Time) -> Result<Json> {
    return Json{{"accounts", c.AccountsJson()}};
  }));
}

void PutAccount(const Context& ctx, const Identity& who, const httplib::Request& req,
                httplib::Response& res) {
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  auto a = api::AccountFromJson(*body);
  if (!a.ok()) return Reply(res, a.status());
  Reply(res, ctx.loop.Call<Json>([who, a = *a](Controller& c, Time) -> Result<Json> {
    SHOAL_RETURN_IF_ERROR(c.PutAccount(who, a));
    return api::ToJson(a);
  }));
}

void ListTokens(const Context& ctx, const Identity& who, const httplib::Request&,
                httplib::Response& res) {
  Reply(res, ctx.loop.Call<Json>([who](Controller& c, Time) -> Result<Json> {
    SHOAL_ASSIGN_OR_RETURN(Json t, c.TokensJson(who));
    return Json{{"tokens", t}};
  }));
}

void CreateToken(const Context& ctx, const Identity& who, const httplib::Request& req,
                 httplib::Response& res) {
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  // {"user": "...", "role": "admin|user|node|join", "ttl_s": 86400, "node": "gpu01"}
  TokenRequest request;
  double ttl_s = 0;
  api::ObjectReader f(*body, "token");
  f.Optional("user", &request.user);
  f.Required("role", &request.role);
  f.Optional("ttl_s", &ttl_s);
  f.Optional("node", &request.node);
  if (Status s = f.Finish(); !s.ok()) return Reply(res, s);
  if (ttl_s < 0 || ttl_s > 100.0 * 365 * 86400)
    return Reply(res, InvalidArgument("token.ttl_s must be 0 (never expires) to 100 years"));
  request.ttl = DurationFromSeconds(ttl_s);
  Reply(res, ctx.loop.Call<Json>([who, request](Controller& c, Time now) {
    return c.CreateToken(who, request, now);
  }),
        201);
}

void RevokeToken(const Context& ctx, const Identity& who, const httplib::Request& req,
                 httplib::Response& res) {
  const std::string id = req.matches[1].str();
  Reply(res, ctx.loop.Call<Json>([who, id](Controller& c, Time) -> Result<Json> {
    SHOAL_RETURN_IF_ERROR(c.RevokeToken(who, id));
    return Json{{"revoked", id}};
  }));
}

}  // namespace

void AddAccountRoutes(httplib::Server& http, const Context& ctx) {
  http.Get("/v1/whoami", HandleAuthed(ctx, WhoAmI));
  http.Get("/v1/partitions", HandleAuthed(ctx, ListPartitions));
  http.Post("/v1/partitions", HandleAuthed(ctx, PutPartition));
  http.Get("/v1/accounts", HandleAuthed(ctx, ListAccounts));
  http.Post("/v1/accounts", HandleAuthed(ctx, PutAccount));
  http.Get("/v1/tokens", HandleAuthed(ctx, ListTokens));
  http.Post("/v1/tokens", HandleAuthed(ctx, CreateToken));
  http.Delete(R"(/v1/tokens/([0-9a-f]+))", HandleAuthed(ctx, RevokeToken));
}

}  // namespace shoal::server::routes
