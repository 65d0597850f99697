// The wire format: strict parsing with errors that name the field, and specs
// that survive a round trip.
#include "api/json.h"

#include <gtest/gtest.h>

namespace shoal::api {
namespace {

TEST(JsonTest, MalformedTextIsAnErrorNotAnException) {
  for (const char* text : {"", "{", "{\"a\":}", "[1,2", "{\"c\":555555555508e9100}", "\xff\xfe", "nul"}) {
    auto j = Parse(text);
    ASSERT_FALSE(j.ok()) << text;
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(j.status().message().find("malformed JSON"), std::string::npos) << j.status().message();
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
           {R"({"command":"true","dependencies":[{"type":"after","job":1}]})", "after"},
           {R"({"command":"true","array":"5-1"})", "array"},
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
    EXPECT_NE(checked.message().find(c.error), std::string::npos) << c.text << ": " << checked.message();
  }
}

TEST(JsonTest, JobSpecRoundTrips) {
  auto j = Parse(R"({"command":"python3 train.py","name":"t","nodes":2,"gpus_per_node":4,"gpu_models":["H100"],
                    "cpus_per_gpu":2.5,"mem_per_gpu_mib":4096,"time_limit_s":3600,"array":"0-9%2",
                    "dependencies":[{"type":"afterok","job":7}],"env":{"A":"1"},"requeue":true})");
  ASSERT_TRUE(j.ok());
  auto spec = JobSpecFromJson(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->nodes, 2);
  EXPECT_EQ(spec->cpu_milli_per_gpu, 2500);
  ASSERT_EQ(spec->dependencies.size(), 1u);
  const Json once = ToJson(*spec);
  auto again = JobSpecFromJson(once);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ToJson(*again), once);
}

}  // namespace
}  // namespace shoal::api
