#include "server/agent_link.h"

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "api/node_protocol.h"
#include "net/http_client.h"

namespace shoal::server {

net::ClientOptions AgentCredentials::For(const std::string& node, int connect_timeout_ms,
                                         int read_timeout_ms, bool keep_alive) const {
  net::ClientOptions o;
  o.connect_timeout_ms = connect_timeout_ms;
  o.read_timeout_ms = read_timeout_ms;
  o.keep_alive = keep_alive;
  if (pki != nullptr) {
    o.tls = net::TlsClientOptions{.ca_file = pki->ca_cert_file,
                                  .cert_file = pki->cert_file,
                                  .key_file = pki->key_file,
                                  .peer_name = node};
  } else {
    o.token = node_token;
  }
  return o;
}

AgentLink::AgentLink(AgentCredentials credentials, int workers)
    : credentials_(std::move(credentials)) {
  for (int i = 0; i < workers; ++i)
    workers_.emplace_back([this] { Work(); });
}

AgentLink::~AgentLink() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    give_up_at_ = std::chrono::steady_clock::now() + kStopDrain;
  }
  cv_.notify_all();
  for (std::thread& t : workers_)
    t.join();
}

std::string AgentLink::LaunchBody(const LaunchOrder& o) {
  return api::ToJson(static_cast<const api::LaunchMessage&>(o)).dump();
}

std::string AgentLink::KillBody(const KillOrder& o) {
  return api::ToJson(static_cast<const api::KillMessage&>(o)).dump();
}

void AgentLink::Send(Outbox orders) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Kills first: they free resources that launches may need.
    for (const KillOrder& k : orders.kills)
      queue_.push_back({k.node, k.address, "/v1/kill", KillBody(k), k.job.value()});
    for (const LaunchOrder& l : orders.launches)
      queue_.push_back({l.node, l.address, "/v1/launch", LaunchBody(l), l.job.value()});
  }
  cv_.notify_all();
}

uint64_t AgentLink::Delivered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return delivered_;
}

uint64_t AgentLink::Failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

std::deque<AgentLink::Message>::iterator AgentLink::NextReady() {
  // Few orders wait behind one in flight (a launch and its stop, a step or
  // two), and at most one key per worker is in flight: a short scan.
  return std::find_if(queue_.begin(), queue_.end(), [this](const Message& m) {
    return std::none_of(in_flight_.begin(), in_flight_.end(),
                        [&](const Message* f) { return f->SameKey(m); });
  });
}

void AgentLink::Work() {
  std::map<std::string, std::unique_ptr<net::HttpClient>> clients;
  while (true) {
    Message m;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] {
        return (stopping_ && (queue_.empty() || std::chrono::steady_clock::now() > give_up_at_)) ||
               NextReady() != queue_.end();
      });
      if (stopping_ && std::chrono::steady_clock::now() > give_up_at_) {
        // Stopping, and the agents are slow or gone: what is left is
        // reconciled by the heartbeats after the restart.
        failed_ += queue_.size();
        queue_.clear();
        cv_.notify_all();  // workers that waited on an order in flight
      }
      if (stopping_ && queue_.empty()) return;
      auto next = NextReady();
      if (next == queue_.end()) continue;
      m = std::move(*next);
      queue_.erase(next);
      in_flight_.push_back(&m);
    }
    bool ok = false;
    for (int attempt = 0; attempt < 3 && !ok; ++attempt) {
      // One connection per node and address: a node that moved, or a new
      // agent at an old address, gets a connection checked for it.
      auto& client = clients[m.node + "@" + m.address];
      if (!client) {
        auto c = net::HttpClient::Connect(m.address, credentials_.For(m.node, 1000, 5000));
        if (!c.ok()) break;
        client = std::move(*c);
      }
      auto r = client->Post(m.path, m.body);
      if (r.ok() && r->status < 500) {
        ok = r->status < 300;
        break;
      }
      client.reset();
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50 << attempt));
    }
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++(ok ? delivered_ : failed_);
      std::erase(in_flight_, &m);
      // An order that waited for this one may go; a stop waits for all.
      wake = stopping_ || std::any_of(queue_.begin(), queue_.end(),
                                      [&](const Message& q) { return q.SameKey(m); });
    }
    if (wake) cv_.notify_all();
  }
}

}  // namespace shoal::server
