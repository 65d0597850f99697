#include "net/socket_io.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace shoal::net {

namespace {

// The sockets SocketStream reads and writes are opened, accepted and closed
// by cpp-httplib, a prebuilt library whose calls ThreadSanitizer is told to
// ignore (tests/tsan.supp), so TSan never sees a socket number closed and
// given out again. Under TSan its own socket calls go around its
// interceptors too, as they did when httplib made them itself: otherwise a
// number reused by a later socket or folder looks like one descriptor
// shared without synchronisation. Memory accesses are still checked.
#if defined(__SANITIZE_THREAD__)
ssize_t SysRecv(int fd, void* buffer, size_t size, int flags) {
  return ::syscall(SYS_recvfrom, fd, buffer, size, flags, nullptr, nullptr);
}
ssize_t SysSend(int fd, const void* data, size_t size, int flags) {
  return ::syscall(SYS_sendto, fd, data, size, flags, nullptr, 0);
}
int SysPoll(pollfd* fds, nfds_t count, int timeout_ms) {
  return static_cast<int>(::syscall(SYS_poll, fds, count, timeout_ms));
}
#else
ssize_t SysRecv(int fd, void* buffer, size_t size, int flags) {
  return ::recv(fd, buffer, size, flags);
}
ssize_t SysSend(int fd, const void* data, size_t size, int flags) {
  return ::send(fd, data, size, flags);
}
int SysPoll(pollfd* fds, nfds_t count, int timeout_ms) {
  return ::poll(fds, count, timeout_ms);
}
#endif

// One SSL_read or SSL_write, waiting for the socket as OpenSSL asks, until
// `deadline`: a peer trickling a TLS record holds no thread past it.
ssize_t SslIo(SSL* ssl, int sock, bool reading, char* data, size_t size,
              SteadyClock::time_point deadline) {
  // Nothing decrypted waiting: wait for the socket first, rather than
  // spend a read(2) on learning that it has nothing yet.
  if (reading && SSL_pending(ssl) == 0 && !WaitUntil(sock, POLLIN, deadline)) return -1;
  while (true) {
    ERR_clear_error();
    const int n = reading ? SSL_read(ssl, data, static_cast<int>(size))
                          : SSL_write(ssl, data, static_cast<int>(size));
    if (n > 0) return n;
    const int error = SSL_get_error(ssl, n);
    if (error == SSL_ERROR_ZERO_RETURN) return 0;
    short wanted = 0;
    if (error == SSL_ERROR_WANT_READ) wanted = POLLIN;
    if (error == SSL_ERROR_WANT_WRITE) wanted = POLLOUT;
    if (wanted == 0 || !WaitUntil(sock, wanted, deadline)) return -1;
  }
}

}  // namespace

bool WaitUntil(int sock, short events, SteadyClock::time_point deadline) {
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

ssize_t ReadSome(int sock, SSL* ssl, char* data, size_t size, SteadyClock::time_point deadline) {
  if (ssl != nullptr) return SslIo(ssl, sock, /*reading=*/true, data, size, deadline);
  // The socket first, without waiting (MSG_DONTWAIT, whatever the socket's
  // mode): a server reads once its idle set or a wait said that bytes are
  // there, so a wait before each read would be a poll(2) spent for nothing.
  while (true) {
    ssize_t n;
    do {
      n = SysRecv(sock, data, size, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return n;
    if (!WaitUntil(sock, POLLIN, deadline)) return -1;
  }
}

bool SendAll(int sock, SSL* ssl, const char* data, size_t size, SteadyClock::time_point deadline) {
  while (size > 0) {
    ssize_t n;
    if (ssl != nullptr) {
      // SSL_write sends everything or fails (no partial writes asked for).
      n = SslIo(ssl, sock, /*reading=*/false, const_cast<char*>(data),
                std::min<size_t>(size, 1 << 30), deadline);
    } else {
      // As ReadSome: the socket first, a wait only when it is full.
      do {
        n = SysSend(sock, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      } while (n < 0 && errno == EINTR);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!WaitUntil(sock, POLLOUT, deadline)) return false;
        continue;
      }
    }
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace shoal::net
