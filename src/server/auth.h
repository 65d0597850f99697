// Who a request comes from, by its bearer token. Handler threads look tokens
// up here without touching the control loop; the loop replaces the set after
// each committed change to it.
#pragma once

#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/controller.h"
#include "state/store.h"

namespace shoal::server {

class TokenCache {
 public:
  void Replace(const std::vector<state::TokenRecord>& tokens);
  // A token that lives only in memory until the server stops: those handed
  // out on the local unix socket. Replace() leaves them alone.
  void AddEphemeral(const state::TokenRecord& token);
  // The identity for an "Authorization" header value ("Bearer <token>").
  Result<Identity> Authenticate(std::string_view authorization) const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, state::TokenRecord, std::less<>> by_id_;
  std::map<std::string, state::TokenRecord, std::less<>> ephemeral_;
};

}  // namespace shoal::server
