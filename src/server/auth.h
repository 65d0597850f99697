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

// How long a node session lasts at most (as the TLS session tickets).
inline constexpr Duration kNodeSessionTtl = std::chrono::hours(24 * 7);

class TokenCache {
 public:
  void Replace(const std::vector<state::TokenRecord>& tokens);
  // A token that lives only in memory until the server stops: those handed
  // out on the local unix socket. Replace() leaves them alone.
  void AddEphemeral(const state::TokenRecord& token);
  // The key job tokens are signed with (Controller::JobToken): a job token
  // is "shoaljob_<job>_<epoch>_<user as hex>_<HMAC>", good for the job's
  // user while that epoch of the job runs (the controller checks that).
  // Node sessions (NodeSession) are signed with a key derived from it.
  void SetJobTokenKey(std::string key);
  // The identity for an "Authorization" header value ("Bearer <token>") at
  // `now`: an expired, revoked or unknown token is kUnauthenticated. A join
  // token is only good for joining (`allow_join`).
  Result<Identity> Authenticate(std::string_view authorization, Time now,
                                bool allow_join = false) const;

  // A job token's identity (SetJobTokenKey): the job's user, bound to the job.
  Result<Identity> AuthenticateJobToken(std::string_view text) const;

  // A node session: what a node that proved itself by `peer`'s certificate
  // is given when it registers, "shoalnode_<node>_<expiry>_<fingerprint>_<HMAC>",
  // good over TLS until the certificate (`not_after`, seconds since the
  // epoch; 0: unknown) or kNodeSessionTtl ends, whichever
  // is first. With it the node's later connections carry no certificate:
  // resuming a session whose ticket holds one costs the controller twice as
  // much (OpenSSL 3.0 decodes the certificate's key anew each time;
  // docs/scale.md). It names the certificate, so a re-keyed node's old
  // sessions are refused as its old certificate is (Controller's pin).
  std::string NodeSession(const net::PeerCertificate& peer, int64_t not_after, Time now) const;
  Result<Identity> AuthenticateNodeSession(std::string_view text, Time now) const;

  // The identity of a request that came with `peer`'s verified certificate
  // (a node: its common name) or else `authorization`. On a TLS listener
  // (`tls`) nodes must prove themselves by certificate or by the session it
  // got them: node tokens are refused there, and the controller's own name is
  // no node's. Node sessions are refused on plain HTTP.
  Result<Identity> IdentityOf(const net::PeerCertificate& peer, std::string_view authorization,
                              Time now, bool tls, bool allow_join = false) const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, state::TokenRecord, std::less<>> by_id_;
  std::map<std::string, state::TokenRecord, std::less<>> ephemeral_;
  std::string job_token_key_;     // set before serving, never changed
  std::string node_session_key_;  // derived from it
};

}  // namespace shoal::server
