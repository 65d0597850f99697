// The listeners' HTTP server (net/http_server.h) behind the request guard,
// over raw loopback sockets: a refused body is never read as the next
// request, a body that was read keeps the connection for the next one, and
// idle connections wait without a thread, a stranger's for less time than
// one that showed credentials.
#include "net/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "net/http_guard.h"

namespace shoal::net {
namespace {

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A short linger: threads that start while connections linger stay a
    // minute, and the count of threads is what a test below looks at.
    http_.SetLimits({.idle_timeout = std::chrono::milliseconds(300),
                     .trusted_idle_timeout = std::chrono::seconds(20),
                     .linger = std::chrono::milliseconds(1)});
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
    http_.Post("/ends", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(fmt::format("ends:{}:{} {}:{}.", req.remote_addr, req.remote_port,
                                  req.local_addr, req.local_port),
                      "text/plain");
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

  // A new connection to the server (-1 when it could not be made); sends
  // and reads stall for at most 10 s.
  int Open() const {
    const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(sock, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{10, 0};
    ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    if (::connect(sock, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(sock);
      return -1;
    }
    return sock;
  }

  // Sends `request` on `sock` and reads one answer (whose body has a
  // Content-Length); "" when the connection closed first.
  static std::string Ask(int sock, const std::string& request) {
    if (::send(sock, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size()))
      return "";
    std::string got;
    char buf[4096];
    while (true) {
      const size_t head = got.find("\r\n\r\n");
      if (head != std::string::npos) {
        const size_t at = got.find("Content-Length: ");
        const size_t length = at < head ? std::stoul(got.substr(at + 16)) : 0;
        if (got.size() >= head + 4 + length) return got;
      }
      const ssize_t n = ::recv(sock, buf, sizeof buf, 0);
      if (n <= 0) return "";
      got.append(buf, static_cast<size_t>(n));
    }
  }

  // Whether the server has closed `sock` (a read sees its end at once).
  static bool ClosedByServer(int sock) {
    char c;
    return ::recv(sock, &c, 1, MSG_DONTWAIT) == 0;
  }

  static int ThreadsOfThisProcess() {
    int n = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator("/proc/self/task"))
      ++n;
    return n;
  }

  // Sends `request` on a new connection and returns all it gets back until
  // the server closes it (a send or a read stalled for 10 s ends it too).
  std::string Exchange(const std::string& request) {
    const int sock = Open();
    std::string got;
    if (sock >= 0 && ::send(sock, request.data(), request.size(), MSG_NOSIGNAL) ==
                         static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(sock, buf, sizeof buf, 0)) > 0)
        got.append(buf, static_cast<size_t>(n));
    }
    if (sock >= 0) ::close(sock);
    return got;
  }

  // `n` connections, each answered once and then left idle; returns once
  // the server holds them all idle (fewer when one failed).
  std::vector<int> KeptConnections(int n);

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

constexpr char kEcho[] =
    "POST /echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nContent-Length: 2\r\n\r\nhi";

std::vector<int> HttpServerTest::KeptConnections(int n) {
  std::vector<int> socks;
  for (int i = 0; i < n; ++i) {
    const int sock = Open();
    if (sock < 0 || Ask(sock, kEcho).find("echo:hi") == std::string::npos) {
      ADD_FAILURE() << "connection " << i << " was not answered";
      if (sock >= 0) ::close(sock);
      return socks;
    }
    socks.push_back(sock);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (http_.idle_connections() < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return socks;
}

TEST_F(HttpServerTest, IdleConnectionsWaitWithoutAThreadAndAreServedAgain) {
  // Agents keep their connection between heartbeats: 200 of them, each past
  // the linger, must not hold 200 threads, and each must be answered when
  // its next request comes.
  constexpr int kConnections = 200;  // under the 256 one address may hold
  const std::vector<int> socks = KeptConnections(kConnections);
  ASSERT_EQ(socks.size(), size_t{kConnections});
  EXPECT_EQ(http_.idle_connections(), kConnections);
  EXPECT_EQ(http_.open_connections(), kConnections);
  EXPECT_LT(ThreadsOfThisProcess(), 64);
  for (int i = 0; i < kConnections; ++i) {
    EXPECT_NE(Ask(socks[static_cast<size_t>(i)], kEcho).find("echo:hi"), std::string::npos) << i;
    ::close(socks[static_cast<size_t>(i)]);
  }
}

TEST_F(HttpServerTest, IdleConnectionsWhoseRequestsTrickleInHoldUpNoOther) {
  // The threads waiting on the idle connections serve what arrives on
  // them: clients that start their next request and then stall (more of
  // them than such threads) must not keep a kept connection's request
  // from being answered at once (a stalled request holds its thread for
  // the request deadline, 10 s here; 2 s leaves room for a loaded machine).
  constexpr int kStalled = 6;
  std::vector<int> stalled = KeptConnections(kStalled + 1);
  ASSERT_EQ(stalled.size(), size_t{kStalled + 1});
  ASSERT_EQ(http_.idle_connections(), kStalled + 1);
  const int member = stalled.back();
  stalled.pop_back();
  for (int sock : stalled)
    ASSERT_EQ(::send(sock, "POST /echo HT", 13, MSG_NOSIGNAL), 13);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // each taken up by a thread
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_NE(Ask(member, kEcho).find("echo:hi"), std::string::npos) << round;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << round;
  }
  for (int sock : stalled)
    ::close(sock);
  ::close(member);
}

TEST_F(HttpServerTest, AStrangersIdleConnectionClosesBeforeOneThatShowedCredentials) {
  const int stranger = Open();
  const int member = Open();
  const int silent = Open();  // has sent nothing at all
  ASSERT_TRUE(stranger >= 0 && member >= 0 && silent >= 0);
  ASSERT_NE(Ask(stranger, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").find("healthy"),
            std::string::npos);
  ASSERT_NE(Ask(member, kEcho).find("echo:hi"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the strangers' limit is 300 ms
  EXPECT_TRUE(ClosedByServer(stranger));
  EXPECT_TRUE(ClosedByServer(silent));
  EXPECT_FALSE(ClosedByServer(member));
  EXPECT_NE(Ask(member, kEcho).find("echo:hi"), std::string::npos);
  EXPECT_EQ(http_.open_connections(), 1);
  for (int sock : {stranger, member, silent})
    ::close(sock);
}

TEST_F(HttpServerTest, KeptConnectionsComeBackFromTheIdleSetAgainAndAgain) {
  // A connection that the idle set gave back stays in its epoll set,
  // disarmed, until it is re-armed or closed: it must be served after every
  // idle spell, and a later connection that gets the same socket number
  // (the first one closed) must be held idle and served too. Every request
  // carries the connection's two ends as the client sees them.
  constexpr char kEnds[] =
      "POST /ends HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nContent-Length: 0\r\n\r\n";
  auto wait_until = [](const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return done();
  };
  for (int connection = 0; connection < 3; ++connection) {
    const int sock = Open();
    ASSERT_GE(sock, 0);
    sockaddr_in mine{}, theirs{};
    socklen_t length = sizeof mine;
    ASSERT_EQ(::getsockname(sock, reinterpret_cast<sockaddr*>(&mine), &length), 0);
    length = sizeof theirs;
    ASSERT_EQ(::getpeername(sock, reinterpret_cast<sockaddr*>(&theirs), &length), 0);
    const std::string ends = fmt::format("ends:127.0.0.1:{} 127.0.0.1:{}.", ntohs(mine.sin_port),
                                         ntohs(theirs.sin_port));
    for (int spell = 0; spell < 4; ++spell) {
      EXPECT_NE(Ask(sock, kEnds).find(ends), std::string::npos) << connection << " " << spell;
      EXPECT_TRUE(wait_until([&] { return http_.idle_connections() == 1; }))
          << connection << " " << spell;
    }
    ::close(sock);
    EXPECT_TRUE(wait_until([&] { return http_.open_connections() == 0; })) << connection;
  }
}

TEST_F(HttpServerTest, StoppingClosesIdleConnectionsAtOnce) {
  const int sock = Open();
  ASSERT_GE(sock, 0);
  ASSERT_NE(Ask(sock, kEcho).find("echo:hi"), std::string::npos);
  while (http_.idle_connections() < 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto t0 = std::chrono::steady_clock::now();
  http_.stop();
  thread_.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  char c;
  EXPECT_EQ(::recv(sock, &c, 1, 0), 0);  // its end, not a timeout
  ::close(sock);
}

}  // namespace
}  // namespace shoal::net
