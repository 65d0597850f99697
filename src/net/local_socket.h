// Identity by unix-socket peer credentials, for the CLI on the server's own
// host. The server listens on a unix socket; a client that connects is known
// by the uid the kernel reports for it (SO_PEERCRED), which no client can
// forge. The server answers each connection with one line: a bearer token for
// that uid, which the client then uses on the HTTP API. No password or token
// file is needed on the host, and a token never identifies anyone but the uid
// that asked for it.
//
// Protocol: the client connects and reads one line of JSON, either
// {"token": "...", "user": "..."} or {"error": "..."}; the server closes.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/status.h"

namespace shoal::net {

struct LocalToken {
  std::string token;
  std::string user;
};

// Accepts connections on a unix socket in its own thread and answers each
// with issue(uid). Connections are served one at a time with a short timeout,
// so a slow or hostile client cannot hold resources. Not copyable; Stop() (or
// the destructor) joins the thread and removes the socket file.
class PeerCredListener {
 public:
  using Issue = std::function<Result<LocalToken>(uid_t uid)>;

  // `mode` is the socket file's permission (0666: any local user may ask
  // for a token for themselves; 0600: only the server's own user).
  static Result<std::unique_ptr<PeerCredListener>> Start(const std::string& path, unsigned mode,
                                                         Issue issue);
  ~PeerCredListener();
  PeerCredListener(const PeerCredListener&) = delete;
  PeerCredListener& operator=(const PeerCredListener&) = delete;

  void Stop();
  const std::string& path() const { return path_; }

 private:
  PeerCredListener(std::string path, int fd, Issue issue);
  void Serve();
  void Answer(int client) const;

  std::string path_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe that Stop() writes to end the accept loop
  Issue issue_;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
};

// Asks the server listening on `path` for a token for the calling uid.
Result<LocalToken> RequestLocalToken(const std::string& path);

// The user name of a uid, from the password database; an error for an
// unknown uid.
Result<std::string> UserName(uid_t uid);

}  // namespace shoal::net
