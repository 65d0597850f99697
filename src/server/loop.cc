#include "server/loop.h"

#include <malloc.h>

#include <cstdio>
#include <cstdlib>

#include "core/log.h"
#include "server/agent_link.h"
#include "server/auth.h"
#include "server/change_log.h"
#include "server/mailer.h"

namespace shoal::server {

namespace {
// Jobs written in one commit from which the loop hands freed memory back.
constexpr size_t kLargeCommit = 1000;
}  // namespace

ControlLoop::ControlLoop(Controller& controller, state::Store& store, AgentLink* agents,
                         TokenCache* tokens, const Clock& clock, LoopOptions options)
    : controller_(controller),
      store_(store),
      agents_(agents),
      tokens_(tokens),
      clock_(clock),
      options_(options) {}

ControlLoop::~ControlLoop() {
  Stop();
}

void ControlLoop::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return;
  running_ = true;
  stopping_ = false;
  last_tick_ = clock_.Now();
  last_steady_tick_ = std::chrono::steady_clock::now();
  last_pass_ = last_tick_ - options_.idle_pass;
  pass_gap_ = options_.pass_interval;  // grows with the cost of a pass
  thread_ = std::thread([this] { Run(); });
}

void ControlLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  running_ = false;
}

bool ControlLoop::RunOrEnqueue(Task task) {
  task.queued = clock_.Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_ || stopping_ || queue_.size() >= options_.max_queue) {
      ++stats_.rejected;
      return false;
    }
    if (busy_ || !queue_.empty() || !ran_.empty()) {
      queue_.push_back(std::move(task));
      if (!busy_) cv_.notify_one();  // a batch that runs now takes it next anyway
      return true;
    }
    busy_ = true;
  }
  std::vector<Task> batch, none;
  batch.push_back(std::move(task));
  const bool answered = Step(batch, none, /*may_defer=*/last_commit_calls_ > 1);
  bool wake_loop = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!answered) ran_.push_back(std::move(batch.front()));
    // The loop's thread sleeps till its own deadline unless there is work
    // for it sooner: this call's commit, calls queued meanwhile, a pass
    // this call set off, a stop, or it waits for this call to end.
    wake_loop = !ran_.empty() || !queue_.empty() || stopping_ || NextWake() < sleeping_until_;
    rewake_ = rewake_ || wake_loop;
    busy_ = false;
  }
  if (wake_loop) cv_.notify_all();
  return true;
}

LoopStats ControlLoop::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  LoopStats s = stats_;
  s.waiting = queue_.size();
  return s;
}

Time ControlLoop::NextWake() const {
  Time wake = std::min(last_tick_ + options_.tick_interval, last_pass_ + options_.idle_pass);
  if (controller_.WantsPass()) wake = std::min(wake, last_pass_ + pass_gap_);
  return std::min(wake, std::max(controller_.WakeAt(), last_pass_ + pass_gap_));
}

void ControlLoop::Run() {
  std::vector<Task> batch, ran;
  while (true) {
    batch.clear();
    ran.clear();
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (true) {
        cv_.wait(lock, [this] { return !busy_; });  // a caller runs a call
        if (stopping_ && queue_.empty() && ran_.empty()) return;
        if (!queue_.empty() || !ran_.empty() || stopping_) break;
        const Time now = clock_.Now();
        const Time wake = NextWake();
        if (wake <= now) break;
        sleeping_until_ = wake;
        cv_.wait_for(lock, wake - now, [this] { return !queue_.empty() || stopping_ || rewake_; });
        sleeping_until_ = Time::max();
        rewake_ = false;
        if (!busy_ && clock_.Now() >= wake) break;  // its deadline: tick, pass
      }
      busy_ = true;
      ran.swap(ran_);
      while (!queue_.empty() && batch.size() < options_.max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    Step(batch, ran, /*may_defer=*/false);
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
  }
}

bool ControlLoop::Step(std::vector<Task>& batch, std::vector<Task>& ran, bool may_defer) {
  const Time now = clock_.Now();
  for (Task& t : batch)
    t.run(controller_, now);
  const bool ticked = now - last_tick_ >= options_.tick_interval;
  if (ticked) {
    // A node is never lost because this loop could not hear it: time the
    // loop spent away beyond its tick (a slow commit, a stalled host)
    // does not count against the nodes, and nodes are judged by what had
    // arrived before the oldest request still waiting (a heartbeat may be
    // among them).
    // Measured on the steady clock: a stall is real time, whatever the
    // injected clock (or a wall-clock step) says.
    const auto steady_now = std::chrono::steady_clock::now();
    const auto late = std::chrono::duration_cast<Duration>(steady_now - last_steady_tick_) -
                      options_.tick_interval;
    if (late > options_.tick_interval) controller_.CreditUnheard(late);
    last_steady_tick_ = steady_now;
    Time heard_through = now;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!queue_.empty()) heard_through = std::min(now, queue_.front().queued);
    }
    controller_.Tick(now, heard_through);
    last_tick_ = now;
  }
  // The idle pass also rides a tick once half its interval has gone, so
  // that a pass that work set off does not leave it a wake-up of its own.
  const bool idle_pass_due = now - last_pass_ >= options_.idle_pass ||
                             (ticked && now - last_pass_ >= options_.idle_pass / 2);
  const bool wants = controller_.WantsPass() || now >= controller_.WakeAt();
  bool passed = false;
  double pass_ms = 0;
  sched::PassStats pass_stats;
  if ((wants && now - last_pass_ >= pass_gap_) || idle_pass_due) {
    const auto t0 = std::chrono::steady_clock::now();
    pass_stats = controller_.SchedulePass(now);
    const auto took = std::chrono::steady_clock::now() - t0;
    pass_ms = std::chrono::duration<double, std::milli>(took).count();
    pass_gap_ = std::max(options_.pass_interval,
                         std::chrono::duration_cast<Duration>(took * (1 + options_.pass_spacing)));
    last_pass_ = now;
    passed = true;
    CountPass(pass_ms);
  }
  if (may_defer && controller_.HasChanges()) {
    if (passed && change_log_ != nullptr) change_log_->Pass(pass_stats, pass_ms);
    return false;
  }
  state::Batch changes = controller_.TakeBatch();
  if (!changes.empty()) {
    Status s = store_.Commit(changes);
    if (!s.ok()) {
      // The state in memory is ahead of the state on disk; going on would
      // acknowledge what a restart forgets. Stop here; a restart recovers.
      log::Error("store.commit_failed", {{"error", s.ToString()}});
      std::abort();
    }
    if (change_log_ != nullptr) change_log_->Committed(changes);
    last_commit_calls_ = batch.size() + ran.size();
  }
  if (passed && change_log_ != nullptr) change_log_->Pass(pass_stats, pass_ms);
  // A new token works as soon as its creator hears of it.
  if (tokens_ != nullptr && controller_.TokensChanged()) tokens_->Replace(controller_.Tokens());
  for (Task& t : ran)
    t.done();
  for (Task& t : batch)
    t.done();
  Outbox out = controller_.TakeOutbox();
  if (mailer_ != nullptr) mailer_->Send(std::move(out.mails));
  out.mails.clear();
  if (agents_ != nullptr && !out.empty()) agents_->Send(std::move(out));
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.calls += batch.size() + ran.size();
    if (!changes.empty()) ++stats_.batches;
  }
  // A commit of many jobs at once (an array, a batch) leaves what its
  // records, their encodings and the requests took free but kept by
  // malloc, which grows the server's resident memory for good; hand it
  // back (2,000 tasks: 50 -> 40 MB). Rare, and a few milliseconds.
  if (changes.jobs.size() >= kLargeCommit) {
    changes = state::Batch();
    batch.clear();
    ::malloc_trim(0);
  }
  return true;
}

void ControlLoop::CountPass(double pass_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.passes;
  stats_.last_pass_ms = pass_ms;
  stats_.pass_ms_total += pass_ms;
  for (size_t b = 0; b < kPassBuckets; ++b) {
    if (pass_ms <= kPassBucketsMs[b]) {
      ++stats_.pass_buckets[b];
      break;
    }
  }
}

}  // namespace shoal::server
