// What admins set for scheduling beyond partitions and accounts: /v1/qos and
// /v1/reservations. Anyone may list them; changes are for admins (the
// controller checks).
#include <string>

#include "api/json_reader.h"
#include "server/routes.h"

namespace shoal::server::routes {

namespace {

void ListQos(const Context& ctx, const Identity&, const httplib::Request&, httplib::Response& res) {
  Reply(res, ctx.loop.Call<Json>([](Controller& c, Time) -> Result<Json> {
    return Json{{"qos", c.QosJson()}};
  }));
}

void PutQos(const Context& ctx, const Identity& who, const httplib::Request& req,
            httplib::Response& res) {
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  auto q = api::QosFromJson(*body);
  if (!q.ok()) return Reply(res, q.status());
  Reply(res, ctx.loop.Call<Json>([who, q = *q](Controller& c, Time) -> Result<Json> {
    SHOAL_RETURN_IF_ERROR(c.PutQos(who, q));
    return api::ToJson(q);
  }));
}

void DeleteQos(const Context& ctx, const Identity& who, const httplib::Request& req,
               httplib::Response& res) {
  const std::string name = req.matches[1].str();
  Reply(res, ctx.loop.Call<Json>([who, name](Controller& c, Time) -> Result<Json> {
    SHOAL_RETURN_IF_ERROR(c.DeleteQos(who, name));
    return Json{{"deleted", name}};
  }));
}

void ListReservations(const Context& ctx, const Identity&, const httplib::Request&,
                      httplib::Response& res) {
  Reply(res, ctx.loop.Call<Json>([](Controller& c, Time now) -> Result<Json> {
    return Json{{"reservations", c.ReservationsJson(now)}};
  }));
}

// {"name": "maint", "start": <Unix s>, "end": <Unix s> | "duration_s": S, "nodes": [...] |
//  "node_count": N | "gpu_count": N, "partition": "...", "users": [...],
//  "accounts": [...], "maintenance": true}
void CreateReservation(const Context& ctx, const Identity& who, const httplib::Request& req,
                       httplib::Response& res) {
  auto body = api::Parse(req.body);
  if (!body.ok()) return Reply(res, body.status());
  ReservationRequest request;
  Json record = *body;
  if (record.is_object()) {
    // The counts are the request's, not the record's.
    api::ObjectReader f(*body, "reservation", api::UnknownFields::kIgnore);
    f.Optional("node_count", &request.node_count);
    f.Optional("gpu_count", &request.gpu_count);
    f.Optional("partition", &request.partition);
    double duration_s = 0;
    f.Optional("duration_s", &duration_s);
    if (Status s = f.Finish(); !s.ok()) return Reply(res, s);
    for (const char* key : {"node_count", "gpu_count", "partition", "duration_s"})
      record.erase(key);
    if (request.node_count < 0 || request.gpu_count < 0)
      return Reply(res, InvalidArgument("reservation: counts cannot be negative"));
    if (!(duration_s >= 0 && duration_s <= 100.0 * 365 * 86400))
      return Reply(res, InvalidArgument("reservation.duration_s: 0 to 100 years"));
    request.duration = DurationFromSeconds(duration_s);
    // With a duration, the end follows from the start.
    if (duration_s > 0 && !record.contains("end") && record.contains("start") &&
        record["start"].is_number()) {
      record["end"] = record["start"].get<double>() + duration_s;
    }
  }
  auto r = api::ReservationFromJson(record);
  if (!r.ok()) return Reply(res, r.status());
  request.reservation = *r;
  Reply(res, ctx.loop.Call<Json>([who, request](Controller& c, Time now) {
    return c.CreateReservation(who, request, now);
  }),
        201);
}

void DeleteReservation(const Context& ctx, const Identity& who, const httplib::Request& req,
                       httplib::Response& res) {
  const std::string name = req.matches[1].str();
  Reply(res, ctx.loop.Call<Json>([who, name](Controller& c, Time) -> Result<Json> {
    SHOAL_RETURN_IF_ERROR(c.DeleteReservation(who, name));
    return Json{{"deleted", name}};
  }));
}

}  // namespace

void AddQosRoutes(httplib::Server& http, const Context& ctx) {
  http.Get("/v1/qos", HandleAuthed(ctx, ListQos));
  http.Post("/v1/qos", HandleAuthed(ctx, PutQos));
  http.Delete(R"(/v1/qos/([A-Za-z0-9._-]+))", HandleAuthed(ctx, DeleteQos));
  http.Get("/v1/reservations", HandleAuthed(ctx, ListReservations));
  http.Post("/v1/reservations", HandleAuthed(ctx, CreateReservation));
  http.Delete(R"(/v1/reservations/([A-Za-z0-9._-]+))", HandleAuthed(ctx, DeleteReservation));
}

}  // namespace shoal::server::routes
