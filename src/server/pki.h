// The controller's side of the cluster's public-key infrastructure, kept in
// <state_dir>/tls:
//   ca.crt, ca.key          the cluster CA (EC P-256, 10 years), made on first start
//   server.crt, server.key  the controller's certificate (common name
//                           net::kControllerName), issued again at every start
//                           for the names it is reached by
// Keys are 0600 and the folder 0700; ca.crt is what CLIs and agents are
// given to check the controller (or its fingerprint, printed at start).
// Nodes get their certificates by joining (POST /v1/join): the CA signs
// their own key, so a node's private key never leaves it.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "net/tls.h"

namespace shoal::server {

struct ControllerPki {
  std::string dir;
  std::string ca_cert_file;
  std::string cert_file;
  std::string key_file;
  net::KeyAndCert ca;          // in memory, for signing nodes' requests
  std::string ca_fingerprint;  // "AB:CD:..." (SHA-256)
};

// Loads the CA from `dir` or creates it there, then issues the controller's
// certificate for `sans` (host names and addresses). An unreadable or
// mismatched CA is an error that names the file: it is never replaced, as
// every node's certificate hangs on it.
Result<ControllerPki> LoadOrCreatePki(const std::string& dir, const std::vector<std::string>& sans);

// The names the controller's certificate carries when it listens on `host`:
// `host` itself unless it is a wildcard, this machine's host name,
// "localhost", 127.0.0.1 and ::1, then `extra`.
std::vector<std::string> ControllerNames(const std::string& host,
                                         const std::vector<std::string>& extra);

}  // namespace shoal::server
