// A controller that stops and is rebuilt from its store, as `shoal server`
// restarts: its jobs, tokens and usage come back, a running job's service
// and its account's fair share read as for a controller that never stopped,
// and an exit heard late ends its job when the job ended.
#include <gtest/gtest.h>

#include "server/controller.h"
#include "server/controller_testing.h"
#include "server/restore.h"
#include "state/store.h"

namespace shoal::server {
namespace {

using testing::kAdmin;
using testing::kAlice;
using testing::kNodeAgent;
using testing::MakeNode;
using testing::Spec;

class ControllerRestartTest : public testing::ControllerFixture {
 protected:
  // One account, "vision", and no node timeout (the restart tests send no beats).
  static ControllerConfig OneAccount() {
    ControllerConfig cfg = Config();
    cfg.accounts = {{.name = "vision", .shares = 1.0}};
    cfg.node_timeout = std::chrono::hours(24);
    return cfg;
  }
  static JobSpec VisionJob(int gpus) {
    JobSpec spec = Spec(gpus);
    spec.account = "vision";
    return spec;
  }
  // `again` takes over at `at` from what c_ committed, as a restarted server.
  void RestartAs(Controller& again, int at) {
    auto store = state::NewMemoryStore();
    ASSERT_TRUE(store->Commit(c_.TakeBatch()).ok());
    ASSERT_TRUE(RestoreFromStore(again, *store, At(at)).ok());
  }
};

TEST_F(ControllerRestartTest, RestoreContinuesWhereItStopped) {
  Register("n1");
  JobId running = Submit(kAlice, Spec(8));
  JobId pending = Submit(kAlice, Spec(8));
  c_.SchedulePass(At(1));
  auto token = c_.CreateToken(kAdmin, {.user = "carol", .role = "user"}, At(1));
  ASSERT_TRUE(token.ok());
  Controller again(Config());
  RestartAs(again, 2);
  EXPECT_EQ((*again.ShowJob(kAdmin, running))["state"], "running");
  EXPECT_EQ((*again.ShowJob(kAdmin, pending))["state"], "pending");
  EXPECT_EQ(again.Tokens().size(), 1u);
  auto next = again.Submit(kAlice, Spec(1), At(3));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ((*next)["jobs"][0].get<uint64_t>(), pending.value() + 1) << "ids are never reused";
}

// Fair share across a restart: the store holds each account's usage as of
// its last commit (a minute apart); the restored controller decays it to now
// and charges the running job for the time since, so that it reads what a
// controller that never stopped reads.
TEST_F(ControllerRestartTest, UsageAfterARestartIsWhatItWouldHaveBeen) {
  const ControllerConfig cfg = OneAccount();
  Controller steady(cfg);
  Controller stopping(cfg);
  const JobSpec spec = VisionJob(8);
  for (Controller* c : {&steady, &stopping}) {
    ASSERT_TRUE(c->RegisterNode(kNodeAgent, MakeNode("n1"), At(0)).ok());
    ASSERT_TRUE(c->Submit(kAlice, spec, At(0)).ok());
    c->SchedulePass(At(1));
  }
  auto store = state::NewMemoryStore();
  for (int t = 10; t <= 330; t += 10) {  // the last usage commit at 310 s
    steady.Tick(At(t));
    stopping.Tick(At(t));
    ASSERT_TRUE(store->Commit(stopping.TakeBatch()).ok());
  }
  auto loaded = store->Load(kTimeZero);
  ASSERT_TRUE(loaded.ok());
  Controller again(cfg);
  ASSERT_TRUE(again.Restore(*loaded, At(900)).ok());
  steady.Tick(At(900));
  const double want = steady.AccountsJson()[0]["usage_gpu_hours"].get<double>();
  EXPECT_GT(want, 8 * 899 / 3600.0 * 0.99);
  EXPECT_NEAR(again.AccountsJson()[0]["usage_gpu_hours"].get<double>(), want, want * 1e-9);
  // And the job's own service (LAS's and Gittins' attained service), though
  // its record was last written at its start.
  const JobId id(1);
  auto service = [&](Controller& c) {
    return (*c.ShowJob(kAdmin, id))["gpu_seconds"].get<double>();
  };
  EXPECT_DOUBLE_EQ(service(steady), 8 * 899.0);
  EXPECT_DOUBLE_EQ(service(again), service(steady));
}

// An exit the server hears late (it was restarting, a beat was lost) ends
// the job when its node says it ended, and counts its GPU-seconds to then;
// never before a heartbeat said it still ran, never after it was heard.
TEST_F(ControllerRestartTest, AnExitHeardLateEndsTheJobWhenItEnded) {
  Register("n1");
  const JobId a = Submit(kAlice, Spec(8));
  const JobId b = Submit(kAlice, Spec(0));
  c_.SchedulePass(At(1));
  ASSERT_EQ(StateOf(a), JobState::kRunning);
  ASSERT_EQ(StateOf(b), JobState::kRunning);
  Heartbeat alive;
  alive.running = {{a, EpochOf(a)}, {b, EpochOf(b)}};
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", alive, At(10)).ok());
  Heartbeat late;
  late.events.push_back({a, EpochOf(a), 0, JobEvent::kExited, 0, 0, "", At(40)});
  late.events.push_back({b, EpochOf(b), 0, JobEvent::kExited, 0, 0, "", At(5)});
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", late, At(100)).ok());
  const api::Json shown = *c_.ShowJob(kAdmin, a);
  EXPECT_EQ(shown["state"], "completed");
  EXPECT_DOUBLE_EQ(shown["end_time"].get<double>(), api::TimeToJson(At(40)));
  EXPECT_DOUBLE_EQ(shown["gpu_seconds"].get<double>(), 8 * 39.0);
  // b's node said it ended at 5 s, but it reported b running at 10 s.
  EXPECT_DOUBLE_EQ((*c_.ShowJob(kAdmin, b))["end_time"].get<double>(), api::TimeToJson(At(10)));
  // An end after the server heard of it is when it heard.
  const JobId c = Submit(kAlice, Spec(8), 100);
  c_.SchedulePass(At(101));
  Heartbeat ahead;
  ahead.events.push_back({c, EpochOf(c), 0, JobEvent::kExited, 0, 0, "", At(900)});
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", ahead, At(200)).ok());
  EXPECT_DOUBLE_EQ((*c_.ShowJob(kAdmin, c))["end_time"].get<double>(), api::TimeToJson(At(200)));
}

// Fair share through a restart, as for a server that never stopped: a job
// that ended after the store's last usage figure (committed once a minute)
// counts up to its end, and one that ended while the server was down counts
// up to its end, not until the server heard of it.
TEST_F(ControllerRestartTest, FairShareAfterARestartCountsJobsThatEndedMeanwhile) {
  const ControllerConfig cfg = OneAccount();
  Controller steady(cfg);
  Controller stopping(cfg);
  const JobSpec spec = VisionJob(4);
  // Job `job`'s exit at `ended`, heard at `heard`; the other job (if it is
  // still running) goes on.
  auto exit_at = [&](Controller& c, int job, int ended, int heard) {
    Heartbeat hb;
    const uint64_t epoch = (*c.ShowJob(kAdmin, JobId(job)))["epoch"].get<uint64_t>();
    hb.events.push_back({JobId(job), epoch, 0, JobEvent::kExited, 0, 0, "", At(ended)});
    if (job == 1) hb.running.push_back({JobId(2), epoch});
    ASSERT_TRUE(c.ReceiveHeartbeat(kNodeAgent, "n1", hb, At(heard)).ok());
  };
  auto store = state::NewMemoryStore();
  for (Controller* c : {&steady, &stopping}) {
    ASSERT_TRUE(c->RegisterNode(kNodeAgent, MakeNode("n1"), At(0)).ok());
    ASSERT_TRUE(c->Submit(kAlice, spec, At(0)).ok());
    ASSERT_TRUE(c->Submit(kAlice, spec, At(0)).ok());
    c->SchedulePass(At(1));
    c->Tick(At(10));  // usage committed
    exit_at(*c, 1, 35, 35);
    c->Tick(At(40));
    c->Tick(At(60));  // within the minute: not committed
  }
  ASSERT_TRUE(store->Commit(stopping.TakeBatch()).ok());
  // `stopping` is down from 65 s to 100 s; job 2 ends at 85 s.
  exit_at(steady, 2, 85, 85);
  steady.Tick(At(100));
  Controller again(cfg);
  ASSERT_TRUE(RestoreFromStore(again, *store, At(100)).ok());
  exit_at(again, 2, 85, 100);
  again.Tick(At(100));
  const double want = steady.AccountsJson()[0]["usage_gpu_hours"].get<double>();
  EXPECT_GT(want, 4 * (34 + 84) / 3600.0 * 0.99);
  EXPECT_NEAR(again.AccountsJson()[0]["usage_gpu_hours"].get<double>(), want, want * 1e-9);
}

// The same for a job that had run before (requeued after 100 s): its
// service at its second start counts too.
TEST_F(ControllerRestartTest, ARequeuedJobKeepsItsEarlierServiceThroughARestart) {
  Register("n1");
  const JobId id = Submit(kAlice, Spec(8));
  c_.SchedulePass(At(1));
  ASSERT_TRUE(c_.Requeue(kAdmin, id, At(101)).ok());
  Heartbeat hb;
  hb.events.push_back({id, EpochOf(id), 0, JobEvent::kExited, 0, 15, ""});
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "n1", hb, At(101)).ok());
  ASSERT_EQ(StateOf(id), JobState::kPending);
  c_.SchedulePass(At(102));
  ASSERT_EQ(StateOf(id), JobState::kRunning);
  Controller again(Config());
  RestartAs(again, 1002);
  EXPECT_DOUBLE_EQ((*again.ShowJob(kAdmin, id))["gpu_seconds"].get<double>(), 8 * (100.0 + 900));
}

}  // namespace
}  // namespace shoal::server
