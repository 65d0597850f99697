// The listeners' HTTP server (net/http_server.h) behind the request guard,
// over raw loopback sockets: a refused body is never read as the next
// request, and a body that was read keeps the connection for the next one.
#include "net/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "net/http_guard.h"

namespace shoal::net {
namespace {

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GuardRequests(http_,
                  {.max_body_bytes = 1 << 20,
                   .is_public = [](const httplib::Request& r) { return r.path == "/healthz"; },
                   .authenticate =
                       [](const httplib::Request& r) {
                         return r.get_header_value("Authorization") == "Bearer good"
                                    ? Status::Ok()
                                    : Status(StatusCode::kUnauthenticated, "a bad token");
                       }});
    http_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("healthy", "text/plain");
    });
    http_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content("echo:" + req.body, "text/plain");
    });
    port_ = http_.Bind("127.0.0.1", 0);
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!http_.is_running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(http_.is_running());
  }
  void TearDown() override {
    http_.stop();
    if (thread_.joinable()) thread_.join();
  }

  // Sends `request` on a new connection and returns all it gets back until
  // the server closes it (a send or a read stalled for 10 s ends it too).
  std::string Exchange(const std::string& request) {
    const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(sock, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{10, 0};
    ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    std::string got;
    if (::connect(sock, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::send(sock, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(sock, buf, sizeof buf, 0)) > 0)
        got.append(buf, static_cast<size_t>(n));
    }
    ::close(sock);
    return got;
  }

  static int Count(const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
      ++n;
    return n;
  }

  HttpServer http_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(HttpServerTest, ARefusedBodyIsNotReadAsTheNextRequest) {
  // Without a token the body is refused unread; it holds a request of its own.
  const std::string inner = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string got =
      Exchange("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(inner.size()) +
               "\r\n\r\n" + inner);
  EXPECT_EQ(got.rfind("HTTP/1.1 401", 0), 0u) << got;
  EXPECT_EQ(Count(got, "HTTP/1.1 "), 1) << got;
  EXPECT_EQ(got.find("healthy"), std::string::npos) << got;
}

TEST_F(HttpServerTest, AnOversizedBodyIsAnsweredAfterItIsSent) {
  // The client writes all of it before it reads: the server must take it
  // (and drop it) for the answer to arrive rather than a reset.
  const std::string body(8 << 20, 'x');
  const std::string got =
      Exchange("POST /echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(got.rfind("HTTP/1.1 413", 0), 0u) << got.substr(0, 200);
  EXPECT_EQ(Count(got, "HTTP/1.1 "), 1) << got.substr(0, 200);
}

TEST_F(HttpServerTest, ABodyThatWasReadKeepsTheConnection) {
  const std::string head = "POST /echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n";
  const std::string got = Exchange(head + "Content-Length: 3\r\n\r\none" + head +
                                   "Connection: close\r\nContent-Length: 3\r\n\r\ntwo");
  EXPECT_EQ(Count(got, "HTTP/1.1 200"), 2) << got;
  EXPECT_NE(got.find("echo:one"), std::string::npos) << got;
  EXPECT_NE(got.find("echo:two"), std::string::npos) << got;
}

}  // namespace
}  // namespace shoal::net
