// Who a request comes from: a node by the certificate it proved on a TLS
// connection, anyone else by a bearer token. Handler threads look tokens up
// here without touching the control loop; the loop replaces the set after
// each committed change to it.
#pragma once

#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "net/tls.h"
#include "server/controller.h"
#include "state/store.h"

namespace shoal::server {

class TokenCache {
 public:
  void Replace(const std::vector<state::TokenRecord>& tokens);
  // A token that lives only in memory until the server stops: those handed
  // out on the local unix socket. Replace() leaves them alone.
  void AddEphemeral(const state::TokenRecord& token);
  // The key job tokens are signed with (Controller::JobToken): a job token
  // is "shoaljob_<job>_<epoch>_<user as hex>_<HMAC>", good for the job's
  // user while that epoch of the job runs (the controller checks that).
  void SetJobTokenKey(std::string key) { job_token_key_ = std::move(key); }
  // The identity for an "Authorization" header value ("Bearer <token>") at
  // `now`: an expired, revoked or unknown token is kUnauthenticated. A join
  // token is only good for joining (`allow_join`).
  Result<Identity> Authenticate(std::string_view authorization, Time now,
                                bool allow_join = false) const;

  // A job token's identity (SetJobTokenKey): the job's user, bound to the job.
  Result<Identity> AuthenticateJobToken(std::string_view text) const;

  // The identity of a request that came with `peer`'s verified certificate
  // (a node: its common name) or else `authorization`. On a TLS listener
  // (`tls`) nodes must prove themselves by certificate: node tokens are
  // refused there, and the controller's own name is no node's.
  Result<Identity> IdentityOf(const net::PeerCertificate& peer, std::string_view authorization,
                              Time now, bool tls, bool allow_join = false) const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, state::TokenRecord, std::less<>> by_id_;
  std::map<std::string, state::TokenRecord, std::less<>> ephemeral_;
  std::string job_token_key_;  // set before serving, never changed
};

}  // namespace shoal::server
