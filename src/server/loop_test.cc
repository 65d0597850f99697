// The control loop's threads: where a call's changes are committed, and that
// calls which come together share one commit.
#include "server/loop.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "server/controller_testing.h"
#include "state/store.h"

namespace shoal::server {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using testing::kAdmin;

// A store that remembers on which thread each commit ran and how many
// accounts it wrote, and that can hold a commit until it is let go.
class WatchedStore final : public state::Store {
 public:
  struct Seen {
    std::thread::id thread;
    size_t accounts;
  };

  Status Commit(const state::Batch& batch) override {
    std::unique_lock lock(mu_);
    commits_.push_back({std::this_thread::get_id(), batch.accounts.size()});
    ++in_commit_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !hold_; });
    --in_commit_;
    return inner_->Commit(batch);
  }
  Result<state::Loaded> Load(Time horizon) override { return inner_->Load(horizon); }
  Result<std::vector<Job>> History(const state::HistoryQuery& q) override {
    return inner_->History(q);
  }
  Result<std::optional<Job>> FindJob(JobId id) override { return inner_->FindJob(id); }

  void Hold() {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  void LetGo() {
    std::lock_guard lock(mu_);
    hold_ = false;
    cv_.notify_all();
  }
  // Waits until a commit is held here.
  bool WaitForHeldCommit() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return in_commit_ > 0; });
  }
  std::vector<Seen> Commits() {
    std::lock_guard lock(mu_);
    return commits_;
  }

 private:
  std::unique_ptr<state::Store> inner_ = state::NewMemoryStore();
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;
  int in_commit_ = 0;
  std::vector<Seen> commits_;
};

class ControlLoopTest : public ::testing::Test {
 protected:
  ControlLoopTest() {
    LoopOptions o;
    o.tick_interval = hours(1);  // the loop's thread runs only what calls leave it
    o.idle_pass = hours(1);
    loop_.emplace(controller_, store_, nullptr, nullptr, clock_, o);
    loop_->Start();
  }
  ~ControlLoopTest() override { loop_->Stop(); }

  // An admin's call that changes something to commit (no job: no pass has
  // anything to change).
  void PutAccount(const std::string& name) {
    Result<bool> r = loop_->Call<bool>(
        [name](Controller& c, Time) { return c.PutAccount(kAdmin, Account{name}).ok(); });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(*r);
  }

  SystemClock clock_;
  Controller controller_{ControllerConfig{}};
  WatchedStore store_;
  std::optional<ControlLoop> loop_;
};

TEST_F(ControlLoopTest, ALoneCallIsCommittedWhereItRunsAndCallsThatComeTogetherShareACommit) {
  const std::thread::id me = std::this_thread::get_id();
  // Alone on an idle loop: run, committed and answered on this thread.
  PutAccount("a");
  ASSERT_EQ(store_.Commits().size(), 1u);
  EXPECT_EQ(store_.Commits()[0].thread, me);

  // Five together: the first is held in its commit (it still came alone),
  // and the four that arrive meanwhile wait for the loop, which commits
  // them in one transaction on its own thread.
  store_.Hold();
  std::thread first([this] { PutAccount("b0"); });
  ASSERT_TRUE(store_.WaitForHeldCommit());
  std::vector<std::thread> more;
  for (int k = 1; k <= 4; ++k)
    more.emplace_back([this, k] { PutAccount("b" + std::to_string(k)); });
  for (int waited = 0; loop_->Stats().waiting < 4 && waited < 10000; waited += 5)
    std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(loop_->Stats().waiting, 4u);
  store_.LetGo();
  first.join();
  for (std::thread& t : more)
    t.join();
  std::vector<WatchedStore::Seen> commits = store_.Commits();
  ASSERT_EQ(commits.size(), 3u);
  EXPECT_EQ(commits[1].accounts, 1u);
  EXPECT_EQ(commits[2].accounts, 4u);
  const std::thread::id loop_thread = commits[2].thread;
  EXPECT_NE(loop_thread, me);

  // After a shared commit, the next call that finds the loop idle leaves
  // its commit to the loop's next batch, to be shared should others come.
  // (The loop's thread finishes its batch after answering; a call made
  // before it has is queued anyway. Give it time to.)
  std::this_thread::sleep_for(milliseconds(50));
  PutAccount("c");
  commits = store_.Commits();
  ASSERT_EQ(commits.size(), 4u);
  EXPECT_EQ(commits[3].thread, loop_thread);
  // It came alone after all: a lone call that finds the loop idle commits
  // where it runs again.
  bool here = false;
  for (int k = 0; k < 20 && !here; ++k) {
    std::this_thread::sleep_for(milliseconds(50));
    PutAccount("d" + std::to_string(k));
    here = store_.Commits().back().thread == me;
  }
  EXPECT_TRUE(here);
}

}  // namespace
}  // namespace shoal::server
