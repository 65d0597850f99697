#include "net/socket_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
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

int PortOf(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return 0;
}

template <typename F>
Endpoint Name(int sock, F get) {
  sockaddr_storage a{};
  socklen_t length = sizeof a;
  if (get(sock, reinterpret_cast<sockaddr*>(&a), &length) != 0) return {};
  return {AddressText(a), PortOf(a)};
}

// Into httplib's request fields.
void Put(const Endpoint& e, std::string& ip, int& port) {
  ip = e.ip;
  port = e.port;
}

}  // namespace

Endpoint PeerOf(int sock) {
  return Name(sock, ::getpeername);
}

Endpoint LocalOf(int sock) {
  return Name(sock, ::getsockname);
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
    const ssize_t n = ReadSome(sock_, ssl_, buffer_, sizeof buffer_, ReadDeadline());
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
  return SendAll(sock_, ssl_, data, size, SteadyClock::now() + write_timeout_);
}

void SocketStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  if (remote_ != nullptr) return Put(*remote_, ip, port);
  Put(PeerOf(sock_), ip, port);
}

void SocketStream::get_local_ip_and_port(std::string& ip, int& port) const {
  if (local_ != nullptr) return Put(*local_, ip, port);
  Put(LocalOf(sock_), ip, port);
}

}  // namespace shoal::net
