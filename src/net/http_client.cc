#include "net/http_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <csignal>
#include <functional>
#include <tuple>
#include <vector>

#include "core/strings.h"
#include "net/socket_stream.h"
#include "net/tls.h"

namespace shoal::net {

namespace {

// An httplib client (Base: ClientImpl or SSLClient) whose requests go
// through net::SocketStream: a request's head and body leave as one write
// (one TLS record), and an answer's head is read from a buffer instead of
// one SSL_read per byte (httplib 0.11's SSL stream). The socket, its
// handshake and its timeouts (SO_RCVTIMEO, SO_SNDTIMEO) stay httplib's.
template <typename Base>
class GatheringClient final : public Base {
 public:
  using Base::Base;

 private:
  bool process_socket(const typename Base::Socket& socket,
                      std::function<bool(httplib::Stream&)> callback) override {
    using std::chrono::microseconds, std::chrono::seconds;
    const auto ms = [](time_t sec, time_t usec) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(seconds(sec) +
                                                                   microseconds(usec));
    };
    SocketStream stream(socket.sock, ms(this->write_timeout_sec_, this->write_timeout_usec_));
    stream.set_read_timeout(ms(this->read_timeout_sec_, this->read_timeout_usec_));
    if (socket.ssl != nullptr) stream.set_ssl(socket.ssl);
    return callback(stream) && stream.Flush();
  }
};

}  // namespace

// One httplib client (plain or TLS) for one server; remade by
// CloseConnection, so that no call ever races httplib's own socket lock.
struct HttpClient::Impl {
  // The controllers to try, in order: one leads, the others stand by without
  // listening (docs/deploy.md), so a refused connection means "the next".
  std::vector<std::pair<std::string, int>> endpoints;
  size_t current = 0;
  std::string host;
  int port = 0;
  ClientOptions options;
  bool tls = false;
  // Declared before `client`, whose contexts point to it, so it goes last.
  std::unique_ptr<SessionCache> sessions = std::make_unique<SessionCache>();
  std::unique_ptr<httplib::ClientImpl> client;
  httplib::Headers headers;

  Status Make() {
    std::unique_ptr<httplib::ClientImpl> c;
    if (tls) {
      std::signal(SIGPIPE, SIG_IGN);  // as HttpServer::EnableTls: OpenSSL uses write(2)
      const TlsClientOptions& t = *options.tls;
      auto ssl = t.cert_file.empty()
                     ? std::make_unique<GatheringClient<httplib::SSLClient>>(host, port)
                     : std::make_unique<GatheringClient<httplib::SSLClient>>(
                           host, port, t.cert_file, t.key_file);
      if (!ssl->is_valid()) {
        return InvalidArgument(fmt::format("cannot use the TLS certificate {} with the key {}",
                                           t.cert_file, t.key_file));
      }
      ssl->enable_server_certificate_verification(t.verify);
      sessions->Attach(ssl->ssl_context());
      if (t.verify) {
        if (t.ca_file.empty()) return InvalidArgument("TLS needs the cluster's CA certificate");
        ssl->set_ca_cert_path(t.ca_file);
        if (!t.peer_name.empty()) RequirePeerName(ssl->ssl_context(), &options.tls->peer_name);
      }
      c = std::move(ssl);
    } else {
      c = std::make_unique<GatheringClient<httplib::ClientImpl>>(host, port);
    }
    c->set_tcp_nodelay(true);
    c->set_keep_alive(options.keep_alive);
    c->set_connection_timeout(std::chrono::milliseconds(options.connect_timeout_ms));
    c->set_read_timeout(std::chrono::milliseconds(options.read_timeout_ms));
    c->set_write_timeout(std::chrono::milliseconds(options.read_timeout_ms));
    client = std::move(c);
    return Status::Ok();
  }

  std::string base;  // "host:port" of the current endpoint

  void Use(size_t i) {
    current = i;
    std::tie(host, port) = endpoints[i];
    base = fmt::format("{}:{}", host, port);
  }

  // One request, sent to the next controller while the current one refuses
  // the connection (nothing was sent, so any request may go again), each
  // tried at most once.
  Result<HttpResponse> Send(const std::function<httplib::Result(httplib::ClientImpl&)>& request);
};

Result<std::unique_ptr<HttpClient>> HttpClient::Connect(const std::string& base,
                                                        const ClientOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(Servers servers, ParseServers(base, options));
  auto impl = std::make_unique<Impl>();
  impl->endpoints = std::move(servers.endpoints);
  impl->tls = servers.tls;
  impl->Use(0);
  impl->options = options;
  SHOAL_RETURN_IF_ERROR(impl->Make());
  auto client = std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
  client->set_token(options.token);
  return client;
}

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

void HttpClient::CloseConnection() {
  // The same settings, so this cannot fail where Connect did not.
  (void)impl_->Make();
}

bool HttpClient::HoldsConnection() const {
  const auto fd = impl_->client->socket();
  return fd != INVALID_SOCKET && PeerKeepsOpen(fd);
}

void HttpClient::set_token(const std::string& token) {
  impl_->headers.erase("Authorization");
  if (!token.empty()) impl_->headers.emplace("Authorization", "Bearer " + token);
}

namespace {

Result<HttpResponse> Convert(const httplib::Result& r, const std::string& base) {
  if (!r) {
    if (r.error() == httplib::Error::SSLServerVerification) return UntrustedServer(base);
    return Unreachable(base, httplib::to_string(r.error()));
  }
  HttpResponse out{r->status, r->body, {}};
  for (const auto& [k, v] : r->headers)
    out.headers.emplace(k, v);
  return out;
}

}  // namespace

Result<HttpResponse> HttpClient::Impl::Send(
    const std::function<httplib::Result(httplib::ClientImpl&)>& request) {
  for (size_t tried = 1;; ++tried) {
    httplib::Result r = request(*client);
    if (r || r.error() != httplib::Error::Connection || tried >= endpoints.size())
      return Convert(r, base);
    Use((current + 1) % endpoints.size());
    SHOAL_RETURN_IF_ERROR(Make());
  }
}

Result<HttpResponse> HttpClient::Get(const std::string& path) {
  return impl_->Send([&](httplib::ClientImpl& c) { return c.Get(path, impl_->headers); });
}

Result<HttpResponse> HttpClient::Post(const std::string& path, const std::string& body,
                                      const char* content_type) {
  return impl_->Send(
      [&](httplib::ClientImpl& c) { return c.Post(path, impl_->headers, body, content_type); });
}

Result<HttpResponse> HttpClient::Patch(const std::string& path, const std::string& json_body) {
  return impl_->Send([&](httplib::ClientImpl& c) {
    return c.Patch(path, impl_->headers, json_body, "application/json");
  });
}

Result<HttpResponse> HttpClient::Delete(const std::string& path) {
  return impl_->Send([&](httplib::ClientImpl& c) { return c.Delete(path, impl_->headers); });
}

const std::string& HttpClient::base() const {
  return impl_->base;
}

}  // namespace shoal::net
