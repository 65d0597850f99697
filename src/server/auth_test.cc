// Who a request comes from: tokens (expiry, revocation, join tokens good
// only for joining) and nodes by their certificates, with node tokens
// refused on a TLS listener.
#include "server/auth.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "net/token.h"

namespace shoal::server {
namespace {

constexpr Time kNow = kTimeZero + std::chrono::hours(1000000);

struct Issued {
  state::TokenRecord record;
  std::string header;  // "Bearer shoal_..."
};

Issued Make(const std::string& user, const std::string& role, Time expires = kTimeNever,
            const std::string& node = "") {
  auto t = net::MakeToken();
  EXPECT_TRUE(t.ok());
  return {state::TokenRecord{.id = t->id,
                             .secret_hash = t->hash,
                             .user = user,
                             .role = role,
                             .created = kNow,
                             .revoked = false,
                             .expires = expires,
                             .node = node},
          "Bearer " + t->text};
}

// The digests every token check rests on give the published answers (FIPS
// 180-2 for SHA-256, RFC 4231 test case 2 for HMAC), empty input and key
// included, and the same from many threads at once.
TEST(TokenDigestTest, GiveThePublishedAnswersFromAnyThread) {
  auto check = [] {
    EXPECT_EQ(net::Sha256Hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(net::Sha256Hex(""),
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(net::HmacSha256Hex("Jefe", "what do ya want for nothing?"),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    EXPECT_EQ(net::HmacSha256Hex("", ""),
              "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back(check);
  for (std::thread& t : threads)
    t.join();
}

TEST(TokenCacheTest, TokensExpireAndJoinTokensOnlyJoin) {
  TokenCache cache;
  const Issued user = Make("alice", "user", kNow + std::chrono::seconds(10));
  const Issued join = Make("root", "join", kNow + std::chrono::hours(1), "n1");
  Issued revoked = Make("bob", "user");
  revoked.record.revoked = true;
  cache.Replace({user.record, join.record, revoked.record});

  auto who = cache.Authenticate(user.header, kNow);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->user, "alice");
  EXPECT_EQ(who->token_id, user.record.id);
  auto late = cache.Authenticate(user.header, kNow + std::chrono::seconds(10));
  EXPECT_EQ(late.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(late.status().message().find("expired"), std::string::npos);
  EXPECT_EQ(cache.Authenticate(revoked.header, kNow).status().code(), StatusCode::kUnauthenticated);
  // A wrong secret for a known id.
  std::string forged = user.header;
  forged.back() = forged.back() == '0' ? '1' : '0';
  EXPECT_FALSE(cache.Authenticate(forged, kNow).ok());

  EXPECT_EQ(cache.Authenticate(join.header, kNow).status().code(), StatusCode::kPermissionDenied);
  auto joiner = cache.Authenticate(join.header, kNow, /*allow_join=*/true);
  ASSERT_TRUE(joiner.ok());
  EXPECT_EQ(joiner->role, "join");
  EXPECT_EQ(joiner->node_name, "n1");
}

TEST(TokenCacheTest, NodesProveThemselvesByCertificateOverTls) {
  TokenCache cache;
  const Issued node_token = Make("nodes", "node");
  cache.Replace({node_token.record});
  const net::PeerCertificate n1{.common_name = "n1", .fingerprint = "AA:BB"};

  auto who = cache.IdentityOf(n1, "", kNow, /*tls=*/true);
  ASSERT_TRUE(who.ok());
  EXPECT_TRUE(who->node());
  EXPECT_EQ(who->node_name, "n1");
  EXPECT_EQ(who->credential, "AA:BB");
  EXPECT_TRUE(who->ActsFor("n1"));
  EXPECT_FALSE(who->ActsFor("n2"));

  // The shared node token: any node on plain HTTP, refused over TLS.
  auto plain = cache.IdentityOf({}, node_token.header, kNow, /*tls=*/false);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->ActsFor("n2"));
  EXPECT_EQ(cache.IdentityOf({}, node_token.header, kNow, /*tls=*/true).status().code(),
            StatusCode::kUnauthenticated);
  // The controller's own certificate is no node's.
  EXPECT_EQ(cache
                .IdentityOf({.common_name = std::string(net::kControllerName), .fingerprint = "x"},
                            "", kNow, true)
                .status()
                .code(),
            StatusCode::kPermissionDenied);
}

// A job token: the job's user, bound to that job's epoch; a forged one (its
// claim changed, or signed with another key) is nobody.
TEST(TokenCacheTest, JobTokensActForTheirJobsUser) {
  Controller c(ControllerConfig{});
  c.SetJobTokenKey("the server's key");
  TokenCache cache;
  cache.SetJobTokenKey("the server's key");
  // Job 7, epoch 2, user alice_b, as Controller::JobToken forms it.
  const std::string claim = "7.2.alice_b";
  const std::string token =
      "shoaljob_7_2_616c6963655f62_" + net::HmacSha256Hex("the server's key", claim);
  auto who = cache.Authenticate("Bearer " + token, kNow);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->user, "alice_b");
  EXPECT_EQ(who->job, 7u);
  EXPECT_EQ(who->job_epoch, 2u);
  EXPECT_EQ(who->role, "user");
  // The same job as another user, or another epoch: the MAC no longer holds.
  for (const std::string& forged :
       {"shoaljob_7_2_626f62_" + net::HmacSha256Hex("the server's key", claim),
        "shoaljob_7_3_616c6963655f62_" + net::HmacSha256Hex("the server's key", claim),
        "shoaljob_7_2_616c6963655f62_" + net::HmacSha256Hex("another key", claim),
        std::string("shoaljob_7_2_zz_00")}) {
    EXPECT_EQ(cache.Authenticate("Bearer " + forged, kNow).status().code(),
              StatusCode::kUnauthenticated)
        << forged;
  }
  // The controller takes it only while that epoch of the job runs.
  EXPECT_EQ(c.CheckJobToken(*who).code(), StatusCode::kUnauthenticated);
}

// A node session: given to a node that proved itself by certificate, good
// over TLS only, for that node and certificate, until it ends; anything
// altered in it, or signed with another key, is nobody.
TEST(TokenCacheTest, NodeSessionsActForTheirNodeAndCertificateOverTls) {
  TokenCache cache;
  cache.SetJobTokenKey("the server's key");
  const auto unix_s = [](Time t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  };
  const net::PeerCertificate peer{.common_name = "gpu_node-1.rack2", .fingerprint = "AA:BB:CC"};
  const int64_t not_after = unix_s(kNow + std::chrono::hours(24 * 30));
  const std::string session = cache.NodeSession(peer, not_after, kNow);
  ASSERT_TRUE(session.starts_with("shoalnode_gpu_node-1.rack2_"));

  auto who = cache.IdentityOf({}, "Bearer " + session, kNow, /*tls=*/true);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_TRUE(who->node());
  EXPECT_EQ(who->node_name, "gpu_node-1.rack2");
  EXPECT_EQ(who->credential, "AA:BB:CC");  // the controller checks it against the node's pin
  EXPECT_FALSE(who->ActsFor("gpu_node-2"));

  EXPECT_EQ(cache.IdentityOf({}, "Bearer " + session, kNow, /*tls=*/false).status().code(),
            StatusCode::kUnauthenticated);
  // It lasts kNodeSessionTtl, or less when the certificate ends first.
  EXPECT_TRUE(
      cache.AuthenticateNodeSession(session, kNow + kNodeSessionTtl - std::chrono::seconds(1))
          .ok());
  EXPECT_EQ(cache.AuthenticateNodeSession(session, kNow + kNodeSessionTtl).status().message(),
            "this node session has expired");
  const std::string short_lived =
      cache.NodeSession(peer, unix_s(kNow + std::chrono::hours(1)), kNow);
  EXPECT_TRUE(cache.AuthenticateNodeSession(short_lived, kNow + std::chrono::minutes(59)).ok());
  EXPECT_FALSE(cache.AuthenticateNodeSession(short_lived, kNow + std::chrono::minutes(61)).ok());

  // Altered: another node, a later end, another certificate, another key, or cut.
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = session;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::string expiry = std::to_string(unix_s(kNow + kNodeSessionTtl));
  TokenCache other;
  other.SetJobTokenKey("another key");
  for (const std::string& forged :
       {replace("gpu_node-1.rack2", "gpu_node-2.rack2"), replace(expiry, expiry + "0"),
        replace("AA:BB:CC", "AA:BB:CD"), other.NodeSession(peer, not_after, kNow),
        session.substr(0, session.rfind('_')), std::string("shoalnode_x"),
        replace("AA:BB:CC", "AA|BB")}) {
    EXPECT_EQ(cache.AuthenticateNodeSession(forged, kNow).status().code(),
              StatusCode::kUnauthenticated)
        << forged;
  }
  // The controller's own certificate gets none; nor does any without a key.
  EXPECT_EQ(
      cache.NodeSession({.common_name = std::string(net::kControllerName), .fingerprint = "x"},
                        not_after, kNow),
      "");
  EXPECT_EQ(TokenCache().NodeSession(peer, not_after, kNow), "");
}

}  // namespace
}  // namespace shoal::server
