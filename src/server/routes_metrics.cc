// What the server measures: /metrics (Prometheus), /v1/stats (the loop) and
// the GPU time series of the cluster, a node and a job.
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "net/http_server.h"
#include "server/metrics.h"
#include "server/routes.h"

namespace shoal::server::routes {

namespace {

// ?since=&until=<unix seconds> of the series endpoints (default: everything
// kept), both ends included.
Result<TelemetryStore::Range> RangeOf(const httplib::Request& req) {
  TelemetryStore::Range r;
  for (const auto& [name, end] : {std::pair{"since", &r.from}, std::pair{"until", &r.to}}) {
    if (!req.has_param(name)) continue;
    auto v = ParseDouble(req.get_param_value(name));
    if (!v.ok() || !(*v >= 0) || *v > 1e11)
      return InvalidArgument(fmt::format("{} must be Unix seconds", name));
    *end = TimeFromSeconds(*v);
  }
  if (r.to < r.from) return InvalidArgument("until must not be before since");
  return r;
}

// [[t,util,mem_mib,power_w,temp_c],...] without a JSON document per point.
void AppendPoints(std::string& out, const std::vector<TelemetryStore::Point>& points) {
  out += '[';
  for (size_t i = 0; i < points.size(); ++i) {
    const TelemetryStore::Point& p = points[i];
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "[{},{},{},{},{}]", static_cast<int64_t>(p.t),
                   p.util_pct, static_cast<int64_t>(p.mem_mib), p.power_w, p.temp_c);
  }
  out += ']';
}

// Prometheus: the view is captured on the loop, the text built here.
void Metrics(const Context& ctx, const httplib::Request& req, httplib::Response& res) {
  if (!ctx.options.metrics_public) {
    auto who = ctx.Auth(req);
    if (!who.ok()) return Reply(res, who.status());
  }
  auto view = ctx.loop.Call<MetricsView>(
      [](Controller& c, Time) -> Result<MetricsView> { return c.Metrics(); });
  if (!view.ok()) return Reply(res, view.status());
  res.status = 200;
  MetricsOptions options{.per_gpu = ctx.options.metrics_per_gpu};
  if (ctx.listener != nullptr) {
    options.listener = ListenerCounts{.open = ctx.listener->open_connections(),
                                      .idle = ctx.listener->idle_connections(),
                                      .refused = ctx.listener->refused_connections()};
  }
  res.set_content(RenderMetrics(*view, ctx.loop.Stats(), ctx.clock.Now(), options),
                  kMetricsContentType);
}

void LoopStatistics(const Context& ctx, const Identity& who, const httplib::Request&,
                    httplib::Response& res) {
  if (!who.admin())
    return Reply(res,
                 Status(StatusCode::kPermissionDenied, "only admins see the server's statistics"));
  const LoopStats st = ctx.loop.Stats();
  Reply(res, Json{{"calls", st.calls},
                  {"transactions", st.batches},
                  {"passes", st.passes},
                  {"rejected", st.rejected},
                  {"last_pass_ms", st.last_pass_ms},
                  {"mean_pass_ms",
                   st.passes == 0 ? 0.0 : st.pass_ms_total / static_cast<double>(st.passes)}});
}

// Appends `points` as [[t,a,b],...]: whole Unix seconds and two figures.
template <typename P>
void AppendPoints(std::string& body, const std::vector<P>& points, double P::*a, double P::*b) {
  body += '[';
  bool first = true;
  for (const P& p : points) {
    if (!first) body += ',';
    first = false;
    fmt::format_to(std::back_inserter(body), "[{},{},{}]", static_cast<int64_t>(p.t), p.*a, p.*b);
  }
  body += ']';
}

void ClusterSeries(const Context& ctx, const Identity&, const httplib::Request& req,
                   httplib::Response& res) {
  auto range = RangeOf(req);
  if (!range.ok()) return Reply(res, range.status());
  const TelemetryStore::ClusterSeriesResult series = ctx.telemetry.ClusterSeries(*range);
  std::string body = fmt::format("{{\"step_s\":{},\"points\":", series.step_s);
  AppendPoints(body, series.points, &TelemetryStore::ClusterPoint::mean_util_pct,
               &TelemetryStore::ClusterPoint::allocated_fraction);
  body += "}";
  res.status = 200;
  res.set_content(std::move(body), "application/json");
}

// Each power budget's cap and, over the range, its expected and measured draw.
void PowerSeries(const Context& ctx, const Identity&, const httplib::Request& req,
                 httplib::Response& res) {
  auto range = RangeOf(req);
  if (!range.ok()) return Reply(res, range.status());
  std::string body = fmt::format("{{\"step_s\":{},\"budgets\":[",
                                 static_cast<int64_t>(ToSeconds(ctx.telemetry.interval())));
  bool first_budget = true;
  for (const TelemetryStore::PowerSeries& s : ctx.telemetry.PowerBudgetSeries(*range)) {
    if (!first_budget) body += ',';
    first_budget = false;
    fmt::format_to(std::back_inserter(body),
                   "{{\"name\":{},\"cap_w\":{},\"points\":", Json(s.name).dump(), s.cap_w);
    AppendPoints(body, s.points, &TelemetryStore::PowerPoint::expected_w,
                 &TelemetryStore::PowerPoint::gpu_w);
    body += "}";
  }
  body += "]}";
  res.status = 200;
  res.set_content(std::move(body), "application/json");
}

void NodeSeries(const Context& ctx, const Identity&, const httplib::Request& req,
                httplib::Response& res) {
  const std::string name = req.matches[1].str();
  auto range = RangeOf(req);
  if (!range.ok()) return Reply(res, range.status());
  auto series = ctx.telemetry.NodeSeries(name, *range);
  if (!series) {
    // No telemetry yet: an empty series for a known node, 404 otherwise.
    auto known = ctx.loop.Call<bool>([name](Controller& c, Time) -> Result<bool> {
      SHOAL_RETURN_IF_ERROR(c.NodeJson(name).status());
      return true;
    });
    if (!known.ok()) return Reply(res, known.status());
    series.emplace();
  }
  std::string body =
      fmt::format("{{\"node\":{},\"step_s\":{},\"gpus\":[", Json(name).dump(), series->step_s);
  for (size_t i = 0; i < series->gpus.size(); ++i) {
    if (i > 0) body += ',';
    fmt::format_to(std::back_inserter(body), "{{\"index\":{},\"points\":", series->gpus[i].index);
    AppendPoints(body, series->gpus[i].points);
    body += '}';
  }
  body += "]}";
  res.status = 200;
  res.set_content(std::move(body), "application/json");
}

// A job's JSON view, from the controller or else from the history (users:
// their own jobs only).
Result<Json> JobViewOf(const Context& ctx, const Identity& who, JobId id) {
  auto job = ctx.loop.Call<Json>([who, id](Controller& c, Time) { return c.ShowJob(who, id); });
  if (!job.ok() && job.status().code() == StatusCode::kNotFound) {
    auto old = ctx.store.FindJob(id);
    if (!old.ok()) return old.status();
    if (*old) {
      if (!who.admin() && (*old)->spec.user != who.user) {
        return Status(StatusCode::kPermissionDenied, "that job belongs to another user");
      }
      job = ctx.loop.Call<Json>(
          [j = std::make_shared<const Job>(**old)](Controller& c, Time) -> Result<Json> {
            return JobViewJson(c.View(j));
          });
    }
  }
  return job;
}

// A job's GPUs over its run time (users: their own jobs).
void JobSeries(const Context& ctx, const Identity& who, const httplib::Request& req,
               httplib::Response& res) {
  auto id = JobIdOf(req);
  if (!id.ok()) return Reply(res, id.status());
  auto range = RangeOf(req);
  if (!range.ok()) return Reply(res, range.status());
  auto job = JobViewOf(ctx, who, *id);
  if (!job.ok()) return Reply(res, job.status());
  const Json& j = *job;
  const Time start =
      j.contains("start_time") ? TimeFromSeconds(j["start_time"].get<double>()) : Time{};
  const Time end = j.contains("end_time") && j.value("state", "") != "running"
                       ? TimeFromSeconds(j["end_time"].get<double>())
                       : ctx.clock.Now();
  const TelemetryStore::Range span{std::max(start, range->from), std::min(end, range->to)};
  std::string body = fmt::format("{{\"job\":{},\"gpus\":[", id->value());
  bool first = true;
  if (start != Time{}) {
    for (const Json& a : j.value("allocation", Json::array())) {
      const std::string node = a.value("node", std::string());
      for (const Json& g : a.value("gpus", Json::array())) {
        if (!first) body += ',';
        first = false;
        const int index = g.get<int>();
        body += "{\"node\":" + Json(node).dump();
        fmt::format_to(std::back_inserter(body), ",\"index\":{},\"points\":", index);
        AppendPoints(body, ctx.telemetry.GpuPoints(node, index, span));
        body += '}';
      }
    }
  }
  body += "]}";
  res.status = 200;
  res.set_content(std::move(body), "application/json");
}

}  // namespace

void AddMetricsRoutes(httplib::Server& http, const Context& ctx) {
  http.Get("/v1/stats", HandleAuthed(ctx, LoopStatistics));
  http.Get("/metrics", Handle(ctx, Metrics));
  http.Get("/v1/cluster/series", HandleAuthed(ctx, ClusterSeries));
  http.Get("/v1/power/series", HandleAuthed(ctx, PowerSeries));
  http.Get(R"(/v1/nodes/([A-Za-z0-9._-]+)/series)", HandleAuthed(ctx, NodeSeries));
  http.Get(R"(/v1/jobs/(\d+)/series)", HandleAuthed(ctx, JobSeries));
}

}  // namespace shoal::server::routes
