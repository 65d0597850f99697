#include "server/auth.h"

#include <mutex>

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

Result<Identity> TokenCache::Authenticate(std::string_view authorization) const {
  std::string_view h = Trim(authorization);
  constexpr std::string_view kBearer = "Bearer ";
  if (h.substr(0, kBearer.size()) != kBearer) {
    return Status(StatusCode::kUnauthenticated,
                  "no bearer token (Authorization: Bearer shoal_...)");
  }
  SHOAL_ASSIGN_OR_RETURN(auto parts, net::SplitToken(Trim(h.substr(kBearer.size()))));
  const std::string hash = net::Sha256Hex(parts.second);
  std::shared_lock lock(mu_);
  auto it = by_id_.find(parts.first);
  if (it == by_id_.end()) {
    it = ephemeral_.find(parts.first);
    if (it == ephemeral_.end())
      return Status(StatusCode::kUnauthenticated, "unknown or revoked token");
  }
  if (it->second.revoked || !net::ConstantTimeEquals(it->second.secret_hash, hash)) {
    return Status(StatusCode::kUnauthenticated, "unknown or revoked token");
  }
  return Identity{it->second.user, it->second.role};
}

}  // namespace shoal::server
