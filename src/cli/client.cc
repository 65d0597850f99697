#include "cli/client.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <utility>

#include "cli/paths.h"
#include "core/strings.h"
#include "net/local_socket.h"
#include "net/tls.h"

namespace shoal::cli {

namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return std::string(Trim(line));
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

bool IsLocalServer(const std::string& server) {
  auto hp = net::ParseHostPort(server, 6820, /*allow_any_port=*/true);
  return hp.ok() && (hp->first == "127.0.0.1" || hp->first == "localhost" || hp->first == "::1");
}

struct FoundToken {
  std::string token;
  std::string source;  // where it came from, for the error when it is refused
};

// Explicit tokens first; then, for a server on this host, a token for this
// uid from the server's unix socket; last the operator's admin.token.
FoundToken FindToken(const ClientFlags& flags, const std::string& server) {
  if (!flags.token.empty()) return {flags.token, "--token"};
  if (std::string t = Env("SHOAL_TOKEN"); !t.empty()) return {t, "$SHOAL_TOKEN"};
  if (std::string f = Env("SHOAL_TOKEN_FILE"); !f.empty())
    return {ReadFirstLine(f), "$SHOAL_TOKEN_FILE (" + f + ")"};
  if (std::string h = Env("HOME"); !h.empty()) {
    const std::string file = h + "/.config/shoal/token";
    if (std::string t = ReadFirstLine(file); !t.empty()) return {t, file};
  }
  if (IsLocalServer(server)) {
    std::vector<std::string> sockets = {DefaultStateDir() + "/shoal.sock", "/run/shoal/shoal.sock"};
    if (std::string s = Env("SHOAL_SOCKET"); !s.empty()) sockets = {s};
    for (const std::string& path : sockets) {
      if (auto local = net::RequestLocalToken(path); local.ok())
        return {local->token, "the server's unix socket " + path};
    }
  }
  const std::string admin = DefaultStateDir() + "/admin.token";
  return {ReadFirstLine(admin), admin};
}

bool Exists(const std::string& path) {
  std::ifstream in(path);
  return in.good();
}

}  // namespace

Result<net::ClientOptions> ConnectOptions(const std::string& server, const std::string& ca_file,
                                          const std::string& token) {
  net::ClientOptions options{.token = token};
  if (net::SchemeOf(server) == "http") return options;
  std::vector<std::string> candidates;
  if (!ca_file.empty()) {
    if (!Exists(ca_file))
      return InvalidArgument(fmt::format("--ca-file {}: no such file", ca_file));
    candidates = {ca_file};
  } else if (std::string e = Env("SHOAL_CA_FILE"); !e.empty()) {
    candidates = {e};
  } else {
    // A server on this host is most likely the one whose state is here.
    const std::string local = DefaultStateDir() + "/tls/ca.crt";
    if (IsLocalServer(server)) candidates.push_back(local);
    if (std::string h = Env("HOME"); !h.empty()) candidates.push_back(h + "/.config/shoal/ca.crt");
    candidates.push_back("/etc/shoal/ca.crt");
    if (!IsLocalServer(server)) candidates.push_back(local);
  }
  for (const std::string& c : candidates) {
    if (Exists(c)) {
      options.tls =
          net::TlsClientOptions{.ca_file = c, .peer_name = std::string(net::kControllerName)};
      return options;
    }
  }
  return FailedPrecondition(fmt::format(
      "{} is reached over TLS, and no cluster CA certificate was found to check it (tried {}): "
      "pass --ca-file (the server's <state dir>/tls/ca.crt), set $SHOAL_CA_FILE, or use "
      "http:// for a plain-HTTP server on this host",
      server, Join(candidates, ", ")));
}

Result<ApiClient> ApiClient::Open(const ClientFlags& flags) {
  const std::string server = flags.server.empty() ? DefaultServer() : flags.server;
  const auto [token, source] = FindToken(flags, server);
  if (token.empty()) {
    return Status(
        StatusCode::kUnauthenticated,
        "no token: pass --token, set SHOAL_TOKEN, put one in ~/.config/shoal/token, or run on the "
        "server's host where its unix socket ($SHOAL_SOCKET) gives one");
  }
  SHOAL_ASSIGN_OR_RETURN(net::ClientOptions options, ConnectOptions(server, flags.ca_file, token));
  SHOAL_ASSIGN_OR_RETURN(auto http, net::LeanHttpClient::Connect(server, options));
  return ApiClient(std::move(http), source);
}

Result<api::Json> ApiClient::Answer(const Result<net::HttpResponse>& r) {
  if (!r.ok()) return r.status();
  auto body = api::Parse(r->body);
  if (r->status >= 200 && r->status < 300) {
    if (!body.ok()) return Internal("the server answered with malformed JSON");
    return std::move(*body);
  }
  std::string detail = body.ok() && body->is_object() ? body->value("detail", r->body) : r->body;
  StatusCode code = StatusCode::kInternal;
  switch (r->status) {
    case 400:
      code = StatusCode::kInvalidArgument;
      break;
    case 401:
      code = StatusCode::kUnauthenticated;
      detail += fmt::format(" (the token came from {})", token_source_);
      break;
    case 403:
      code = StatusCode::kPermissionDenied;
      break;
    case 404:
      code = StatusCode::kNotFound;
      break;
    case 409:
      code = StatusCode::kFailedPrecondition;
      break;
    case 413:
      code = StatusCode::kResourceExhausted;
      break;
    case 503:
      code = StatusCode::kUnavailable;
      break;
    default:
      break;
  }
  return Status(code, detail);
}

Result<api::Json> ApiClient::Get(const std::string& path) {
  return Answer(http_->Get(path));
}

Result<net::HttpResponse> ApiClient::GetRaw(const std::string& path) {
  auto r = http_->Get(path);
  if (!r.ok()) return r.status();
  if (r->status >= 200 && r->status < 300) return *r;
  return Answer(r).status();
}
Result<api::Json> ApiClient::Post(const std::string& path, const api::Json& body) {
  return Answer(http_->Post(path, body.dump()));
}
Result<api::Json> ApiClient::PostRaw(const std::string& path, const std::string& bytes) {
  return Answer(http_->Post(path, bytes, "application/octet-stream"));
}
Result<api::Json> ApiClient::Patch(const std::string& path, const api::Json& body) {
  return Answer(http_->Patch(path, body.dump()));
}
Result<api::Json> ApiClient::Delete(const std::string& path) {
  return Answer(http_->Delete(path));
}

int Fail(const std::string& command, const Status& s) {
  std::fprintf(stderr, "shoal %s: %s\n", command.c_str(), s.message().c_str());
  switch (s.code()) {
    case StatusCode::kUnauthenticated:
    case StatusCode::kPermissionDenied:
      return kExitDenied;
    case StatusCode::kUnavailable:
      return s.message().find("cannot reach") != std::string::npos ? kExitUnreachable
                                                                   : kExitRefused;
    default:
      return kExitRefused;
  }
}

std::string LocalTime(double unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm local{};
  char when[32] = "?";
  if (::localtime_r(&t, &local) != nullptr)
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &local);
  return when;
}

std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t c = 0; c < header.size(); ++c)
    width[c] = header[c].size();
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < header.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      l += c + 1 == header.size() ? cell : fmt::format("{:<{}}  ", cell, width[c]);
    }
    while (!l.empty() && l.back() == ' ')
      l.pop_back();
    out += l + "\n";
  };
  line(header);
  for (const auto& r : rows)
    line(r);
  return out;
}

}  // namespace shoal::cli
