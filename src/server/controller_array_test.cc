// The controller's job arrays and dependencies, driven directly with a fixed
// clock: which tasks a submission makes and what they share, which jobs wait
// on which, and what cancelling an array's or a task's id does.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "server/controller.h"
#include "server/controller_testing.h"

namespace shoal::server {
namespace {

using testing::kAdmin;
using testing::kAlice;
using testing::kBob;
using testing::Spec;

class ControllerArrayTest : public testing::ControllerFixture {};

// One copy of the array, the script and the environment for all the tasks.
TEST_F(ControllerArrayTest, AnArraysTasksShareTheirSpecsLargeParts) {
  JobSpec spec = Spec(1);
  spec.array = std::make_shared<const ArraySpec>(*ParseArraySpec("0-999"));
  spec.env = {{"HOME", "/home/alice"}, {"PATH", "/usr/bin:/bin"}};
  Submit(kAlice, spec);
  auto tasks = c_.ListJobs(kAlice, JobFilter());
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 1000u);
  const JobSpec& first = tasks->front()->spec;
  for (const auto& t : *tasks) {
    EXPECT_EQ(t->spec.array.get(), first.array.get());
    EXPECT_TRUE(t->spec.env.SharesWith(first.env));
    EXPECT_TRUE(t->spec.command.SharesWith(first.command));
  }
  EXPECT_EQ(first.env->at("PATH"), "/usr/bin:/bin");
  EXPECT_EQ(tasks->back()->array_task_id, 999);
}

TEST_F(ControllerArrayTest, DependenciesHoldsAndArrays) {
  Register("n1");
  JobId first = Submit(kAlice, Spec(1));
  JobSpec after = Spec(1);
  after.dependencies = {{DependencyType::kAfterOk, first}};
  JobId second = Submit(kAlice, after);
  JobSpec held = Spec(1);
  held.hold = true;
  JobId h = Submit(kAlice, held);
  JobSpec array = Spec(1);
  array.array = std::make_shared<const ArraySpec>(ArraySpec{{0, 1, 2, 3}, 2});
  auto r = c_.Submit(kAlice, array, At(0));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ((*r)["jobs"].size(), 4u);
  c_.SchedulePass(At(1));
  EXPECT_EQ(StateOf(first), JobState::kRunning);
  EXPECT_EQ(StateOf(second), JobState::kPending);
  EXPECT_EQ((*c_.ShowJob(kAlice, second))["reason"], "dependency");
  EXPECT_EQ((*c_.ShowJob(kAlice, h))["reason"], "held");
  int running = 0;
  const api::Json ids = (*r)["jobs"];
  for (const auto& id : ids)
    running += StateOf(JobId(id.get<uint64_t>())) == JobState::kRunning;
  EXPECT_EQ(running, 2) << "%2";
  const JobId last((*r)["jobs"][3].get<uint64_t>());
  EXPECT_EQ((*c_.ShowJob(kAlice, last))["reason"], "array_limit");
  EXPECT_EQ((*c_.ShowJob(kAlice, last))["array_task_id"], 3);
  Exit("n1", first, 0, 5);
  c_.SchedulePass(At(6));
  EXPECT_EQ(StateOf(second), JobState::kRunning);
  ASSERT_TRUE(c_.Release(kAlice, h, At(7)).ok());
  c_.SchedulePass(At(8));
  EXPECT_EQ(StateOf(h), JobState::kRunning);
}

// A pass keeps the JobInfo of a job unchanged since the last pass; one made
// for other accounts is made again: here the job's account gets a limit
// after it was first seen, and the next pass holds it to that limit.
TEST_F(ControllerArrayTest, AJobWaitingAcrossAnAccountChangeIsSeenAnew) {
  Register("n1");
  JobSpec big = Spec(8);
  big.account = "other";
  JobId full = Submit(kAlice, big);
  JobSpec two = Spec(2);
  two.account = "team";
  JobId waits = Submit(kAlice, two);
  c_.SchedulePass(At(1));
  ASSERT_EQ(StateOf(full), JobState::kRunning);
  EXPECT_EQ((*c_.ShowJob(kAlice, waits))["reason"], "resources");
  ASSERT_TRUE(c_.PutAccount(kAdmin, Account{"team", 1.0, 1}).ok());
  ASSERT_TRUE(c_.PutAccount(kAdmin, Account{"other", 1.0, 0}).ok());
  Exit("n1", full, 0, 2);
  c_.SchedulePass(At(3));
  EXPECT_EQ(StateOf(waits), JobState::kPending);
  EXPECT_EQ((*c_.ShowJob(kAlice, waits))["reason"], "account_limit");
  // Held and released between passes: the new version of the job is read.
  ASSERT_TRUE(c_.Hold(kAlice, waits, At(4)).ok());
  c_.SchedulePass(At(5));
  EXPECT_EQ((*c_.ShowJob(kAlice, waits))["reason"], "held");
}

// A pass keeps the last pass's JobInfos where they lay and puts new and
// changed jobs' into the slots of those that left, or at the end, filling
// what stays empty from the end: through departures, arrivals and holds in
// every mix, each waiting job is still seen as itself.
TEST_F(ControllerArrayTest, WaitingJobsStayThemselvesAsTheQueueChurns) {
  Register("n1");
  Submit(kAlice, Spec(8));     // holds the node throughout
  std::map<JobId, bool> held;  // the waiting jobs, and whether each is held
  const auto submit = [&](bool hold) {
    JobSpec s = Spec(2);
    s.hold = hold;
    held[Submit(kAlice, s)] = hold;
  };
  const auto check = [&](int at) {
    c_.SchedulePass(At(at));
    for (const auto& [id, h] : held) {
      ASSERT_EQ(StateOf(id), JobState::kPending) << ToString(id);
      EXPECT_EQ((*c_.ShowJob(kAlice, id))["reason"] == "held", h) << ToString(id) << " at " << at;
    }
  };
  for (int i = 0; i < 12; ++i)
    submit(i % 3 == 0);
  check(1);
  // More leave than join: the new ones take holes, the rest are filled from the end.
  std::vector<JobId> ids;
  for (const auto& [id, h] : held)
    ids.push_back(id);
  for (size_t k : {1u, 2u, 5u, 7u, 11u}) {
    ASSERT_TRUE(c_.Cancel(kAlice, ids[k], At(2)).ok());
    held.erase(ids[k]);
  }
  submit(true);
  submit(false);
  check(3);
  // Changed while waiting: a released job and a held one.
  ASSERT_TRUE(c_.Release(kAlice, ids[0], At(4)).ok());
  held[ids[0]] = false;
  ASSERT_TRUE(c_.Hold(kAlice, ids[4], At(4)).ok());
  held[ids[4]] = true;
  check(5);
  // More join than leave.
  ASSERT_TRUE(c_.Cancel(kAlice, ids[3], At(6)).ok());
  held.erase(ids[3]);
  for (int i = 0; i < 6; ++i)
    submit(i % 2 == 0);
  check(7);
  check(8);  // nothing changed
}

TEST_F(ControllerArrayTest, AfterAndSingletonDependencies) {
  Register("n1");
  // Three jobs named "ckpt" with singleton: one at a time, in id order; a
  // job of another name or another user is not held back.
  JobSpec single = Spec(1);
  single.name = "ckpt";
  single.dependencies = {{DependencyType::kSingleton, JobId(0)}};
  JobId a = Submit(kAlice, single);
  JobId b = Submit(kAlice, single);
  JobId bobs = Submit(kBob, single);
  JobSpec other = Spec(1);
  other.name = "eval";
  other.dependencies = {{DependencyType::kAfter, a}};  // after: once a has started
  JobId started_after = Submit(kAlice, other);
  c_.SchedulePass(At(1));
  EXPECT_EQ(StateOf(a), JobState::kRunning);
  EXPECT_EQ(StateOf(b), JobState::kPending);
  EXPECT_EQ((*c_.ShowJob(kAlice, b))["reason"], "dependency");
  EXPECT_EQ(StateOf(bobs), JobState::kRunning) << "another user's job of that name";
  c_.SchedulePass(At(2));
  EXPECT_EQ(StateOf(started_after), JobState::kRunning) << "after: a has started";
  EXPECT_EQ(StateOf(b), JobState::kPending);
  Exit("n1", a, 1, 3);  // however it ended
  c_.SchedulePass(At(4));
  EXPECT_EQ(StateOf(b), JobState::kRunning);
}

// --dependency with ?: one satisfied dependency is enough; never only when
// none can be.
TEST_F(ControllerArrayTest, AnyOfDependencies) {
  Register("n1");
  JobId failed = Submit(kAlice, Spec(1));
  JobId slow = Submit(kAlice, Spec(1));
  c_.SchedulePass(At(1));
  Exit("n1", failed, 1, 2);
  JobSpec either = Spec(1);
  either.dependencies = {{DependencyType::kAfterOk, failed}, {DependencyType::kAfterAny, slow}};
  either.dependency_any = true;
  JobId waits = Submit(kAlice, either, 3);
  JobSpec neither = Spec(1);
  neither.dependencies = {{DependencyType::kAfterOk, failed}, {DependencyType::kAfterNotOk, slow}};
  neither.dependency_any = true;
  JobId never = Submit(kAlice, neither, 3);
  c_.SchedulePass(At(4));
  EXPECT_EQ((*c_.ShowJob(kAlice, waits))["reason"], "dependency");
  EXPECT_EQ((*c_.ShowJob(kAlice, never))["reason"], "dependency");
  Exit("n1", slow, 0, 5);
  c_.SchedulePass(At(6));
  EXPECT_EQ(StateOf(waits), JobState::kRunning) << "afterany: the slow job has ended";
  EXPECT_EQ(StateOf(never), JobState::kPending);
  EXPECT_EQ((*c_.ShowJob(kAlice, never))["reason"], "dependency_never_satisfied");
}

TEST_F(ControllerArrayTest, AnArraysIdCancelsEveryTaskAndATasksIdThatTaskAlone) {
  Register("n1");
  JobSpec array = Spec(1);
  array.array = std::make_shared<const ArraySpec>(ArraySpec{{0, 1, 2, 3, 4}, 2});
  auto r = c_.Submit(kAlice, array, At(0));
  ASSERT_TRUE(r.ok());
  std::vector<JobId> tasks;
  for (const auto& id : (*r)["jobs"])
    tasks.emplace_back(id.get<uint64_t>());
  c_.SchedulePass(At(1));
  ASSERT_EQ(StateOf(tasks[0]), JobState::kRunning);
  ASSERT_EQ(StateOf(tasks[2]), JobState::kPending);
  // A task's own id: that task only.
  ASSERT_TRUE(c_.Cancel(kAlice, tasks[3], At(2)).ok());
  EXPECT_EQ(StateOf(tasks[3]), JobState::kCancelled);
  EXPECT_EQ(StateOf(tasks[2]), JobState::kPending);
  // Another user may not cancel the array.
  EXPECT_EQ(c_.Cancel(kBob, tasks[0], At(3)).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(StateOf(tasks[4]), JobState::kPending);
  // The array's id (its first task's): every task still active.
  Exit("n1", tasks[1], 0, 4);
  ASSERT_TRUE(c_.Cancel(kAlice, tasks[0], At(5)).ok());
  EXPECT_EQ(StateOf(tasks[2]), JobState::kCancelled);
  EXPECT_EQ(StateOf(tasks[4]), JobState::kCancelled);
  // The running task ends when its node reports the kill.
  Exit("n1", tasks[0], 0, 6, /*signal=*/15);
  EXPECT_EQ(StateOf(tasks[0]), JobState::kCancelled);
  EXPECT_EQ(StateOf(tasks[1]), JobState::kCompleted);
  EXPECT_EQ(c_.Cancel(kAlice, tasks[0], At(7)).code(), StatusCode::kFailedPrecondition);
}
}  // namespace
}  // namespace shoal::server
