#include "server/auth.h"

#include <fmt/format.h>

#include <mutex>
#include <optional>
#include <vector>

#include "core/strings.h"
#include "net/token.h"

namespace shoal::server {

void TokenCache::Replace(const std::vector<state::TokenRecord>& tokens) {
  std::map<std::string, state::TokenRecord, std::less<>> fresh;
  for (const state::TokenRecord& t : tokens)
    fresh[t.id] = t;
  std::unique_lock lock(mu_);
  by_id_ = std::move(fresh);
}

void TokenCache::AddEphemeral(const state::TokenRecord& token) {
  std::unique_lock lock(mu_);
  ephemeral_[token.id] = token;
}

Result<Identity> TokenCache::Authenticate(std::string_view authorization, Time now,
                                          bool allow_join) const {
  std::string_view h = Trim(authorization);
  constexpr std::string_view kBearer = "Bearer ";
  if (h.substr(0, kBearer.size()) != kBearer) {
    return Status(StatusCode::kUnauthenticated,
                  "no bearer token (Authorization: Bearer shoal_...)");
  }
  const std::string_view text = Trim(h.substr(kBearer.size()));
  if (text.starts_with("shoaljob_")) return AuthenticateJobToken(text);
  SHOAL_ASSIGN_OR_RETURN(auto parts, net::SplitToken(text));
  const std::string hash = net::Sha256Hex(parts.second);
  std::shared_lock lock(mu_);
  auto it = by_id_.find(parts.first);
  if (it == by_id_.end()) {
    it = ephemeral_.find(parts.first);
    if (it == ephemeral_.end())
      return Status(StatusCode::kUnauthenticated, "unknown or revoked token");
  }
  const state::TokenRecord& t = it->second;
  if (t.revoked || !net::ConstantTimeEquals(t.secret_hash, hash)) {
    return Status(StatusCode::kUnauthenticated, "unknown or revoked token");
  }
  if (now >= t.expires) return Status(StatusCode::kUnauthenticated, "this token has expired");
  if (t.role == "join" && !allow_join) {
    return Status(StatusCode::kPermissionDenied,
                  "a join token is good only for joining a node (shoal agent --join-token)");
  }
  return Identity{.user = t.user, .role = t.role, .node_name = t.node, .token_id = t.id};
}

namespace {

std::optional<unsigned char> ParseHexByte(std::string_view two) {
  unsigned value = 0;
  for (char c : two) {
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      value |= static_cast<unsigned>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
  }
  return static_cast<unsigned char>(value);
}

}  // namespace

Result<Identity> TokenCache::AuthenticateJobToken(std::string_view text) const {
  const Status bad(StatusCode::kUnauthenticated, "not a valid job token");
  std::vector<std::string_view> parts;
  for (std::string_view p : Split(text.substr(std::string_view("shoaljob_").size()), '_'))
    parts.push_back(p);
  if (parts.size() != 4 || job_token_key_.empty() || parts[2].size() % 2 != 0 ||
      parts[2].size() > 128)
    return bad;
  auto job = ParseInt(parts[0]);
  auto epoch = ParseInt(parts[1]);
  if (!job.ok() || !epoch.ok() || *job <= 0 || *epoch <= 0) return bad;
  std::string user;
  for (size_t i = 0; i < parts[2].size(); i += 2) {
    auto byte = ParseHexByte(parts[2].substr(i, 2));
    if (!byte) return bad;
    user += static_cast<char>(*byte);
  }
  const std::string mac =
      net::HmacSha256Hex(job_token_key_, fmt::format("{}.{}.{}", *job, *epoch, user));
  if (!net::ConstantTimeEquals(mac, parts[3])) return bad;
  Identity who{.user = user, .role = "user"};
  who.job = static_cast<uint64_t>(*job);
  who.job_epoch = static_cast<uint64_t>(*epoch);
  return who;
}

Result<Identity> TokenCache::IdentityOf(const net::PeerCertificate& peer,
                                        std::string_view authorization, Time now, bool tls,
                                        bool allow_join) const {
  if (!peer.empty()) {
    if (!IsValidNodeName(peer.common_name)) {
      return Status(StatusCode::kPermissionDenied,
                    fmt::format("certificate '{}' is not a node's", peer.common_name));
    }
    return Identity{.user = peer.common_name,
                    .role = "node",
                    .node_name = peer.common_name,
                    .credential = peer.fingerprint};
  }
  SHOAL_ASSIGN_OR_RETURN(Identity who, Authenticate(authorization, now, allow_join));
  if (tls && who.node()) {
    return Status(StatusCode::kUnauthenticated,
                  "over TLS a node proves itself with its certificate, not a node token");
  }
  return who;
}

}  // namespace shoal::server
