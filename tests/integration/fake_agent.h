// A node agent for tests: registers with a server, heartbeats, and plays the
// jobs it is told to launch. A job's command "exit:CODE:MS" ends with CODE
// after MS milliseconds; any other command runs until killed. Kills end a job
// with signal 15 at the next heartbeat. Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"

namespace shoal::testing {

class FakeAgent {
 public:
  struct Launch {
    uint64_t job = 0;
    uint64_t epoch = 0;
    int node_rank = 0;
    std::vector<std::string> nodes;
    std::vector<int> gpus;
  };

  // `server` is host:port; `token` a node token.
  FakeAgent(std::string name, int gpus, std::string server, std::string token);
  ~FakeAgent();

  Status Start();  // listen, register, start heartbeating every 50 ms
  void Stop();     // stop heartbeating and answering (as a dead node)

  std::vector<Launch> launches();
  int kills();
  bool Running(uint64_t job);

 private:
  struct Job {
    uint64_t epoch = 0;
    int64_t exit_at_ms = -1;  // -1: until killed
    int exit_code = 0;
    bool killed = false;
  };
  void Beat();

  const std::string name_;
  const int gpus_;
  const std::string server_;
  const std::string token_;
  struct Http;
  std::unique_ptr<Http> http_;
  std::thread http_thread_;
  std::thread beat_thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::map<uint64_t, Job> jobs_;
  std::vector<Launch> launches_;
  int kills_ = 0;
};

}  // namespace shoal::testing
