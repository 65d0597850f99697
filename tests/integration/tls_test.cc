// The cluster's PKI (net/tls.h) and TLS through net::HttpServer and
// net::HttpClient: certificates the CA signs for the name it chooses,
// clients that accept only the peer they expect, listeners that require a
// client certificate and tell handlers whose it is.
#include "net/tls.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "core/files.h"
#include "core/strings.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/lean_http_client.h"

namespace shoal::net {
namespace {

std::string Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

TEST(TlsTest, TheCaSignsRequestsForTheNameItChooses) {
  auto ca = CreateCa("test CA");
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  auto request = CreateKeyAndRequest("asked-for");
  ASSERT_TRUE(request.ok());
  auto cert = SignRequest(*ca, request->csr_pem, "n1", {"10.0.0.1", "n1.example"}, 30);
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  auto cn = VerifiedCommonName(ca->cert_pem, *cert);
  ASSERT_TRUE(cn.ok()) << cn.status().ToString();
  EXPECT_EQ(*cn, "n1");  // not what the request asked for
  auto fp = Fingerprint(*cert);
  ASSERT_TRUE(fp.ok());
  EXPECT_EQ(fp->size(), 32u * 3 - 1);  // "AB:CD:..." over SHA-256

  // Another CA's certificate does not verify; a tampered request does not sign.
  auto other = CreateCa("other CA");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(VerifiedCommonName(other->cert_pem, *cert).status().code(),
            StatusCode::kPermissionDenied);
  std::string tampered = request->csr_pem;
  tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(SignRequest(*ca, tampered, "n1", {}, 30).ok());
  EXPECT_FALSE(SignRequest(*ca, "not a request", "n1", {}, 30).ok());
  // A name with a separator would add names nobody asked for.
  EXPECT_FALSE(SignRequest(*ca, request->csr_pem, "n1", {"a,DNS:evil"}, 30).ok());
  EXPECT_FALSE(SignRequest(*ca, request->csr_pem, "n1", {""}, 30).ok());
  EXPECT_TRUE(SignRequest(*ca, request->csr_pem, "n1", {"::1"}, 30).ok());
}

// GET /resumed: whether this connection resumed a session, and whose it is.
void AnswerResumed(const httplib::Request& req, httplib::Response& res) {
  res.set_content(std::to_string(SSL_session_reused(req.ssl)) + " " + PeerOf(req.ssl).common_name,
                  "text/plain");
}

// A TLS listener with the controller's certificate that requires clients'.
class TlsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("shoal-tls-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    auto ca = CreateCa("test CA");
    ASSERT_TRUE(ca.ok());
    ca_ = *ca;
    auto server = IssueCertificate(ca_, kControllerName, {"127.0.0.1"}, 1);
    auto node = IssueCertificate(ca_, "n1", {"127.0.0.1"}, 1);
    ASSERT_TRUE(server.ok() && node.ok());
    ca_file_ = Write(dir_ / "ca.crt", ca_.cert_pem);
    server_cert_ = Write(dir_ / "server.crt", server->cert_pem);
    server_key_ = Write(dir_ / "server.key", server->key_pem);
    node_cert_ = Write(dir_ / "node.crt", node->cert_pem);
    node_key_ = Write(dir_ / "node.key", node->key_pem);
    // Nodes' connections are trusted: they may idle as long as strangers' here.
    http_.SetLimits({.idle_timeout = std::chrono::milliseconds(200),
                     .trusted_idle_timeout = std::chrono::milliseconds(200)});
    ASSERT_TRUE(http_
                    .EnableTls({.cert_file = server_cert_,
                                .key_file = server_key_,
                                .ca_file = ca_file_,
                                .require_client_cert = true})
                    .ok());
    http_.Get("/whoami", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(PeerOf(req.ssl).common_name, "text/plain");
    });
    http_.Get("/resumed", AnswerResumed);
    port_ = http_.Bind("127.0.0.1", 0);
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void TearDown() override {
    http_.stop();
    if (thread_.joinable()) thread_.join();
    std::filesystem::remove_all(dir_);
  }

  Result<HttpResponse> Get(const TlsClientOptions& tls) {
    SHOAL_ASSIGN_OR_RETURN(auto c, HttpClient::Connect("https://127.0.0.1:" + std::to_string(port_),
                                                       {.connect_timeout_ms = 5000,
                                                        .read_timeout_ms = 5000,
                                                        .keep_alive = false,
                                                        .tls = tls}));
    return c->Get("/whoami");
  }

  std::filesystem::path dir_;
  KeyAndCert ca_;
  std::string ca_file_, server_cert_, server_key_, node_cert_, node_key_;
  HttpServer http_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(TlsServerTest, HandlersSeeTheVerifiedClientCertificate) {
  auto r = Get({.ca_file = ca_file_,
                .cert_file = node_cert_,
                .key_file = node_key_,
                .peer_name = std::string(kControllerName)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "n1");
}

// The server closes an idle kept-alive connection without close_notify, so
// that the client sees it gone and reconnects (with unread TLS bytes in the
// socket it would write into a dead connection: SIGPIPE or an error).
TEST_F(TlsServerTest, AKeptAliveClientOutlivesTheServersIdleClose) {
  auto c = HttpClient::Connect(
      "https://127.0.0.1:" + std::to_string(port_),
      {.connect_timeout_ms = 5000,
       .read_timeout_ms = 5000,
       .keep_alive = true,
       .tls =
           TlsClientOptions{.ca_file = ca_file_, .cert_file = node_cert_, .key_file = node_key_}});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*c)->HoldsConnection()) << "none opened yet";
  // The server closes the connection without a word; the client's next
  // request finds it closed and opens another, resuming its session (a
  // connection dropped so must not spoil the session it was given: an
  // agent after a controller restart).
  for (const char* want : {"0 n1", "1 n1", "1 n1"}) {
    auto r = (*c)->Get("/resumed");
    ASSERT_TRUE(r.ok()) << "request for " << want << ": " << r.status().ToString();
    EXPECT_EQ(r->body, want);
    EXPECT_TRUE((*c)->HoldsConnection()) << "kept alive after " << want;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // past the idle timeout
    EXPECT_FALSE((*c)->HoldsConnection()) << "the server closed it after " << want;
  }
}

TEST_F(TlsServerTest, AClientAcceptsOnlyThePeerItExpects) {
  // The controller's certificate is good, but this client wanted node n2.
  auto r =
      Get({.ca_file = ca_file_, .cert_file = node_cert_, .key_file = node_key_, .peer_name = "n2"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("TLS certificate"), std::string::npos)
      << r.status().message();
  // A client that trusts another CA refuses it too.
  auto other = CreateCa("other");
  ASSERT_TRUE(other.ok());
  const std::string other_file = Write(dir_ / "other.crt", other->cert_pem);
  EXPECT_FALSE(Get({.ca_file = other_file, .cert_file = node_cert_, .key_file = node_key_}).ok());
}

// The commands' client (net::LeanHttpClient) checks the server as the
// daemons' does: the cluster's CA, the name it must carry, and the address.
TEST_F(TlsServerTest, TheLeanClientAcceptsOnlyThePeerItExpects) {
  const auto lean_get = [&](const std::string& host, const TlsClientOptions& tls) {
    auto c = LeanHttpClient::Connect(
        "https://" + host + ":" + std::to_string(port_),
        {.connect_timeout_ms = 5000, .read_timeout_ms = 5000, .keep_alive = false, .tls = tls});
    return c.ok() ? (*c)->Get("/whoami") : Result<HttpResponse>(c.status());
  };
  const TlsClientOptions good{.ca_file = ca_file_,
                              .cert_file = node_cert_,
                              .key_file = node_key_,
                              .peer_name = std::string(kControllerName)};
  auto r = lean_get("127.0.0.1", good);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "n1");
  // Another expected name, another CA, an address the certificate does not
  // name (it names 127.0.0.1 only), no client certificate.
  TlsClientOptions other_name = good;
  other_name.peer_name = "n2";
  r = lean_get("127.0.0.1", other_name);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("TLS certificate"), std::string::npos)
      << r.status().message();
  auto other = CreateCa("other");
  ASSERT_TRUE(other.ok());
  TlsClientOptions other_ca = good;
  other_ca.ca_file = Write(dir_ / "other.crt", other->cert_pem);
  EXPECT_FALSE(lean_get("127.0.0.1", other_ca).ok());
  EXPECT_FALSE(lean_get("localhost", good).ok());
  EXPECT_FALSE(lean_get("127.0.0.1", {.ca_file = ca_file_}).ok());
  // A certificate without its key is refused before anything is sent.
  TlsClientOptions wrong_key = good;
  wrong_key.key_file = server_key_;
  auto bad = LeanHttpClient::Connect("https://127.0.0.1:1", {.tls = wrong_key});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TlsServerTest, AListenerThatRequiresACertificateRefusesClientsWithout) {
  EXPECT_FALSE(Get({.ca_file = ca_file_}).ok());
  // Nor a plain-HTTP client.
  auto plain = HttpClient::Connect("http://127.0.0.1:" + std::to_string(port_),
                                   {.connect_timeout_ms = 2000, .read_timeout_ms = 2000});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->Get("/whoami").ok());
}

// One GET /whoami over a new TLS 1.2 connection with the node's certificate,
// offering `resume` (may be null); the answer's body, whether the session
// was resumed, and the session to offer next time.
struct RawTls {
  std::string body;
  bool resumed = false;
  SSL_SESSION* session = nullptr;  // the caller frees it
};
RawTls RawGet(int port, const std::string& ca, const std::string& cert, const std::string& key,
              SSL_SESSION* resume) {
  RawTls out;
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  SSL_CTX_set_max_proto_version(ctx.get(), TLS1_2_VERSION);
  // The server ends with a bare FIN (no close_notify), which this client
  // reads to; OpenSSL would take that for an error and forget the session.
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_locations(ctx.get(), ca.c_str(), nullptr) != 1 ||
      SSL_CTX_use_certificate_file(ctx.get(), cert.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx.get(), key.c_str(), SSL_FILETYPE_PEM) != 1)
    return out;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::unique_ptr<SSL, void (*)(SSL*)> ssl(SSL_new(ctx.get()), SSL_free);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    SSL_set_fd(ssl.get(), fd);
    if (resume != nullptr) SSL_set_session(ssl.get(), resume);
    const std::string request = "GET /whoami HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if (SSL_connect(ssl.get()) == 1 &&
        SSL_write(ssl.get(), request.data(), static_cast<int>(request.size())) > 0) {
      char buf[4096];
      for (int n; (n = SSL_read(ssl.get(), buf, sizeof buf)) > 0;)
        out.body.append(buf, static_cast<size_t>(n));
      out.resumed = SSL_session_reused(ssl.get()) == 1;
      out.session = SSL_get1_session(ssl.get());
      // Freed without a shutdown, the session would be marked unresumable.
      SSL_set_shutdown(ssl.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    }
  }
  ::close(fd);
  if (const size_t head_end = out.body.find("\r\n\r\n"); head_end != std::string::npos)
    out.body.erase(0, head_end + 4);
  return out;
}

// An agent beats over a new connection each time: the listener lets it
// resume its TLS session (no certificate signed or checked again), and the
// resumed connection still acts for the certificate of the first.
TEST_F(TlsServerTest, AClientResumesItsSessionAndKeepsItsIdentity) {
  RawTls first = RawGet(port_, ca_file_, node_cert_, node_key_, nullptr);
  ASSERT_NE(first.session, nullptr);
  EXPECT_EQ(first.body, "n1");
  EXPECT_FALSE(first.resumed);
  RawTls again = RawGet(port_, ca_file_, node_cert_, node_key_, first.session);
  EXPECT_TRUE(again.resumed);
  EXPECT_EQ(again.body, "n1");
  SSL_SESSION_free(first.session);
  SSL_SESSION_free(again.session);
}

// The agent's client offers its last session on each new connection: its
// heartbeats, one connection each, cost the controller a resumed handshake.
TEST_F(TlsServerTest, HttpClientsResumeTheirSessionOnEachNewConnection) {
  auto c =
      HttpClient::Connect("https://127.0.0.1:" + std::to_string(port_),
                          {.connect_timeout_ms = 5000,
                           .read_timeout_ms = 5000,
                           .keep_alive = true,
                           .tls = TlsClientOptions{.ca_file = ca_file_,
                                                   .cert_file = node_cert_,
                                                   .key_file = node_key_,
                                                   .peer_name = std::string(kControllerName)}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (const char* want : {"0 n1", "1 n1", "1 n1"}) {
    auto r = (*c)->Get("/resumed");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, want);
    (*c)->CloseConnection();  // as an agent does between beats
  }
  // A client of another peer name gets nothing from this one's sessions,
  // and still refuses the controller for not being the node it wanted.
  auto other = HttpClient::Connect("https://127.0.0.1:" + std::to_string(port_),
                                   {.connect_timeout_ms = 5000,
                                    .read_timeout_ms = 5000,
                                    .tls = TlsClientOptions{.ca_file = ca_file_,
                                                            .cert_file = node_cert_,
                                                            .key_file = node_key_,
                                                            .peer_name = "n2"}});
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE((*other)->Get("/resumed").ok());
}

// A TLS listener of a test's own, answering /resumed with whether the
// connection resumed its session and the client certificate's name.
struct ResumptionListener {
  HttpServer http;
  std::thread serving;
  int port = 0;
  explicit ResumptionListener(const TlsServerOptions& tls) {
    EXPECT_TRUE(http.EnableTls(tls).ok());
    http.Get("/resumed", AnswerResumed);
    port = http.Bind("127.0.0.1", 0);
    EXPECT_GT(port, 0);
    serving = std::thread([this] { http.listen_after_bind(); });
    while (!http.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~ResumptionListener() {
    http.stop();
    serving.join();
  }
  // One client of `tls` asks for /resumed on a new connection each time.
  void ExpectAnswers(const TlsClientOptions& tls, const std::vector<std::string>& want) {
    auto c = HttpClient::Connect("https://127.0.0.1:" + std::to_string(port),
                                 {.connect_timeout_ms = 5000, .read_timeout_ms = 5000, .tls = tls});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (const std::string& w : want) {
      auto r = (*c)->Get("/resumed");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->body, w);
      (*c)->CloseConnection();
    }
  }
};

// A client without a certificate (an agent on its node session) resumes its
// session too, and its resumed connections carry no certificate: on the
// controller they cost no certificate decoding (docs/scale.md).
TEST_F(TlsServerTest, ClientsWithoutACertificateResumeToo) {
  ResumptionListener listener(
      {.cert_file = server_cert_, .key_file = server_key_, .ca_file = ca_file_});
  listener.ExpectAnswers({.ca_file = ca_file_}, {"0 ", "1 ", "1 "});
}

// The controller's listener gives no session ticket to a client that showed
// a certificate (an agent registering, before it takes its node session up):
// the client's next connection is a full handshake again, while a client
// without a certificate resumes as before.
TEST_F(TlsServerTest, AListenerMayGiveNoTicketToClientsWithACertificate) {
  ResumptionListener listener({.cert_file = server_cert_,
                               .key_file = server_key_,
                               .ca_file = ca_file_,
                               .tickets_for_client_certificates = false});
  listener.ExpectAnswers({.ca_file = ca_file_, .cert_file = node_cert_, .key_file = node_key_},
                         {"0 n1", "0 n1", "0 n1"});
  listener.ExpectAnswers({.ca_file = ca_file_}, {"0 ", "1 ", "1 "});
}

// Ticket keys kept in a file: a client resumes its session on a server that
// started again with the same file (a restart, or a standby given it), and
// not on one with keys of its own.
TEST_F(TlsServerTest, TicketKeysInAFileLetClientsResumeAcrossARestart) {
  struct Running {
    HttpServer http;
    std::thread thread;
    int port = 0;
    ~Running() {
      http.stop();
      if (thread.joinable()) thread.join();
    }
  };
  auto start = [&](Running& r, const std::string& key_file) {
    ASSERT_TRUE(r.http
                    .EnableTls({.cert_file = server_cert_,
                                .key_file = server_key_,
                                .ca_file = ca_file_,
                                .require_client_cert = true,
                                .ticket_key_file = key_file})
                    .ok());
    r.http.Get("/resumed", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(
          std::to_string(SSL_session_reused(req.ssl)) + " " + PeerOf(req.ssl).common_name,
          "text/plain");
    });
    r.port = r.http.Bind("127.0.0.1", 0);
    ASSERT_GT(r.port, 0);
    r.thread = std::thread([&r] { r.http.listen_after_bind(); });
    while (!r.http.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  const std::string keys = (dir_ / "ticket.key").string();
  auto first = std::make_unique<Running>();
  Running same_keys, own_keys;
  start(*first, keys);
  start(same_keys, keys);
  start(own_keys, (dir_ / "other.key").string());
  Result<std::string> text = ReadFile(keys);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(Trim(*text).size(), 160u) << "80 bytes in hex";
  EXPECT_EQ(std::filesystem::status(keys).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto client = [&](int then) {
    auto c = HttpClient::Connect(
        fmt::format("https://127.0.0.1:{},https://127.0.0.1:{}", first->port, then),
        {.connect_timeout_ms = 5000,
         .read_timeout_ms = 5000,
         .tls = TlsClientOptions{
             .ca_file = ca_file_, .cert_file = node_cert_, .key_file = node_key_}});
    EXPECT_TRUE(c.ok());
    return std::move(c).value();
  };
  auto a = client(same_keys.port), b = client(own_keys.port);
  for (HttpClient* c : {a.get(), b.get()}) {
    auto r = c->Get("/resumed");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "0 n1");
    c->CloseConnection();
  }
  first.reset();  // the server goes; the clients move on to the next address
  auto resumed = a->Get("/resumed");
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->body, "1 n1") << "the same ticket keys: the session goes on";
  auto full = b->Get("/resumed");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->body, "0 n1") << "keys of its own: a full handshake";
}

TEST(TlsClientTest, HttpsWithoutTheClustersCaIsRefused) {
  auto c = HttpClient::Connect("https://127.0.0.1:1", {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("CA certificate"), std::string::npos);
  EXPECT_EQ(SchemeOf(" https://x"), "https");
  EXPECT_EQ(SchemeOf("http://x"), "http");
  EXPECT_EQ(SchemeOf("x:1"), "");
}

}  // namespace
}  // namespace shoal::net
