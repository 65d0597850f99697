// Reads and writes on a socket, plain or through OpenSSL, each by a deadline:
// what Shoal's HTTP server stream (socket_stream.h) and the commands' client
// (lean_http_client.h) share. No cpp-httplib here, so that `shoal` can link it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>

struct ssl_st;

namespace shoal::net {

using SteadyClock = std::chrono::steady_clock;

// Waits for `events` on `sock` until `deadline`; false on timeout or error.
// Looks at least once, even past the deadline.
bool WaitUntil(int sock, short events, SteadyClock::time_point deadline);

// Reads up to `size` bytes from `sock`, or through `ssl` when it is not null,
// waiting as the socket or OpenSSL asks until `deadline`: the bytes read, 0
// at the end of the connection, -1 on an error or at the deadline.
ssize_t ReadSome(int sock, ssl_st* ssl, char* data, size_t size, SteadyClock::time_point deadline);

// Writes all of `data` by `deadline`, as ReadSome reads; false when it could not.
bool SendAll(int sock, ssl_st* ssl, const char* data, size_t size,
             SteadyClock::time_point deadline);

}  // namespace shoal::net
