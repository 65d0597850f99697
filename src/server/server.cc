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
#include <optional>
#include <thread>

#include "api/json.h"
#include "core/files.h"
#include "core/log.h"
#include "net/http_client.h"
#include "net/http_guard.h"
#include "net/http_server.h"
#include "net/local_socket.h"
#include "net/token.h"
#include "server/agent_link.h"
#include "server/auth.h"
#include "server/change_log.h"
#include "server/dashboard.h"
#include "server/mailer.h"
#include "server/restore.h"
#include "server/routes.h"
#include "server/state_dir.h"
#include "server/telemetry_store.h"
#include "state/postgres_store.h"

namespace shoal::server {

namespace {

using api::Json;

Status WriteSecretFile(const std::string& path, const std::string& text) {
  return WriteFileDurably(path, text + "\n", 0600);
}

// httplib's own errors (no route, body too large) in the API's JSON form.
void AnswerErrorsAsJson(httplib::Server& http) {
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

}  // namespace

struct Server::Impl {
  ~Impl() {
    if (lock_fd >= 0) ::close(lock_fd);
  }
  // The store: in memory without a state directory; else that directory made
  // safe to share the host (SecureStateDir), locked for this server alone,
  // and its SQLite database.
  Status OpenStore(const ServerOptions& o) {
    if (o.state_dir.empty()) {
      if (!o.postgres.empty())
        return InvalidArgument("a server on PostgreSQL needs a state directory for its keys");
      store = state::NewMemoryStore();
      return Status::Ok();
    }
    SHOAL_ASSIGN_OR_RETURN(notes, SecureStateDir(o.state_dir));
    const std::string lock_path = o.state_dir + "/lock";
    lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd < 0) return Internal(fmt::format("cannot open {}", lock_path));
    if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
      return FailedPrecondition(
          fmt::format("another shoal server uses {} (it holds {})", o.state_dir, lock_path));
    }
    if (o.postgres.empty()) {
      SHOAL_ASSIGN_OR_RETURN(store, state::OpenSqliteStore(o.state_dir, {o.sqlite_full_sync}));
      return Status::Ok();
    }
    state::PostgresOptions pg{.url = o.postgres};
    pg.log = [](std::string_view line) { log::Info("store.lead", {{"status", line}}); };
    SHOAL_ASSIGN_OR_RETURN(store, state::OpenPostgresStore(pg));
    return Status::Ok();
  }
  // A controller that shares its store took the lead from another: it needs
  // the secrets that one made at the first start (docs/deploy.md).
  Status CheckSharedSecrets(const ServerOptions& o) const {
    if (o.postgres.empty()) return Status::Ok();
    for (const char* name : {"node.token", "job.key"}) {
      const std::string path = o.state_dir + "/" + name;
      if (::access(path.c_str(), R_OK) != 0) {
        return FailedPrecondition(fmt::format(
            "{} is missing: a controller that shares a PostgreSQL database needs the first "
            "controller's node.token, admin.token, job.key and tls/ca.* in its state directory "
            "(docs/deploy.md, \"A standby controller\")",
            path));
      }
    }
    return Status::Ok();
  }
  std::atomic<bool> listen_returned{false};
  int lock_fd = -1;  // flock on <state_dir>/lock: one controller per state directory
  ServerOptions options;
  const Clock* clock = nullptr;
  std::unique_ptr<TelemetryStore> telemetry;  // outlives the controller, which records into it
  std::optional<ControllerPki> pki;           // TLS only
  AgentCredentials agent_credentials;
  std::unique_ptr<state::Store> store;
  std::unique_ptr<Controller> controller;
  TokenCache tokens;
  std::unique_ptr<AgentLink> agents;
  std::unique_ptr<Mailer> mailer;  // null: no mail program
  ChangeLog change_log;
  std::unique_ptr<ControlLoop> loop;
  std::unique_ptr<net::PeerCredListener> local;
  std::map<uid_t, net::LocalToken>
      local_tokens;  // one per uid, touched by the listener thread only
  std::unique_ptr<routes::Context> route_context;  // what the handlers use; outlives `http`
  net::HttpServer http;
  std::thread http_thread;
  int port = 0;
  std::string host;
  std::string admin_token;
  std::vector<std::string> notes;  // for the operator, from the start (SecureStateDir)
  std::string node_token;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopped = false;

  // What the request guard asks before a body is read; a join token is
  // good for its one route only.
  Status Authenticated(const httplib::Request& req) const {
    return route_context->Auth(req, /*allow_join=*/req.path == "/v1/join").status();
  }

  void Routes();
  void GuardHttp();  // with `options`
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

// Every route, one file per resource (routes_*.cc).
void Server::Impl::Routes() {
  route_context = std::make_unique<routes::Context>(routes::Context{.loop = *loop,
                                                                    .store = *store,
                                                                    .telemetry = *telemetry,
                                                                    .tokens = tokens,
                                                                    .clock = *clock,
                                                                    .options = options,
                                                                    .agents = agent_credentials,
                                                                    .listener = &http});
  // The web dashboard (web/, embedded): static files that hold no data, so no token.
  RegisterDashboard(http);
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    routes::Reply(res, Json{{"ok", true}});
  });
  routes::AddAccountRoutes(http, *route_context);
  routes::AddJobRoutes(http, *route_context);
  routes::AddMetricsRoutes(http, *route_context);
  routes::AddNodeRoutes(http, *route_context);
  routes::AddQosRoutes(http, *route_context);
  routes::AddStepRoutes(http, *route_context);
  AnswerErrorsAsJson(http);
}

// The listener's limits (net/http_server.h) and its request guard.
void Server::Impl::GuardHttp() {
  http.set_tcp_nodelay(true);
  http.set_keep_alive_max_count(100000);
  // Slow and idle clients are cut off (see net/http_server.h); idle
  // connections wait without a thread (agents keep theirs between beats),
  // and Stop() closes them at once. The process's open-file limit bounds
  // the connections too.
  const auto files = static_cast<int64_t>(net::RaiseOpenFileLimit());
  http.SetLimits({.per_client = options.connections_per_address,
                  .max_connections = static_cast<int>(
                      std::clamp<int64_t>(files - 256, 16, options.max_connections)),
                  .min_threads = std::max(2, options.http_threads)});
  // Credentials and the body's size are checked before any body is read.
  const bool metrics_public = options.metrics_public;
  net::GuardRequests(
      http, {.max_body_bytes = options.max_body_bytes,
             .is_public =
                 [metrics_public](const httplib::Request& req) {
                   if (req.method != "GET" && req.method != "HEAD") return false;
                   if (req.path == "/metrics") return metrics_public;
                   // The health check, the cluster CA's certificate (public by
                   // nature) and the dashboard's static files (no data).
                   return req.path == "/healthz" || req.path == "/v1/ca" ||
                          !req.path.starts_with("/v1/");
                 },
             .authenticate = [this](const httplib::Request& req) { return Authenticated(req); }});
}

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, const Clock& clock) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->clock = &clock;
  SHOAL_RETURN_IF_ERROR(impl->OpenStore(options));
  // Mail for sbatch --mail-type: the configured program, else the host's sendmail.
  const std::string mail_program =
      options.mail_program.empty() ? DefaultMailProgram() : options.mail_program;
  const bool mail = !mail_program.empty() && mail_program != "none";
  ControllerConfig controller_config = options.controller;
  controller_config.mail_enabled = mail;
  impl->controller = std::make_unique<Controller>(controller_config);
  impl->telemetry = std::make_unique<TelemetryStore>(options.series_interval);
  impl->controller->SetTelemetryStore(impl->telemetry.get());
  SHOAL_ASSIGN_OR_RETURN(state::Loaded loaded,
                         RestoreFromStore(*impl->controller, *impl->store, clock.Now()));
  impl->change_log.Seed(loaded);
  // Bootstrap: the first start creates an admin and a node token.
  const bool fresh = loaded.tokens.empty();
  Identity bootstrap{"bootstrap", "admin"};
  std::string node_token;
  if (fresh) {
    // The operator: the user who runs the server.
    auto me = net::UserName(::geteuid());
    const std::string admin_user = me.ok() ? *me : "admin";
    SHOAL_ASSIGN_OR_RETURN(
        Json admin, impl->controller->CreateToken(bootstrap, {.user = admin_user, .role = "admin"},
                                                  clock.Now()));
    SHOAL_ASSIGN_OR_RETURN(
        Json node,
        impl->controller->CreateToken(bootstrap, {.user = "nodes", .role = "node"}, clock.Now()));
    impl->admin_token = admin["token"].get<std::string>();
    impl->node_token = node["token"].get<std::string>();
    if (!options.state_dir.empty()) {
      SHOAL_RETURN_IF_ERROR(WriteSecretFile(options.state_dir + "/admin.token", impl->admin_token));
      SHOAL_RETURN_IF_ERROR(WriteSecretFile(options.state_dir + "/node.token", impl->node_token));
    }
  } else if (!options.state_dir.empty()) {
    SHOAL_RETURN_IF_ERROR(impl->CheckSharedSecrets(options));
    std::ifstream in(options.state_dir + "/node.token");
    std::getline(in, impl->node_token);
    std::ifstream admin_in(options.state_dir + "/admin.token");
    std::getline(admin_in, impl->admin_token);
  }
  // The key job tokens are signed with: kept, so that running jobs' tokens
  // outlive a restart.
  std::string job_key;
  if (!options.state_dir.empty()) {
    std::ifstream(options.state_dir + "/job.key") >> job_key;
  }
  if (job_key.size() < 64) {
    SHOAL_ASSIGN_OR_RETURN(job_key, net::RandomHex(32));
    if (!options.state_dir.empty())
      SHOAL_RETURN_IF_ERROR(WriteSecretFile(options.state_dir + "/job.key", job_key));
  }
  impl->controller->SetJobTokenKey(job_key);
  impl->tokens.SetJobTokenKey(job_key);
  SHOAL_RETURN_IF_ERROR(impl->store->Commit(impl->controller->TakeBatch()));
  impl->tokens.Replace(impl->controller->Tokens());
  SHOAL_ASSIGN_OR_RETURN(auto hp,
                         net::ParseHostPort(options.listen, 6820, /*allow_any_port=*/true));
  impl->host = hp.first;
  impl->agent_credentials.node_token = impl->node_token;
  if (options.tls.enabled) {
    if (options.state_dir.empty())
      return InvalidArgument("TLS needs a state directory for its keys");
    SHOAL_ASSIGN_OR_RETURN(impl->pki,
                           LoadOrCreatePki(options.state_dir + "/tls",
                                           ControllerNames(impl->host, options.tls.names)));
    impl->agent_credentials.pki = &*impl->pki;
    // Client certificates are asked for, not required: users come with
    // tokens, nodes with their certificates.
    // Ticket keys kept beside the CA: agents resume their sessions after a
    // restart (or on a standby given the file) instead of a full handshake each.
    // Those are the connections of their node sessions: a connection made
    // with a node's certificate (its registration) gets no ticket.
    SHOAL_RETURN_IF_ERROR(impl->http.EnableTls({.cert_file = impl->pki->cert_file,
                                                .key_file = impl->pki->key_file,
                                                .ca_file = impl->pki->ca_cert_file,
                                                .ticket_key_file = impl->pki->dir + "/ticket.key",
                                                .tickets_for_client_certificates = false}));
  }
  impl->agents = std::make_unique<AgentLink>(impl->agent_credentials);
  impl->loop = std::make_unique<ControlLoop>(*impl->controller, *impl->store, impl->agents.get(),
                                             &impl->tokens, clock, options.loop);
  impl->loop->SetChangeLog(&impl->change_log);
  if (mail) {
    impl->mailer = std::make_unique<Mailer>(mail_program);
    impl->loop->SetMailer(impl->mailer.get());
  }
  impl->GuardHttp();
  impl->Routes();
  impl->port = impl->http.Bind(hp.first, hp.second);
  if (impl->port <= 0)
    return Status(StatusCode::kUnavailable, fmt::format("cannot listen on {}", options.listen));
  // Where this controller is, for the CLI on this host (cli::DefaultServer).
  if (!options.state_dir.empty()) {
    SHOAL_RETURN_IF_ERROR(WriteSecretFile(
        options.state_dir + "/endpoint",
        fmt::format("{}://{}:{}", options.tls.enabled ? "https" : "http", impl->host, impl->port)));
  }
  std::string socket_path = options.socket;
  if (socket_path.empty() && !options.state_dir.empty())
    socket_path = options.state_dir + "/shoal.sock";
  if (!socket_path.empty() && socket_path != "none") {
    Impl* raw = impl.get();
    SHOAL_ASSIGN_OR_RETURN(impl->local,
                           net::PeerCredListener::Start(socket_path, 0666, [raw](uid_t uid) {
                             return raw->IssueLocalToken(uid);
                           }));
    if (std::string why = UnreachableByOthers(socket_path); !why.empty()) {
      impl->notes.push_back(fmt::format(
          "other local users cannot reach {}: {} (give them --socket /run/shoal/shoal.sock, or a "
          "--state-dir they can reach)",
          socket_path, why));
    }
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
const std::vector<std::string>& Server::notes() const {
  return impl_->notes;
}

const std::string& Server::admin_token() const {
  return impl_->admin_token;
}
const std::string& Server::node_token() const {
  return impl_->node_token;
}
std::string Server::ca_file() const {
  return impl_->pki ? impl_->pki->ca_cert_file : "";
}
std::string Server::ca_fingerprint() const {
  return impl_->pki ? impl_->pki->ca_fingerprint : "";
}
ControlLoop& Server::loop() {
  return *impl_->loop;
}

}  // namespace shoal::server
