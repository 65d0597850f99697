// The wire format: strict parsing with errors that name the field, and specs
// that survive a round trip.
#include "api/json.h"

#include <gtest/gtest.h>

namespace shoal::api {
namespace {

TEST(JsonTest, MalformedTextIsAnErrorNotAnException) {
  for (const char* text :
       {"", "{", "{\"a\":}", "[1,2", "{\"c\":555555555508e9100}", "\xff\xfe", "nul"}) {
    auto j = Parse(text);
    ASSERT_FALSE(j.ok()) << text;
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(j.status().message().find("malformed JSON"), std::string::npos)
        << j.status().message();
  }
}

TEST(JsonTest, JobSpecFieldsAreStrict) {
  struct Case {
    const char* text;
    const char* error;  // a part of the message; empty: accepted
  };
  for (const Case& c : std::vector<Case>{
           {R"({"command":"true","gpus":2})", ""},
           {R"({"command":"true","gpu":2})", "gpu"},
           {R"({"command":"true","gpus":"2"})", "gpus"},
           {R"({"command":"true","gpus":-1})", "negative"},
           {R"({"command":"true","time_limit_s":-5})", "time limits"},
           {R"({"command":"true","dependencies":{"type":"afterok"}})", "dependencies"},
           {R"({"command":"true","dependencies":[{"type":"aftercorr","job":1}]})", "aftercorr"},
           {R"({"command":"true","array":"5-1"})", "array"},
           {R"({"command":"true","gpus":1,"gpu_speeds":{"h100":1}})", ""},
           {R"({"command":"true","gpu_speeds":["h100"]})", "gpu_speeds' must be an object"},
           {R"({"command":"true","gpu_speeds":{"h100":"fast"}})",
            "gpu_speeds.h100 must be a number"},
           {R"({"command":"true","gpu_speeds":{"h100":-1}})", "a speed above 0"},
           {R"([1,2])", "job"},
       }) {
    auto j = Parse(c.text);
    ASSERT_TRUE(j.ok()) << c.text;
    auto spec = JobSpecFromJson(*j);
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(spec.ok()) << c.text << ": " << spec.status().ToString();
      continue;
    }
    auto checked = spec.ok() ? spec->Validate() : spec.status();
    ASSERT_FALSE(checked.ok()) << c.text;
    EXPECT_NE(checked.message().find(c.error), std::string::npos)
        << c.text << ": " << checked.message();
  }
}

TEST(JsonTest, JobSpecRoundTrips) {
  auto j = Parse(
      R"({"command":"python3 train.py","name":"t","nodes":2,"gpus_per_node":4,"gpu_models":["H100"],
                    "gpu_speeds":{"A100":0.55,"H100":1},
                    "cpus_per_gpu":2.5,"mem_per_gpu_mib":4096,"time_limit_s":3600,"array":"0-9%2",
                    "dependencies":[{"type":"afterok","job":7}],"env":{"A":"1"},"requeue":true})");
  ASSERT_TRUE(j.ok());
  auto spec = JobSpecFromJson(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->nodes, 2);
  EXPECT_EQ(spec->cpu_milli_per_gpu, 2500);
  using Speeds = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(spec->gpu_speeds, (Speeds{{"A100", 0.55}, {"H100", 1}}));
  ASSERT_EQ(spec->dependencies.size(), 1u);
  EXPECT_FALSE(spec->dependency_any);
  EXPECT_FALSE(ToJson(*spec).contains("dependency_any"));  // records stay as they were
  const Json once = ToJson(*spec);
  auto again = JobSpecFromJson(once);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ToJson(*again), once);
}

// An array's tasks are one record each, all naming the same array: decoding
// them one after another shares one ArraySpec instead of expanding the
// indices again for every task (memory and time quadratic in the tasks).
TEST(JsonTest, TasksOfOneArrayShareTheirArraySpec) {
  const Json task = Json{{"command", "true"}, {"array", "0-99999%5"}};
  auto first = JobSpecFromJson(task);
  auto second = JobSpecFromJson(task);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_NE(first->array, nullptr);
  EXPECT_EQ(first->array.get(), second->array.get());
  EXPECT_EQ(first->array->indices.size(), 100000u);
  EXPECT_EQ(first->array->max_running, 5);
  auto other = JobSpecFromJson(Json{{"command", "true"}, {"array", "0-9"}});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->array->indices.size(), 10u);
  EXPECT_EQ(first->array->indices.size(), 100000u);  // the first is unchanged
  EXPECT_EQ(ToJson(*first)["array"], "0-99999%5");
  EXPECT_EQ(ToJson(*other)["array"], "0-9");
}

// The same for a script and an environment: the records of an array's
// tasks, decoded one after another (a restart, the history), share them.
TEST(JsonTest, TasksDecodedInARowShareTheirScriptAndEnvironment) {
  Json task = Json{{"command", "#!/bin/sh\ntrain.sh\n"},
                   {"script", true},
                   {"env", {{"HOME", "/home/alice"}, {"LR", "0.1"}}}};
  auto first = JobSpecFromJson(task);
  auto second = JobSpecFromJson(task);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(first->command.SharesWith(second->command));
  EXPECT_TRUE(first->env.SharesWith(second->env));
  task["env"]["LR"] = "0.2";
  auto third = JobSpecFromJson(task);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->env.SharesWith(first->env));
  EXPECT_EQ(third->env->at("LR"), "0.2");
  EXPECT_EQ(first->env->at("LR"), "0.1");
  EXPECT_TRUE(third->command.SharesWith(first->command));
  // Encoded as the plain values they hold.
  const Json back = ToJson(*third);
  EXPECT_EQ(back["command"], "#!/bin/sh\ntrain.sh\n");
  EXPECT_EQ(back["env"], (Json{{"HOME", "/home/alice"}, {"LR", "0.2"}}));
}

TEST(JsonTest, AnyOfDependenciesRoundTrip) {
  JobSpec spec;
  spec.command = "true";
  spec.dependencies = {{DependencyType::kAfterOk, JobId(3)}, {DependencyType::kAfterAny, JobId(4)}};
  spec.dependency_any = true;
  const Json j = ToJson(spec);
  EXPECT_EQ(j["dependency_any"], true);
  auto back = JobSpecFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->dependency_any);
  EXPECT_EQ(back->dependencies, spec.dependencies);
}

TEST(JsonTest, EfficiencyAndIdleSurviveARoundTrip) {
  Job job;
  job.id = JobId(7);
  job.spec.command = "train.sh";
  job.state = JobState::kCompleted;
  job.efficiency = {.samples = 12,
                    .util_mean_pct = 61.5,
                    .util_peak_pct = 99,
                    .mem_mean_mib = 30000.5,
                    .mem_peak_mib = 70000,
                    .energy_wh = 812.25};
  job.idle = true;
  job.idle_since = TimeFromSeconds(1795996564.5);
  const Json j = ToJson(job);
  EXPECT_EQ(j["efficiency"]["util_mean_pct"], 61.5);
  EXPECT_EQ(j["idle"], true);
  auto back = JobFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->efficiency, job.efficiency);
  EXPECT_TRUE(back->idle);
  EXPECT_EQ(back->idle_since, job.idle_since);
  // A job without samples has no efficiency object (old records read the same).
  EXPECT_FALSE(ToJson(Job{}).contains("efficiency"));
  Json bad = j;
  bad["efficiency"]["util_avg"] = 1;
  EXPECT_FALSE(JobFromJson(bad).ok());
}

TEST(JsonTest, PartitionIdleOptions) {
  Partition p;
  p.name = "interactive";
  p.idle_util_pct = 2;
  p.idle_minutes = 20;
  p.idle_action = "cancel";
  auto back = PartitionFromJson(ToJson(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->idle_util_pct, 2);
  EXPECT_EQ(back->idle_minutes, 20);
  EXPECT_EQ(back->idle_action, "cancel");
  auto defaults = PartitionFromJson(Json{{"name", "gpu"}});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->idle_util_pct, 5);
  EXPECT_EQ(defaults->idle_minutes, 30);
  EXPECT_EQ(defaults->idle_action, "notify");
  EXPECT_FALSE(PartitionFromJson(Json{{"name", "gpu"}, {"idle_action", "kill"}}).ok());
  EXPECT_FALSE(PartitionFromJson(Json{{"name", "gpu"}, {"idle_util_pct", 101}}).ok());
}

}  // namespace
TEST(JsonTest, ContainerRoundTripsAndIsChecked) {
  JobSpec spec;
  spec.command = std::string("true");
  spec.container = {"busybox",
                    {{"/data", "/in", true}, {"/scratch", "/scratch", false}},
                    "/work",
                    {"PATH"},
                    false};
  auto back = JobSpecFromJson(ToJson(spec));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->container, spec.container);
  EXPECT_EQ(ToJson(spec)["container"]["mounts"][0], "/data:/in:ro");
  EXPECT_FALSE(ToJson(JobSpec{}).contains("container"));
  for (const char* bad : {R"({"command":"x","container":{"image":"a","mount":[]}})",
                          R"({"command":"x","container":{"image":"a","mounts":["rel:/x"]}})",
                          R"({"command":"x","container":{"image":"","workdir":"/w"}})",
                          R"({"command":"x","container":{"image":"a","workdir":"w"}})",
                          R"({"command":"x","container":{"image":"-rf"}})"}) {
    auto j = Parse(bad);
    ASSERT_TRUE(j.ok());
    EXPECT_FALSE(JobSpecFromJson(*j).ok()) << bad;
  }
}

}  // namespace shoal::api
