// The control loop: the one thread that changes the controller's state
// (DESIGN.md, boundary 3).
//
// Handlers on other threads hand it work with Call(); it runs a batch of such
// work, a scheduling pass when one is due, commits everything the batch
// changed in one transaction (group commit), and only then answers the
// callers and sends launches and kills to the agents. A queue limit turns a
// flood into "503 overloaded" instead of unbounded memory.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "core/status.h"
#include "core/time.h"
#include "server/controller.h"
#include "state/store.h"

namespace shoal::server {

class AgentLink;
class ChangeLog;
class Mailer;
class TokenCache;

struct LoopOptions {
  size_t max_queue = 20000;  // waiting calls before 503
  size_t max_batch = 2000;   // calls per transaction
  // Least time between scheduling passes. Small: a job submitted just after
  // a pass waits this long for the next (at 20 ms, a node's next job
  // waited ~16 ms for a pass after the one its predecessor's end set off);
  // pass_spacing below is what bounds the passes' share of the loop.
  Duration pass_interval = std::chrono::milliseconds(2);
  // While work keeps arriving, passes are also kept this many pass durations
  // apart, so that scheduling takes at most 1/(1+k) of the loop's time and a
  // long queue cannot starve submissions (Slurm bounds its event-driven
  // passes the same way with sched_min_interval and a queue depth).
  int pass_spacing = 4;
  Duration idle_pass = std::chrono::seconds(1);  // a pass at least this often (begin times, LAS)
  // Deadlines (node timeouts, time limits, fences, --signal warnings) are
  // checked this often: within a second, as Slurm checks time limits
  // within 30 s. An idle server wakes once a second for the tick and the
  // idle pass together (a 200 ms tick woke it five times).
  Duration tick_interval = std::chrono::seconds(1);
};

// Upper bounds of the scheduling pass duration histogram's buckets (ms).
inline constexpr double kPassBucketsMs[] = {1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000};
inline constexpr size_t kPassBuckets = std::size(kPassBucketsMs);

struct LoopStats {
  uint64_t calls = 0;
  uint64_t batches = 0;
  uint64_t passes = 0;
  uint64_t rejected = 0;
  double last_pass_ms = 0;
  double pass_ms_total = 0;
  uint64_t pass_buckets[kPassBuckets] =
      {};  // passes no longer than each bound and longer than the one before
};

class ControlLoop {
 public:
  ControlLoop(Controller& controller, state::Store& store, AgentLink* agents, TokenCache* tokens,
              const Clock& clock, LoopOptions options = {});
  ~ControlLoop();

  // Where the controller's mail goes (null: none is sent); before Start().
  void SetMailer(Mailer* mailer) { mailer_ = mailer; }
  // Where committed changes and pass summaries are logged (null: nowhere).
  void SetChangeLog(ChangeLog* log) { change_log_ = log; }
  void Start();
  void Stop();

  // Runs fn on the loop thread and returns its result once the batch it ran in
  // is committed. Unavailable when the queue is full or the loop has stopped.
  template <typename T, typename F>
  Result<T> Call(F&& fn) {
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto result = std::make_shared<std::optional<Result<T>>>();
    Task task;
    task.run = [fn = std::forward<F>(fn), result](Controller& c, Time now) mutable {
      result->emplace(fn(c, now));
    };
    task.done = [promise, result]() { promise->set_value(std::move(**result)); };
    std::future<Result<T>> future = promise->get_future();
    if (!Enqueue(std::move(task))) {
      return Status(StatusCode::kUnavailable, "the server is overloaded; try again");
    }
    return future.get();
  }

  LoopStats Stats();

 private:
  struct Task {
    std::function<void(Controller&, Time)> run;
    std::function<void()> done;
    Time queued{};  // when it was enqueued
  };
  bool Enqueue(Task task);
  void Run();

  Controller& controller_;
  state::Store& store_;
  AgentLink* agents_;
  Mailer* mailer_ = nullptr;
  ChangeLog* change_log_ = nullptr;
  TokenCache* tokens_;
  const Clock& clock_;
  const LoopOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  bool running_ = false;
  LoopStats stats_;
  std::thread thread_;
};

}  // namespace shoal::server
