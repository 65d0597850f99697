#include "server/server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "api/json.h"
#include "core/strings.h"
#include "net/http_client.h"
#include "net/http_guard.h"
#include "net/http_server.h"
#include "net/local_socket.h"
#include "net/token.h"
#include "server/agent_link.h"
#include "server/auth.h"
#include "server/dashboard.h"
#include "server/metrics.h"
#include "server/telemetry_store.h"

namespace shoal::server {

namespace {

using api::Json;

void Reply(httplib::Response& res, const Status& s) {
  res.status = api::HttpStatus(s);
  res.set_content(api::ErrorBody(s).dump(), "application/json");
}

void Reply(httplib::Response& res, const Json& body, int status = 200) {
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

Result<JobId> JobIdOf(const httplib::Request& req) {
  auto v = ParseInt(req.matches[1].str());
  if (!v.ok() || *v <= 0) return InvalidArgument("bad job id");
  return JobId(static_cast<uint64_t>(*v));
}

// ?since=<unix seconds> of the series endpoints (default: everything kept).
Result<Time> SinceOf(const httplib::Request& req) {
  if (!req.has_param("since")) return Time{};
  auto v = ParseDouble(req.get_param_value("since"));
  if (!v.ok() || !(*v >= 0)) return InvalidArgument("since must be Unix seconds");
  return TimeFromSeconds(*v);
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

Status WriteSecretFile(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return Internal(fmt::format("cannot write {}", path));
  const std::string line = text + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  return ok ? Status::Ok() : Internal(fmt::format("cannot write {}", path));
}

std::vector<JobState> ParseStates(const std::string& text, Status* err) {
  std::vector<JobState> out;
  if (text.empty()) return out;
  for (std::string_view s : Split(text, ',')) {
    auto st = ParseJobState(s);
    if (!st.ok()) {
      *err = st.status();
      return {};
    }
    out.push_back(*st);
  }
  return out;
}

// The heartbeat body an agent sends.
Result<Heartbeat> HeartbeatFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("heartbeat must be an object");
  Heartbeat hb;
  try {
    for (const Json& e : j.value("events", Json::array())) {
      JobEvent ev;
      ev.job = JobId(e.at("job").get<uint64_t>());
      ev.epoch = e.at("epoch").get<uint64_t>();
      const std::string kind = e.at("type").get<std::string>();
      if (kind != "started" && kind != "exited")
        return InvalidArgument("event type is started or exited");
      ev.kind = kind == "started" ? JobEvent::kStarted : JobEvent::kExited;
      ev.exit_code = e.value("exit_code", 0);
      ev.signal = e.value("signal", 0);
      ev.message = e.value("message", std::string());
      hb.events.push_back(ev);
    }
    for (const Json& r : j.value("running", Json::array())) {
      hb.running.emplace_back(JobId(r.at("job").get<uint64_t>()), r.at("epoch").get<uint64_t>());
    }
    hb.has_gpus = j.contains("gpus");
    for (const Json& g : j.value("gpus", Json::array())) {
      GpuReport r{
          g.at("index").get<int>(), g.value("healthy", true), g.value("reason", std::string()), {}};
      if (g.contains("util")) {
        GpuTelemetry& t = r.telemetry;
        t.present = true;
        t.util_pct = g.value("util", 0.0);
        t.mem_copy_util_pct = g.value("mem_copy_util", 0.0);
        t.fb_used_mib = g.value("fb_used_mib", int64_t{0});
        t.fb_free_mib = g.value("fb_free_mib", int64_t{0});
        t.power_w = g.value("power_w", 0.0);
        t.temperature_c = g.value("temp_c", 0.0);
        t.sm_clock_mhz = g.value("sm_clock_mhz", 0.0);
        t.energy_j = g.value("energy_j", 0.0);
        t.ecc_corrected = g.value("ecc_corrected", uint64_t{0});
        t.ecc_uncorrected = g.value("ecc_uncorrected", uint64_t{0});
        t.xid_errors = g.value("xid_errors", uint64_t{0});
        t.last_xid = g.value("last_xid", 0);
        t.clock_events = g.value("clock_events", uint64_t{0});
      }
      hb.gpus.push_back(std::move(r));
    }
    if (hb.gpus.size() > static_cast<size_t>(kMaxGpusPerNode))
      return InvalidArgument("heartbeat: too many GPUs");
  } catch (const Json::exception& e) {
    return InvalidArgument(fmt::format("heartbeat: {}", e.what()));
  }
  return hb;
}

}  // namespace

struct Server::Impl {
  ~Impl() {
    if (lock_fd >= 0) ::close(lock_fd);
  }
  std::atomic<bool> listen_returned{false};
  int lock_fd = -1;  // flock on <state_dir>/lock: one controller per state directory
  ServerOptions options;
  const Clock* clock = nullptr;
  std::unique_ptr<TelemetryStore> telemetry;  // outlives the controller, which records into it
  std::unique_ptr<state::Store> store;
  std::unique_ptr<Controller> controller;
  TokenCache tokens;
  std::unique_ptr<AgentLink> agents;
  std::unique_ptr<ControlLoop> loop;
  std::unique_ptr<net::PeerCredListener> local;
  std::map<uid_t, net::LocalToken>
      local_tokens;  // one per uid, touched by the listener thread only
  net::HttpServer http;
  std::thread http_thread;
  int port = 0;
  std::string host;
  std::string admin_token;
  std::string node_token;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopped = false;

  Result<Identity> Auth(const httplib::Request& req) const {
    return tokens.Authenticate(req.get_header_value("Authorization"));
  }

  // Runs fn(identity) when the request is authenticated, else answers 401.
  template <typename F>
  void Authed(const httplib::Request& req, httplib::Response& res, F&& fn) {
    auto who = Auth(req);
    if (!who.ok()) {
      Reply(res, who.status());
      return;
    }
    fn(*who);
  }

  void Routes();
  Result<net::LocalToken> IssueLocalToken(uid_t uid);
};

// The uid that runs the server (and root) is an admin on its own host; any
// other local user is a user under their login name.
Result<net::LocalToken> Server::Impl::IssueLocalToken(uid_t uid) {
  if (auto it = local_tokens.find(uid); it != local_tokens.end()) return it->second;
  SHOAL_ASSIGN_OR_RETURN(std::string user, net::UserName(uid));
  SHOAL_ASSIGN_OR_RETURN(net::NewToken t, net::MakeToken());
  state::TokenRecord record{.id = t.id,
                            .secret_hash = t.hash,
                            .user = user,
                            .role = uid == 0 || uid == ::geteuid() ? "admin" : "user",
                            .created = clock->Now()};
  tokens.AddEphemeral(record);
  return local_tokens[uid] = net::LocalToken{t.text, user};
}

void Server::Impl::Routes() {
  // The web dashboard (web/, embedded): static files that hold no data, so no token.
  RegisterDashboard(http);

  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, Json{{"ok", true}});
  });

  http.Get("/v1/whoami", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      Reply(res, Json{{"user", who.user}, {"role", who.role}});
    });
  });

  http.Post("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto body = api::Parse(req.body);
      if (!body.ok()) return Reply(res, body.status());
      auto spec = api::JobSpecFromJson(*body);
      if (!spec.ok()) return Reply(res, spec.status());
      Reply(res, loop->Call<Json>([who, s = std::move(*spec)](Controller& c, Time now) mutable {
        return c.Submit(who, std::move(s), now);
      }),
            201);
    });
  });

  http.Get("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      JobFilter f;
      f.user = req.get_param_value("user");
      f.all_users = req.get_param_value("all") == "1";
      Status err;
      f.states = ParseStates(req.get_param_value("state"), &err);
      if (!err.ok()) return Reply(res, err);
      // The loop hands back views of the jobs; the JSON is built here, off
      // its thread, one job at a time (no document of every job at once).
      auto views = loop->Call<std::vector<JobView>>(
          [who, f](Controller& c, Time) -> Result<std::vector<JobView>> {
            SHOAL_ASSIGN_OR_RETURN(auto jobs, c.ListJobs(who, f));
            std::vector<JobView> out;
            out.reserve(jobs.size());
            for (auto& j : jobs)
              out.push_back(c.View(std::move(j)));
            return out;
          });
      if (!views.ok()) return Reply(res, views.status());
      std::string body = "{\"jobs\":[";
      for (size_t i = 0; i < views->size(); ++i) {
        if (i > 0) body += ',';
        body += JobViewJson((*views)[i]).dump();
      }
      body += "]}";
      res.status = 200;
      res.set_content(std::move(body), "application/json");
    });
  });

  http.Get(R"(/v1/jobs/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto id = JobIdOf(req);
      if (!id.ok()) return Reply(res, id.status());
      auto r =
          loop->Call<Json>([who, id = *id](Controller& c, Time) { return c.ShowJob(who, id); });
      if (r.ok() || r.status().code() != StatusCode::kNotFound) return Reply(res, r);
      // Not in memory: the history may have it.
      auto old = store->FindJob(*id);
      if (!old.ok()) return Reply(res, old.status());
      if (!*old) return Reply(res, r.status());
      if (!who.admin() && (*old)->spec.user != who.user) {
        return Reply(res,
                     Status(StatusCode::kPermissionDenied, "that job belongs to another user"));
      }
      Reply(res, api::ToJson(**old));
    });
  });

  // A chunk of a job's output (?stream=stdout|stderr&offset=N), read from
  // the agent of its first node. The body is the raw bytes; X-Shoal-Size is
  // the file's size, so that `shoal logs -f` knows where to read on.
  http.Get(R"(/v1/jobs/(\d+)/log)", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto id = JobIdOf(req);
      if (!id.ok()) return Reply(res, id.status());
      const std::string stream = req.has_param("stream") ? req.get_param_value("stream") : "stdout";
      if (stream != "stdout" && stream != "stderr")
        return Reply(res, InvalidArgument("stream is stdout or stderr"));
      auto offset =
          req.has_param("offset") ? ParseInt(req.get_param_value("offset")) : Result<int64_t>(0);
      if (!offset.ok() || *offset < 0)
        return Reply(res, InvalidArgument("offset must be a number of bytes"));
      std::optional<Job> old;
      auto where = loop->Call<Controller::OutputSource>(
          [who, id = *id](Controller& c, Time) { return c.OutputOf(who, id, nullptr); });
      if (!where.ok() && where.status().code() == StatusCode::kNotFound) {
        auto stored = store->FindJob(*id);
        if (!stored.ok()) return Reply(res, stored.status());
        if (*stored) {
          old = **stored;
          where = loop->Call<Controller::OutputSource>(
              [who, id = *id, job = *old](Controller& c, Time) {
                return c.OutputOf(who, id, &job);
              });
        }
      }
      if (!where.ok()) return Reply(res, where.status());
      auto agent = net::HttpClient::Connect(where->address, {.token = node_token,
                                                             .connect_timeout_ms = 2000,
                                                             .read_timeout_ms = 10000,
                                                             .keep_alive = false});
      if (!agent.ok()) return Reply(res, agent.status());
      auto r = (*agent)->Get(
          fmt::format("/v1/jobs/{}/output?stream={}&offset={}", id->value(), stream, *offset));
      if (!r.ok()) {
        return Reply(
            res, Status(StatusCode::kUnavailable, fmt::format("cannot reach the agent of {}: {}",
                                                              where->node, r.status().message())));
      }
      if (r->status != 200) {
        res.status = r->status;
        res.set_content(r->body, "application/json");
        return;
      }
      res.status = 200;
      for (const char* h : {"X-Shoal-Size", "X-Shoal-Path"}) {
        if (auto v = r->headers.find(h); v != r->headers.end()) res.set_header(h, v->second);
      }
      res.set_header("X-Shoal-Node", where->node);
      res.set_content(std::move(r->body), "application/octet-stream");
    });
  });

  http.Post(R"(/v1/jobs/(\d+)/(cancel|hold|release|requeue))", [this](const httplib::Request& req,
                                                                      httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto id = JobIdOf(req);
      if (!id.ok()) return Reply(res, id.status());
      const std::string action = req.matches[2].str();
      auto r = loop->Call<Json>([who, id = *id, action](Controller& c, Time now) -> Result<Json> {
        Status s = action == "cancel"    ? c.Cancel(who, id, now)
                   : action == "hold"    ? c.Hold(who, id, now)
                   : action == "release" ? c.Release(who, id, now)
                                         : c.Requeue(who, id, now);
        if (!s.ok()) return s;
        return Json{{"job", id.value()}, {"done", action}};
      });
      Reply(res, r);
    });
  });

  http.Patch(R"(/v1/jobs/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto id = JobIdOf(req);
      if (!id.ok()) return Reply(res, id.status());
      auto body = api::Parse(req.body);
      if (!body.ok()) return Reply(res, body.status());
      if (!body->is_object() || body->size() != 1 || !body->contains("priority") ||
          !(*body)["priority"].is_number_integer()) {
        return Reply(res, InvalidArgument("only {\"priority\": N} can be changed"));
      }
      const int64_t p = (*body)["priority"].get<int64_t>();
      Reply(res, loop->Call<Json>([who, id = *id, p](Controller& c, Time now) -> Result<Json> {
        SHOAL_RETURN_IF_ERROR(c.SetPriority(who, id, p, now));
        return Json{{"job", id.value()}, {"priority", p}};
      }));
    });
  });

  http.Get("/v1/history", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      state::HistoryQuery q;
      q.user = req.get_param_value("user");
      if (req.get_param_value("all") == "1") {
        if (!who.admin())
          return Reply(
              res, Status(StatusCode::kPermissionDenied, "only admins see every user's history"));
      } else if (q.user.empty()) {
        q.user = who.user;
      } else if (q.user != who.user && !who.admin()) {
        return Reply(res,
                     Status(StatusCode::kPermissionDenied, "you may see only your own history"));
      }
      q.account = req.get_param_value("account");
      Status err;
      q.states = ParseStates(req.get_param_value("state"), &err);
      if (!err.ok()) return Reply(res, err);
      if (req.has_param("since")) {
        auto v = ParseDouble(req.get_param_value("since"));
        if (!v.ok()) return Reply(res, v.status());
        q.since = TimeFromSeconds(*v);
      }
      if (req.has_param("limit")) {
        auto v = ParseInt(req.get_param_value("limit"));
        if (!v.ok() || *v <= 0)
          return Reply(res, InvalidArgument("limit must be a positive number"));
        q.limit = static_cast<int>(std::min<int64_t>(*v, 10000));
      }
      auto jobs = store->History(q);
      if (!jobs.ok()) return Reply(res, jobs.status());
      Json out = Json::array();
      for (const Job& j : *jobs)
        out.push_back(api::ToJson(j));
      Reply(res, Json{{"jobs", out}});
    });
  });

  http.Get("/v1/stats", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      if (!who.admin())
        return Reply(
            res, Status(StatusCode::kPermissionDenied, "only admins see the server's statistics"));
      const LoopStats st = loop->Stats();
      Reply(res, Json{{"calls", st.calls},
                      {"transactions", st.batches},
                      {"passes", st.passes},
                      {"rejected", st.rejected},
                      {"last_pass_ms", st.last_pass_ms},
                      {"mean_pass_ms",
                       st.passes == 0 ? 0.0 : st.pass_ms_total / static_cast<double>(st.passes)}});
    });
  });

  // Prometheus: the view is captured on the loop, the text built here.
  http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    if (!options.metrics_public) {
      auto who = Auth(req);
      if (!who.ok()) return Reply(res, who.status());
    }
    auto view = loop->Call<MetricsView>(
        [](Controller& c, Time) -> Result<MetricsView> { return c.Metrics(); });
    if (!view.ok()) return Reply(res, view.status());
    res.status = 200;
    res.set_content(RenderMetrics(*view, loop->Stats(), clock->Now()), kMetricsContentType);
  });

  http.Get("/v1/cluster/series", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity&) {
      auto since = SinceOf(req);
      if (!since.ok()) return Reply(res, since.status());
      std::string body = "{\"points\":[";
      bool first = true;
      for (const TelemetryStore::ClusterPoint& p : telemetry->ClusterSeries(*since)) {
        if (!first) body += ',';
        first = false;
        fmt::format_to(std::back_inserter(body), "[{},{},{}]", static_cast<int64_t>(p.t),
                       p.mean_util_pct, p.allocated_fraction);
      }
      body += "]}";
      res.status = 200;
      res.set_content(std::move(body), "application/json");
    });
  });

  http.Get(R"(/v1/nodes/([A-Za-z0-9._-]+)/series)", [this](const httplib::Request& req,
                                                           httplib::Response& res) {
    Authed(req, res, [&](const Identity&) {
      const std::string name = req.matches[1].str();
      auto since = SinceOf(req);
      if (!since.ok()) return Reply(res, since.status());
      auto series = telemetry->NodeSeries(name, *since);
      if (!series) {
        // No telemetry yet: an empty series for a known node, 404 otherwise.
        auto known = loop->Call<bool>([name](Controller& c, Time) -> Result<bool> {
          SHOAL_RETURN_IF_ERROR(c.NodeJson(name).status());
          return true;
        });
        if (!known.ok()) return Reply(res, known.status());
        series.emplace();
      }
      std::string body = "{\"node\":" + Json(name).dump() + ",\"gpus\":[";
      for (size_t i = 0; i < series->size(); ++i) {
        if (i > 0) body += ',';
        fmt::format_to(std::back_inserter(body), "{{\"index\":{},\"points\":", (*series)[i].index);
        AppendPoints(body, (*series)[i].points);
        body += '}';
      }
      body += "]}";
      res.status = 200;
      res.set_content(std::move(body), "application/json");
    });
  });

  // A job's GPUs over its run time (users: their own jobs).
  http.Get(R"(/v1/jobs/(\d+)/series)", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto id = JobIdOf(req);
      if (!id.ok()) return Reply(res, id.status());
      auto since = SinceOf(req);
      if (!since.ok()) return Reply(res, since.status());
      auto job =
          loop->Call<Json>([who, id = *id](Controller& c, Time) { return c.ShowJob(who, id); });
      if (!job.ok() && job.status().code() == StatusCode::kNotFound) {
        auto old = store->FindJob(*id);
        if (!old.ok()) return Reply(res, old.status());
        if (*old) {
          if (!who.admin() && (*old)->spec.user != who.user) {
            return Reply(res,
                         Status(StatusCode::kPermissionDenied, "that job belongs to another user"));
          }
          job = loop->Call<Json>(
              [j = std::make_shared<const Job>(**old)](Controller& c, Time) -> Result<Json> {
                return JobViewJson(c.View(j));
              });
        }
      }
      if (!job.ok()) return Reply(res, job.status());
      const Json& j = *job;
      const Time start =
          j.contains("start_time") ? TimeFromSeconds(j["start_time"].get<double>()) : Time{};
      const Time end = j.contains("end_time") && j.value("state", "") != "running"
                           ? TimeFromSeconds(j["end_time"].get<double>())
                           : clock->Now();
      const Time from = std::max(start, *since);
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
            AppendPoints(body, telemetry->GpuPoints(node, index, from, end));
            body += '}';
          }
        }
      }
      body += "]}";
      res.status = 200;
      res.set_content(std::move(body), "application/json");
    });
  });

  http.Get("/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity&) {
      Reply(res, loop->Call<Json>([](Controller& c, Time) -> Result<Json> {
        return Json{{"nodes", c.NodesJson()}};
      }));
    });
  });

  http.Get(R"(/v1/nodes/([A-Za-z0-9._-]+))", [this](const httplib::Request& req,
                                                    httplib::Response& res) {
    Authed(req, res, [&](const Identity&) {
      const std::string name = req.matches[1].str();
      Reply(res, loop->Call<Json>([name](Controller& c, Time) { return c.NodeJson(name); }));
    });
  });

  http.Post("/v1/nodes/register", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto body = api::Parse(req.body);
      if (!body.ok()) return Reply(res, body.status());
      auto node = api::NodeFromJson(*body);
      if (!node.ok()) return Reply(res, node.status());
      Reply(res, loop->Call<Json>([who, n = std::move(*node)](Controller& c, Time now) mutable {
        return c.RegisterNode(who, std::move(n), now);
      }));
    });
  });

  http.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/heartbeat)", [this](const httplib::Request& req,
                                                               httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto body = api::Parse(req.body);
      if (!body.ok()) return Reply(res, body.status());
      auto hb = HeartbeatFromJson(*body);
      if (!hb.ok()) return Reply(res, hb.status());
      const std::string name = req.matches[1].str();
      Reply(res, loop->Call<Json>([who, name, h = std::move(*hb)](Controller& c, Time now) {
        return c.ReceiveHeartbeat(who, name, h, now);
      }));
    });
  });

  http.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/(drain|resume))", [this](const httplib::Request& req,
                                                                    httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
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
            loop->Call<Json>([who, name, action, reason](Controller& c, Time now) -> Result<Json> {
              SHOAL_RETURN_IF_ERROR(action == "drain" ? c.Drain(who, name, reason, now)
                                                      : c.Resume(who, name, now));
              return Json{{"node", name}, {"done", action}};
            }));
    });
  });

  http.Post(R"(/v1/nodes/([A-Za-z0-9._-]+)/acceptance)", [this](const httplib::Request& req,
                                                                httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto body = api::Parse(req.body);
      if (!body.ok()) return Reply(res, body.status());
      auto result = api::AcceptanceFromJson(*body);
      if (!result.ok()) return Reply(res, result.status());
      const std::string name = req.matches[1].str();
      Reply(res,
            loop->Call<Json>([who, name, r = std::move(*result)](Controller& c, Time now) mutable {
              return c.RecordAcceptance(who, name, std::move(r), now);
            }));
    });
  });

  http.Get("/v1/partitions", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity&) {
      Reply(res, loop->Call<Json>([](Controller& c, Time) -> Result<Json> {
        return Json{{"partitions", c.PartitionsJson()}};
      }));
    });
  });

  http.Post("/v1/partitions", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto body = api::Parse(req.body);
      if (!body.ok()) return Reply(res, body.status());
      auto p = api::PartitionFromJson(*body);
      if (!p.ok()) return Reply(res, p.status());
      Reply(res, loop->Call<Json>([who, p = *p](Controller& c, Time) -> Result<Json> {
        SHOAL_RETURN_IF_ERROR(c.PutPartition(who, p));
        return api::ToJson(p);
      }));
    });
  });

  http.Get("/v1/accounts", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity&) {
      Reply(res, loop->Call<Json>([](Controller& c, Time) -> Result<Json> {
        return Json{{"accounts", c.AccountsJson()}};
      }));
    });
  });

  http.Post("/v1/accounts", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto body = api::Parse(req.body);
      if (!body.ok()) return Reply(res, body.status());
      auto a = api::AccountFromJson(*body);
      if (!a.ok()) return Reply(res, a.status());
      Reply(res, loop->Call<Json>([who, a = *a](Controller& c, Time) -> Result<Json> {
        SHOAL_RETURN_IF_ERROR(c.PutAccount(who, a));
        return api::ToJson(a);
      }));
    });
  });

  http.Get("/v1/tokens", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      Reply(res, loop->Call<Json>([who](Controller& c, Time) -> Result<Json> {
        SHOAL_ASSIGN_OR_RETURN(Json t, c.TokensJson(who));
        return Json{{"tokens", t}};
      }));
    });
  });

  http.Post("/v1/tokens", [this](const httplib::Request& req, httplib::Response& res) {
    Authed(req, res, [&](const Identity& who) {
      auto body = api::Parse(req.body);
      if (!body.ok()) return Reply(res, body.status());
      if (!body->is_object() || !(*body)["user"].is_string() || !(*body)["role"].is_string()) {
        return Reply(res,
                     InvalidArgument("body is {\"user\": \"...\", \"role\": \"admin|user|node\"}"));
      }
      const std::string user = (*body)["user"].get<std::string>();
      const std::string role = (*body)["role"].get<std::string>();
      Reply(res, loop->Call<Json>([who, user, role](Controller& c, Time now) {
        return c.CreateToken(who, user, role, now);
      }),
            201);
    });
  });

  http.Delete(R"(/v1/tokens/([0-9a-f]+))",
              [this](const httplib::Request& req, httplib::Response& res) {
                Authed(req, res, [&](const Identity& who) {
                  const std::string id = req.matches[1].str();
                  Reply(res, loop->Call<Json>([who, id](Controller& c, Time) -> Result<Json> {
                    SHOAL_RETURN_IF_ERROR(c.RevokeToken(who, id));
                    return Json{{"revoked", id}};
                  }));
                });
              });

  // httplib's own errors (no route, body too large) in the API's JSON form.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() && res.get_header_value("Content-Type") == "application/json") return;
    std::string detail = res.status == 404
                             ? fmt::format("no such endpoint: {} {}", req.method, req.path)
                         : res.status == 413 ? "the request body is larger than the server accepts"
                                             : fmt::format("HTTP error {}", res.status);
    const StatusCode code = res.status == 404   ? StatusCode::kNotFound
                            : res.status == 413 ? StatusCode::kResourceExhausted
                            : res.status < 500  ? StatusCode::kInvalidArgument
                                                : StatusCode::kInternal;
    res.set_content(api::ErrorBody(Status(code, detail)).dump(), "application/json");
  });
}

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, const Clock& clock) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->clock = &clock;
  if (options.state_dir.empty()) {
    impl->store = state::NewMemoryStore();
  } else {
    std::error_code ec;
    std::filesystem::create_directories(options.state_dir, ec);
    const std::string lock_path = options.state_dir + "/lock";
    impl->lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (impl->lock_fd < 0) return Internal(fmt::format("cannot open {}", lock_path));
    if (::flock(impl->lock_fd, LOCK_EX | LOCK_NB) != 0) {
      return FailedPrecondition(
          fmt::format("another shoal server uses {} (it holds {})", options.state_dir, lock_path));
    }
    SHOAL_ASSIGN_OR_RETURN(impl->store,
                           state::OpenSqliteStore(options.state_dir, {options.sqlite_full_sync}));
  }
  impl->controller = std::make_unique<Controller>(options.controller);
  impl->telemetry = std::make_unique<TelemetryStore>(options.series_interval);
  impl->controller->SetTelemetryStore(impl->telemetry.get());
  SHOAL_ASSIGN_OR_RETURN(state::Loaded loaded,
                         impl->store->Load(clock.Now() - options.controller.dependency_horizon));
  SHOAL_RETURN_IF_ERROR(impl->controller->Restore(loaded, clock.Now()));
  // Bootstrap: the first start creates an admin and a node token.
  const bool fresh = loaded.tokens.empty();
  Identity bootstrap{"bootstrap", "admin"};
  std::string node_token;
  if (fresh) {
    // The operator: the user who runs the server.
    auto me = net::UserName(::geteuid());
    const std::string admin_user = me.ok() ? *me : "admin";
    SHOAL_ASSIGN_OR_RETURN(
        Json admin, impl->controller->CreateToken(bootstrap, admin_user, "admin", clock.Now()));
    SHOAL_ASSIGN_OR_RETURN(Json node,
                           impl->controller->CreateToken(bootstrap, "nodes", "node", clock.Now()));
    impl->admin_token = admin["token"].get<std::string>();
    impl->node_token = node["token"].get<std::string>();
    if (!options.state_dir.empty()) {
      SHOAL_RETURN_IF_ERROR(WriteSecretFile(options.state_dir + "/admin.token", impl->admin_token));
      SHOAL_RETURN_IF_ERROR(WriteSecretFile(options.state_dir + "/node.token", impl->node_token));
    }
  } else if (!options.state_dir.empty()) {
    std::ifstream in(options.state_dir + "/node.token");
    std::getline(in, impl->node_token);
    std::ifstream admin_in(options.state_dir + "/admin.token");
    std::getline(admin_in, impl->admin_token);
  }
  SHOAL_RETURN_IF_ERROR(impl->store->Commit(impl->controller->TakeBatch()));
  impl->tokens.Replace(impl->controller->Tokens());
  impl->agents = std::make_unique<AgentLink>(impl->node_token);
  impl->loop = std::make_unique<ControlLoop>(*impl->controller, *impl->store, impl->agents.get(),
                                             &impl->tokens, clock, options.loop);
  // HTTP.
  SHOAL_ASSIGN_OR_RETURN(auto hp,
                         net::ParseHostPort(options.listen, 6820, /*allow_any_port=*/true));
  impl->host = hp.first;
  net::RaiseOpenFileLimit();
  impl->http.set_tcp_nodelay(true);
  impl->http.set_keep_alive_max_count(100000);
  // Slow and idle clients are cut off (see net/http_server.h); idle
  // connections close after 2 s, which also bounds how long Stop() waits.
  impl->http.SetLimits({.min_threads = std::max(2, options.http_threads)});
  // Credentials and the body's size are checked before any body is read.
  const bool metrics_public = options.metrics_public;
  net::GuardRequests(
      impl->http,
      {.max_body_bytes = options.max_body_bytes,
       .is_public =
           [metrics_public](const httplib::Request& req) {
             if (req.method != "GET" && req.method != "HEAD") return false;
             if (req.path == "/metrics") return metrics_public;
             // The health check, and the dashboard's static files (no data).
             return req.path == "/healthz" || !req.path.starts_with("/v1/");
           },
       .is_authenticated =
           [raw = impl.get()](const httplib::Request& req) { return raw->Auth(req).ok(); }});
  impl->Routes();
  impl->port = impl->http.Bind(hp.first, hp.second);
  if (impl->port <= 0)
    return Status(StatusCode::kUnavailable, fmt::format("cannot listen on {}", options.listen));
  std::string socket_path = options.socket;
  if (socket_path.empty() && !options.state_dir.empty())
    socket_path = options.state_dir + "/shoal.sock";
  if (!socket_path.empty() && socket_path != "none") {
    Impl* raw = impl.get();
    SHOAL_ASSIGN_OR_RETURN(impl->local,
                           net::PeerCredListener::Start(socket_path, 0666, [raw](uid_t uid) {
                             return raw->IssueLocalToken(uid);
                           }));
  }
  impl->loop->Start();
  Impl* raw = impl.get();
  impl->http_thread = std::thread([raw] {
    raw->http.listen_after_bind();
    raw->listen_returned = true;
  });
  // httplib's stop() does nothing until the listener runs: wait for it, so a
  // Stop() right after Start() cannot leave the accept loop blocked forever.
  while (!impl->http.is_running() && !impl->listen_returned)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  Stop();
}

void Server::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->stop_mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  if (impl_->local) impl_->local->Stop();
  impl_->http.stop();
  if (impl_->http_thread.joinable()) impl_->http_thread.join();
  impl_->loop->Stop();
  impl_->stop_cv.notify_all();
}

void Server::Wait() {
  std::unique_lock<std::mutex> lock(impl_->stop_mu);
  impl_->stop_cv.wait(lock, [this] { return impl_->stopped; });
}

int Server::port() const {
  return impl_->port;
}
std::string Server::address() const {
  return fmt::format("{}:{}", impl_->host, impl_->port);
}
std::string Server::socket_path() const {
  return impl_->local ? impl_->local->path() : std::string();
}
const std::string& Server::admin_token() const {
  return impl_->admin_token;
}
const std::string& Server::node_token() const {
  return impl_->node_token;
}
ControlLoop& Server::loop() {
  return *impl_->loop;
}

}  // namespace shoal::server
