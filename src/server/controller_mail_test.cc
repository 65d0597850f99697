// Mail about jobs (sbatch --mail-type) as the controller queues it: which
// events, Slurm's subjects, arrays as a whole unless ARRAY_TASKS.
#include <gtest/gtest.h>

#include "server/controller.h"
#include "server/controller_testing.h"

namespace shoal::server {
namespace {

using testing::kAlice;
using testing::Spec;

class ControllerMailTest : public testing::ControllerFixture {
 protected:
  std::vector<MailOrder> Mails() { return c_.TakeOutbox().mails; }
};

JobSpec Mailed(const std::string& types, int gpus = 1) {
  JobSpec s = Spec(gpus);
  s.name = "train";
  s.mail_types = *ParseMailTypes(types);
  return s;
}

TEST_F(ControllerMailTest, MailTypesParseAsSbatchTakesThem) {
  EXPECT_EQ(*ParseMailTypes("begin,END"), MailBit(MailEvent::kBegin) | MailBit(MailEvent::kEnd));
  EXPECT_EQ(FormatMailTypes(*ParseMailTypes("ALL")), "BEGIN,END,FAIL,REQUEUE,INVALID_DEPEND");
  EXPECT_EQ(*ParseMailTypes("NONE"), 0);
  EXPECT_EQ(*ParseMailTypes("STAGE_OUT,TIME_LIMIT_80"), MailBit(MailEvent::kTimeLimit80));
  auto bad = ParseMailTypes("END,SOMETIMES");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'SOMETIMES'"), std::string::npos);
}

TEST_F(ControllerMailTest, BeganAndEndedGoToTheUserOrTheMailUser) {
  Register("n1");
  JobSpec s = Mailed("BEGIN,END");
  JobId plain = Submit(kAlice, Spec(1));
  JobId id = Submit(kAlice, s);
  s.mail_user = "ann@example.org";
  JobId other = Submit(kAlice, s);
  c_.SchedulePass(At(3));
  std::vector<MailOrder> began = Mails();
  ASSERT_EQ(began.size(), 2u);  // not for the job that asked for none
  EXPECT_EQ(began[0].to, "alice");
  EXPECT_EQ(began[0].subject, "Shoal Job_id=" + std::to_string(id.value()) +
                                  " Name=train Began, Queued time 00:00:03");
  EXPECT_EQ(began[1].to, "ann@example.org");
  Exit("n1", id, 0, 63);
  Exit("n1", other, 2, 64);
  Exit("n1", plain, 0, 64);
  std::vector<MailOrder> ended = Mails();
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].subject, "Shoal Job_id=" + std::to_string(id.value()) +
                                  " Name=train Ended, Run time 00:01:00, COMPLETED, ExitCode 0");
  // With END alone, a failure is an end whose state says so (as Slurm's).
  EXPECT_NE(ended[1].subject.find("Ended, Run time 00:01:01, FAILED, ExitCode 2"),
            std::string::npos)
      << ended[1].subject;
}

TEST_F(ControllerMailTest, WithoutAMailProgramTheSubmitterIsTold) {
  auto r = c_.Submit(kAlice, Mailed("END"), At(0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->contains("notes"));
  EXPECT_NE((*r)["notes"][0].get<std::string>().find("no mail is sent"), std::string::npos);
  EXPECT_FALSE(c_.Submit(kAlice, Spec(1), At(0))->contains("notes"));

  ControllerConfig cfg = Config();
  cfg.mail_enabled = true;
  Controller with_mail(cfg);
  auto quiet = with_mail.Submit(kAlice, Mailed("END"), At(0));
  ASSERT_TRUE(quiet.ok());
  EXPECT_FALSE(quiet->contains("notes"));
}

TEST_F(ControllerMailTest, FailOnlyMailsFailuresAndRequeuesAreTold) {
  Register("n1");
  JobId ok = Submit(kAlice, Mailed("FAIL"));
  JobId bad = Submit(kAlice, Mailed("FAIL"));
  JobSpec rq = Mailed("REQUEUE");
  rq.requeue = true;
  JobId again = Submit(kAlice, rq);
  c_.SchedulePass(At(1));
  EXPECT_TRUE(Mails().empty());
  Exit("n1", ok, 0, 10);
  Exit("n1", bad, 1, 10);
  std::vector<MailOrder> m = Mails();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0].subject.find("Job_id=" + std::to_string(bad.value())), std::string::npos);
  ASSERT_TRUE(c_.Requeue(kAlice, again, At(20)).ok());
  Exit("n1", again, 143, 21, 15);
  m = Mails();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0].subject.find("Requeued"), std::string::npos) << m[0].subject;
}

TEST_F(ControllerMailTest, AnArrayIsMailedAsAWholeUnlessArrayTasks) {
  Register("n1");
  JobSpec whole = Mailed("BEGIN,END");
  whole.array = std::make_shared<const ArraySpec>(*ParseArraySpec("0-2"));
  Submit(kAlice, whole);
  JobSpec each = Mailed("BEGIN,ARRAY_TASKS");
  each.array = std::make_shared<const ArraySpec>(*ParseArraySpec("0-1"));
  Submit(kAlice, each);
  c_.SchedulePass(At(1));
  std::vector<MailOrder> m = Mails();
  ASSERT_EQ(m.size(), 3u);  // one for the first array, one per task of the second
  EXPECT_NE(m[0].subject.find("Array_job_id=1 "), std::string::npos) << m[0].subject;
  EXPECT_NE(m[1].subject.find("Job_id=4_0 (4)"), std::string::npos) << m[1].subject;
  EXPECT_NE(m[2].subject.find("Job_id=4_1 (5)"), std::string::npos) << m[2].subject;
  Exit("n1", JobId(1), 0, 10);
  Exit("n1", JobId(2), 0, 10);
  EXPECT_TRUE(Mails().empty());  // a task is still running
  Exit("n1", JobId(3), 0, 11);
  m = Mails();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0].subject.find("Array_job_id=1 Name=train Ended"), std::string::npos)
      << m[0].subject;
}

TEST_F(ControllerMailTest, TimeLimitMarksAreMailedOnce) {
  Register("n1");
  JobSpec s = Mailed("TIME_LIMIT_50,TIME_LIMIT_90,TIME_LIMIT");
  s.time_limit = std::chrono::seconds(100);
  JobId id = Submit(kAlice, s);
  c_.SchedulePass(At(0));
  // The node keeps beating, so that only the time limit matters.
  auto tick = [&](int at) {
    Beat("n1", at);
    c_.Tick(At(at));
  };
  tick(25);
  tick(40);
  EXPECT_TRUE(Mails().empty());
  tick(51);
  tick(60);
  std::vector<MailOrder> m = Mails();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0].subject.find("Reached 50% of time limit"), std::string::npos) << m[0].subject;
  tick(80);
  tick(95);
  m = Mails();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0].subject.find("Reached 90% of time limit"), std::string::npos);
  tick(101);  // the limit: stopped
  Exit("n1", id, 0, 102, 15);
  EXPECT_EQ(StateOf(id), JobState::kTimeout);
  m = Mails();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0].subject.find("Reached time limit"), std::string::npos) << m[0].subject;
}

}  // namespace
}  // namespace shoal::server
