// The agent's insides, shared by the files that implement it (agent.cc,
// agent_mig.cc). Not for use outside src/agent.
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/agent.h"
#include "agent/exporter.h"
#include "agent/health.h"
#include "agent/join.h"
#include "agent/mig_order.h"
#include "agent/power_caps.h"
#include "agent/protocol.h"
#include "agent/step_load.h"
#include "api/json.h"
#include "api/node_protocol.h"
#include "net/http_client.h"
#include "net/http_guard.h"
#include "net/http_server.h"
#include "net/tls.h"
#include "net/token.h"

namespace shoal::agent {

using api::Json;

inline void Reply(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

inline void ReplyError(httplib::Response& res, const Status& s) {
  Reply(res, api::HttpStatus(s), api::ErrorBody(s));
}

// A file of the agent's own state, in its state folder
// ("gpu-power-limits.json", "mig-layout.json").
inline std::string StateFile(const Steps& steps, std::string_view name) {
  return (std::filesystem::path(steps.state_dir()) / name).string();
}
inline constexpr std::string_view kMigLayoutFile = "mig-layout.json";

struct Agent::Impl {
  AgentOptions options;
  std::unique_ptr<GpuProvider> gpus;
  std::unique_ptr<Steps> steps;
  const Clock* clock = nullptr;
  // The GPUs and MIG slices; the loop thread changes them (a MIG order)
  // under `mu`, other threads read them under it.
  std::vector<GpuDevice> devices;
  std::unique_ptr<HealthMonitor> health;
  Node node;  // what we register; its GPUs change with `devices`

  net::HttpServer http;
  std::thread http_thread;
  std::thread loop_thread;
  std::thread events_thread;  // wakes the loop when a supervisor says its step ended
  std::atomic<bool> listen_returned{false};
  int port = 0;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool wake = false;  // a step started or ended: report now
  // What the agent remembers of each job (its epochs, its output's paths)
  // is kept for the newest this many jobs: job ids grow, and a launch older
  // than that is past its deadline (not_after) long before.
  static constexpr size_t kJobsRemembered = 10000;
  std::map<uint64_t, uint64_t> last_epoch;  // job -> the newest epoch this agent was given
  std::vector<StepReport> refused;          // launches that could not start, to report
  // job -> the newest epoch stopped here as a whole: a launch of it that
  // arrives after its stop (from another controller, after a failover)
  // starts nothing.
  std::map<uint64_t, uint64_t> stopped_epoch;
  std::map<uint64_t, std::pair<uint64_t, StepOutput>> outputs;  // job -> its newest epoch's output
  std::map<StepKey, GpuHold> step_holds;  // each running step's GPUs here, and whose they are
  StepLoads step_loads;                   // Loop's own
  PowerCaps power_caps;                   // Loop's own: jobs' --gpu-power-cap
  // Forgets the steps that ended, holds GPUs to their jobs' power caps, and
  // gives simulated GPUs the load of the steps on them (step_load.h).
  void ShapeGpuLoad(const std::vector<StepReport>& reports);
  std::vector<GpuSample> last_samples;  // the last telemetry tick's, for GET /metrics
  StepContext step_context;             // what each step is told of Shoal
  std::atomic<bool> is_registered{false};
  std::atomic<uint64_t> accepted_heartbeats{0};

  // Fencing (docs/security.md): the server's node timeout and kill grace,
  // from its answer to the registration (0: not known yet), and when it
  // last accepted a heartbeat of ours (the time it was sent).
  std::atomic<int64_t> fence_after_ms{0};
  std::atomic<int64_t> fence_grace_ms{0};
  std::atomic<int64_t> last_heard_ms{0};  // Unix ms; 0: never
  std::set<StepKey> fenced;               // steps stopped so; events thread only
  // The interval the server asks for (0 until it says); heartbeat thread only.
  Duration server_heartbeat{0};
  void TakeHeartbeatInterval(const Json& answer);

  // Stops the steps of requeueable jobs once the server has not heard this
  // node for its node timeout: the server will run them again elsewhere
  // after node timeout + kill grace + a margin, and they must be gone by then.
  void FenceIfCutOff();

  void Wake() {
    {
      std::lock_guard<std::mutex> lock(mu);
      wake = true;
    }
    cv.notify_all();
  }

  // TLS: the node's own credentials, and how to reach the server with them.
  std::optional<NodeCredentials> credentials;
  std::optional<net::TlsClientOptions> client_tls;

  // Orders come from the controller only: over TLS, the peer whose
  // certificate the cluster CA issued to the controller (no node's
  // certificate passes: a node name has no colon); else the node token.
  bool Authorized(const httplib::Request& req) const {
    const bool ok = [&] {
      if (credentials) return net::PeerOf(req.ssl).common_name == net::kControllerName;
      const std::string h = req.get_header_value("Authorization");
      constexpr std::string_view kBearer = "Bearer ";
      return h.size() > kBearer.size() &&
             std::string_view(h).substr(0, kBearer.size()) == kBearer &&
             net::ConstantTimeEquals(std::string_view(h).substr(kBearer.size()), options.token);
    }();
    if (ok) {
      net::RequesterIs(credentials ? "controller" : "node token holder", "", false);
    } else {
      net::LogAuthRefused(req, "only the controller may ask this of an agent");
    }
    return ok;
  }

  // Joins the cluster unless this node has its certificate already, then
  // serves and calls with it; the node's name is the certificate's.
  Status UseTls(const std::string& listen_host);
  void Routes();
  void HandleLaunch(const httplib::Request& req, httplib::Response& res);
  // A stop of a job's whole epoch: no step of that epoch starts here after it.
  void NoteStopped(uint64_t job, uint64_t epoch);
  // Forgets the oldest jobs of `by_job` beyond kJobsRemembered.
  template <typename Map>
  static void ForgetOldJobs(Map& by_job) {
    while (by_job.size() > kJobsRemembered)
      by_job.erase(by_job.begin());
  }
  void HandleMetrics(const httplib::Request& req, httplib::Response& res);
  void Loop();
  // A MIG order (POST /v1/mig): handed to the loop thread, which owns the
  // GPU provider, and answered when it has been applied.
  struct MigPending {
    api::MigOrder order;
    std::promise<Result<Json>> done;
  };
  std::shared_ptr<MigPending> mig_pending;  // under mu
  void HandleMig(const httplib::Request& req, httplib::Response& res);
  // Applies it (on the loop thread, no step running), registers the new
  // GPUs with the server and says what they are now.
  Result<Json> ApplyMig(const api::MigOrder& order, net::HttpClient& client);
  Status Register(net::HttpClient& client);
  // A client for the server: over TLS with the node's certificate, or, once
  // a registration gave one, with the node session instead (server/auth.h:
  // a resumed connection that carries no certificate costs the controller
  // half as much).
  std::unique_ptr<net::HttpClient> Client() const;
  std::string node_session;  // Loop's own (Register sets it): empty until given
  bool on_session = false;   // Loop's own: Client() presents node_session
  Time session_due{};        // Loop's own (Register sets it)
  // Loop: before a request, takes the session up once a registration has
  // given one, when its time has come (api::SessionDelay) or the connection
  // the certificate opened is gone; until then the registration's connection
  // serves (a second handshake right after the first would cost the
  // controller one more per node while a fleet joins). True when it did.
  bool UseSessionIfDue(std::unique_ptr<net::HttpClient>& client);
  // Loop: drops the session for the certificate when the server refuses it
  // (expired, or the server's key changed).
  void DropSession(std::unique_ptr<net::HttpClient>& client, std::string_view why);
};

}  // namespace shoal::agent
