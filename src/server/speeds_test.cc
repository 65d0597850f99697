// Speed-aware policies on a server: where a job's speeds come from
// (server/speeds.h) and what the controller does with them.
#include "server/speeds.h"

#include <gtest/gtest.h>

#include <map>

#include "server/controller_testing.h"

namespace shoal::server {
namespace {

using testing::kAdmin;
using testing::kAlice;
using testing::kBob;
using testing::kNodeAgent;
using testing::MakeNode;
using testing::Spec;

class SpeedsTest : public testing::ControllerFixture {
 protected:
  static ControllerConfig SpeedConfig() {
    ControllerConfig cfg = Config();
    cfg.policy = "speed";
    return cfg;
  }
  // Registers a1, a node of A100s (first), and h1, a node of H100s.
  void RegisterMixed(Controller& c, int gpus, int at) {
    Node a1 = MakeNode("a1", gpus);
    for (Gpu& g : a1.gpus)
      g.model = "A100-SXM4-80GB";
    ASSERT_TRUE(c.RegisterNode(kNodeAgent, a1, At(at)).ok());
    ASSERT_TRUE(c.RegisterNode(kNodeAgent, MakeNode("h1", gpus), At(at)).ok());
  }
};

// The speed policy on a server with A100s (registered first) and H100s: a job
// that declares nothing runs where the catalogue's BF16 peak is higher; one
// that declares its speeds runs where it is faster by them, and never on a
// model it does not name.
TEST_F(SpeedsTest, SpeedPolicyPlacesByDeclaredOrCatalogueSpeeds) {
  Controller c(SpeedConfig());
  RegisterMixed(c, 2, 0);
  auto submit = [&](std::vector<std::pair<std::string, double>> speeds) {
    JobSpec spec = Spec(1);
    spec.gpu_speeds = std::move(speeds);
    auto r = c.Submit(kAlice, std::move(spec), At(0));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? JobId((*r)["jobs"][0].get<uint64_t>()) : JobId(0);
  };
  const JobId estimated = submit({});
  const JobId prefers_a100 = submit({{"h100", 1}, {"a100", 2}});
  const JobId h100_only = submit({{"h100", 1}});
  const JobId waits = submit({{"h100", 1}});
  c.SchedulePass(At(1));
  std::map<uint64_t, std::string> on;
  for (const LaunchOrder& l : c.TakeOutbox().launches)
    on[l.job.value()] = l.node;
  EXPECT_EQ(on[estimated.value()], "h1");
  EXPECT_EQ(on[prefers_a100.value()], "a1");
  EXPECT_EQ(on[h100_only.value()], "h1");
  EXPECT_FALSE(on.contains(waits.value())) << "an A100 is free, but it named only h100";
  // A running job's note says why that model.
  auto started = c.ShowJob(kAdmin, estimated);
  ASSERT_TRUE(started.ok());
  EXPECT_NE(started->value("reason_detail", "").find("on H100-SXM-80GB: expected to end in"),
            std::string::npos)
      << started->dump();
  EXPECT_NE(started->value("reason_detail", "").find("on A100-SXM4-80GB"), std::string::npos);
  auto shown = c.ShowJob(kAdmin, waits);
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ((*shown)["state"], "pending");
  EXPECT_EQ((*shown)["spec"]["gpu_speeds"]["h100"], 1.0);
}

// Learned speeds: runs of alice's "train" report their progress from their
// first node; the runs teach the server that this job is faster on the A100
// than on the H100 (as a job bound by something the catalogue's peaks do not
// show would be). Her next "train" then starts on the A100, bob's "train"
// (nothing learned) on the H100 as the catalogue says, and what was learned
// goes to the store and comes back from it.
TEST_F(SpeedsTest, SpeedsLearnedFromEarlierRunsPlaceTheNextOne) {
  Controller c(SpeedConfig());
  RegisterMixed(c, 1, 0);
  auto submit = [&](const Identity& who, std::vector<std::string> models, int at) {
    JobSpec spec = Spec(1);
    spec.name = "train";
    spec.gpu_models = std::move(models);
    auto r = c.Submit(who, std::move(spec), At(at));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? JobId((*r)["jobs"][0].get<uint64_t>()) : JobId(0);
  };
  auto node_of = [&](JobId id, int at) {
    c.SchedulePass(At(at));
    std::string node;
    for (const LaunchOrder& l : c.TakeOutbox().launches) {
      if (l.job == id) node = l.node;
    }
    return node;
  };
  auto epoch = [&](JobId id) { return (*c.ShowJob(kAdmin, id))["epoch"].get<uint64_t>(); };
  // A run on `node` that reports `rate` in `beats` heartbeats, then ends.
  auto run = [&](JobId id, const std::string& node, double rate, int beats, int at) {
    for (int b = 0; b < beats; ++b) {
      Heartbeat hb;
      hb.running.push_back({id, epoch(id), 0, rate});
      ASSERT_TRUE(c.ReceiveHeartbeat(kNodeAgent, node, hb, At(at + b)).ok());
    }
    Heartbeat hb;
    hb.events.push_back({id, epoch(id), 0, JobEvent::kExited, 0, 0, ""});
    ASSERT_TRUE(c.ReceiveHeartbeat(kNodeAgent, node, hb, At(at + beats)).ok());
  };

  const JobId on_a100 = submit(kAlice, {"a100"}, 0);
  ASSERT_EQ(node_of(on_a100, 1), "a1");
  run(on_a100, "a1", 120, 3, 2);
  auto shown = c.ShowJob(kAdmin, on_a100);
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ((*shown)["efficiency"]["progress_samples"], 3);
  EXPECT_EQ((*shown)["efficiency"]["progress_rate"], 120.0);
  const JobId on_h100 = submit(kAlice, {"h100"}, 6);
  ASSERT_EQ(node_of(on_h100, 7), "h1");
  run(on_h100, "h1", 80, 3, 8);
  // Two figures are too few to learn from.
  const JobId short_run = submit(kAlice, {"h100"}, 12);
  ASSERT_EQ(node_of(short_run, 13), "h1");
  run(short_run, "h1", 1, 2, 14);

  const state::Batch batch = c.TakeBatch();
  ASSERT_EQ(batch.speeds.size(), 2u);
  EXPECT_EQ(batch.speeds[0].model, "A100-SXM4-80GB");
  EXPECT_EQ(batch.speeds[0].rate, 120);
  EXPECT_EQ(batch.speeds[1].model, "H100-SXM-80GB");
  EXPECT_EQ(batch.speeds[1].rate, 80);

  const JobId bobs = submit(kBob, {}, 17);
  EXPECT_EQ(node_of(bobs, 18), "h1") << "nothing learned for bob: the catalogue's peaks";
  const JobId next = submit(kAlice, {}, 19);
  auto pending = c.ShowJob(kAdmin, next);
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ((*pending)["speeds"]["source"], "learned from 2 runs") << pending->dump();
  EXPECT_EQ((*pending)["speeds"]["by_model"]["A100-SXM4-80GB"], 120.0);
  EXPECT_EQ(node_of(next, 20), "a1");

  // A server that starts from the store places by the same speeds.
  Controller restarted(SpeedConfig());
  state::Loaded loaded;
  loaded.speeds = batch.speeds;
  ASSERT_TRUE(restarted.Restore(loaded, At(40), {}).ok());
  RegisterMixed(restarted, 1, 40);
  JobSpec spec = Spec(1);
  spec.name = "train";
  auto again = restarted.Submit(kAlice, spec, At(41));
  ASSERT_TRUE(again.ok());
  restarted.SchedulePass(At(42));
  const auto launches = restarted.TakeOutbox().launches;
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].node, "a1");
}

// What was learned is each user's to see and to forget; only an admin sees
// or forgets another user's. Forgetting reaches the store, and the next job
// of that name is placed as if nothing had been learned.
TEST_F(SpeedsTest, UsersSeeAndForgetTheirOwnLearnedSpeeds) {
  Controller c(SpeedConfig());
  RegisterMixed(c, 1, 0);
  state::Loaded loaded;
  loaded.speeds = {
      {.user = "alice", .name = "train", .model = "A100-SXM4-80GB", .rate = 120, .runs = 2},
      {.user = "alice", .name = "train", .model = "H100-SXM-80GB", .rate = 80, .runs = 1},
      {.user = "bob", .name = "train", .model = "H100-SXM-80GB", .rate = 5, .runs = 1},
  };
  ASSERT_TRUE(c.Restore(loaded, At(0), {}).ok());
  auto listed = [&](const Identity& who, const std::string& user) {
    auto r = c.LearnedSpeedsJson(who, user);
    return r.ok() ? (*r)["speeds"].size() : size_t{999};
  };
  EXPECT_EQ(listed(kAlice, ""), 2u);
  EXPECT_EQ(listed(kAdmin, ""), 3u);
  EXPECT_EQ(listed(kAdmin, "bob"), 1u);
  EXPECT_EQ(c.LearnedSpeedsJson(kAlice, "bob").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c.ForgetSpeeds(kBob, "alice", "train").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c.ForgetSpeeds(kAlice, "", "").status().code(), StatusCode::kInvalidArgument);
  (void)c.TakeBatch();

  auto forgot = c.ForgetSpeeds(kAlice, "", "train");
  ASSERT_TRUE(forgot.ok()) << forgot.status().ToString();
  EXPECT_EQ((*forgot)["forgotten"], 2);
  EXPECT_EQ(listed(kAlice, ""), 0u);
  EXPECT_EQ(listed(kAdmin, "bob"), 1u) << "bob's job of the same name keeps its speeds";
  const state::Batch batch = c.TakeBatch();
  EXPECT_EQ(batch.deleted_speeds,
            (std::vector<std::pair<std::string, std::string>>{{"alice", "train"}}));

  JobSpec spec = Spec(1);
  spec.name = "train";
  auto id = c.Submit(kAlice, spec, At(1));
  ASSERT_TRUE(id.ok());
  auto shown = c.ShowJob(kAlice, JobId((*id)["jobs"][0].get<uint64_t>()));
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ((*shown)["speeds"]["source"], "catalogue (peak BF16)");
}

// A run teaches only with enough figures, on one model; each new run weighs
// half; a user's job names are bounded, other users' are not affected.
TEST(LearnedSpeedsTest, LearnsFromRunsWithEnoughFiguresAndBoundsEachUsersNames) {
  LearnedSpeeds learned;
  JobEfficiency e;
  e.progress_samples = 3;
  e.progress_rate = 10;
  const Time t = kTimeZero;
  ASSERT_TRUE(learned.Learn("ann", "a", "H100", e, t).has_value());
  e.progress_rate = 20;
  auto second = learned.Learn("ann", "a", "H100", e, t);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->rate, 15) << "each new run weighs half";
  EXPECT_EQ(second->runs, 2);
  e.progress_samples = 2;
  EXPECT_FALSE(learned.Learn("ann", "b", "H100", e, t).has_value());
  e.progress_samples = 3;
  EXPECT_FALSE(learned.Learn("ann", "b", "", e, t).has_value()) << "a run on several models";
  for (size_t i = 1; i < LearnedSpeeds::kMaxNamesPerUser; ++i)
    ASSERT_TRUE(learned.Learn("ann", "n" + std::to_string(i), "H100", e, t).has_value());
  EXPECT_FALSE(learned.Learn("ann", "one-too-many", "H100", e, t).has_value());
  EXPECT_TRUE(learned.Learn("ann", "a", "A100", e, t).has_value()) << "a known name, a new model";
  EXPECT_TRUE(learned.Learn("bob", "x", "H100", e, t).has_value());
  EXPECT_EQ(learned.Of("ann", "a").size(), 2u);
}

}  // namespace
}  // namespace shoal::server
