#include "server/auth.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <optional>
#include <vector>

#include "core/strings.h"
#include "net/token.h"

namespace shoal::server {

namespace {

constexpr std::string_view kNodeSessionPrefix = "shoalnode_";

std::string NodeSessionClaim(std::string_view node, int64_t expires, std::string_view fingerprint) {
  // '|' is in no node name, number or fingerprint: one claim, one reading.
  return fmt::format("node|{}|{}|{}", node, expires, fingerprint);
}

int64_t UnixSeconds(Time t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

void TokenCache::SetJobTokenKey(std::string key) {
  job_token_key_ = std::move(key);
  // A key of its own, so that no job token's MAC is a node session's.
  node_session_key_ =
      job_token_key_.empty() ? "" : net::HmacSha256Hex(job_token_key_, "shoal node sessions");
}

std::string TokenCache::NodeSession(const net::PeerCertificate& peer, int64_t not_after,
                                    Time now) const {
  if (node_session_key_.empty() || peer.empty() || !IsValidNodeName(peer.common_name)) return "";
  int64_t expires = UnixSeconds(now + kNodeSessionTtl);
  if (not_after > 0) expires = std::min(expires, not_after);
  const std::string mac = net::HmacSha256Hex(
      node_session_key_, NodeSessionClaim(peer.common_name, expires, peer.fingerprint));
  return fmt::format("{}{}_{}_{}_{}", kNodeSessionPrefix, peer.common_name, expires,
                     peer.fingerprint, mac);
}

// "shoalnode_<node>_<expiry>_<fingerprint>_<HMAC>": a node's name may hold
// '_', so the fields are taken from the right.
Result<Identity> TokenCache::AuthenticateNodeSession(std::string_view text, Time now) const {
  const Status bad(StatusCode::kUnauthenticated, "not a valid node session");
  if (node_session_key_.empty() || !text.starts_with(kNodeSessionPrefix)) return bad;
  std::string_view rest = text.substr(kNodeSessionPrefix.size());
  std::string_view fields[3];  // HMAC, fingerprint, expiry
  for (std::string_view& field : fields) {
    const size_t cut = rest.rfind('_');
    if (cut == std::string_view::npos) return bad;
    field = rest.substr(cut + 1);
    rest = rest.substr(0, cut);
  }
  const std::string_view node = rest, fingerprint = fields[1];
  auto expires = ParseInt(fields[2]);
  const bool hex =
      !fingerprint.empty() && std::all_of(fingerprint.begin(), fingerprint.end(), [](char c) {
        return std::isxdigit(static_cast<unsigned char>(c)) || c == ':';
      });
  if (!expires.ok() || !IsValidNodeName(node) || !hex) return bad;
  const std::string mac =
      net::HmacSha256Hex(node_session_key_, NodeSessionClaim(node, *expires, fingerprint));
  if (!net::ConstantTimeEquals(mac, fields[0])) return bad;
  if (UnixSeconds(now) >= *expires)
    return Status(StatusCode::kUnauthenticated, "this node session has expired");
  return Identity{.user = std::string(node),
                  .role = "node",
                  .node_name = std::string(node),
                  .credential = std::string(fingerprint)};
}

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
  if (text.starts_with(kNodeSessionPrefix)) return AuthenticateNodeSession(text, now);
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
  const bool session = who.node() && !who.credential.empty();
  if (session && !tls) {
    return Status(StatusCode::kUnauthenticated, "a node session is good over TLS only");
  }
  if (tls && who.node() && !session) {
    return Status(StatusCode::kUnauthenticated,
                  "over TLS a node proves itself with its certificate, not a node token");
  }
  return who;
}

}  // namespace shoal::server
