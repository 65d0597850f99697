#include "net/local_socket.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

namespace shoal::net {

namespace {

constexpr int kTimeoutMs = 2000;
constexpr size_t kMaxLineBytes = 4096;

Result<sockaddr_un> Address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgument(fmt::format("unix socket path '{}' is empty or longer than {} bytes",
                                       path, sizeof(addr.sun_path) - 1));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<std::string> UserName(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) {
    return Status(StatusCode::kNotFound,
                  fmt::format("uid {} has no entry in the password database", uid));
  }
  return std::string(found->pw_name);
}

Result<std::unique_ptr<PeerCredListener>> PeerCredListener::Start(const std::string& path,
                                                                  unsigned mode, Issue issue) {
  SHOAL_ASSIGN_OR_RETURN(sockaddr_un addr, Address(path));
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(fmt::format("socket: {}", std::strerror(errno)));
  // A socket file left by a server that was killed would make bind fail; the
  // caller holds the state directory's lock, so no live server uses it.
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::chmod(path.c_str(), mode) != 0 || ::listen(fd, 64) != 0) {
    const int err = errno;
    ::close(fd);
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot listen on {}: {}", path, std::strerror(err)));
  }
  auto listener =
      std::unique_ptr<PeerCredListener>(new PeerCredListener(path, fd, std::move(issue)));
  if (::pipe2(listener->wake_, O_CLOEXEC) != 0) return Internal("pipe2 failed");
  listener->thread_ = std::thread([raw = listener.get()] { raw->Serve(); });
  return listener;
}

PeerCredListener::PeerCredListener(std::string path, int fd, Issue issue)
    : path_(std::move(path)), fd_(fd), issue_(std::move(issue)) {}

PeerCredListener::~PeerCredListener() {
  Stop();
  for (int& f : wake_) {
    if (f >= 0) ::close(f);
  }
}

void PeerCredListener::Stop() {
  if (stopped_.exchange(true)) return;
  if (wake_[1] >= 0) {
    const char byte = 0;
    [[maybe_unused]] ssize_t n = ::write(wake_[1], &byte, 1);
  }
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
  ::unlink(path_.c_str());
}

void PeerCredListener::Serve() {
  while (true) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    const int n = ::poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (fds[1].revents & POLLIN) != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    Answer(client);
    ::close(client);
  }
}

void PeerCredListener::Answer(int client) const {
  const timeval timeout{kTimeoutMs / 1000, 0};
  ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  ucred cred{};
  socklen_t len = sizeof(cred);
  nlohmann::json reply;
  if (::getsockopt(client, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    reply = {{"error", "cannot read the peer's credentials"}};
  } else if (Result<LocalToken> t = issue_(cred.uid); t.ok()) {
    reply = {{"token", t->token}, {"user", t->user}};
  } else {
    reply = {{"error", t.status().message()}};
  }
  WriteAll(client, reply.dump() + "\n");
}

Result<LocalToken> RequestLocalToken(const std::string& path) {
  SHOAL_ASSIGN_OR_RETURN(sockaddr_un addr, Address(path));
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(fmt::format("socket: {}", std::strerror(errno)));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    ::close(fd);
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot connect to {}: {}", path, std::strerror(err)));
  }
  std::string line;
  char buffer[512];
  while (line.size() < kMaxLineBytes && line.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kTimeoutMs) <= 0) break;
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  const nlohmann::json reply = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object())
    return Status(StatusCode::kUnavailable, fmt::format("no answer from {}", path));
  if (reply.contains("error") && reply["error"].is_string()) {
    return Status(StatusCode::kPermissionDenied, reply["error"].get<std::string>());
  }
  if (!reply.contains("token") || !reply["token"].is_string() || !reply.contains("user") ||
      !reply["user"].is_string()) {
    return Status(StatusCode::kUnavailable, fmt::format("malformed answer from {}", path));
  }
  return LocalToken{reply["token"].get<std::string>(), reply["user"].get<std::string>()};
}

}  // namespace shoal::net
