// net::LeanHttpClient, the HTTP client of the commands users type: against
// Shoal's own listener (net::HttpServer) for what it must understand, and
// against a hostile server on a raw socket for what it must refuse without
// hanging or crashing. Its TLS checks are in tls_test.cc.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "net/http_server.h"
#include "net/lean_http_client.h"

namespace shoal::net {
namespace {

using std::chrono::milliseconds;

class LeanClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    http_.SetLimits({.idle_timeout = milliseconds(300), .trusted_idle_timeout = milliseconds(300)});
    // Echoes what the client sent, and on which connection (its port).
    const auto echo = [](const httplib::Request& req, httplib::Response& res) {
      res.set_header("X-Port", std::to_string(req.remote_port));
      res.set_content(fmt::format("{} {} [{}] [{}] {}", req.method, req.path,
                                  req.get_header_value("Authorization"),
                                  req.get_header_value("Content-Type"), req.body),
                      "text/plain");
    };
    http_.Get("/echo", echo);
    http_.Post("/echo", echo);
    http_.Patch("/echo", echo);
    http_.Delete("/echo", echo);
    http_.Get("/missing", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content("{\"detail\":\"no such job\"}", "application/json");
    });
    // A body in chunks of every size, as a streamed listing is sent.
    http_.Get("/chunked", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/plain", [](size_t offset, httplib::DataSink& sink) {
        if (offset >= 300000) {
          sink.done();
          return true;
        }
        const std::string piece(1 + offset % 7000, static_cast<char>('a' + offset % 26));
        return sink.write(piece.data(), piece.size());
      });
    });
    port_ = http_.Bind("127.0.0.1", 0);
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running())
      std::this_thread::sleep_for(milliseconds(1));
  }
  void TearDown() override {
    http_.stop();
    if (thread_.joinable()) thread_.join();
  }

  std::unique_ptr<LeanHttpClient> Client(const std::string& base, bool keep_alive = true) {
    auto c = LeanHttpClient::Connect(base, {.token = "t0k",
                                            .connect_timeout_ms = 2000,
                                            .read_timeout_ms = 2000,
                                            .keep_alive = keep_alive});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  std::string Base() const { return "http://127.0.0.1:" + std::to_string(port_); }

  HttpServer http_;
  int port_ = 0;
  std::thread thread_;
};

// What the chunked handler above sends.
std::string ChunkedBody() {
  std::string out;
  for (size_t offset = 0; offset < 300000; offset = out.size())
    out += std::string(1 + offset % 7000, static_cast<char>('a' + offset % 26));
  return out;
}

TEST_F(LeanClientTest, EveryMethodGoesWithItsTokenAndBody) {
  auto c = Client(Base());
  ASSERT_NE(c, nullptr);
  auto get = c->Get("/echo");
  ASSERT_TRUE(get.ok()) << get.status().ToString();
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(get->body, "GET /echo [Bearer t0k] [] ");
  EXPECT_EQ(get->headers.at("Content-Type"), "text/plain");  // as the server spelt it
  auto post = c->Post("/echo", "{\"a\":1}");
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->body, "POST /echo [Bearer t0k] [application/json] {\"a\":1}");
  auto raw = c->Post("/echo", std::string("\0\r\n", 3), "application/octet-stream");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->body,
            "POST /echo [Bearer t0k] [application/octet-stream] " + std::string("\0\r\n", 3));
  auto patch = c->Patch("/echo", "{}");
  ASSERT_TRUE(patch.ok());
  EXPECT_EQ(patch->body, "PATCH /echo [Bearer t0k] [application/json] {}");
  auto del = c->Delete("/echo");
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->body, "DELETE /echo [Bearer t0k] [] ");
  // An HTTP error is an answer, not a transport failure.
  auto missing = c->Get("/missing");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, "{\"detail\":\"no such job\"}");
  EXPECT_EQ(c->base(), "127.0.0.1:" + std::to_string(port_));
}

TEST_F(LeanClientTest, AChunkedBodyIsReadWhole) {
  auto c = Client(Base());
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 2; ++i) {  // and the connection stays usable after it
    auto r = c->Get("/chunked");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, ChunkedBody());
  }
  auto after = c->Get("/echo");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status, 200);
}

TEST_F(LeanClientTest, AKeptConnectionIsReusedAndReplacedWhenTheServerClosesIt) {
  auto c = Client(Base());
  ASSERT_NE(c, nullptr);
  auto first = c->Get("/echo");
  auto second = c->Post("/echo", "x");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->headers.at("X-Port"), second->headers.at("X-Port")) << "one connection";
  std::this_thread::sleep_for(milliseconds(700));  // past the server's idle timeout
  auto third = c->Post("/echo", "y");
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(third->body, "POST /echo [Bearer t0k] [application/json] y");
  // Without keep-alive, every call has a connection of its own.
  auto once = Client(Base(), /*keep_alive=*/false);
  ASSERT_NE(once, nullptr);
  auto a = once->Get("/echo");
  auto b = once->Get("/echo");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->headers.at("X-Port"), b->headers.at("X-Port"));
}

// A port where nothing listens: bound, never listened on, so that no one
// else can take it while the test runs.
struct DeadPort {
  DeadPort() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
  }
  ~DeadPort() { ::close(fd); }
  int fd = -1;
  int port = 0;
};

TEST_F(LeanClientTest, ARefusedControllerHandsOverToTheNextOne) {
  DeadPort dead;
  ASSERT_GT(dead.port, 0);
  const std::string standby = "127.0.0.1:" + std::to_string(port_);
  auto c = Client("http://127.0.0.1:" + std::to_string(dead.port) + ", http://" + standby);
  ASSERT_NE(c, nullptr);
  auto r = c->Get("/echo");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(c->base(), standby);
  // Alone, a refused server is unreachable, which the CLI tells by its words.
  auto alone = Client("http://127.0.0.1:" + std::to_string(dead.port));
  ASSERT_NE(alone, nullptr);
  auto refused = alone->Get("/echo");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("cannot reach the Shoal server"), std::string::npos)
      << refused.status().message();
}

TEST(LeanClientAddressTest, BadAddressesAreRefusedBeforeAnythingIsSent) {
  EXPECT_FALSE(LeanHttpClient::Connect("", {}).ok());
  EXPECT_FALSE(LeanHttpClient::Connect("http://127.0.0.1:99999", {}).ok());
  EXPECT_FALSE(LeanHttpClient::Connect("http://a:1,https://b:2", {}).ok());
  auto https = LeanHttpClient::Connect("https://127.0.0.1:1", {});
  ASSERT_FALSE(https.ok());
  EXPECT_NE(https.status().message().find("CA certificate"), std::string::npos);
}

// A server on a raw socket that answers each connection with `answer` (and
// then holds it open for `hold`), for answers Shoal's server never sends.
class HostileServer {
 public:
  HostileServer(std::string answer, milliseconds hold) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len);
    ::listen(fd_, 4);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, answer = std::move(answer), hold] {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      (void)::recv(c, buf, sizeof buf, 0);  // the request
      (void)::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
      std::this_thread::sleep_for(hold);
      ::close(c);
    });
  }
  ~HostileServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

Result<HttpResponse> AskHostile(const std::string& answer, milliseconds hold = milliseconds(0)) {
  HostileServer server(answer, hold);
  SHOAL_ASSIGN_OR_RETURN(auto c, LeanHttpClient::Connect(server.base(), {.read_timeout_ms = 300}));
  return c->Get("/v1/jobs");
}

TEST(LeanClientHostileTest, MalformedAnswersAreErrorsNotCrashes) {
  const std::string big_head(70 * 1024, 'x');
  for (const std::string& answer : {
           std::string("garbage\r\n\r\n"),
           std::string("HTTP/1.1 abc OK\r\n\r\n"),
           std::string("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"),
           std::string("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n"),
           std::string("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\n"),
           std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
           std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffff\r\n"),
           std::string(
               "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n0\r\n\r\n"),
           "HTTP/1.1 200 OK\r\nX: " + big_head + "\r\n\r\n",
           // Cut short: less body than stated, a chunk without its end.
           std::string("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
           std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"),
           std::string(""),
       }) {
    auto r = AskHostile(answer);
    ASSERT_FALSE(r.ok()) << "accepted: " << answer.substr(0, 80);
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << answer.substr(0, 80);
  }
}

TEST(LeanClientHostileTest, AServerThatStallsMidAnswerTimesOut) {
  HostileServer server("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", milliseconds(1500));
  auto c = LeanHttpClient::Connect(server.base(), {.read_timeout_ms = 300});
  ASSERT_TRUE(c.ok());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE((*c)->Get("/v1/jobs").ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1200))
      << "waited for the server rather than the read timeout (300 ms)";
}

TEST(LeanClientHostileTest, AnswersWithoutALengthEndWithTheConnection) {
  auto r = AskHostile("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nX-A: b\r\n\r\nall of it");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "all of it");
  EXPECT_EQ(r->headers.at("X-A"), "b");
}

}  // namespace
}  // namespace shoal::net
