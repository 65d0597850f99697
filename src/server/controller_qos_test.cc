// QoS and admin reservations through the controller: what admins may set,
// what a submit is checked against, what passes do with them, and that they
// survive a restart.
#include <gtest/gtest.h>

#include "server/controller.h"
#include "server/controller_testing.h"

namespace shoal::server {
namespace {

using testing::kAdmin;
using testing::kAlice;
using testing::kBob;
using testing::Spec;

class QosReservationTest : public testing::ControllerFixture {
 protected:
  std::string ReasonOf(JobId id) {
    auto r = c_.ShowJob(kAdmin, id);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->value("reason", std::string()) : "";
  }
  std::string DetailOf(JobId id) { return (*c_.ShowJob(kAdmin, id)).value("reason_detail", ""); }
  // The nodes (of n1..n3) that report job `id` among theirs.
  std::vector<std::string> NodesOf(JobId id) {
    std::vector<std::string> out;
    for (const char* node : {"n1", "n2", "n3"}) {
      auto info = c_.NodeJson(node);
      if (!info.ok()) continue;
      for (const auto& j : (*info)["jobs"]) {
        if (j["job"].get<uint64_t>() == id.value()) out.push_back(node);
      }
    }
    return out;
  }
};

Qos MakeQos(const std::string& name) {
  Qos q;
  q.name = name;
  return q;
}

TEST_F(QosReservationTest, OnlyAdminsChangeQosAndAJobMustNameAKnownOne) {
  Register("n1");
  // No QoS yet: a named one is kept with the job and has no effect, as in
  // Slurm without accounting enforcement.
  JobId before = Submit(kAlice, [] {
    JobSpec s = Spec(1);
    s.qos = "high";
    return s;
  }());
  EXPECT_NE(before.value(), 0u);

  EXPECT_EQ(c_.PutQos(kAlice, MakeQos("high")).code(), StatusCode::kPermissionDenied);
  Qos normal = MakeQos("normal");
  normal.is_default = true;
  ASSERT_TRUE(c_.PutQos(kAdmin, normal).ok());
  ASSERT_TRUE(c_.PutQos(kAdmin, MakeQos("high")).ok());
  Qos bad = MakeQos("x");
  bad.preempt = {"nosuch"};
  EXPECT_EQ(c_.PutQos(kAdmin, bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c_.PutQos(kAdmin, MakeQos("bad name")).code(), StatusCode::kInvalidArgument);

  JobSpec typo = Spec(1);
  typo.qos = "hihg";
  auto refused = c_.Submit(kAlice, typo, At(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("unknown QoS 'hihg'"), std::string::npos);

  JobId plain = Submit(kAlice, Spec(1), 1);
  EXPECT_EQ((*c_.ShowJob(kAdmin, plain))["spec"]["qos"], "normal");  // the default QoS

  // A QoS that active jobs use stays.
  EXPECT_EQ(c_.DeleteQos(kAdmin, "normal").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(c_.Cancel(kAlice, plain, At(2)).ok());
  EXPECT_TRUE(c_.DeleteQos(kAdmin, "normal").ok());
  EXPECT_EQ(c_.DeleteQos(kAdmin, "normal").code(), StatusCode::kNotFound);
}

TEST_F(QosReservationTest, QosLimitsHoldAUsersJobsBackAndNotOthers) {
  Register("n1");
  Qos capped = MakeQos("capped");
  capped.max_gpus_per_user = 4;
  ASSERT_TRUE(c_.PutQos(kAdmin, capped).ok());
  auto with_qos = [](int gpus) {
    JobSpec s = Spec(gpus);
    s.qos = "capped";
    return s;
  };
  JobId a1 = Submit(kAlice, with_qos(3));
  JobId a2 = Submit(kAlice, with_qos(2));
  JobId b1 = Submit(kBob, with_qos(2));
  c_.SchedulePass(At(1));
  EXPECT_EQ(StateOf(a1), JobState::kRunning);
  EXPECT_EQ(StateOf(a2), JobState::kPending);
  EXPECT_EQ(ReasonOf(a2), "qos_limit");
  EXPECT_NE(DetailOf(a2).find("holds 3 of the 4 GPUs"), std::string::npos) << DetailOf(a2);
  EXPECT_EQ(StateOf(b1), JobState::kRunning);
}

TEST_F(QosReservationTest, ReservationsKeepTheirNodesForTheirUsers) {
  Register("n1");
  Register("n2");
  Register("n3");
  ReservationRequest req;
  req.reservation.name = "team";
  req.reservation.start = At(0);
  req.reservation.end = At(7200);
  req.reservation.users = {"alice"};
  req.node_count = 1;
  EXPECT_EQ(c_.CreateReservation(kAlice, req, At(0)).status().code(),
            StatusCode::kPermissionDenied);
  auto made = c_.CreateReservation(kAdmin, req, At(0));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  ASSERT_EQ((*made)["nodes"].size(), 1u);
  const std::string reserved = (*made)["nodes"][0].get<std::string>();
  EXPECT_EQ(reserved, "n1");  // all idle: by name
  EXPECT_EQ(c_.CreateReservation(kAdmin, req, At(0)).status().code(), StatusCode::kAlreadyExists);

  // Bob may not use it; Alice may.
  JobSpec in_res = Spec(8);
  in_res.reservation = "team";
  auto bobs = c_.Submit(kBob, in_res, At(1));
  ASSERT_FALSE(bobs.ok());
  EXPECT_EQ(bobs.status().code(), StatusCode::kPermissionDenied);
  JobSpec unknown = Spec(1);
  unknown.reservation = "nosuch";
  EXPECT_EQ(c_.Submit(kAlice, unknown, At(1)).status().code(), StatusCode::kInvalidArgument);

  // Three whole-node jobs outside it fill n2 and n3 and wait for the rest;
  // Alice's job in the reservation runs on n1.
  JobId o1 = Submit(kBob, Spec(8), 1);
  JobId o2 = Submit(kBob, Spec(8), 1);
  JobId o3 = Submit(kBob, Spec(8), 1);
  JobId mine = Submit(kAlice, in_res, 1);
  c_.SchedulePass(At(2));
  EXPECT_EQ(StateOf(o1), JobState::kRunning);
  EXPECT_EQ(StateOf(o2), JobState::kRunning);
  EXPECT_EQ(StateOf(o3), JobState::kPending);
  EXPECT_EQ(ReasonOf(o3), "reservation") << DetailOf(o3);
  EXPECT_NE(DetailOf(o3).find("'team'"), std::string::npos) << DetailOf(o3);
  EXPECT_EQ(StateOf(mine), JobState::kRunning);
  EXPECT_EQ(NodesOf(mine), std::vector<std::string>{"n1"});
  for (JobId id : {o1, o2})
    EXPECT_NE(NodesOf(id), std::vector<std::string>{"n1"});
}

TEST_F(QosReservationTest, AMaintenanceWindowKeepsLongJobsOffAndEndsByItself) {
  Register("n1");
  ReservationRequest req;
  req.reservation.name = "maint";
  req.reservation.start = At(3600);
  req.reservation.end = At(7200);
  req.reservation.maintenance = true;
  req.reservation.nodes = {"n1"};
  ASSERT_TRUE(c_.CreateReservation(kAdmin, req, At(0)).ok());
  // A second reservation of n1 at an overlapping time is refused.
  ReservationRequest twice = req;
  twice.reservation.name = "again";
  twice.reservation.users = {"alice"};
  EXPECT_EQ(c_.CreateReservation(kAdmin, twice, At(0)).status().code(),
            StatusCode::kFailedPrecondition);

  JobSpec long_job = Spec(4);
  long_job.time_limit = std::chrono::hours(2);
  JobSpec short_job = Spec(4);
  short_job.time_limit = std::chrono::minutes(30);
  JobId l = Submit(kAlice, long_job, 1);
  JobId s = Submit(kAlice, short_job, 1);
  c_.SchedulePass(At(2));
  EXPECT_EQ(StateOf(l), JobState::kPending);
  EXPECT_EQ(ReasonOf(l), "reservation");
  EXPECT_EQ(StateOf(s), JobState::kRunning);

  // Once it has ended it is deleted (and recorded so), and the long job may start.
  c_.TakeBatch();
  c_.Tick(At(7201));
  state::Batch b = c_.TakeBatch();
  EXPECT_EQ(b.deleted_reservations, std::vector<std::string>{"maint"});
  EXPECT_TRUE(c_.ReservationsJson(At(7201)).empty());
  EXPECT_TRUE(c_.WantsPass());
}

TEST_F(QosReservationTest, QosAndReservationsSurviveARestart) {
  Register("n1");
  Qos q = MakeQos("high");
  q.priority = 10;
  q.max_jobs_per_user = 2;
  ASSERT_TRUE(c_.PutQos(kAdmin, q).ok());
  ReservationRequest req;
  req.reservation.name = "team";
  req.reservation.start = At(0);
  req.reservation.end = At(3600);
  req.reservation.accounts = {"ml"};
  req.gpu_count = 8;
  ASSERT_TRUE(c_.CreateReservation(kAdmin, req, At(0)).ok());
  auto store = state::NewMemoryStore();
  ASSERT_TRUE(store->Commit(c_.TakeBatch()).ok());

  Controller again(Config());
  auto loaded = store->Load(kTimeZero);
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(again.Restore(*loaded, At(10)).ok());
  ASSERT_EQ(again.QosJson().size(), 1u);
  EXPECT_EQ(again.QosJson()[0]["max_jobs_per_user"], 2);
  const api::Json res = again.ReservationsJson(At(10));
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0]["nodes"], api::Json::array({"n1"}));
  EXPECT_EQ(res[0]["accounts"], api::Json::array({"ml"}));
  EXPECT_EQ(res[0]["state"], "active");
}

}  // namespace
}  // namespace shoal::server
