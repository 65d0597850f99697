// Sends the controller's orders (launch, kill) to node agents, off the control
// loop's thread: a small pool of workers, each with its own keep-alive
// connections, retrying a few times. An order that cannot be delivered is
// dropped: the heartbeats reconcile (a lost launch fails the job after the
// launch grace; an unknown process is killed).
//
// Orders about one job to one node arrive in the order given: the next
// goes once the agent has answered the one before (a stop must not pass
// the launch it stops, nor a step its job's own launch). Orders about other
// jobs or nodes go meanwhile, on the other workers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "server/controller.h"
#include "server/pki.h"

namespace shoal::server {

// How the controller proves itself to an agent and checks it: mutual TLS
// with the controller's certificate, the agent's checked against the
// cluster CA and its node name; or, on a plain-HTTP cluster on one host,
// the shared node token.
struct AgentCredentials {
  std::string node_token;
  const ControllerPki* pki = nullptr;  // TLS when set; outlives this

  net::ClientOptions For(const std::string& node, int connect_timeout_ms, int read_timeout_ms,
                         bool keep_alive = true) const;
};

class AgentLink {
 public:
  explicit AgentLink(AgentCredentials credentials, int workers = 4);
  ~AgentLink();

  void Send(Outbox orders);
  uint64_t Delivered() const;
  uint64_t Failed() const;

  // The JSON bodies of the orders: the node protocol's LaunchMessage and
  // KillMessage (api/node_protocol.h). Also what tests send to agents.
  static std::string LaunchBody(const LaunchOrder& o);
  static std::string KillBody(const KillOrder& o);

 private:
  struct Message {
    std::string node;
    std::string address;
    std::string path;
    std::string body;
    uint64_t job = 0;
    // About the same job on the same node: the two go in order.
    bool SameKey(const Message& o) const { return job == o.job && node == o.node; }
  };
  void Work();
  // The oldest queued order whose node and job has none in flight (mu_ held).
  std::deque<Message>::iterator NextReady();

  const AgentCredentials credentials_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Message> queue_;
  std::vector<const Message*> in_flight_;  // one a worker, each its own (node, job)
  bool stopping_ = false;
  // On stop, queued orders are sent for this long at most, then dropped.
  static constexpr std::chrono::seconds kStopDrain{2};
  std::chrono::steady_clock::time_point give_up_at_;
  uint64_t delivered_ = 0;
  uint64_t failed_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace shoal::server
