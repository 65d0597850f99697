// The cluster's public-key infrastructure: a CA of its own (EC P-256), a
// server certificate for the controller and one certificate per node, whose
// common name (and SAN) is the node's name. OpenSSL stays in tls.cc.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

struct ssl_ctx_st;
struct ssl_st;
struct ssl_session_st;

namespace shoal::net {

// A private key and its certificate, both PEM.
struct KeyAndCert {
  std::string key_pem;
  std::string cert_pem;
};

// A self-signed CA valid 10 years, named `common_name`.
Result<KeyAndCert> CreateCa(std::string_view common_name);

// A certificate signed by `ca` for `common_name`, valid `days`, with the
// subject-alternative names `sans` (IP addresses as IP entries, anything
// else as DNS names). Good for both TLS server and client authentication.
Result<KeyAndCert> IssueCertificate(const KeyAndCert& ca, std::string_view common_name,
                                    const std::vector<std::string>& sans, int days);

// A new private key and a certificate signing request for `common_name`,
// both PEM: what a node sends to join (its key never leaves it).
struct KeyAndRequest {
  std::string key_pem;
  std::string csr_pem;
};
Result<KeyAndRequest> CreateKeyAndRequest(std::string_view common_name);

// A certificate signed by `ca` for the public key of `csr_pem`, whose
// self-signature must hold. Its subject is `common_name` and its
// alternative names `sans`, whatever the request asked for: the CA decides
// who a key is.
Result<std::string> SignRequest(const KeyAndCert& ca, std::string_view csr_pem,
                                std::string_view common_name, const std::vector<std::string>& sans,
                                int days);

// The SHA-256 fingerprint of a PEM certificate, "AB:CD:...".
Result<std::string> Fingerprint(std::string_view cert_pem);

// The common name of `cert_pem` once verified against `ca_pem`; an error
// naming the reason otherwise.
Result<std::string> VerifiedCommonName(std::string_view ca_pem, std::string_view cert_pem);

// The certificate the peer presented on a TLS connection (a request's
// `ssl`), once the handshake verified it against the listener's CA: its
// common name and fingerprint. Empty on a plain connection (null) or without
// a certificate.
struct PeerCertificate {
  std::string common_name;
  std::string fingerprint;
  bool empty() const { return common_name.empty(); }
};
PeerCertificate PeerOf(const ssl_st* ssl);
// When that certificate ends (seconds since the epoch); 0 without one. Apart
// from PeerOf, which every request of a certificate's connection pays for.
int64_t PeerNotAfter(const ssl_st* ssl);

// Makes the TLS clients of `ctx` accept only a server certificate whose
// common name is `*name` (besides a good chain): an agent's certificate is
// signed by the same CA as the controller's, so the chain alone does not
// say who answered. `name` must outlive `ctx`.
void RequirePeerName(ssl_ctx_st* ctx, const std::string* name);

// The TLS session a client's server last gave it (a ticket), offered again
// on the client's next connection, so that the server signs and checks no
// certificate anew: an agent's heartbeat connects anew each time, and a
// full handshake costs the controller about four times a resumed one
// (docs/scale.md). It keeps a copy of the session, and each connection
// gets a copy of its own: a connection dropped without a close_notify (the
// server closed it) leaves its session not resumable, and must not spoil
// the cache's. One cache per server; it must outlive the contexts it is
// attached to. Thread-safe.
class SessionCache {
 public:
  SessionCache() = default;
  ~SessionCache();
  SessionCache(const SessionCache&) = delete;
  SessionCache& operator=(const SessionCache&) = delete;

  // Makes every connection of `ctx` (a client's) offer the cached session
  // while it is resumable, and keep the newest one the server gives.
  void Attach(ssl_ctx_st* ctx);

 private:
  static void OfferAtStart(const ssl_st* ssl, int where, int ret);
  static int Keep(ssl_st* ssl, ssl_session_st* session);

  std::mutex mu_;
  ssl_session_st* session_ = nullptr;  // owned (one reference)
};

// The common name the cluster's controller has in its certificate. It is
// not a valid node name (a colon), so no node's certificate can pass for it.
inline constexpr std::string_view kControllerName = "shoal:controller";

// Server-side TLS settings of a listener (HttpServer::EnableTls).
struct TlsServerOptions {
  std::string cert_file;
  std::string key_file;
  // Client certificates are verified against this CA when presented.
  std::string ca_file;
  // Refuse a client without a certificate (agents' listeners).
  bool require_client_cert = false;
  // Where the keys that seal session tickets are kept (made at the first
  // start, 0600): clients then resume their sessions across a restart, and
  // on a standby that has the same file, for a week. Empty: keys of this
  // process's own, and tickets that die with it.
  std::string ticket_key_file{};
  // Whether a client that showed a certificate is given a TLS 1.3 session
  // ticket (Shoal's clients speak 1.3). The controller gives none: an agent
  // registers with its certificate and then connects with the node session
  // it was given, so a ticket holding the certificate would never be used,
  // and each costs the server the certificate's decoding again (OpenSSL 3.0
  // re-reads every session it seals). Agents' listeners give them: the
  // controller's orders resume.
  bool tickets_for_client_certificates = true;
};

}  // namespace shoal::net
