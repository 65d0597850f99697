#include "agent/join.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "api/json.h"
#include "api/node_protocol.h"
#include "core/files.h"
#include "net/http_client.h"
#include "net/tls.h"

namespace shoal::agent {

namespace {

// "AB:CD:..", "abcd..", "SHA256:ab:cd" all read as "ABCD..".
std::string HexOnly(std::string_view fingerprint) {
  if (fingerprint.size() > 7 &&
      (fingerprint.substr(0, 7) == "SHA256:" || fingerprint.substr(0, 7) == "sha256:")) {
    fingerprint.remove_prefix(7);
  }
  std::string out;
  for (char c : fingerprint) {
    if (std::isxdigit(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string Detail(const net::HttpResponse& r) {
  auto body = api::Parse(r.body);
  if (body.ok() && body->is_object() && (*body)["detail"].is_string())
    return (*body)["detail"].get<std::string>();
  return fmt::format("HTTP {}", r.status);
}

// The cluster CA as a PEM: the admin's copy, or the server's own once its
// fingerprint matches the one the admin gave.
Result<std::string> ClusterCa(const JoinOptions& o) {
  if (!o.ca_file.empty()) {
    auto pem = ReadFile(o.ca_file);
    if (!pem.ok()) return pem.status().WithContext("the cluster CA (--ca-file)");
    SHOAL_RETURN_IF_ERROR(net::Fingerprint(*pem).status().WithContext(o.ca_file));
    return pem;
  }
  if (o.ca_fingerprint.empty()) {
    return FailedPrecondition(
        "joining needs the cluster CA: --ca-file (the server's <state>/tls/ca.crt) or "
        "--ca-fingerprint (printed by `shoal server` at start)");
  }
  // Unverified on purpose: what comes back counts only if its fingerprint
  // is the one the admin gave.
  SHOAL_ASSIGN_OR_RETURN(
      auto client,
      net::HttpClient::Connect(o.server, {.connect_timeout_ms = 5000,
                                          .read_timeout_ms = 10000,
                                          .keep_alive = false,
                                          .tls = net::TlsClientOptions{.verify = false}}));
  SHOAL_ASSIGN_OR_RETURN(net::HttpResponse r, client->Get("/v1/ca"));
  if (r.status != 200) return Unavailable(fmt::format("GET /v1/ca: {}", Detail(r)));
  auto body = api::Parse(r.body);
  if (!body.ok() || !body->is_object() || !(*body)["ca"].is_string())
    return Internal("GET /v1/ca answered without a CA certificate");
  const std::string pem = (*body)["ca"].get<std::string>();
  SHOAL_ASSIGN_OR_RETURN(std::string got, net::Fingerprint(pem));
  if (HexOnly(got) != HexOnly(o.ca_fingerprint)) {
    return Status(StatusCode::kPermissionDenied,
                  fmt::format("the server's CA has fingerprint {}, not the {} given: is this the "
                              "right server (or is someone in between)?",
                              got, o.ca_fingerprint));
  }
  return pem;
}

Result<NodeCredentials> Join(const JoinOptions& o, const NodeCredentials& files) {
  if (o.join_token.empty()) {
    return FailedPrecondition(fmt::format(
        "this node has no certificate in {} yet: join with --join-token (an admin makes one "
        "with `shoal token create --role join --node NAME`)",
        o.dir));
  }
  SHOAL_ASSIGN_OR_RETURN(std::string ca_pem, ClusterCa(o));
  SHOAL_RETURN_IF_ERROR(WriteFileDurably(files.ca_file, ca_pem, 0644));
  SHOAL_ASSIGN_OR_RETURN(net::KeyAndRequest request,
                         net::CreateKeyAndRequest(o.name.empty() ? "node" : o.name));
  SHOAL_ASSIGN_OR_RETURN(
      auto client,
      net::HttpClient::Connect(o.server, {.token = o.join_token,
                                          .connect_timeout_ms = 5000,
                                          .read_timeout_ms = 10000,
                                          .keep_alive = false,
                                          .tls = net::TlsClientOptions{
                                              .ca_file = files.ca_file,
                                              .peer_name = std::string(net::kControllerName)}}));
  // Without a name of its own, the node asks for its host's; a join token
  // that names the node decides either way.
  char host[256] = {};
  if (o.name.empty()) (void)::gethostname(host, sizeof host - 1);
  const api::JoinRequest join{.name = o.name.empty() ? std::string(host) : o.name,
                              .csr = request.csr_pem,
                              .names = o.names};
  SHOAL_ASSIGN_OR_RETURN(net::HttpResponse r, client->Post("/v1/join", api::ToJson(join).dump()));
  if (r.status != 200) {
    return Status(r.status == 401 || r.status == 403 ? StatusCode::kPermissionDenied
                                                     : StatusCode::kFailedPrecondition,
                  fmt::format("the server refused the join: {}", Detail(r)));
  }
  SHOAL_ASSIGN_OR_RETURN(api::Json body, api::Parse(r.body));
  SHOAL_ASSIGN_OR_RETURN(api::JoinAnswer answer, api::JoinAnswerFromJson(body));
  if (!o.name.empty() && answer.name != o.name) {
    return FailedPrecondition(fmt::format(
        "the join token is for node {}, but this agent is named {}", answer.name, o.name));
  }
  SHOAL_ASSIGN_OR_RETURN(std::string cn, net::VerifiedCommonName(ca_pem, answer.certificate));
  if (cn != answer.name) return Internal("the server's certificate names another node");
  SHOAL_RETURN_IF_ERROR(WriteFileDurably(files.key_file, request.key_pem, 0600));
  SHOAL_RETURN_IF_ERROR(WriteFileDurably(files.cert_file, answer.certificate, 0644));
  NodeCredentials out = files;
  out.name = answer.name;
  return out;
}

}  // namespace

Result<NodeCredentials> EnsureNodeCredentials(const JoinOptions& o) {
  if (o.dir.empty()) return InvalidArgument("TLS needs a folder for the node's key (--state-dir)");
  if (::mkdir(o.dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Internal(ErrnoMessage("mkdir " + o.dir));
  NodeCredentials files{.name = "",
                        .ca_file = o.dir + "/ca.crt",
                        .cert_file = o.dir + "/node.crt",
                        .key_file = o.dir + "/node.key"};
  auto cert = ReadFile(files.cert_file);
  auto ca = ReadFile(files.ca_file);
  if (!cert.ok() || !ca.ok() || !ReadFile(files.key_file).ok()) return Join(o, files);
  auto cn = net::VerifiedCommonName(*ca, *cert);
  if (!cn.ok()) return cn.status().WithContext(files.cert_file);
  if (!o.name.empty() && *cn != o.name) {
    return FailedPrecondition(
        fmt::format("{} is node {}'s certificate, not {}'s; remove it to join again",
                    files.cert_file, *cn, o.name));
  }
  files.name = *cn;
  return files;
}

}  // namespace shoal::agent
