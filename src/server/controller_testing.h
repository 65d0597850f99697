// What the controller's tests share (header-only; tests only).
#pragma once

#include <string>

#include "server/controller.h"

namespace shoal::server::testing {

inline const Identity kAlice{"alice", "user"};
inline const Identity kAdmin{"root", "admin"};
inline const Identity kNodeAgent{"nodes", "node"};

// A node of `gpus` H100s with 64 CPUs and 512 GiB, at a fake address.
inline Node MakeNode(const std::string& name, int gpus = 8) {
  Node n;
  n.name = name;
  n.address = "127.0.0.1:1";
  n.cpu_milli = 64000;
  n.memory_mib = 512 * 1024;
  for (int i = 0; i < gpus; ++i) {
    Gpu g;
    g.index = i;
    g.model = "H100-SXM-80GB";
    g.uuid = "GPU-" + name + "-" + std::to_string(i);
    g.memory_mib = 81920;
    n.gpus.push_back(g);
  }
  return n;
}

}  // namespace shoal::server::testing
