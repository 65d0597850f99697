// Who a request comes from: tokens (expiry, revocation, join tokens good
// only for joining) and nodes by their certificates, with node tokens
// refused on a TLS listener.
#include "server/auth.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace shoal::server
