// Multi-node NCCL: every process must hold the same ncclUniqueId and know its
// global ranks. The environment names the processes the way torchrun and
// Shoal's launcher do (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); process 0
// listens on MASTER_PORT, learns how many GPUs each process drives, and sends
// every process the id, its first global rank and the total. Plain TCP, no
// MPI. The id is opaque bytes here, so this file needs no NCCL.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/status.h"

namespace shoal::acceptance {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  std::string master_addr;
  int master_port = 0;
};

// nullopt when WORLD_SIZE is unset or 1 (one node); an error when the
// variables are there but incomplete or malformed.
Result<std::optional<DistEnv>> DistEnvFrom(
    const std::function<const char*(const char*)>& getenv_fn);

struct BootstrapInfo {
  std::string unique_id;  // as rank 0's make_id returned it
  int first_rank = 0;     // global rank of this process's first GPU
  int total_ranks = 0;    // GPUs over all processes
};

// Every process calls this with its number of GPUs; rank 0 calls `make_id`
// (ncclGetUniqueId) once. Fails when a peer does not show up within `timeout_ms`.
Result<BootstrapInfo> Bootstrap(const DistEnv& env, int local_ranks,
                                const std::function<std::string()>& make_id, int timeout_ms);

// Rank 0's socket, bound to its port at once but listening only once
// ServeBootstrap runs on it: peers that come earlier are refused and retry.
// Binding port 0 lets the kernel choose a free port, and port() says which:
// the port is held from the bind on, so no other process can take it between
// choosing and listening (as it could with a port found free and then closed).
// Move-only; owns the descriptor and closes it. Not thread-safe.
class BootstrapSocket {
 public:
  // `port` 0: a free port the kernel chooses.
  static Result<BootstrapSocket> Bind(int port);

  BootstrapSocket(BootstrapSocket&& other) noexcept;
  BootstrapSocket& operator=(BootstrapSocket&& other) noexcept;
  BootstrapSocket(const BootstrapSocket&) = delete;
  BootstrapSocket& operator=(const BootstrapSocket&) = delete;
  ~BootstrapSocket();

  int port() const { return port_; }
  int fd() const { return fd_; }

 private:
  BootstrapSocket(int fd, int port) : fd_(fd), port_(port) {}

  int fd_ = -1;
  int port_ = 0;
};

// Bootstrap for rank 0 on a socket bound beforehand; env.master_port is not
// used (the socket's port is). Bootstrap(env, ...) for rank 0 is this on
// BootstrapSocket::Bind(env.master_port).
Result<BootstrapInfo> ServeBootstrap(BootstrapSocket socket, const DistEnv& env, int local_ranks,
                                     const std::function<std::string()>& make_id, int timeout_ms);

}  // namespace shoal::acceptance
