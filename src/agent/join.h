// A node's TLS identity: its own key, the certificate the cluster CA issued
// for its name when it joined, and the CA, kept in one folder:
//   node.key (0600)  made here; never leaves the node
//   node.crt         from POST /v1/join
//   ca.crt           the cluster CA, given by the admin (--ca-file) or fetched
//                    from the server and checked against --ca-fingerprint
// A node joins once, with a one-time join token (shoal token create --role
// join); afterwards it acts with its certificate alone.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace shoal::agent {

struct JoinOptions {
  std::string server{};              // "https://host:port" or "host:port"
  std::string dir{};                 // where node.key, node.crt and ca.crt live
  std::string name{};                // the node's name; the join token's wins when it names one
  std::string ca_file{};             // the cluster CA's certificate, as the admin copied it
  std::string ca_fingerprint{};      // or its SHA-256 fingerprint ("AB:CD:..."), to fetch it
  std::string join_token{};          // needed only while the node has no certificate
  std::vector<std::string> names{};  // host names and addresses the agent is reached by
};

struct NodeCredentials {
  std::string name;  // the certificate's common name: the node's name
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// The node's credentials in `options.dir`, joining the cluster first when
// there are none yet. Errors say what is missing (a join token, the CA) or
// what the server refused.
Result<NodeCredentials> EnsureNodeCredentials(const JoinOptions& options);

}  // namespace shoal::agent
