#include "agent/launch/user_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/files.h"

namespace shoal::agent {
namespace {

// How long the opening child may take (an open on a hung network file
// system blocks; the agent's request thread must not wait for ever).
constexpr int kOpenTimeoutMs = 5000;

// A descriptor closed when it goes out of scope.
class OwnedFd {
 public:
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

constexpr int kOpenFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

Status OpenError(int error, const UserAccount& user, const std::string& path) {
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return NotFound(fmt::format("{} does not exist", path));
    case ELOOP:
      return Status(
          StatusCode::kPermissionDenied,
          fmt::format("{} is a symbolic link; only the file the job wrote is served", path));
    default:
      return Status(
          StatusCode::kPermissionDenied,
          fmt::format("user '{}' cannot read {}: {}", user.name, path, std::strerror(error)));
  }
}

// The child's half: takes on the user's identity with raw system calls
// (the child of a threaded process may call only async-signal-safe
// functions, and these change this process alone), opens the file and
// sends back errno and, when it opened, the descriptor.
[[noreturn]] void OpenInChild(int sock, const UserAccount& user, const char* path) {
  int error = 0;
  int fd = -1;
  if (::syscall(SYS_setgroups, user.groups.size(), user.groups.data()) != 0 ||
      ::syscall(SYS_setresgid, user.gid, user.gid, user.gid) != 0 ||
      ::syscall(SYS_setresuid, user.uid, user.uid, user.uid) != 0) {
    error = EPERM;
  } else {
    fd = ::open(path, kOpenFlags);
    if (fd < 0) error = errno;
  }
  iovec iov{&error, sizeof error};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ::_exit(::sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? 1 : 0);
}

// The parent's half: the child's answer, or an error when none came.
Result<int> ReceiveOpened(int sock, pid_t child, const UserAccount& user, const std::string& path) {
  pollfd p{sock, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&p, 1, kOpenTimeoutMs);
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) {
    ::kill(child, SIGKILL);
    return Status(StatusCode::kUnavailable,
                  fmt::format("opening {} as user '{}' timed out", path, user.name));
  }
  int error = 0;
  iovec iov{&error, sizeof error};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = 0;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof error)) {
    return Internal(
        fmt::format("opening {} as user '{}': no answer from the child", path, user.name));
  }
  int fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  }
  if (error != 0) {
    if (fd >= 0) ::close(fd);
    return OpenError(error, user, path);
  }
  if (fd < 0)
    return Internal(
        fmt::format("opening {} as user '{}': no descriptor came back", path, user.name));
  return fd;
}

// `path` opened for reading with the rights of `user` alone.
Result<int> OpenAs(const UserAccount& user, const std::string& path) {
  if (::geteuid() != 0) {
    // An agent that is not root runs jobs only as itself (CheckJobUser).
    if (user.uid != ::geteuid()) {
      return Status(StatusCode::kPermissionDenied,
                    fmt::format("this agent cannot read files as user '{}'", user.name));
    }
    int fd = ::open(path.c_str(), kOpenFlags);
    if (fd < 0) return OpenError(errno, user, path);
    return fd;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return Internal(ErrnoMessage("socketpair"));
  OwnedFd parent_end(sv[0]);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(sv[1]);
    return Internal(ErrnoMessage("fork"));
  }
  if (child == 0) OpenInChild(sv[1], user, path.c_str());
  ::close(sv[1]);
  Result<int> fd = ReceiveOpened(parent_end.get(), child, user, path);
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  return fd;
}

}  // namespace

Result<OutputChunk> ReadOutputAs(const UserAccount& user, const std::string& path, int64_t offset,
                                 size_t max_bytes) {
  if (path.empty()) return NotFound("the step has no output file");
  SHOAL_ASSIGN_OR_RETURN(int raw_fd, OpenAs(user, path));
  OwnedFd fd(raw_fd);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Internal(ErrnoMessage("fstat " + path));
  if (!S_ISREG(st.st_mode)) {
    return Status(StatusCode::kPermissionDenied, fmt::format("{} is not a regular file", path));
  }
  if (st.st_uid != user.uid) {
    return Status(
        StatusCode::kPermissionDenied,
        fmt::format("{} does not belong to user '{}'; only the job user's own files are served",
                    path, user.name));
  }
  OutputChunk chunk;
  chunk.size = st.st_size;
  if (offset >= st.st_size) return chunk;
  chunk.bytes.resize(
      static_cast<size_t>(std::min<int64_t>(st.st_size - offset, static_cast<int64_t>(max_bytes))));
  size_t got = 0;
  while (got < chunk.bytes.size()) {
    ssize_t n = ::pread(fd.get(), chunk.bytes.data() + got, chunk.bytes.size() - got,
                        static_cast<off_t>(offset) + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Internal(ErrnoMessage("read " + path));
    if (n == 0) break;  // truncated meanwhile
    got += static_cast<size_t>(n);
  }
  chunk.bytes.resize(got);
  return chunk;
}

}  // namespace shoal::agent
