// The byte stream of one HTTP connection, plain or TLS, for Shoal's server
// (net::HttpServer) and client (net::HttpClient) alike; internal to src/net
// (it includes httplib.h).
//
// cpp-httplib 0.11's own streams write a message's head and its body with
// two writes: over TLS two records, each encrypted, framed and sent by a
// syscall of its own, and the client reads an answer's head a byte at a
// time, one SSL_read each. Here:
//   - writes are gathered (up to one TLS record, 16 KiB) and go out when the
//     stream is about to read, or on Flush(): a small request or answer is
//     one record and one segment;
//   - reads are buffered (16 KiB);
//   - every wait has a deadline: a read by the current request's deadline
//     (the server's) or `read_timeout` after it starts (the client's), a
//     write within `write_timeout`.
// One thread at a time, as httplib uses a stream.
#pragma once

#include <httplib.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "net/socket_io.h"

namespace shoal::net {

// The numeric address of a socket address ("127.0.0.1", "::1").
std::string AddressText(const sockaddr_storage& address);

// One end of a connection, as httplib puts it in a request.
struct Endpoint {
  std::string ip;
  int port = 0;
};
// The peer's (getpeername) or this side's (getsockname) end of `sock`.
Endpoint PeerOf(int sock);
Endpoint LocalOf(int sock);

class SocketStream final : public httplib::Stream {
 public:
  // TLS records carry at most 16 KiB of data.
  static constexpr size_t kBufferBytes = 16384;

  SocketStream(int sock, std::chrono::milliseconds write_timeout)
      : sock_(sock), write_timeout_(write_timeout) {}

  // Reads must finish by `deadline` (the server: a request arrives whole
  // within its deadline)...
  void set_deadline(SteadyClock::time_point deadline) { deadline_ = deadline; }
  // ... or, when set, each read within `timeout` of its start (the client).
  void set_read_timeout(std::chrono::milliseconds timeout) { read_timeout_ = timeout; }
  // Reads and writes go through `ssl` from now on. On a non-blocking socket
  // (the server's) OpenSSL's wants are waited for until the deadline.
  void set_ssl(SSL* ssl) { ssl_ = ssl; }
  // The connection's two ends, known already (the server learns them once a
  // connection, not twice a request); both outlive the stream. Unset, each
  // request asks the socket.
  void set_endpoints(const Endpoint* remote, const Endpoint* local) {
    remote_ = remote;
    local_ = local;
  }

  bool has_buffered() const {
    return offset_ < size_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0);
  }
  // Sends what was written and not sent yet; false when it could not.
  bool Flush() const;

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return sock_; }

  // Bytes handed to httplib so far: it reads a request's head byte by byte
  // and its body to the exact length, so this is where it stands.
  uint64_t consumed() const { return consumed_; }

 private:
  SteadyClock::time_point ReadDeadline() const;
  // All of `size` bytes out, or false.
  bool Send(const char* data, size_t size) const;

  const int sock_;
  SSL* ssl_ = nullptr;
  const Endpoint* remote_ = nullptr;
  const Endpoint* local_ = nullptr;
  const std::chrono::milliseconds write_timeout_;
  std::chrono::milliseconds read_timeout_{0};
  SteadyClock::time_point deadline_{};
  // Written, not sent yet; sent before a read (is_readable() too, hence mutable).
  mutable std::string pending_;
  char buffer_[kBufferBytes];
  size_t offset_ = 0;
  size_t size_ = 0;
  uint64_t consumed_ = 0;
};

}  // namespace shoal::net
