// The local unix socket: a client is known by its uid, which it cannot forge.
#include "net/local_socket.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "api/json.h"
#include "net/http_client.h"
#include "server/server.h"

namespace shoal {
namespace {

using api::Json;

class LocalSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-sock-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);  // other users may reach the socket, as under /run/shoal
  }
  void StartServer() {
    server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.socket = dir_ + "/shoal.sock";
    auto s = server::Server::Start(o, clock_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  Json WhoAmI(const std::string& token) {
    auto c = net::HttpClient::Connect(server_->address(), {.token = token});
    EXPECT_TRUE(c.ok());
    auto r = (*c)->Get("/v1/whoami");
    EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
    return r.ok() ? Json::parse(r->body) : Json();
  }

  SystemClock clock_;
  std::string dir_;
  std::unique_ptr<server::Server> server_;
};

TEST_F(LocalSocketTest, TheServersOwnUserIsAnAdmin) {
  StartServer();
  ASSERT_EQ(server_->socket_path(), dir_ + "/shoal.sock");
  auto t = net::RequestLocalToken(server_->socket_path());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto name = net::UserName(::geteuid());
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(t->user, *name);
  Json me = WhoAmI(t->token);
  EXPECT_EQ(me["user"], *name);
  EXPECT_EQ(me["role"], "admin");
  // The same uid gets the same token back: asking does not grow any table.
  auto again = net::RequestLocalToken(server_->socket_path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->token, t->token);
}

TEST_F(LocalSocketTest, AnotherUidIsAPlainUserUnderItsOwnName) {
  if (::geteuid() != 0) GTEST_SKIP() << "[privilege] needs root to act as another uid";
  const passwd* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  // The child is forked before the server starts any thread, so that it may
  // allocate freely; it waits for the socket to appear.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    if (::setgid(nobody->pw_gid) != 0 || ::setuid(nobody->pw_uid) != 0) ::_exit(3);
    Result<net::LocalToken> t = Status(StatusCode::kUnavailable, "not yet");
    for (int i = 0; i < 500 && !t.ok(); ++i) {
      t = net::RequestLocalToken(dir_ + "/shoal.sock");
      if (!t.ok()) ::usleep(10'000);
    }
    if (!t.ok()) ::_exit(4);
    const std::string line = t->token + "\n";
    if (::write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(5);
    ::_exit(0);
  }
  StartServer();
  ::close(fds[1]);
  std::string token;
  char buffer[256];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof(buffer))) > 0;)
    token.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  while (!token.empty() && token.back() == '\n')
    token.pop_back();
  Json me = WhoAmI(token);
  EXPECT_EQ(me["user"], "nobody");
  EXPECT_EQ(me["role"], "user");
}

TEST_F(LocalSocketTest, NoServerMeansAClearError) {
  StartServer();
  auto t = net::RequestLocalToken(dir_ + "/absent.sock");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("cannot connect"), std::string::npos);
  EXPECT_FALSE(net::RequestLocalToken(std::string(200, 'x')).ok())
      << "a path too long for sun_path";
}

}  // namespace
}  // namespace shoal
