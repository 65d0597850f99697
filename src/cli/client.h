// What the user-facing commands share: finding the server and a token, making
// a request, and turning failures into messages and exit codes that scripts
// can rely on:
//   0  done
//   1  the server refused (bad request, not found, conflict, server error)
//   2  bad usage (checked before anything is sent)
//   3  the server cannot be reached
//   4  not authenticated or not allowed
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/json.h"
#include "core/status.h"
#include "net/lean_http_client.h"

namespace shoal::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRefused = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnreachable = 3;
inline constexpr int kExitDenied = 4;

// The options of every command that talks to the server; AddClientFlags
// (cli/app.h) adds them to a command's parser.
struct ClientFlags {
  std::string server;   // --server, else $SHOAL_SERVER, else 127.0.0.1:6820; TLS unless http://
  std::string ca_file;  // --ca-file, else $SHOAL_CA_FILE, ~/.config/shoal/ca.crt,
                        // <state dir>/tls/ca.crt
  std::string token;    // --token, else $SHOAL_TOKEN, $SHOAL_TOKEN_FILE, ~/.config/shoal/token,
                        // the local server's unix socket, the state dir's admin.token
  bool json = false;
};

// How the CLI reaches `server`: plain for an http:// address, else TLS
// checked against the first CA file that exists of `ca_file`,
// $SHOAL_CA_FILE, ~/.config/shoal/ca.crt and <state dir>/tls/ca.crt.
Result<net::ClientOptions> ConnectOptions(const std::string& server, const std::string& ca_file,
                                          const std::string& token);

class ApiClient {
 public:
  static Result<ApiClient> Open(const ClientFlags& flags);

  // The parsed JSON of a 2xx answer; otherwise the server's error as a Status.
  Result<api::Json> Get(const std::string& path);
  // A 2xx answer as it came (bytes and headers), for bodies that are not JSON.
  Result<net::HttpResponse> GetRaw(const std::string& path);
  Result<api::Json> Post(const std::string& path, const api::Json& body);
  // Posts bytes that are not JSON (what is typed into a terminal).
  Result<api::Json> PostRaw(const std::string& path, const std::string& bytes);
  Result<api::Json> Patch(const std::string& path, const api::Json& body);
  Result<api::Json> Delete(const std::string& path);

 private:
  ApiClient(std::unique_ptr<net::LeanHttpClient> http, std::string token_source)
      : http_(std::move(http)), token_source_(std::move(token_source)) {}
  Result<api::Json> Answer(const Result<net::HttpResponse>& r);
  std::shared_ptr<net::LeanHttpClient> http_;
  // Where the token came from, named when the server refuses it (the
  // token of another cluster, read without a word, looked like a revoked one).
  std::string token_source_;
};

// Prints "shoal <command>: <message>" to stderr and returns the exit code for s.
int Fail(const std::string& command, const Status& s);

// A Unix time as local YYYY-MM-DDTHH:MM:SS (as Slurm prints times), or "?".
std::string LocalTime(double unix_seconds);

// A text table with columns sized to fit.
std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows);

}  // namespace shoal::cli
