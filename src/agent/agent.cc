#include "agent/agent.h"

#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "agent/agent_impl.h"
#include "agent/exporter.h"
#include "agent/launch/pty_relay.h"
#include "agent/launch/user_files.h"
#include "agent/power_caps.h"
#include "agent/protocol.h"
#include "agent/step_load.h"
#include "api/json.h"
#include "api/prometheus.h"
#include "core/files.h"
#include "core/log.h"
#include "core/strings.h"
#include "net/http_client.h"
#include "net/http_guard.h"
#include "net/http_server.h"
#include "net/tls.h"
#include "net/token.h"

namespace shoal::agent {

namespace {

// The step of a route /v1/jobs/{job}/steps/{step}/...?epoch=E (step > 0).
Result<StepKey> StepKeyOf(const httplib::Request& req) {
  auto job = ParseInt(req.matches[1].str());
  auto step = ParseInt(req.matches[2].str());
  auto epoch = ParseInt(req.get_param_value("epoch"));
  if (!job.ok() || !step.ok() || !epoch.ok() || *step <= 0 || *step > UINT32_MAX)
    return InvalidArgument("job, step and epoch are numbers");
  return StepKey{static_cast<uint64_t>(*job), static_cast<uint64_t>(*epoch),
                 static_cast<uint32_t>(*step)};
}

// A number in the query, 0 when it is absent.
Result<int64_t> IntParam(const httplib::Request& req, const char* name) {
  return req.has_param(name) ? ParseInt(req.get_param_value(name)) : Result<int64_t>(0);
}

constexpr size_t kMaxLogChunkBytes = 1 << 20;

}  // namespace

Result<Node> DescribeNode(const AgentOptions& o, const std::vector<GpuDevice>& devices,
                          const std::string& address) {
  Node n;
  n.name = o.name.empty() ? HostName() : o.name;
  n.address = address;
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  n.cpu_milli = o.cpu_milli > 0 ? o.cpu_milli : std::max(1L, cpus) * 1000;
  n.memory_mib =
      o.memory_mib > 0 ? o.memory_mib : static_cast<int64_t>(pages) * page / (1024 * 1024);
  n.labels = o.labels;
  n.partitions = o.partitions;
  if (!o.place.empty()) {
    SHOAL_ASSIGN_OR_RETURN(n.place, NetworkPlace::Parse(o.place));
  }
  n.gpus = NodeGpus(devices);
  // How the server tells a reboot from an agent restart: after a reboot,
  // every job it believed ran here is gone.
  if (auto boot = ReadFile("/proc/sys/kernel/random/boot_id"); boot.ok())
    n.boot_id = std::string(Trim(*boot));
  return n;
}

Status Agent::Impl::UseTls(const std::string& listen_host) {
  JoinOptions join = options.join;
  join.server = options.server;
  join.name = options.name;
  // The names the server may reach this agent by, for its certificate.
  auto add = [&join](const std::string& name) {
    if (!name.empty() && name != "0.0.0.0" && name != "::" &&
        std::find(join.names.begin(), join.names.end(), name) == join.names.end()) {
      join.names.push_back(name);
    }
  };
  if (!options.advertise.empty()) {
    if (auto a = net::ParseHostPort(options.advertise, 6821); a.ok()) add(a->first);
  }
  add(listen_host);
  add(HostName());
  SHOAL_ASSIGN_OR_RETURN(NodeCredentials c, EnsureNodeCredentials(join));
  options.name = c.name;
  client_tls = net::TlsClientOptions{.ca_file = c.ca_file,
                                     .cert_file = c.cert_file,
                                     .key_file = c.key_file,
                                     .peer_name = std::string(net::kControllerName)};
  SHOAL_RETURN_IF_ERROR(http.EnableTls({.cert_file = c.cert_file,
                                        .key_file = c.key_file,
                                        .ca_file = c.ca_file,
                                        // Prometheus has no certificate of the cluster's:
                                        // with metrics_public, a client without one may
                                        // connect, and reach /metrics and /healthz only
                                        // (Authorized wants the controller's).
                                        .require_client_cert = !options.metrics_public}));
  credentials = std::move(c);
  return Status::Ok();
}

std::unique_ptr<net::HttpClient> Agent::Impl::Client() const {
  std::optional<net::TlsClientOptions> tls = client_tls;
  if (on_session && tls) tls->cert_file = tls->key_file = "";
  // Kept alive between heartbeats: an idle connection costs the server a
  // descriptor, not a thread (net/http_server.h).
  auto c =
      net::HttpClient::Connect(options.server, {.token = on_session ? node_session : options.token,
                                                .connect_timeout_ms = 2000,
                                                .read_timeout_ms = 10000,
                                                .keep_alive = true,
                                                .tls = tls});
  return c.ok() ? std::move(*c) : nullptr;
}

bool Agent::Impl::UseSessionIfDue(std::unique_ptr<net::HttpClient>& client) {
  if (on_session || node_session.empty() || !client_tls) return false;
  if (clock->Now() < session_due && client->HoldsConnection()) return false;
  on_session = true;
  if (auto c = Client(); c != nullptr) {
    client = std::move(c);
    log::Info("node.session", {{"server", client->base()}});
    return true;
  }
  on_session = false;
  return false;
}

void Agent::Impl::DropSession(std::unique_ptr<net::HttpClient>& client, std::string_view why) {
  log::Warning("node.session.refused", {{"error", why}, {"action", "certificate"}});
  node_session.clear();
  on_session = false;
  client = Client();
}

Status Agent::Impl::Register(net::HttpClient& client) {
  const Time sent = clock->Now();
  auto r = client.Post("/v1/nodes/register", api::RegistrationToJson(node).dump());
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    auto body = api::Parse(r->body);
    const std::string detail =
        body.ok() && body->is_object() ? body->value("detail", r->body) : r->body;
    return Status(r->status == 401 || r->status == 403 ? StatusCode::kUnauthenticated
                                                       : StatusCode::kInvalidArgument,
                  fmt::format("the server refused the registration: {}", detail));
  }
  if (auto body = api::Parse(r->body); body.ok() && body->is_object()) {
    if ((*body)["node_timeout_s"].is_number())
      fence_after_ms = static_cast<int64_t>((*body)["node_timeout_s"].get<double>() * 1000);
    if ((*body)["kill_grace_s"].is_number())
      fence_grace_ms = static_cast<int64_t>((*body)["kill_grace_s"].get<double>() * 1000);
    NoteServerProtocol(*body);
    TakeHeartbeatInterval(*body);
    if (auto it = body->find("node_session"); it != body->end() && it->is_string()) {
      node_session = it->get<std::string>();
      session_due =
          sent + api::SessionDelay(node.name, std::max(options.heartbeat, server_heartbeat));
    }
  }
  last_heard_ms = sent.time_since_epoch().count();
  is_registered = true;
  return Status::Ok();
}

// The server's answers say how often it wants this node's heartbeats (a
// large fleet beats less often); this agent's own interval is the least.
void Agent::Impl::TakeHeartbeatInterval(const Json& answer) {
  auto it = answer.find("heartbeat_s");
  if (it == answer.end() || !it->is_number()) return;
  const double s = it->get<double>();
  if (s >= 0 && s <= 3600) server_heartbeat = DurationFromSeconds(s);
}

void Agent::Impl::FenceIfCutOff() {
  const int64_t after = fence_after_ms, heard = last_heard_ms;
  if (after <= 0 || heard == 0 || clock->Now().time_since_epoch().count() - heard < after) {
    fenced.clear();
    return;
  }
  for (const StepState& st : steps->Scan()) {
    if (st.phase != StepPhase::kRunning && st.phase != StepPhase::kStarting) continue;
    if (fenced.count(st.key())) continue;
    auto request = steps->Request(st.key());
    if (!request.ok() || !request->requeueable) continue;
    fenced.insert(st.key());
    log::Warning(
        "job.fenced",
        {{"job", st.job},
         {"unheard_s", static_cast<double>(clock->Now().time_since_epoch().count() - heard) / 1000},
         {"why", "the server has not heard this node; requeueable, it runs elsewhere"}});
    (void)steps->Stop(st.key(), Duration(fence_grace_ms.load()));
  }
}

void Agent::Impl::Routes() {
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, Json{{"ok", true}});
  });

  http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    HandleMetrics(req, res);
  });

  http.Post("/v1/launch", [this](const httplib::Request& req, httplib::Response& res) {
    HandleLaunch(req, res);
  });

  http.Post("/v1/mig",
            [this](const httplib::Request& req, httplib::Response& res) { HandleMig(req, res); });

  http.Post("/v1/kill", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req))
      return ReplyError(res, Status(StatusCode::kUnauthenticated, "node token required"));
    auto body = api::Parse(req.body);
    if (!body.ok()) return ReplyError(res, body.status());
    auto k = KillFromJson(*body);
    if (!k.ok()) return ReplyError(res, k.status());
    // One step, or every step of the epoch here.
    std::vector<StepKey> keys;
    if (k->step) {
      keys.push_back({k->job, k->epoch, *k->step});
    } else {
      if (k->signal == 0) NoteStopped(k->job, k->epoch);
      for (const StepState& st : steps->Scan()) {
        if (st.job == k->job && st.epoch == k->epoch) keys.push_back(st.key());
      }
    }
    for (const StepKey& key : keys) {
      Status s = k->signal != 0 ? steps->Signal(key, k->signal, k->leader_only)
                                : steps->Stop(key, k->grace);
      if (!s.ok()) return ReplyError(res, s);
    }
    if (k->signal != 0) {
      return Reply(res, 200,
                   Json{{"job", k->job}, {"epoch", k->epoch}, {"signalled", keys.size()}});
    }
    Wake();
    Reply(res, 200, Json{{"job", k->job}, {"epoch", k->epoch}, {"stopping", true}});
  });

  // A chunk of a job's output: ?stream=stdout|stderr&offset=N. The answer's
  // body is the raw bytes; X-Shoal-Size is the file's size.
  http.Get(R"(/v1/jobs/(\d+)/output)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req))
      return ReplyError(res, Status(StatusCode::kUnauthenticated, "node token required"));
    auto job = ParseInt(req.matches[1].str());
    const bool err_stream = req.get_param_value("stream") == "stderr";
    int64_t offset = 0;
    if (req.has_param("offset")) {
      auto o = ParseInt(req.get_param_value("offset"));
      if (!o.ok() || *o < 0)
        return ReplyError(res, InvalidArgument("offset must be a number of bytes"));
      offset = *o;
    }
    std::optional<StepOutput> output;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = job.ok() ? outputs.find(static_cast<uint64_t>(*job)) : outputs.end();
      if (it != outputs.end()) output = it->second.second;
    }
    if (!output) return ReplyError(res, NotFound("this node has no output of that job"));
    const std::string& path = err_stream ? output->stderr_path : output->stdout_path;
    // Read with the job user's rights, never the agent's own.
    Result<OutputChunk> chunk = ReadOutputAs(output->owner, path, offset, kMaxLogChunkBytes);
    if (!chunk.ok()) return ReplyError(res, chunk.status());
    res.status = 200;
    res.set_header("X-Shoal-Size", std::to_string(chunk->size));
    res.set_header("X-Shoal-Path", path);
    res.set_content(std::move(chunk->bytes), "application/octet-stream");
  });

  // A chunk of what one task of a `shoal run` step wrote:
  // /v1/jobs/{job}/steps/{step}/output?epoch=E&task=R&stream=stdout|stderr&offset=N.
  http.Get(R"(/v1/jobs/(\d+)/steps/(\d+)/output)", [this](const httplib::Request& req,
                                                          httplib::Response& res) {
    if (!Authorized(req))
      return ReplyError(res, Status(StatusCode::kUnauthenticated, "node token required"));
    auto key = StepKeyOf(req);
    auto task = ParseInt(req.get_param_value("task"));
    auto offset = IntParam(req, "offset");
    if (!key.ok() || !task.ok() || !offset.ok() || *offset < 0)
      return ReplyError(res, InvalidArgument("epoch, task and offset are numbers"));
    auto output = steps->TaskOutput(*key, static_cast<int>(*task));
    if (!output.ok()) return ReplyError(res, output.status());
    const std::string& path =
        req.get_param_value("stream") == "stderr" ? output->stderr_path : output->stdout_path;
    // Read with the job user's rights, never the agent's own.
    Result<OutputChunk> chunk = ReadOutputAs(output->owner, path, *offset, kMaxLogChunkBytes);
    if (!chunk.ok()) return ReplyError(res, chunk.status());
    res.status = 200;
    res.set_header("X-Shoal-Size", std::to_string(chunk->size));
    res.set_content(std::move(chunk->bytes), "application/octet-stream");
  });

  // What the user types into a --pty step's terminal:
  // /v1/jobs/{job}/steps/{step}/input?epoch=E[&rows=R&cols=C][&eof=1], the
  // body the bytes typed (the window's new size and the end of input after
  // them, when given).
  http.Post(R"(/v1/jobs/(\d+)/steps/(\d+)/input)",
            [this](const httplib::Request& req, httplib::Response& res) {
              if (!Authorized(req))
                return ReplyError(res, Status(StatusCode::kUnauthenticated, "node token required"));
              auto key = StepKeyOf(req);
              auto rows = IntParam(req, "rows");
              auto cols = IntParam(req, "cols");
              if (!key.ok() || !rows.ok() || !cols.ok() || *rows < 0 || *rows > 0xffff ||
                  *cols < 0 || *cols > 0xffff) {
                return ReplyError(res, InvalidArgument("epoch, rows and cols are numbers"));
              }
              auto input = steps->TerminalInput(*key);
              if (!input.ok()) return ReplyError(res, input.status());
              std::vector<std::string> frames = DataFrames(req.body);
              if (*rows > 0 && *cols > 0)
                frames.push_back(ResizeFrame(static_cast<int>(*rows), static_cast<int>(*cols)));
              if (req.get_param_value("eof") == "1") frames.push_back(EofFrame());
              if (Status written = WriteTerminalInput(*input, frames); !written.ok())
                return ReplyError(res, written);
              Reply(res, 200, Json{{"written", req.body.size()}});
            });

  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    res.set_content(
        api::ErrorBody(
            Status(res.status == 404 ? StatusCode::kNotFound : StatusCode::kInvalidArgument,
                   fmt::format("{} {}: HTTP {}", req.method, req.path, res.status)))
            .dump(),
        "application/json");
  });
}

// This node's GPUs for Prometheus, from the last telemetry tick's readings:
// a scrape never waits on the GPUs, nor on the heartbeat loop.
void Agent::Impl::HandleMetrics(const httplib::Request& req, httplib::Response& res) {
  if (!options.metrics_public && !Authorized(req))
    return ReplyError(res, Status(StatusCode::kUnauthenticated, "node token required"));
  std::vector<GpuSample> now;
  std::vector<GpuHold> holds;
  std::vector<GpuDevice> gpus_now;
  {
    std::lock_guard<std::mutex> lock(mu);
    now = last_samples;
    gpus_now = devices;
    for (const auto& [key, hold] : step_holds)
      holds.push_back(hold);
  }
  res.status = 200;
  res.set_content(RenderNodeMetrics(node.name, gpus_now, now, holds),
                  api::prometheus::kContentType);
}

void Agent::Impl::NoteStopped(uint64_t job, uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu);
  uint64_t& e = stopped_epoch[job];
  e = std::max(e, epoch);
  ForgetOldJobs(stopped_epoch);
}

void Agent::Impl::HandleLaunch(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req))
    return ReplyError(res, Status(StatusCode::kUnauthenticated, "node token required"));
  auto body = api::Parse(req.body);
  if (!body.ok()) return ReplyError(res, body.status());
  auto step = StepFromLaunch(*body, node.name, step_context);
  if (!step.ok()) return ReplyError(res, step.status());
  // An order that comes after the server gave its epoch up would run a job
  // that the server has already put back in the queue: refused, and not
  // reported (the server has moved on). Needs clocks within the launch
  // grace of each other, which NTP gives.
  if (step->not_after != Time{} && clock->Now() > step->not_after) {
    return Reply(
        res, 409,
        api::ErrorBody(Status(
            StatusCode::kFailedPrecondition,
            fmt::format("job {} epoch {}: the launch order expired {:.1f} s ago (the "
                        "server has given this epoch up)",
                        step->job, step->epoch, ToSeconds(clock->Now() - step->not_after)))));
  }
  {
    // An epoch's step starts at most once, and none of an epoch older than
    // one seen here: a repeated or late launch is ignored (a step's folder,
    // made once, is the second gate).
    std::lock_guard<std::mutex> lock(mu);
    if (Status s = DescribeStepGpus(*step, devices); !s.ok()) return ReplyError(res, s);
    if (auto stopped = stopped_epoch.find(step->job);
        stopped != stopped_epoch.end() && stopped->second >= step->epoch) {
      // Its stop came first: the server hears that it ended without starting.
      const std::string why =
          fmt::format("job {} epoch {} step {}: stopped before its launch arrived", step->job,
                      step->epoch, step->step);
      refused.push_back({step->job, step->epoch, step->step, false, 1, 0, why});
      wake = true;
      cv.notify_all();
      return Reply(res, 409, api::ErrorBody(Status(StatusCode::kFailedPrecondition, why)));
    }
    auto it = last_epoch.find(step->job);
    const bool seen = it != last_epoch.end() &&
                      (it->second > step->epoch || (it->second == step->epoch && step->step == 0));
    if (seen) {
      return Reply(
          res, 409,
          api::ErrorBody(Status(StatusCode::kFailedPrecondition,
                                fmt::format("job {} epoch {} step {} was already launched here",
                                            step->job, step->epoch, step->step))));
    }
    last_epoch[step->job] = step->epoch;
    ForgetOldJobs(last_epoch);
  }
  Result<StepOutput> started = steps->Launch(*step);
  const Status& s = started.status();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!s.ok()) {
      refused.push_back({step->job, step->epoch, step->step, false, 1, 0,
                         fmt::format("cannot start on {}: {}", node.name, s.message())});
    } else {
      if (step->step == 0) outputs[step->job] = {step->epoch, *started};
      step_holds[{step->job, step->epoch, step->step}] = HoldOf(*step);
      ForgetOldJobs(outputs);
    }
  }
  // A refusal is news for the server at once; a start is not (it counts the
  // job as running from the launch, and the next beat confirms it well
  // within the launch grace), and the step's end wakes the loop anyway.
  if (!s.ok()) Wake();
  Reply(
      res, 200,
      Json{{"job", step->job}, {"epoch", step->epoch}, {"step", step->step}, {"started", s.ok()}});
}

void Agent::Impl::ShapeGpuLoad(const std::vector<StepReport>& reports) {
  std::vector<std::pair<StepKey, GpuHold>> held;  // running steps' GPUs
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const StepReport& rep : reports) {
      const StepKey key{rep.job, rep.epoch, rep.step};
      auto it = step_holds.find(key);
      if (it == step_holds.end()) continue;
      if (!rep.running) {
        step_holds.erase(it);
        step_loads.Forget(key);
        continue;
      }
      held.emplace_back(key, it->second);
    }
  }
  power_caps.Apply(*gpus, devices, held);
  if (gpus->kind() != "simulated") return;
  std::vector<double> load(devices.size(), 0.0);
  const Time now = clock->Now();
  for (const auto& [key, hold] : held) {
    const double step = step_loads.Of(*steps, key, now);
    for (int g : hold.gpus) {
      if (g >= 0 && static_cast<size_t>(g) < load.size())
        load[static_cast<size_t>(g)] = std::max(load[static_cast<size_t>(g)], step);
    }
  }
  for (size_t i = 0; i < devices.size(); ++i)
    gpus->SetLoad(devices[i].index, load[i]);
}

void Agent::Impl::Loop() {
  std::unique_ptr<net::HttpClient> client = Client();
  Duration backoff = std::chrono::milliseconds(100);
  bool warned = false;
  std::vector<GpuSample> samples;
  std::vector<GpuHealth> verdicts(devices.size());
  Time next_tick = clock->Now();
  Time last_beat{};
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu);
      if (stopping) return;
    }
    if (!is_registered) {
      Status s = client != nullptr ? Register(*client)
                                   : Status(StatusCode::kUnavailable, "bad server address");
      if (!s.ok() && on_session && s.code() == StatusCode::kUnauthenticated) {
        DropSession(client, s.message());
        continue;  // at once, with the certificate
      }
      if (!s.ok()) {
        if (!warned) log::Warning("register.failed", {{"error", s.message()}, {"action", "retry"}});
        warned = true;
        std::unique_lock<std::mutex> lock(mu);
        cv.wait_for(lock, backoff, [this] { return stopping; });
        backoff = std::min<Duration>(backoff * 2, std::chrono::seconds(5));
        continue;
      }
      log::Info("registered", {{"server", client->base()},
                               {"node", node.name},
                               {"by", on_session   ? "session"
                                      : client_tls ? "certificate"
                                                   : "token"}});
      warned = false;
      backoff = std::chrono::milliseconds(100);
    }
    std::shared_ptr<MigPending> mig;
    {
      std::lock_guard<std::mutex> lock(mu);
      mig = std::move(mig_pending);
    }
    if (mig) {
      mig->done.set_value(ApplyMig(mig->order, *client));
      samples.clear();
      verdicts.assign(devices.size(), GpuHealth{});
      next_tick = clock->Now();
    }
    Time now = clock->Now();
    const bool tick = now >= next_tick;
    if (tick) {
      auto s = gpus->Sample();
      if (s.ok()) {
        samples = std::move(*s);
        verdicts = health->Judge(samples, now);
        std::lock_guard<std::mutex> lock(mu);
        last_samples = samples;
      }
      next_tick = now + std::max(options.heartbeat, server_heartbeat);
    }
    // What runs and what ended.
    std::vector<StepReport> reports;
    for (const StepState& st : steps->Scan()) {
      StepReport r{st.job, st.epoch, st.step, false, st.exit_code, st.signal, st.message};
      switch (st.phase) {
        case StepPhase::kStarting:
        case StepPhase::kRunning:
          r.running = true;
          r.progress = steps->Progress(st.key()).value_or(0);
          break;
        case StepPhase::kExited:
          r.ended = st.ended;
          break;
        case StepPhase::kLost:
          r.exit_code = -1;
          if (r.message.empty()) r.message = "the step's supervisor vanished";
          break;
      }
      reports.push_back(std::move(r));
    }
    std::vector<StepReport> refused_now;
    {
      std::lock_guard<std::mutex> lock(mu);
      refused_now = refused;
    }
    reports.insert(reports.end(), refused_now.begin(), refused_now.end());
    ShapeGpuLoad(reports);
    // Telemetry on the tick (and always until the server has accepted a beat).
    const Json body =
        HeartbeatJson(reports, devices, samples, verdicts, tick || accepted_heartbeats == 0);
    const Time sent = clock->Now();
    const std::string path = fmt::format("/v1/nodes/{}/heartbeat", node.name);
    UseSessionIfDue(client);
    auto r = client->Post(path, body.dump());
    if (!r.ok()) {
      // The kept connection may have been closed under it (the server
      // restarted, or the connection idled past its limit): once more, anew,
      // on the node session when it has one to take up.
      if (!UseSessionIfDue(client)) client->CloseConnection();
      r = client->Post(path, body.dump());
    }
    last_beat = clock->Now();
    if (r.ok() && r->status == 200) {
      ++accepted_heartbeats;
      if (auto answer = api::Parse(r->body); answer.ok() && answer->is_object())
        TakeHeartbeatInterval(*answer);
      last_heard_ms = sent.time_since_epoch().count();
      // The server has the ends now: forget them.
      for (const StepReport& rep : reports) {
        if (!rep.running) steps->Forget({rep.job, rep.epoch, rep.step});
      }
      std::lock_guard<std::mutex> lock(mu);
      refused.erase(refused.begin(),
                    refused.begin() + static_cast<std::ptrdiff_t>(refused_now.size()));
    } else if (r.ok() && r->status == 404) {
      is_registered = false;  // the server lost us (its state was reset): register again
      continue;
    } else if (r.ok() && r->status == 401 && on_session) {
      DropSession(client, r->body);
      is_registered = false;  // with the certificate, which gives a new session
      continue;
    } else if (!warned) {
      log::Warning("heartbeat.failed",
                   {{"server", client->base()},
                    {"error", r.ok() ? fmt::format("HTTP {}: {}", r->status, r->body)
                                     : r.status().message()}});
      warned = true;
    }
    if (r.ok() && r->status == 200) warned = false;
    std::unique_lock<std::mutex> lock(mu);
    // Sleep to the next tick, or until a step starts or ends (but keep the
    // extra heartbeats at least min_event_gap apart). The connection stays
    // open: the server holds it without a thread, and over TLS a beat on it
    // costs no handshake.
    cv.wait_for(lock, next_tick - clock->Now(), [this] { return stopping || wake; });
    if (stopping) return;
    if (wake) {
      wake = false;
      const Duration since = std::chrono::duration_cast<Duration>(clock->Now() - last_beat);
      if (since < options.min_event_gap) {
        cv.wait_for(lock, options.min_event_gap - since, [this] { return stopping; });
      }
    }
  }
}

Result<std::unique_ptr<Agent>> Agent::Start(const AgentOptions& options,
                                            std::unique_ptr<GpuProvider> gpus,
                                            std::unique_ptr<Steps> steps, const Clock& clock) {
  if (options.token.empty() && !options.tls) {
    return InvalidArgument(
        "the agent needs a node token (--token or --token-file) to talk plain HTTP");
  }
  // A controller and its standbys, in order (net::HttpClient follows the lead).
  const std::vector<std::string> servers = net::SplitServers(options.server);
  if (servers.empty()) return InvalidArgument("the agent needs the server's address");
  for (const std::string& server : servers)
    SHOAL_RETURN_IF_ERROR(net::ParseHostPort(server, 6820).status());
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  SHOAL_ASSIGN_OR_RETURN(auto hp,
                         net::ParseHostPort(options.listen, 6821, /*allow_any_port=*/true));
  if (options.tls) SHOAL_RETURN_IF_ERROR(impl->UseTls(hp.first));
  impl->clock = &clock;
  if (gpus->kind() == "simulated")
    SHOAL_RETURN_IF_ERROR(RestoreMigLayouts(StateFile(*steps, kMigLayoutFile), *gpus));
  SHOAL_ASSIGN_OR_RETURN(impl->devices, gpus->Discover());
  SHOAL_RETURN_IF_ERROR(
      KeepOwnPowerLimits(StateFile(*steps, "gpu-power-limits.json"), impl->devices));
  // How the steps' tasks reach Shoal: the server as this agent reaches it,
  // a copy of the cluster CA they can read, and the job's srun.
  for (const std::string& server : servers) {
    if (!impl->step_context.server.empty()) impl->step_context.server += ',';
    impl->step_context.server +=
        net::SchemeOf(server).empty()
            ? fmt::format("{}://{}", options.tls ? "https" : "http", server)
            : server;
  }
  impl->step_context.slurm_commands = options.slurm_commands;
  if (impl->credentials) {
    const std::string ca = steps->dir() + "/ca.crt";
    SHOAL_ASSIGN_OR_RETURN(std::string pem, ReadFile(impl->credentials->ca_file));
    SHOAL_RETURN_IF_ERROR(WriteFileAtomic(ca, pem, 0644));
    impl->step_context.ca_file = ca;
  }
  impl->gpus = std::move(gpus);
  impl->steps = std::move(steps);
  impl->health = std::make_unique<HealthMonitor>(impl->devices, options.health);
  // Steps found on disk: their epochs are taken, their output is readable;
  // so is that of the steps already forgotten.
  impl->outputs = impl->steps->FinishedOutputs();
  for (const auto& [job, output] : impl->outputs)
    impl->last_epoch[job] = output.first;
  for (const StepState& st : impl->steps->Scan()) {
    uint64_t& e = impl->last_epoch[st.job];
    e = std::max(e, st.epoch);
    // Their GPUs are busy (simulated load, /metrics' job labels) until they end.
    if (st.phase == StepPhase::kRunning || st.phase == StepPhase::kStarting) {
      if (auto request = impl->steps->Request(st.key()); request.ok())
        impl->step_holds[st.key()] = HoldOf(*request);
    }
    if (st.step != 0) continue;
    if (auto output = impl->steps->Output(st.key()); output.ok()) {
      impl->outputs[st.job] = {st.epoch, std::move(output).value()};
    }
  }
  // Listen.
  net::RaiseOpenFileLimit();
  impl->http.set_tcp_nodelay(true);
  // The server keeps its connection for the next order for a second; slow
  // and idle clients are cut off (see net/http_server.h).
  impl->http.SetLimits({.idle_timeout = std::chrono::milliseconds(1000),
                        .min_threads = std::max(2, options.http_threads)});
  // The node token is checked before any body is read; only /healthz is open.
  net::GuardRequests(
      impl->http,
      {.max_body_bytes = 4 << 20,
       .is_public =
           [metrics_public = options.metrics_public](const httplib::Request& req) {
             return req.path == "/healthz" || (metrics_public && req.path == "/metrics");
           },
       .authenticate =
           [raw = impl.get()](const httplib::Request& req) {
             return raw->Authorized(req)
                        ? Status::Ok()
                        : Status(StatusCode::kUnauthenticated,
                                 raw->credentials ? "orders come from the controller only"
                                                  : "node token required");
           }});
  impl->Routes();
  impl->port = impl->http.Bind(hp.first, hp.second);
  if (impl->port <= 0)
    return Status(StatusCode::kUnavailable, fmt::format("cannot listen on {}", options.listen));
  std::string advertise = options.advertise;
  if (advertise.empty()) {
    const std::string host = hp.first == "0.0.0.0" ? HostName() : hp.first;
    advertise = fmt::format("{}:{}", host, impl->port);
  }
  SHOAL_ASSIGN_OR_RETURN(impl->node, DescribeNode(options, impl->devices, advertise));
  Impl* raw = impl.get();
  impl->http_thread = std::thread([raw] {
    raw->http.listen_after_bind();
    raw->listen_returned = true;
  });
  while (!impl->http.is_running() && !impl->listen_returned)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl->loop_thread = std::thread([raw] { raw->Loop(); });
  impl->events_thread = std::thread([raw] {
    while (true) {
      {
        std::lock_guard<std::mutex> lock(raw->mu);
        if (raw->stopping) return;
      }
      if (!raw->steps->WaitForChanges(std::chrono::milliseconds(200)).empty()) raw->Wake();
      // Here, not in the heartbeat loop, which a hanging server can hold
      // for its read timeout.
      raw->FenceIfCutOff();
    }
  });
  return std::unique_ptr<Agent>(new Agent(std::move(impl)));
}

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Agent::~Agent() {
  Stop();
}

void Agent::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->loop_thread.joinable()) impl_->loop_thread.join();
  {
    // A MIG order the loop did not take: its caller is told, not kept waiting.
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->mig_pending) {
      impl_->mig_pending->done.set_value(Unavailable("the agent is stopping"));
      impl_->mig_pending.reset();
    }
  }
  if (impl_->events_thread.joinable()) impl_->events_thread.join();
  impl_->http.stop();
  if (impl_->http_thread.joinable()) impl_->http_thread.join();
}

std::string Agent::address() const {
  return impl_->node.address;
}
const std::string& Agent::name() const {
  return impl_->node.name;
}
bool Agent::registered() const {
  return impl_->is_registered;
}
uint64_t Agent::heartbeats() const {
  return impl_->accepted_heartbeats;
}

}  // namespace shoal::agent
