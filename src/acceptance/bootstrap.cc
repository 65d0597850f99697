#include "acceptance/bootstrap.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "core/strings.h"

namespace shoal::acceptance {

namespace {

constexpr uint32_t kMagic = 0x53484231;  // "SHB1"
constexpr uint32_t kMaxIdBytes = 4096;

using Clock = std::chrono::steady_clock;

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Gives the descriptor up to the caller, who closes it.
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

int MsLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, left));
}

Status WaitFor(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, MsLeft(deadline));
    if (n > 0) return Status::Ok();
    if (n == 0)
      return Status(StatusCode::kUnavailable, fmt::format("timed out waiting to {}", what));
    if (errno != EINTR) return Internal(fmt::format("poll: {}", std::strerror(errno)));
  }
}

Status WriteAll(int fd, const void* data, size_t size, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    SHOAL_RETURN_IF_ERROR(WaitFor(fd, POLLOUT, deadline, "send"));
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Status(StatusCode::kUnavailable, fmt::format("send: {}", std::strerror(errno)));
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status ReadAll(int fd, void* data, size_t size, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    SHOAL_RETURN_IF_ERROR(WaitFor(fd, POLLIN, deadline, "receive"));
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return Status(StatusCode::kUnavailable, "the peer closed the connection");
    if (n < 0)
      return Status(StatusCode::kUnavailable, fmt::format("recv: {}", std::strerror(errno)));
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status WriteWords(int fd, std::initializer_list<uint32_t> words, Clock::time_point deadline) {
  std::vector<uint32_t> net;
  for (uint32_t w : words)
    net.push_back(htonl(w));
  return WriteAll(fd, net.data(), net.size() * sizeof(uint32_t), deadline);
}

Result<std::vector<uint32_t>> ReadWords(int fd, size_t count, Clock::time_point deadline) {
  std::vector<uint32_t> words(count);
  SHOAL_RETURN_IF_ERROR(ReadAll(fd, words.data(), count * sizeof(uint32_t), deadline));
  for (uint32_t& w : words)
    w = ntohl(w);
  return words;
}

// Binds `port` on every address: IPv6 with IPv4 mapped where the host has
// IPv6, IPv4 otherwise. A fixed port reuses an address in TIME_WAIT (a rerun
// right after a failed one); port 0 does not need to, and binding it without
// SO_REUSEADDR keeps the chosen port to this socket alone.
Result<Fd> BindAnyAddress(int port) {
  const int one = 1, zero = 0;
  Fd v6(::socket(AF_INET6, SOCK_STREAM, 0));
  if (v6.get() >= 0) {
    if (port != 0) ::setsockopt(v6.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ::setsockopt(v6.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    if (::bind(v6.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return v6;
  }
  Fd v4(::socket(AF_INET, SOCK_STREAM, 0));
  if (v4.get() < 0) return Internal(fmt::format("socket: {}", std::strerror(errno)));
  if (port != 0) ::setsockopt(v4.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(v4.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Internal(fmt::format("bind to port {}: {}", port, std::strerror(errno)));
  }
  return v4;
}

// The port a bound socket got (the kernel's choice when it asked for 0).
Result<int> BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Internal(fmt::format("getsockname: {}", std::strerror(errno)));
  }
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

Result<BootstrapInfo> Serve(const BootstrapSocket& listener, const DistEnv& env, int local_ranks,
                            const std::string& id, Clock::time_point deadline) {
  if (::listen(listener.fd(), env.world_size) != 0) {
    return Internal(fmt::format("listen on port {}: {}", listener.port(), std::strerror(errno)));
  }
  std::vector<Fd> peers(static_cast<size_t>(env.world_size));
  std::vector<int> local(static_cast<size_t>(env.world_size), 0);
  local[0] = local_ranks;
  int joined = 1;
  while (joined < env.world_size) {
    Status wait = WaitFor(listener.fd(), POLLIN, deadline, "accept");
    if (!wait.ok()) {
      return Status(StatusCode::kUnavailable,
                    fmt::format("only {} of {} processes joined on port {} in time", joined,
                                env.world_size, listener.port()));
    }
    Fd conn(::accept(listener.fd(), nullptr, nullptr));
    if (conn.get() < 0) continue;
    auto hello = ReadWords(conn.get(), 3, deadline);
    // A stray connection (a port scanner, a stale peer) is dropped, not fatal.
    if (!hello.ok() || (*hello)[0] != kMagic) continue;
    const auto rank = static_cast<int64_t>((*hello)[1]);
    const auto count = static_cast<int64_t>((*hello)[2]);
    if (rank <= 0 || rank >= env.world_size || peers[static_cast<size_t>(rank)].get() >= 0 ||
        count <= 0 || count > 4096) {
      return InvalidArgument(
          fmt::format("a process announced rank {} with {} GPUs: ranks must be 1..{} and "
                      "each only once",
                      rank, count, env.world_size - 1));
    }
    local[static_cast<size_t>(rank)] = static_cast<int>(count);
    peers[static_cast<size_t>(rank)] = std::move(conn);
    ++joined;
  }
  int total = 0;
  std::vector<int> first(local.size());
  for (size_t r = 0; r < local.size(); ++r) {
    first[r] = total;
    total += local[r];
  }
  for (size_t r = 1; r < peers.size(); ++r) {
    const int fd = peers[r].get();
    SHOAL_RETURN_IF_ERROR(
        WriteWords(fd,
                   {kMagic, static_cast<uint32_t>(first[r]), static_cast<uint32_t>(total),
                    static_cast<uint32_t>(id.size())},
                   deadline));
    SHOAL_RETURN_IF_ERROR(WriteAll(fd, id.data(), id.size(), deadline));
  }
  return BootstrapInfo{id, 0, total};
}

// Connects without blocking past the deadline (an unreachable host would
// otherwise hold connect() for minutes); the socket stays non-blocking, which
// ReadAll and WriteAll handle.
Status Connect(int fd, const addrinfo* a, Clock::time_point deadline) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) return Status::Ok();
  if (errno != EINPROGRESS) return Status(StatusCode::kUnavailable, std::strerror(errno));
  SHOAL_RETURN_IF_ERROR(
      WaitFor(fd, POLLOUT, std::min(deadline, Clock::now() + std::chrono::seconds(2)), "connect"));
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  return err == 0 ? Status::Ok() : Status(StatusCode::kUnavailable, std::strerror(err));
}

Result<BootstrapInfo> Join(const DistEnv& env, int local_ranks, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(env.master_port);
  const int gai = ::getaddrinfo(env.master_addr.c_str(), port.c_str(), &hints, &found);
  if (gai != 0)
    return InvalidArgument(fmt::format("MASTER_ADDR {}: {}", env.master_addr, gai_strerror(gai)));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addrs(found, &::freeaddrinfo);
  // Process 0 may not listen yet: try until the deadline.
  std::string last_error = "no address";
  for (;;) {
    for (addrinfo* a = addrs.get(); a != nullptr; a = a->ai_next) {
      Fd fd(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
      if (fd.get() < 0) continue;
      Status connected = Connect(fd.get(), a, deadline);
      if (!connected.ok()) {
        last_error = connected.message();
        continue;
      }
      SHOAL_RETURN_IF_ERROR(WriteWords(
          fd.get(), {kMagic, static_cast<uint32_t>(env.rank), static_cast<uint32_t>(local_ranks)},
          deadline));
      SHOAL_ASSIGN_OR_RETURN(const std::vector<uint32_t> head, ReadWords(fd.get(), 4, deadline));
      if (head[0] != kMagic || head[3] > kMaxIdBytes) {
        return InvalidArgument(fmt::format("{}:{} is not a shoal-bench-node rank 0",
                                           env.master_addr, env.master_port));
      }
      BootstrapInfo info;
      info.first_rank = static_cast<int>(head[1]);
      info.total_ranks = static_cast<int>(head[2]);
      info.unique_id.resize(head[3]);
      SHOAL_RETURN_IF_ERROR(
          ReadAll(fd.get(), info.unique_id.data(), info.unique_id.size(), deadline));
      return info;
    }
    if (MsLeft(deadline) == 0) {
      return Status(StatusCode::kUnavailable,
                    fmt::format("could not reach rank 0 at {}:{}: {}", env.master_addr,
                                env.master_port, last_error));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, MsLeft(deadline))));
  }
}

// Rank 0's id for the others: at most kMaxIdBytes, which Join checks too.
Result<std::string> MakeId(const std::function<std::string()>& make_id) {
  std::string id = make_id();
  if (id.size() > kMaxIdBytes) return InvalidArgument("the unique id is too long");
  return id;
}

Result<int> EnvInt(const std::function<const char*(const char*)>& getenv_fn, const char* name,
                   int lo, int hi) {
  const char* v = getenv_fn(name);
  if (v == nullptr || *v == '\0') return InvalidArgument(fmt::format("{} is not set", name));
  auto n = ParseInt(v);
  if (!n.ok() || *n < lo || *n > hi)
    return InvalidArgument(fmt::format("{}={} is not an integer in {}..{}", name, v, lo, hi));
  return static_cast<int>(*n);
}

}  // namespace

Result<std::optional<DistEnv>> DistEnvFrom(
    const std::function<const char*(const char*)>& getenv_fn) {
  const char* world = getenv_fn("WORLD_SIZE");
  if (world == nullptr || *world == '\0' || std::string_view(world) == "1")
    return std::optional<DistEnv>();
  DistEnv env;
  SHOAL_ASSIGN_OR_RETURN(env.world_size, EnvInt(getenv_fn, "WORLD_SIZE", 1, 1 << 20));
  SHOAL_ASSIGN_OR_RETURN(env.rank, EnvInt(getenv_fn, "RANK", 0, env.world_size - 1));
  SHOAL_ASSIGN_OR_RETURN(env.master_port, EnvInt(getenv_fn, "MASTER_PORT", 1, 65535));
  const char* addr = getenv_fn("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0') return InvalidArgument("MASTER_ADDR is not set");
  env.master_addr = addr;
  return std::optional<DistEnv>(env);
}

BootstrapSocket::BootstrapSocket(BootstrapSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

BootstrapSocket& BootstrapSocket::operator=(BootstrapSocket&& other) noexcept {
  std::swap(fd_, other.fd_);
  std::swap(port_, other.port_);
  return *this;
}

BootstrapSocket::~BootstrapSocket() {
  if (fd_ >= 0) ::close(fd_);
}

Result<BootstrapSocket> BootstrapSocket::Bind(int port) {
  if (port < 0 || port > 65535)
    return InvalidArgument(fmt::format("port {} is out of range", port));
  SHOAL_ASSIGN_OR_RETURN(Fd fd, BindAnyAddress(port));
  SHOAL_ASSIGN_OR_RETURN(const int bound, BoundPort(fd.get()));
  return BootstrapSocket(fd.release(), bound);
}

Result<BootstrapInfo> ServeBootstrap(BootstrapSocket socket, const DistEnv& env, int local_ranks,
                                     const std::function<std::string()>& make_id, int timeout_ms) {
  if (env.rank != 0) return InvalidArgument("only rank 0 serves the bootstrap");
  if (local_ranks <= 0) return InvalidArgument("a process must drive at least one GPU");
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  SHOAL_ASSIGN_OR_RETURN(const std::string id, MakeId(make_id));
  if (env.world_size == 1) return BootstrapInfo{id, 0, local_ranks};
  return Serve(socket, env, local_ranks, id, deadline);
}

Result<BootstrapInfo> Bootstrap(const DistEnv& env, int local_ranks,
                                const std::function<std::string()>& make_id, int timeout_ms) {
  if (local_ranks <= 0) return InvalidArgument("a process must drive at least one GPU");
  if (env.rank == 0 && env.world_size == 1) {
    // One process: nothing to exchange, so no socket either.
    SHOAL_ASSIGN_OR_RETURN(const std::string id, MakeId(make_id));
    return BootstrapInfo{id, 0, local_ranks};
  }
  if (env.rank == 0) {
    SHOAL_ASSIGN_OR_RETURN(BootstrapSocket socket, BootstrapSocket::Bind(env.master_port));
    return ServeBootstrap(std::move(socket), env, local_ranks, make_id, timeout_ms);
  }
  return Join(env, local_ranks, Clock::now() + std::chrono::milliseconds(timeout_ms));
}

}  // namespace shoal::acceptance
