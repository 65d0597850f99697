#include "net/socket_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace shoal::net {

std::string AddressText(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, text, sizeof text);
  } else if (a.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, text, sizeof text);
  }
  return text;
}

namespace {

// The sockets this stream reads and writes are opened, accepted and closed
// by cpp-httplib, a prebuilt library whose calls ThreadSanitizer is told to
// ignore (tests/tsan.supp), so TSan never sees a socket number closed and
// given out again. Under TSan this stream's own socket calls go around its
// interceptors too, as they did when httplib made them itself: otherwise a
// number reused by a later socket or folder looks like one descriptor
// shared without synchronisation. Memory accesses are still checked.
#if defined(__SANITIZE_THREAD__)
ssize_t SysRecv(int fd, void* buffer, size_t size) {
  return ::syscall(SYS_recvfrom, fd, buffer, size, 0, nullptr, nullptr);
}
ssize_t SysSend(int fd, const void* data, size_t size, int flags) {
  return ::syscall(SYS_sendto, fd, data, size, flags, nullptr, 0);
}
int SysPoll(pollfd* fds, nfds_t count, int timeout_ms) {
  return static_cast<int>(::syscall(SYS_poll, fds, count, timeout_ms));
}
#else
ssize_t SysRecv(int fd, void* buffer, size_t size) {
  return ::recv(fd, buffer, size, 0);
}
ssize_t SysSend(int fd, const void* data, size_t size, int flags) {
  return ::send(fd, data, size, flags);
}
int SysPoll(pollfd* fds, nfds_t count, int timeout_ms) {
  return ::poll(fds, count, timeout_ms);
}
#endif

int PortOf(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return 0;
}

template <typename F>
void Name(int sock, F get, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t length = sizeof a;
  if (get(sock, reinterpret_cast<sockaddr*>(&a), &length) != 0) return;
  ip = AddressText(a);
  port = PortOf(a);
}

}  // namespace

bool WaitUntil(int sock, short events, SteadyClock::time_point deadline) {
  // Looks at least once, even past the deadline: what is ready is taken.
  while (true) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    pollfd p{sock, events, 0};
    const int ready = SysPoll(&p, 1, static_cast<int>(std::clamp<int64_t>(left, 0, 1000 * 60)));
    if (ready > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
    if (ready < 0 && errno != EINTR) return false;
    if (ready == 0 && left <= 0) return false;
  }
}

SteadyClock::time_point SocketStream::ReadDeadline() const {
  return read_timeout_.count() > 0 ? SteadyClock::now() + read_timeout_ : deadline_;
}

bool SocketStream::is_readable() const {
  if (!Flush()) return false;
  return has_buffered() || WaitUntil(sock_, POLLIN, ReadDeadline());
}

bool SocketStream::is_writable() const {
  return WaitUntil(sock_, POLLOUT, SteadyClock::now() + write_timeout_);
}

ssize_t SocketStream::read(char* ptr, size_t size) {
  if (!Flush()) return -1;
  if (!has_buffered()) {
    ssize_t n;
    if (ssl_ != nullptr) {
      n = SslIo(/*reading=*/true, buffer_, sizeof buffer_, ReadDeadline());
    } else {
      if (!WaitUntil(sock_, POLLIN, ReadDeadline())) return -1;
      do {
        n = SysRecv(sock_, buffer_, sizeof buffer_);
      } while (n < 0 && errno == EINTR);
    }
    if (n <= 0) return n;
    offset_ = 0;
    size_ = static_cast<size_t>(n);
  }
  const size_t n = std::min(size, size_ - offset_);
  std::memcpy(ptr, buffer_ + offset_, n);
  offset_ += n;
  consumed_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t SocketStream::write(const char* ptr, size_t size) {
  if (pending_.size() + size <= kBufferBytes) {
    pending_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  // Too much to gather: what waits goes first, then this as it is.
  if (!Flush() || !Send(ptr, size)) return -1;
  return static_cast<ssize_t>(size);
}

bool SocketStream::Flush() const {
  if (pending_.empty()) return true;
  const bool sent = Send(pending_.data(), pending_.size());
  pending_.clear();
  return sent;
}

bool SocketStream::Send(const char* data, size_t size) const {
  const auto deadline = SteadyClock::now() + write_timeout_;
  while (size > 0) {
    ssize_t n;
    if (ssl_ != nullptr) {
      // SSL_write sends everything or fails (no partial writes asked for).
      n = SslIo(/*reading=*/false, const_cast<char*>(data), std::min<size_t>(size, 1 << 30),
                deadline);
    } else {
      if (!WaitUntil(sock_, POLLOUT, deadline)) return false;
      do {
        n = SysSend(sock_, data, size, MSG_NOSIGNAL);
      } while (n < 0 && errno == EINTR);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    }
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

ssize_t SocketStream::SslIo(bool reading, char* data, size_t size,
                            SteadyClock::time_point deadline) const {
  // Nothing decrypted waiting: wait for the socket first, rather than
  // spend a read(2) on learning that it has nothing yet.
  if (reading && SSL_pending(ssl_) == 0 && !WaitUntil(sock_, POLLIN, deadline)) return -1;
  while (true) {
    ERR_clear_error();
    const int n = reading ? SSL_read(ssl_, data, static_cast<int>(size))
                          : SSL_write(ssl_, data, static_cast<int>(size));
    if (n > 0) return n;
    const int error = SSL_get_error(ssl_, n);
    if (error == SSL_ERROR_ZERO_RETURN) return 0;
    short wanted = 0;
    if (error == SSL_ERROR_WANT_READ) wanted = POLLIN;
    if (error == SSL_ERROR_WANT_WRITE) wanted = POLLOUT;
    if (wanted == 0 || !WaitUntil(sock_, wanted, deadline)) return -1;
  }
}

void SocketStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  Name(sock_, ::getpeername, ip, port);
}

void SocketStream::get_local_ip_and_port(std::string& ip, int& port) const {
  Name(sock_, ::getsockname, ip, port);
}

}  // namespace shoal::net
