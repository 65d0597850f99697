// The control loop: the only way to the controller's state, which one
// thread at a time changes (DESIGN.md, boundary 3).
//
// Handlers on other threads hand it work with Call(); it runs a batch of such
// work, a scheduling pass when one is due, commits everything the batch
// changed in one transaction (group commit), and only then answers the
// callers and sends launches and kills to the agents. A queue limit turns a
// flood into "503 overloaded" instead of unbounded memory.
//
// A call that finds the loop idle (no batch running, none waiting) runs at
// once on the caller's thread, as the loop's thread would run it (with the
// tick and a pass when due). If it changed nothing to commit, it is answered
// there, and the loop's thread is woken only when there is work for it
// sooner than it planned (calls queued meanwhile, a pass now wanted): an
// agent's beat on an idle server costs no thread switch to the loop and
// back (docs/performance.md). If it did change something, it is committed
// and answered there too while calls come one at a time (the last commit
// answered one call): a lone submit waits for no thread switch either. When
// calls come together (the last commit answered several), its commit and
// answer go with the loop's next batch, with the calls queued meanwhile:
// group commit under load is as before.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
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
  uint64_t waiting = 0;  // calls queued for the loop's thread now
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
    // Not a std::promise: setting one runs std::call_once, whose glibc
    // pthread_once wakes futex waiters with a syscall every time, and most
    // calls (a beat on an idle loop) are answered before anyone waits.
    struct Answer {
      std::optional<Result<T>> result;  // written by `run`, read after `done`
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
    };
    auto answer = std::make_shared<Answer>();
    Task task;
    task.run = [fn = std::forward<F>(fn), answer](Controller& c, Time now) mutable {
      answer->result.emplace(fn(c, now));
    };
    task.done = [answer]() {
      {
        std::lock_guard lock(answer->mu);
        answer->done = true;
      }
      answer->cv.notify_one();
    };
    if (!RunOrEnqueue(std::move(task))) {
      return Status(StatusCode::kUnavailable, "the server is overloaded; try again");
    }
    std::unique_lock lock(answer->mu);
    answer->cv.wait(lock, [&] { return answer->done; });
    return std::move(*answer->result);
  }

  LoopStats Stats();

 private:
  struct Task {
    std::function<void(Controller&, Time)> run;
    std::function<void()> done;
    Time queued{};  // when it was enqueued
  };
  // Runs `task` now on this thread when the loop is idle, else queues it;
  // false when it is refused (queue full, loop stopped).
  bool RunOrEnqueue(Task task);
  // The loop's thread: waits for work or its next deadline, runs batches.
  void Run();
  // Runs one batch (possibly empty): its calls, the tick and a pass when
  // due, the commit, the answers (to `ran` too: calls run before, whose
  // changes this commit takes) and the outbox. With `may_defer`, stops
  // before the commit when there is something to commit and returns false
  // (the changes wait in the controller for the loop's next batch). Only by
  // whoever set busy_.
  bool Step(std::vector<Task>& batch, std::vector<Task>& ran, bool may_defer);
  void CountPass(double pass_ms);
  // When the loop must next run by itself (tick, idle pass, wanted pass,
  // the controller's next deadline). With mu_ held, by whoever set busy_
  // or while it is clear (it reads the controller).
  Time NextWake() const;

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
  // Calls run on their callers' threads whose changes wait for the loop's
  // next commit (and their answers with it).
  std::vector<Task> ran_;
  bool stopping_ = false;
  bool running_ = false;
  // Someone runs a batch: the loop's thread or a caller (guarded by mu_;
  // whoever set it owns the controller and the members below until it clears it).
  bool busy_ = false;
  // Until when the loop's thread sleeps by itself (Time::max() when it does
  // not sleep on a deadline), and whether a caller asked it to look again.
  Time sleeping_until_ = Time::max();
  bool rewake_ = false;
  // The batch runner's state.
  Time last_tick_{};
  Time last_pass_{};
  std::chrono::steady_clock::time_point last_steady_tick_{};
  Duration pass_gap_{};
  // How many calls the last commit answered. One (or none): calls come one
  // at a time, and a call that runs on its caller's thread commits there.
  // More: calls come together, and such a call's commit waits for the
  // loop's next batch, to be shared with the calls queued meanwhile.
  size_t last_commit_calls_ = 0;
  LoopStats stats_;
  std::thread thread_;
};

}  // namespace shoal::server
