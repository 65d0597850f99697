#include "net/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/files.h"
#include "core/strings.h"
#include "net/socket_stream.h"
#include "net/token.h"

namespace shoal::net {
namespace {

// Where a request's body ends in its stream, given where its head ended;
// nullopt when that cannot be known (a chunked body).
std::optional<uint64_t> BodyEnd(const httplib::Request& req, uint64_t head_end) {
  if (req.has_header("Transfer-Encoding")) return std::nullopt;
  const std::string declared = req.get_header_value("Content-Length");
  uint64_t length = 0;
  if (declared.empty()) return head_end;
  auto [end, error] = std::from_chars(declared.data(), declared.data() + declared.size(), length);
  if (error != std::errc() || end != declared.data() + declared.size()) return std::nullopt;
  return head_end + length;
}

// Reads and drops what the client still sends, for at most `deadline` and
// `idle` between reads, or until the server stops: a client still writing a
// refused body then reads its answer instead of a connection reset.
void DrainRefusedBody(int sock, std::chrono::milliseconds deadline, std::chrono::milliseconds idle,
                      const std::atomic<socket_t>& listening) {
  ::shutdown(sock, SHUT_WR);  // the answer is complete
  const auto end = SteadyClock::now() + deadline;
  auto idle_end = SteadyClock::now() + idle;
  char sink[65536];
  while (listening != INVALID_SOCKET) {
    const auto now = SteadyClock::now();
    if (now >= end || now >= idle_end) return;
    if (!WaitUntil(sock, POLLIN, std::min({end, idle_end, now + std::chrono::milliseconds(100)})))
      continue;
    const ssize_t n = ::recv(sock, sink, sizeof sink, 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return;
    idle_end = SteadyClock::now() + idle;
  }
}

// Threads that grow with the work: one per queued connection up to the
// limit, down to `min_threads` after a minute idle. Exited threads are
// joined by the next enqueue and at shutdown.
// `before_shutdown` runs first when the pool shuts down; a job enqueued
// after that is dropped unrun (a connection's job then closes it).
class ElasticPool final : public httplib::TaskQueue {
 public:
  ElasticPool(size_t min_threads, size_t max_threads, std::function<void()> before_shutdown)
      : min_(min_threads), max_(max_threads), before_shutdown_(std::move(before_shutdown)) {}
  ~ElasticPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::vector<std::thread> finished;
    {
      std::lock_guard lock(mu_);
      if (shut_) return;
      finished.swap(exited_);
      jobs_.push_back(std::move(fn));
      if (idle_ < jobs_.size() && threads_.size() < max_) {
        const uint64_t id = next_id_++;
        threads_.emplace(id, std::thread([this, id] { Work(id); }));
      }
    }
    cv_.notify_one();
    for (std::thread& t : finished)
      t.join();
  }

  void shutdown() override {
    std::map<uint64_t, std::thread> running;
    std::vector<std::thread> finished;
    {
      std::lock_guard lock(mu_);
      if (shut_) return;
    }
    if (before_shutdown_) before_shutdown_();
    {
      std::lock_guard lock(mu_);
      shut_ = true;
      running.swap(threads_);
      finished.swap(exited_);
    }
    cv_.notify_all();
    for (auto& [id, t] : running)
      t.join();
    for (std::thread& t : finished)
      t.join();
  }

 private:
  void Work(uint64_t id) {
    std::unique_lock lock(mu_);
    while (true) {
      ++idle_;
      const bool woke =
          cv_.wait_for(lock, std::chrono::seconds(60), [this] { return shut_ || !jobs_.empty(); });
      --idle_;
      if (shut_ && jobs_.empty()) return;
      if (!woke) {
        if (threads_.size() <= min_) continue;
        // Idle for a minute and more threads than the core: leave.
        auto self = threads_.find(id);
        exited_.push_back(std::move(self->second));
        threads_.erase(self);
        return;
      }
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  const size_t min_, max_;
  const std::function<void()> before_shutdown_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::map<uint64_t, std::thread> threads_;
  std::vector<std::thread> exited_;
  uint64_t next_id_ = 0;
  size_t idle_ = 0;
  bool shut_ = false;
};

// The TLS handshake on `sock` (made non-blocking), within `deadline`.
std::unique_ptr<SSL, void (*)(SSL*)> Handshake(SSL_CTX* ctx, int sock,
                                               SteadyClock::time_point deadline) {
  std::unique_ptr<SSL, void (*)(SSL*)> ssl(SSL_new(ctx), SSL_free);
  const int flags = ::fcntl(sock, F_GETFL, 0);
  if (!ssl || flags < 0 || ::fcntl(sock, F_SETFL, flags | O_NONBLOCK) != 0 ||
      SSL_set_fd(ssl.get(), sock) != 1) {
    return {nullptr, SSL_free};
  }
  while (true) {
    ERR_clear_error();
    const int r = SSL_accept(ssl.get());
    if (r == 1) return ssl;
    const int error = SSL_get_error(ssl.get(), r);
    short wanted = 0;
    if (error == SSL_ERROR_WANT_READ) wanted = POLLIN;
    if (error == SSL_ERROR_WANT_WRITE) wanted = POLLOUT;
    if (wanted == 0 || !WaitUntil(sock, wanted, deadline)) return {nullptr, SSL_free};
  }
}

constexpr char kBusyAnswer[] =
    "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: application/json\r\n"
    "Content-Length: 77\r\n\r\n"
    R"({"error":"unavailable","detail":"too many connections from this address now"})";
static_assert(
    sizeof(R"({"error":"unavailable","detail":"too many connections from this address now"})") -
        1 ==
    77);

}  // namespace

// One admitted connection, with its TLS session. Whoever holds the last
// reference (a serving thread, the idle set, a queued job) closes it.
struct HttpServer::Connection {
  Connection(HttpServer& owner, int socket, Endpoint peer, size_t requests)
      : server(owner),
        sock(socket),
        remote(std::move(peer)),
        local(LocalOf(socket)),
        left(requests) {}
  ~Connection() {
    ssl.reset();  // no close_notify: see Serve
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    server.Release(remote.ip);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  HttpServer& server;
  const int sock;
  // Learnt once, for every request's remote_addr and local_addr; limits
  // count connections by the remote's address.
  const Endpoint remote, local;
  std::unique_ptr<SSL, void (*)(SSL*)> ssl{nullptr, SSL_free};
  size_t left;  // requests it may still make (keep_alive_max_count)
  bool trusted = false;
};

thread_local HttpServer::Connection* HttpServer::serving_ = nullptr;

void TrustThisConnection() {
  if (HttpServer::serving_ != nullptr) HttpServer::serving_->trusted = true;
}

// Idle connections, in one epoll set on which pool threads wait themselves
// ("parked", kParked at most): the thread whose connection's next request
// starts arriving serves it at once, without handing it to another thread
// (an agent's beat wakes one thread here, not two). Before it serves, it
// makes sure that another thread is parked or on its way, so that the set
// is never left unwatched while requests are served, however slow. A timer
// in the set fires for the soonest deadline; a connection idle past its
// deadline is closed.
class HttpServer::IdleSet {
 public:
  // `run_on_pool` runs a job on the server's pool; `serve` serves a
  // connection whose next request has started to arrive.
  IdleSet(std::function<void(std::function<void()>)> run_on_pool,
          std::function<void(std::shared_ptr<Connection>)> serve)
      : run_on_pool_(std::move(run_on_pool)),
        serve_(std::move(serve)),
        epoll_(::epoll_create1(EPOLL_CLOEXEC)),
        timer_(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)),
        stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    for (const int fd : {timer_, stop_}) {
      epoll_event e{};
      e.events = EPOLLIN;  // level-triggered: the stop wakes every parked thread
      e.data.fd = fd;
      (void)::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &e);
    }
  }
  ~IdleSet() {
    Stop();
    ::close(epoll_);
    ::close(timer_);
    ::close(stop_);
  }

  // Holds `c` until its socket is readable (or closed by the peer), or
  // closes it at `until`. After Stop, closes it at once.
  void Add(std::shared_ptr<Connection> c, SteadyClock::time_point until) {
    bool park = false;
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
      const int fd = c->sock;
      epoll_event e{};
      e.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
      e.data.fd = fd;
      // A connection that was here before is still in the epoll set,
      // disarmed by its one event (Take leaves it there): re-armed, one
      // call. A new one (or a socket number closed and given out again,
      // which left the set as it closed) is added.
      if (::epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &e) != 0 &&
          (errno != ENOENT || ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &e) != 0)) {
        return;
      }
      if (deadlines_.empty() || until < deadlines_.begin()->first) Arm(until);
      deadlines_.emplace(until, fd);
      idle_.emplace(fd, Idle{std::move(c), until});
      park = NeedsParker();
    }
    if (park) run_on_pool_([this] { Park(); });
  }

  // Closes every idle connection, refuses new ones and waits until no
  // thread is parked; idempotent.
  void Stop() {
    std::unordered_map<int, Idle> closing;
    std::unique_lock lock(mu_);
    if (!stopped_) {
      stopped_ = true;
      const uint64_t one = 1;
      (void)!::write(stop_, &one, sizeof one);  // never read
      closing.swap(idle_);
      deadlines_.clear();
    }
    left_.wait(lock, [this] { return parked_ == 0; });
    lock.unlock();
    // `closing` closes its connections as it goes.
  }

  int size() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(idle_.size());
  }

 private:
  static constexpr int kParked = 2;

  struct Idle {
    std::shared_ptr<Connection> connection;
    SteadyClock::time_point until;
  };

  // Whether no thread is parked nor on its way; if so, counts the one the
  // caller sends. The caller holds mu_.
  bool NeedsParker() {
    if (stopped_ || parked_ + starting_ > 0) return false;
    ++starting_;
    return true;
  }

  // Sets the timer for `when`; the caller holds mu_.
  void Arm(SteadyClock::time_point when) {
    // Never 0, which would disarm the timer.
    const int64_t ns = std::max<int64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch()).count(), 1);
    itimerspec t{};
    t.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    t.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
    (void)::timerfd_settime(timer_, TFD_TIMER_ABSTIME, &t, nullptr);
  }

  // Takes `fd` out of the set; the caller holds mu_. Its socket stays in
  // the epoll set, disarmed once its event came (EPOLLONESHOT) until Add
  // re-arms it, and leaves the set when it is closed; one expiring here may
  // still be armed, and a thread that its last event wakes finds nothing.
  std::shared_ptr<Connection> Take(int fd) {
    auto it = idle_.find(fd);
    if (it == idle_.end()) return nullptr;
    deadlines_.erase({it->second.until, fd});
    std::shared_ptr<Connection> c = std::move(it->second.connection);
    idle_.erase(it);
    return c;
  }

  // A pool thread's job: waits on the set, serves what arrives, and waits
  // again while fewer than kParked threads wait; leaves at Stop.
  void Park() {
    {
      std::lock_guard lock(mu_);
      --starting_;
      if (stopped_) return;
      ++parked_;
    }
    while (true) {
      epoll_event e{};
      const int n = ::epoll_wait(epoll_, &e, 1, -1);
      std::shared_ptr<Connection> ready;
      std::vector<std::shared_ptr<Connection>> expired;
      bool park = false;
      {
        std::lock_guard lock(mu_);
        if (stopped_) {
          if (--parked_ == 0) left_.notify_all();
          return;
        }
        if (n == 1 && e.data.fd == timer_) {
          uint64_t fired;
          (void)!::read(timer_, &fired, sizeof fired);
          const auto now = SteadyClock::now();
          while (!deadlines_.empty() && deadlines_.begin()->first <= now)
            expired.push_back(Take(deadlines_.begin()->second));
          if (!deadlines_.empty()) Arm(deadlines_.begin()->first);
        } else if (n == 1) {
          ready = Take(e.data.fd);
        }
        if (ready) {
          --parked_;
          park = NeedsParker();
        }
      }
      expired.clear();  // closes them, outside the lock
      if (!ready) continue;
      if (park) run_on_pool_([this] { Park(); });
      serve_(std::move(ready));
      std::lock_guard lock(mu_);
      if (stopped_ || parked_ + starting_ >= kParked) return;
      ++parked_;
    }
  }

  const std::function<void(std::function<void()>)> run_on_pool_;
  const std::function<void(std::shared_ptr<Connection>)> serve_;
  const int epoll_, timer_, stop_;
  mutable std::mutex mu_;
  std::condition_variable left_;
  std::unordered_map<int, Idle> idle_;
  std::set<std::pair<SteadyClock::time_point, int>> deadlines_;
  int parked_ = 0;    // threads waiting on the set
  int starting_ = 0;  // Park jobs queued on the pool, not yet waiting
  bool stopped_ = false;
};

uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

HttpServer::HttpServer()
    : idle_(std::make_unique<IdleSet>(
          // Only connections the pool's threads served reach the idle set:
          // the pool is there.
          [this](std::function<void()> job) { pool_.load()->enqueue(std::move(job)); },
          [this](std::shared_ptr<Connection> c) { Serve(std::move(c), /*resumed=*/true); })) {
  // Called once, when the server starts listening; the idle set closes its
  // connections before the pool's threads are joined.
  new_task_queue = [this] {
    const auto min_threads = static_cast<size_t>(std::max(1, limits_.min_threads));
    const auto max_threads =
        static_cast<size_t>(std::max(limits_.min_threads, limits_.max_threads));
    auto* pool = new ElasticPool(min_threads, max_threads, [this] { idle_->Stop(); });
    pool_ = pool;
    return pool;
  };
}

HttpServer::~HttpServer() {
  idle_->Stop();
}

namespace {

// 16 bytes of key name, 32 of HMAC key, 32 of AES key: OpenSSL's ticket keys.
constexpr size_t kTicketKeyBytes = 80;
constexpr long kTicketLifetimeS = 7 * 24 * 3600;  // TLS 1.3's most

Status UseTicketKeys(SSL_CTX* ctx, const std::string& path) {
  std::string hex;
  if (auto text = ReadFile(path); text.ok()) hex = std::string(Trim(*text));
  if (hex.size() != 2 * kTicketKeyBytes) {
    SHOAL_ASSIGN_OR_RETURN(hex, RandomHex(kTicketKeyBytes));
    SHOAL_RETURN_IF_ERROR(WriteFileDurably(path, hex + "\n", 0600));
  }
  unsigned char keys[kTicketKeyBytes];
  for (size_t i = 0; i < kTicketKeyBytes; ++i) {
    auto [end, error] = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, keys[i], 16);
    if (error != std::errc() || end != hex.data() + 2 * i + 2)
      return InvalidArgument(fmt::format("{} is not {} hex bytes", path, kTicketKeyBytes));
  }
  const long set = SSL_CTX_set_tlsext_ticket_keys(ctx, keys, sizeof keys);
  OPENSSL_cleanse(keys, sizeof keys);
  if (set != 1) return Internal("cannot set the TLS session ticket keys (OpenSSL)");
  SSL_CTX_set_timeout(ctx, kTicketLifetimeS);
  return Status::Ok();
}

// The verify callback of a listener that gives no ticket to a client with a
// certificate: the chain's verdict stands; a client certificate that checks
// out takes the connection's tickets away (they are written after the
// client's Finished, so this is in time).
int NoTicketForACertificate(int preverify_ok, X509_STORE_CTX* store) {
  if (preverify_ok == 1 && X509_STORE_CTX_get_error_depth(store) == 0) {
    auto* ssl =
        static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
    if (ssl != nullptr) SSL_set_num_tickets(ssl, 0);
  }
  return preverify_ok;
}

}  // namespace

Status HttpServer::EnableTls(const TlsServerOptions& options) {
  // OpenSSL writes with write(2): a client gone mid-answer would raise
  // SIGPIPE, whose default action ends the process.
  std::signal(SIGPIPE, SIG_IGN);
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return Internal("cannot create a TLS context (OpenSSL)");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // An idle connection gives its record buffers back (34 KB each), so that
  // thousands of agents' kept connections cost little memory.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), options.cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx.get(), options.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    return InvalidArgument(fmt::format("cannot use the TLS certificate {} with the key {}",
                                       options.cert_file, options.key_file));
  }
  if (!options.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), options.ca_file.c_str(), nullptr) != 1)
      return InvalidArgument(fmt::format("cannot read the CA certificate {}", options.ca_file));
    // Ask for a client certificate; a bad one always fails the handshake, a
    // missing one only when it is required (requests without one are then
    // judged by their bearer token).
    SSL_CTX_set_verify(
        ctx.get(),
        SSL_VERIFY_PEER | (options.require_client_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
        options.tickets_for_client_certificates ? nullptr : NoTicketForACertificate);
    SSL_CTX_set_verify_depth(ctx.get(), 2);
  }
  // One ticket after a full handshake rather than OpenSSL's two: Shoal's
  // clients keep one session, and sealing a ticket re-reads the session
  // (with the client's certificate, a good share of a handshake's CPU).
  SSL_CTX_set_num_tickets(ctx.get(), 1);
  // A client may resume its session from the ticket it was given (no
  // certificate signed or checked again, and the resumed connection acts
  // for the first one's certificate); with client certificates OpenSSL
  // refuses a resumption outside a named session context.
  static constexpr unsigned char kSessionContext[] = "shoal";
  SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof kSessionContext - 1);
  if (!options.ticket_key_file.empty())
    SHOAL_RETURN_IF_ERROR(UseTicketKeys(ctx.get(), options.ticket_key_file));
  ssl_ctx_ = std::move(ctx);
  return Status::Ok();
}

int HttpServer::Bind(const std::string& host, int port) {
  const int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (bound > 0) (void)::listen(svr_sock_, 4096);  // listen() again sets the backlog
  return bound;
}

uint64_t HttpServer::refused_connections() const {
  std::lock_guard lock(mu_);
  return refused_;
}

int HttpServer::open_connections() const {
  std::lock_guard lock(mu_);
  return open_;
}

int HttpServer::idle_connections() const {
  return idle_->size();
}

bool HttpServer::Admit(const std::string& client) {
  std::lock_guard lock(mu_);
  int& mine = per_client_[client];
  if (mine >= limits_.per_client || open_ >= limits_.max_connections) {
    if (mine == 0) per_client_.erase(client);
    ++refused_;
    return false;
  }
  ++mine;
  ++open_;
  return true;
}

void HttpServer::Release(const std::string& client) {
  std::lock_guard lock(mu_);
  auto it = per_client_.find(client);
  if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
  --open_;
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  Endpoint peer = PeerOf(sock);
  if (!Admit(peer.ip)) {
    // Non-blocking: a client that does not read its refusal loses nothing of ours.
    (void)!::send(sock, kBusyAnswer, sizeof kBusyAnswer - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return false;
  }
  auto c = std::make_shared<Connection>(*this, sock, std::move(peer), keep_alive_max_count_);
  if (ssl_ctx_ != nullptr) {
    c->ssl = Handshake(ssl_ctx_.get(), sock, SteadyClock::now() + limits_.request_deadline);
    if (!c->ssl) return false;
    // The handshake checked it against the cluster's CA: a node or the controller.
    c->trusted = SSL_get0_peer_certificate(c->ssl.get()) != nullptr;
  }
  Serve(std::move(c), /*resumed=*/false);
  return true;
}

void HttpServer::Serve(std::shared_ptr<Connection> c, bool resumed) {
  SocketStream stream(c->sock, limits_.write_timeout);
  if (c->ssl) stream.set_ssl(c->ssl.get());
  stream.set_endpoints(&c->remote, &c->local);
  for (int served = 0; c->left > 0 && svr_sock_ != INVALID_SOCKET; ++served) {
    // Between requests: the next one may come at once (a client's burst),
    // so the thread waits `linger` for it, except after the first answer to
    // a connection that came from the idle set (an agent's beat, seconds
    // apart): that one goes back at once, without a look (a request there
    // already wakes the set at once). Past the linger the connection waits
    // without a thread; nothing is left in `stream` then (buffers empty,
    // answer sent). A connection the idle set hands over has bytes waiting
    // (or its peer has gone): its first request is read without a wait.
    const auto now = SteadyClock::now();
    const auto idle_end = now + (c->trusted ? limits_.trusted_idle_timeout : limits_.idle_timeout);
    const bool back_at_once = resumed && served == 1;
    const bool arrived = resumed && served == 0;
    if (!stream.has_buffered() && !arrived &&
        (back_at_once || !WaitUntil(c->sock, POLLIN, std::min(idle_end, now + limits_.linger)))) {
      idle_->Add(std::move(c), idle_end);
      return;
    }
    if (!ServeOne(*c, stream)) return;
  }
  // No close_notify when `c` goes: a kept-alive client (cpp-httplib's) takes
  // a socket with unread bytes for a live one, and would write its next
  // request into it; on a bare FIN it reconnects. Every answer has its length.
}

bool HttpServer::ServeOne(Connection& c, SocketStream& stream) {
  stream.set_deadline(SteadyClock::now() + limits_.request_deadline);
  bool closed = false;
  std::optional<uint64_t> body_end = stream.consumed();
  serving_ = &c;
  const bool served =
      process_request(stream, /*close_connection=*/c.left == 1, closed, [&](httplib::Request& req) {
        req.ssl = c.ssl.get();
        body_end = BodyEnd(req, stream.consumed());
      });
  serving_ = nullptr;
  --c.left;
  // The answer, gathered by the stream, goes out now (as one TLS record
  // when it fits).
  if (!stream.Flush()) return false;
  // A body refused before it was read (http_guard.h) is not the next
  // request: the connection ends here, after the client has sent it.
  if (served && (!body_end || stream.consumed() < *body_end)) {
    DrainRefusedBody(c.sock, limits_.request_deadline, limits_.idle_timeout, svr_sock_);
    return false;
  }
  return served && !closed;
}

}  // namespace shoal::net
