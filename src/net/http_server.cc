#include "net/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
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
#include <thread>
#include <vector>

#include "net/socket_stream.h"

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
class ElasticPool final : public httplib::TaskQueue {
 public:
  ElasticPool(size_t min_threads, size_t max_threads) : min_(min_threads), max_(max_threads) {}
  ~ElasticPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::vector<std::thread> finished;
    {
      std::lock_guard lock(mu_);
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

uint64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

HttpServer::HttpServer() {
  // Called once, when the server starts listening.
  new_task_queue = [this] {
    const auto min_threads = static_cast<size_t>(std::max(1, limits_.min_threads));
    const auto max_threads =
        static_cast<size_t>(std::max(limits_.min_threads, limits_.max_connections));
    return new ElasticPool(min_threads, max_threads);
  };
}

Status HttpServer::EnableTls(const TlsServerOptions& options) {
  // OpenSSL writes with write(2): a client gone mid-answer would raise
  // SIGPIPE, whose default action ends the process.
  std::signal(SIGPIPE, SIG_IGN);
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return Internal("cannot create a TLS context (OpenSSL)");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
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
        nullptr);
    SSL_CTX_set_verify_depth(ctx.get(), 2);
  }
  // A client may resume its session from the ticket it was given (no
  // certificate signed or checked again, and the resumed connection acts
  // for the first one's certificate); with client certificates OpenSSL
  // refuses a resumption outside a named session context.
  static constexpr unsigned char kSessionContext[] = "shoal";
  SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof kSessionContext - 1);
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
  sockaddr_storage peer{};
  socklen_t length = sizeof peer;
  const std::string client = ::getpeername(sock, reinterpret_cast<sockaddr*>(&peer), &length) == 0
                                 ? AddressText(peer)
                                 : "";
  bool served = false;
  if (!Admit(client)) {
    // Non-blocking: a client that does not read its refusal loses nothing of ours.
    (void)!::send(sock, kBusyAnswer, sizeof kBusyAnswer - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  } else {
    SocketStream stream(sock, limits_.write_timeout);
    std::unique_ptr<SSL, void (*)(SSL*)> ssl(nullptr, SSL_free);
    if (ssl_ctx_ != nullptr) {
      ssl = Handshake(ssl_ctx_.get(), sock, SteadyClock::now() + limits_.request_deadline);
      if (!ssl) {
        Release(client);
        ::close(sock);
        return false;
      }
      stream.set_ssl(ssl.get());
    }
    for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
      // Between requests: idle for at most idle_timeout, looking up every
      // 100 ms in case the server stops.
      const auto idle_end = SteadyClock::now() + limits_.idle_timeout;
      bool ready = stream.has_buffered();
      while (!ready && svr_sock_ != INVALID_SOCKET && SteadyClock::now() < idle_end) {
        ready = WaitUntil(sock, POLLIN,
                          std::min(idle_end, SteadyClock::now() + std::chrono::milliseconds(100)));
      }
      if (!ready) break;
      stream.set_deadline(SteadyClock::now() + limits_.request_deadline);
      bool closed = false;
      std::optional<uint64_t> body_end = stream.consumed();
      served = process_request(stream, /*close_connection=*/left == 1, closed,
                               [&](httplib::Request& req) {
                                 req.ssl = ssl.get();
                                 body_end = BodyEnd(req, stream.consumed());
                               });
      // The answer, gathered by the stream, goes out now (as one TLS record
      // when it fits).
      if (!stream.Flush()) break;
      // A body refused before it was read (http_guard.h) is not the next
      // request: the connection ends here, after the client has sent it.
      if (served && (!body_end || stream.consumed() < *body_end)) {
        DrainRefusedBody(sock, limits_.request_deadline, limits_.idle_timeout, svr_sock_);
        break;
      }
      if (!served || closed) break;
    }
    // No close_notify: a kept-alive client (cpp-httplib's) takes a socket
    // with unread bytes for a live one, and would write its next request
    // into it; on a bare FIN it reconnects. Every answer has its length.
    Release(client);
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return served;
}

}  // namespace shoal::net
