#include "net/lean_http_client.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstring>

#include "core/strings.h"
#include "net/socket_io.h"
#include "net/tls.h"

namespace shoal::net {

namespace {

using std::chrono::milliseconds;

// An answer's head may not be longer than this; its body, not longer than a
// listing of every job of a large history can be.
constexpr size_t kMaxHeadBytes = 64 * 1024;
constexpr size_t kMaxBodyBytes = size_t{1} << 30;
// Bytes asked of the socket at a time (one TLS record's worth).
constexpr size_t kReadBytes = 16384;

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using SslCtxPtr = std::unique_ptr<SSL_CTX, SslCtxFree>;

bool IsIpLiteral(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  return ::inet_pton(AF_INET, host.c_str(), &a4) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

// The client's TLS context: the cluster's CA, and the name the server's
// certificate must carry.
Result<SslCtxPtr> MakeContext(const TlsClientOptions& t, const std::string* peer_name) {
  std::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes with write(2)
  // The commands that use this client end soon after their last call, and
  // its start is most of what a call costs (issue 16), so OpenSSL is asked
  // for no more than the call needs (when this is OpenSSL's first use): no
  // clean-up of its tables at exit; no error strings (Shoal's messages say
  // what failed); no openssl.cnf (the settings below are the client's own,
  // Debian's system default of security level 2 among them); and not the
  // legacy table of every cipher by name, which TLS does not read (ciphers
  // come from the provider). The digests' table stays: certificate checks
  // look digests up in it.
  OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
                       OPENSSL_INIT_NO_LOAD_SSL_STRINGS | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS |
                       OPENSSL_INIT_NO_LOAD_CONFIG,
                   nullptr);
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return Internal("cannot make a TLS context (OpenSSL)");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_security_level(ctx.get(), 2);
  // A server that closes without a close_notify has still ended its answer.
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  if (!t.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), t.cert_file.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx.get(), t.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx.get()) != 1) {
      return InvalidArgument(fmt::format("cannot use the TLS certificate {} with the key {}",
                                         t.cert_file, t.key_file));
    }
  }
  if (!t.verify) return ctx;
  if (t.ca_file.empty()) return InvalidArgument("TLS needs the cluster's CA certificate");
  if (SSL_CTX_load_verify_locations(ctx.get(), t.ca_file.c_str(), nullptr) != 1)
    return InvalidArgument(fmt::format("cannot read the CA certificate {}", t.ca_file));
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (!peer_name->empty()) RequirePeerName(ctx.get(), peer_name);
  return ctx;
}

// A header's value, its name in any case; empty when it has none.
std::string HeaderValue(const HttpResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

}  // namespace

struct LeanHttpClient::Impl {
  Servers servers;
  size_t current = 0;
  std::string host;
  int port = 0;
  std::string base;  // "host:port" of the current server
  ClientOptions options;
  SslCtxPtr ctx;  // TLS only

  int fd = -1;
  SSL* ssl = nullptr;
  // Bytes read from the connection and not yet taken.
  std::string in;
  size_t taken = 0;
  size_t received = 0;  // bytes read for the request in flight

  ~Impl() { Close(); }

  void Use(size_t i) {
    current = i;
    host = servers.endpoints[i].first;
    port = servers.endpoints[i].second;
    base = fmt::format("{}:{}", host, port);
  }

  void Close() {
    if (ssl != nullptr) {
      SSL_shutdown(ssl);  // a close_notify, not waited for
      SSL_free(ssl);
      ssl = nullptr;
    }
    if (fd >= 0) ::close(fd);
    fd = -1;
    in.clear();
    taken = 0;
  }

  SteadyClock::time_point ReadDeadline() const {
    return SteadyClock::now() + milliseconds(options.read_timeout_ms);
  }

  Status ConnectTcp();
  Status Handshake();
  // Connects to the current server, or to the next ones in turn while a
  // connection cannot be made (nothing was sent).
  Status Open();

  bool SendAll(const std::string& bytes);
  // Reads more into `in`; false at the end of the connection or on an error.
  bool Fill();
  Result<std::string> Line();
  Status Take(size_t n, std::string& out);
  Status ReadBody(HttpResponse& r, bool& close_after);
  Status ReadChunked(std::string& body);
  Result<HttpResponse> ReadAnswer(bool& close_after);

  Result<HttpResponse> Exchange(const char* method, const std::string& path,
                                const std::string* body, const char* content_type);
  std::string Request(const char* method, const std::string& path, const std::string* body,
                      const char* content_type) const;
};

Status LeanHttpClient::Impl::ConnectTcp() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int e = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); e != 0)
    return Unreachable(base, ::gai_strerror(e));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  std::string why = "no address";
  const auto deadline = SteadyClock::now() + milliseconds(options.connect_timeout_ms);
  for (const addrinfo* a = list.get(); a != nullptr; a = a->ai_next) {
    const int s =
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (s < 0) {
      why = std::strerror(errno);
      continue;
    }
    int err = ::connect(s, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      socklen_t len = sizeof err;
      err = WaitUntil(s, POLLOUT, deadline) ? 0 : ETIMEDOUT;
      if (err == 0 && ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err == 0) {
      const int one = 1;
      ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      fd = s;
      return Status::Ok();
    }
    ::close(s);
    why = err == ETIMEDOUT ? fmt::format("no answer within {} ms", options.connect_timeout_ms)
                           : std::strerror(err);
  }
  return Unreachable(base, why);
}

Status LeanHttpClient::Impl::Handshake() {
  ssl = SSL_new(ctx.get());
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) return Unreachable(base, "TLS set-up failed");
  const TlsClientOptions& t = *options.tls;
  const bool ip = IsIpLiteral(host);
  if (!ip) SSL_set_tlsext_host_name(ssl, host.c_str());
  // The certificate must also be one for the address we asked for, as a
  // browser checks (besides the common name RequirePeerName asks of it).
  if (t.verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                       : X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    if (set != 1) return Unreachable(base, "bad host name for TLS");
  }
  const auto deadline = ReadDeadline();
  for (;;) {
    ERR_clear_error();
    const int r = SSL_connect(ssl);
    if (r == 1) return Status::Ok();
    const int e = SSL_get_error(ssl, r);
    const bool again = (e == SSL_ERROR_WANT_READ && WaitUntil(fd, POLLIN, deadline)) ||
                       (e == SSL_ERROR_WANT_WRITE && WaitUntil(fd, POLLOUT, deadline));
    if (again) continue;
    if (t.verify && SSL_get_verify_result(ssl) != X509_V_OK) return UntrustedServer(base);
    return Unreachable(base, "the TLS handshake failed");
  }
}

Status LeanHttpClient::Impl::Open() {
  for (size_t tried = 1;; ++tried) {
    Status s = ConnectTcp();
    if (s.ok()) break;
    if (tried >= servers.endpoints.size()) return s;
    Use((current + 1) % servers.endpoints.size());
  }
  if (ctx) {
    if (Status s = Handshake(); !s.ok()) {
      Close();
      return s;
    }
  }
  return Status::Ok();
}

bool LeanHttpClient::Impl::SendAll(const std::string& bytes) {
  return net::SendAll(fd, ssl, bytes.data(), bytes.size(), ReadDeadline());
}

bool LeanHttpClient::Impl::Fill() {
  if (taken > 0) {
    in.erase(0, taken);
    taken = 0;
  }
  const size_t had = in.size();
  in.resize(had + kReadBytes);
  const ssize_t n = ReadSome(fd, ssl, in.data() + had, kReadBytes, ReadDeadline());
  in.resize(had + static_cast<size_t>(n > 0 ? n : 0));
  if (n > 0) received += static_cast<size_t>(n);
  return n > 0;
}

Result<std::string> LeanHttpClient::Impl::Line() {
  for (;;) {
    const size_t end = in.find("\r\n", taken);
    if (end != std::string::npos) {
      std::string line = in.substr(taken, end - taken);
      taken = end + 2;
      return line;
    }
    if (in.size() - taken > kMaxHeadBytes) return Unreachable(base, "an answer's line is too long");
    if (!Fill()) return Unreachable(base, "the connection ended inside an answer");
  }
}

Status LeanHttpClient::Impl::Take(size_t n, std::string& out) {
  while (in.size() - taken < n) {
    const size_t have = in.size() - taken;
    out.append(in, taken, have);
    n -= have;
    taken = in.size();
    if (!Fill()) return Unreachable(base, "the connection ended inside an answer");
  }
  out.append(in, taken, n);
  taken += n;
  return Status::Ok();
}

Status LeanHttpClient::Impl::ReadChunked(std::string& body) {
  for (;;) {
    SHOAL_ASSIGN_OR_RETURN(std::string size_line, Line());
    const std::string_view digits = Trim(std::string_view(size_line).substr(
        0, size_line.find(';')));  // chunk extensions are ignored
    size_t size = 0;
    const char* const last = digits.data() + digits.size();
    const auto [stop, error] = std::from_chars(digits.data(), last, size, 16);
    if (digits.empty() || digits.size() > 8 || error != std::errc() || stop != last)
      return Unreachable(base, "a bad chunk size");
    if (size == 0) break;
    if (body.size() + size > kMaxBodyBytes) return Unreachable(base, "an answer over 1 GiB");
    SHOAL_RETURN_IF_ERROR(Take(size, body));
    SHOAL_ASSIGN_OR_RETURN(std::string end, Line());
    if (!end.empty()) return Unreachable(base, "a chunk longer than it said");
  }
  for (;;) {  // trailer fields, up to an empty line
    SHOAL_ASSIGN_OR_RETURN(std::string trailer, Line());
    if (trailer.empty()) return Status::Ok();
  }
}

Status LeanHttpClient::Impl::ReadBody(HttpResponse& r, bool& close_after) {
  if (r.status == 204 || r.status == 304) return Status::Ok();
  if (ToLower(HeaderValue(r, "Transfer-Encoding")).find("chunked") != std::string::npos)
    return ReadChunked(r.body);
  if (const std::string length = HeaderValue(r, "Content-Length"); !length.empty()) {
    auto n = ParseInt(length);
    if (!n.ok() || *n < 0 || static_cast<size_t>(*n) > kMaxBodyBytes)
      return Unreachable(base, "a bad Content-Length");
    return Take(static_cast<size_t>(*n), r.body);
  }
  // Neither: the body is what comes until the server closes.
  close_after = true;
  for (;;) {
    r.body.append(in, taken, std::string::npos);
    taken = in.size();
    if (r.body.size() > kMaxBodyBytes) return Unreachable(base, "an answer over 1 GiB");
    if (!Fill()) return Status::Ok();
  }
}

Result<HttpResponse> LeanHttpClient::Impl::ReadAnswer(bool& close_after) {
  HttpResponse r;
  std::string version;
  do {  // an interim answer (1xx) is followed by the real one
    SHOAL_ASSIGN_OR_RETURN(std::string status_line, Line());
    const std::vector<std::string_view> parts = Split(status_line, ' ');
    auto code = parts.size() >= 2 ? ParseInt(parts[1]) : InvalidArgument("");
    if (!StartsWith(status_line, "HTTP/1.") || !code.ok() || *code < 100 || *code > 599)
      return Unreachable(base, "not an HTTP answer");
    version = std::string(parts[0]);
    r.status = static_cast<int>(*code);
    r.headers.clear();
    size_t head_bytes = status_line.size();
    for (;;) {
      SHOAL_ASSIGN_OR_RETURN(std::string line, Line());
      if (line.empty()) break;
      head_bytes += line.size();
      if (head_bytes > kMaxHeadBytes) return Unreachable(base, "an answer's head is too long");
      const size_t colon = line.find(':');
      if (colon == std::string::npos) return Unreachable(base, "a malformed header");
      r.headers.emplace(std::string(Trim(std::string_view(line).substr(0, colon))),
                        std::string(Trim(std::string_view(line).substr(colon + 1))));
    }
  } while (r.status < 200);
  const std::string said = ToLower(HeaderValue(r, "Connection"));
  close_after = said == "close" || (version == "HTTP/1.0" && said != "keep-alive");
  SHOAL_RETURN_IF_ERROR(ReadBody(r, close_after));
  return r;
}

std::string LeanHttpClient::Impl::Request(const char* method, const std::string& path,
                                          const std::string* body, const char* content_type) const {
  const bool v6 = host.find(':') != std::string::npos;
  std::string out = fmt::format("{} {} HTTP/1.1\r\nHost: {}{}{}:{}\r\nAccept: */*\r\n", method,
                                path, v6 ? "[" : "", host, v6 ? "]" : "", port);
  if (!options.token.empty()) out += fmt::format("Authorization: Bearer {}\r\n", options.token);
  if (body != nullptr) {
    out += fmt::format("Content-Type: {}\r\nContent-Length: {}\r\n", content_type, body->size());
  }
  if (!options.keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  if (body != nullptr) out += *body;
  return out;
}

Result<HttpResponse> LeanHttpClient::Impl::Exchange(const char* method, const std::string& path,
                                                    const std::string* body,
                                                    const char* content_type) {
  const std::string request = Request(method, path, body, content_type);
  // A request that may go twice goes again once on a new connection when a
  // kept one turns out closed before any answer came.
  const bool repeatable = body == nullptr;
  for (int attempt = 0;; ++attempt) {
    if (fd >= 0 && !PeerKeepsOpen(fd)) Close();
    const bool reused = fd >= 0;
    if (!reused) SHOAL_RETURN_IF_ERROR(Open());
    bool close_after = false;
    received = 0;
    Result<HttpResponse> answer = Unreachable(base, "the request could not be sent");
    if (SendAll(request)) answer = ReadAnswer(close_after);
    if (!answer.ok() || close_after || !options.keep_alive) {
      const bool nothing_came = received == 0;
      Close();
      if (!answer.ok() && reused && repeatable && nothing_came && attempt == 0) continue;
    }
    return answer;
  }
}

Result<std::unique_ptr<LeanHttpClient>> LeanHttpClient::Connect(const std::string& base,
                                                                const ClientOptions& options) {
  SHOAL_ASSIGN_OR_RETURN(Servers servers, ParseServers(base, options));
  auto impl = std::make_unique<Impl>();
  impl->servers = std::move(servers);
  impl->options = options;
  impl->Use(0);
  if (impl->servers.tls) {
    SHOAL_ASSIGN_OR_RETURN(impl->ctx,
                           MakeContext(*impl->options.tls, &impl->options.tls->peer_name));
  }
  return std::unique_ptr<LeanHttpClient>(new LeanHttpClient(std::move(impl)));
}

LeanHttpClient::LeanHttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LeanHttpClient::~LeanHttpClient() = default;

Result<HttpResponse> LeanHttpClient::Get(const std::string& path) {
  return impl_->Exchange("GET", path, nullptr, nullptr);
}

Result<HttpResponse> LeanHttpClient::Post(const std::string& path, const std::string& body,
                                          const char* content_type) {
  return impl_->Exchange("POST", path, &body, content_type);
}

Result<HttpResponse> LeanHttpClient::Patch(const std::string& path, const std::string& json_body) {
  return impl_->Exchange("PATCH", path, &json_body, "application/json");
}

Result<HttpResponse> LeanHttpClient::Delete(const std::string& path) {
  return impl_->Exchange("DELETE", path, nullptr, nullptr);
}

const std::string& LeanHttpClient::base() const {
  return impl_->base;
}

}  // namespace shoal::net
