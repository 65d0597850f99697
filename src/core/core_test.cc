// Table-driven tests of the core vocabulary: statuses, time limits, sizes, dependencies.
#include <gtest/gtest.h>

#include <csignal>

#include "core/cluster.h"
#include "core/job.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/strings.h"
#include "core/time.h"
#include "core/topology.h"

namespace shoal {
namespace {

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = InvalidArgument("bad thing");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "invalid_argument: bad thing");
  EXPECT_EQ(s.WithContext("file.toml:3").message(), "file.toml:3: bad thing");
}

Result<int> Half(int v) {
  if (v % 2 != 0) return InvalidArgument("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  SHOAL_ASSIGN_OR_RETURN(int h, Half(v));
  return Half(h);
}

TEST(ResultTest, PropagatesErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_FALSE(Quarter(6).ok());
  EXPECT_EQ(Quarter(6).status().message(), "odd");
}

// Reading the value of a failed Result is a bug, and it must stop the process
// with the Status in every build type, the release build included (NDEBUG
// compiles assert() out; SHOAL_CHECK stays on).
TEST(ResultDeathTest, ValueOfAnErrorAbortsWithTheStatusMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Result<int> failed = Half(3);
  EXPECT_DEATH((void)failed.value(), "check failed: .*invalid_argument: odd");
  EXPECT_DEATH((void)*Half(5), "invalid_argument: odd");
  Result<std::string> missing = NotFound("no job 42");
  EXPECT_DEATH((void)missing->size(), "value\\(\\) of a failed Result: not_found: no job 42");
}

TEST(ResultDeathTest, ResultFromAnOkStatusAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH((void)Result<int>(Status::Ok()), "must carry an error");
}

TEST(DurationTest, ParsesSlurmForms) {
  struct Case {
    const char* text;
    int64_t seconds;
  } cases[] = {
      {"90", 90 * 60},     {"1:30", 90},
      {"1:30:00", 5400},   {"2-00:00:00", 172800},
      {"1-12", 36 * 3600}, {"1-00:30", 86400 + 1800},
      {"45m", 2700},       {"2h", 7200},
      {"3d", 259200},      {"30s", 30},
  };
  for (const Case& c : cases) {
    auto d = ParseDuration(c.text);
    ASSERT_TRUE(d.ok()) << c.text << ": " << d.status().ToString();
    EXPECT_EQ(d->count(), c.seconds * 1000) << c.text;
  }
  for (const char* bad : {"", "abc", "1:2:3:4", "-5", "1-xx", "5x"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(DurationTest, Formats) {
  EXPECT_EQ(FormatDuration(std::chrono::seconds(3725)), "01:02:05");
  EXPECT_EQ(FormatDuration(std::chrono::hours(49)), "2-01:00:00");
}

TEST(StringsTest, MemorySizes) {
  struct Case {
    const char* text;
    int64_t mib;
  } cases[] = {{"512", 512},     {"16384M", 16384}, {"80G", 81920},
               {"80GiB", 81920}, {"1T", 1048576},   {"1.5G", 1536}};
  for (const Case& c : cases) {
    auto v = ParseMemoryMib(c.text);
    ASSERT_TRUE(v.ok()) << c.text;
    EXPECT_EQ(*v, c.mib) << c.text;
  }
  EXPECT_FALSE(ParseMemoryMib("12Q").ok());
  EXPECT_FALSE(ParseMemoryMib("G").ok());
  EXPECT_EQ(FormatMemoryMib(1536), "1.5G");
}

TEST(StringsTest, NamedNumbers) {
  using Pair = std::pair<std::string, double>;
  EXPECT_EQ(ParseNamedNumber("h100=1"), Pair("h100", 1));
  EXPECT_EQ(ParseNamedNumber(" a100 = 0.55 "), Pair("a100", 0.55));
  EXPECT_EQ(ParseNamedNumber("k80=-2"), Pair("k80", -2))
      << "the caller says which numbers it takes";
  for (const char* bad : {"h100", "=1", "h100=", "h100=fast", "h100=1x", "h100=inf", ""})
    EXPECT_EQ(ParseNamedNumber(bad), std::nullopt) << bad;
}

TEST(StringsTest, Signals) {
  EXPECT_EQ(*ParseSignal("USR1"), SIGUSR1);
  EXPECT_EQ(*ParseSignal("sigusr2"), SIGUSR2);
  EXPECT_EQ(*ParseSignal("SIGTERM"), SIGTERM);
  EXPECT_EQ(*ParseSignal(" 9 "), 9);
  EXPECT_EQ(ParseSignal("65").status().message(), "signal 65 is not 1 to 64");
  EXPECT_EQ(ParseSignal("0").status().message(), "signal 0 is not 1 to 64");
  EXPECT_FALSE(ParseSignal("USR3").ok());
  EXPECT_FALSE(ParseSignal("").ok());
  EXPECT_EQ(SignalName(SIGUSR1), "USR1");
}

TEST(StringsTest, EditDistance) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("partition", "partition"), 0u);
  EXPECT_EQ(EditDistance("partiton", "partition"), 1u);
  EXPECT_EQ(EditDistance("gpus", "gres"), 2u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(StringsTest, UnknownNamesGetTheNearMissOrTheList) {
  const std::vector<std::string_view> names = {"llama3-8b", "llama3-70b", "gpt3-175b"};
  EXPECT_EQ(NearMiss("llama3-70x", names), "llama3-70b");
  EXPECT_EQ(NearMiss("LLAMA3-8B", names), "llama3-8b");  // case does not count
  EXPECT_EQ(NearMiss("zz", {"b"}), "");                  // not a misspelt "b"
  EXPECT_EQ(NearMiss("mistral-7b", names), "");
  EXPECT_EQ(UnknownNameHint("gpt3-174b", names), " (did you mean 'gpt3-175b'?)");
  EXPECT_EQ(UnknownNameHint("bert", names), " (known: llama3-8b, llama3-70b, gpt3-175b)");
}

TEST(StringsTest, Ranges) {
  auto v = ParseIntRanges("0-3,6,8-9");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (std::vector<int>{0, 1, 2, 3, 6, 8, 9}));
  EXPECT_FALSE(ParseIntRanges("3-1").ok());
  EXPECT_EQ(FormatGpuMask(0b1011001111), "0-3,6-7,9");
}

TEST(JobTest, Dependencies) {
  auto deps = ParseDependencies("afterok:12:13,afternotok:14");
  ASSERT_TRUE(deps.ok());
  ASSERT_EQ(deps->deps.size(), 3u);
  EXPECT_FALSE(deps->any);
  EXPECT_EQ(deps->deps[2].type, DependencyType::kAfterNotOk);
  EXPECT_EQ(FormatDependencies(deps->deps), "afterok:12,afterok:13,afternotok:14");
  // Slurm's any-of: each job id is a dependency of its own, one is enough.
  auto any = ParseDependencies("afterok:12:13?singleton");
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(any->any);
  ASSERT_EQ(any->deps.size(), 3u);
  EXPECT_EQ(any->deps[2].type, DependencyType::kSingleton);
  EXPECT_EQ(FormatDependencies(any->deps, true), "afterok:12?afterok:13?singleton");
  // Slurm 22.05 takes a list with a ? as any-of throughout, and keeps one of each.
  auto mixed = ParseDependencies("afterok:1?afterok:2,afterok:3,afterok:1");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(FormatDependencies(mixed->deps, mixed->any), "afterok:1?afterok:2?afterok:3");
  EXPECT_FALSE(ParseDependencies("afterok:1?").ok());
  EXPECT_FALSE(ParseDependencies("aftercorr:1").ok());
  EXPECT_FALSE(ParseDependencies("singleton:1").ok());
  EXPECT_FALSE(ParseDependencies("afterok").ok());
  EXPECT_FALSE(ParseDependencies("afterok:x").ok());
}

TEST(JobTest, SpecValidation) {
  JobSpec s;
  s.gpus = 4;
  EXPECT_TRUE(s.Validate().ok());
  s.gpu_milli = 0;
  EXPECT_FALSE(s.Validate().ok());
  s.gpu_milli = 1000;
  s.nodes = 2;
  s.gpus_per_node = 4;
  s.gpus = 6;
  EXPECT_FALSE(s.Validate().ok()) << "6 total does not match 2 x 4";
  s.gpus = 8;
  EXPECT_TRUE(s.Validate().ok());
  EXPECT_EQ(s.TotalGpus(), 8);
}

TEST(ClusterTest, GpuModelMatching) {
  EXPECT_TRUE(GpuModelMatches("h100", "H100-SXM-80GB"));
  EXPECT_TRUE(GpuModelMatches("H100-SXM-80GB", "H100-SXM-80GB"));
  EXPECT_FALSE(GpuModelMatches("h10", "H100-SXM-80GB"));
  EXPECT_FALSE(GpuModelMatches("a100", "H100-SXM-80GB"));
  EXPECT_TRUE(GpuModelMatches("V100M16", "v100m16"));
}

TEST(ClusterTest, MigSlicesAreNamedByTheirProfile) {
  const std::string_view slice = "H100-SXM-80GB/1g.10gb";
  EXPECT_TRUE(GpuModelMatches("1g.10gb", slice));
  EXPECT_TRUE(GpuModelMatches("1G.10GB", slice));
  EXPECT_TRUE(GpuModelMatches("h100/1g.10gb", slice));
  EXPECT_TRUE(GpuModelMatches("H100-SXM-80GB/1g.10gb", slice));
  // A whole GPU's name never takes a slice, nor a slice's a whole GPU.
  EXPECT_FALSE(GpuModelMatches("h100", slice));
  EXPECT_FALSE(GpuModelMatches("H100-SXM-80GB", slice));
  EXPECT_FALSE(GpuModelMatches("1g.10gb", "H100-SXM-80GB"));
  EXPECT_FALSE(GpuModelMatches("h100/1g.10gb", "H100-SXM-80GB"));
  EXPECT_FALSE(GpuModelMatches("a100/1g.10gb", slice));
  EXPECT_FALSE(GpuModelMatches("2g.20gb", slice));
  EXPECT_FALSE(GpuModelMatches("1g.10", slice));
}

TEST(ClusterTest, Validation) {
  Cluster c;
  c.nodes.resize(2);
  c.nodes[0].name = "a";
  c.nodes[0].id = NodeId(1);
  c.nodes[1].name = "a";
  c.nodes[1].id = NodeId(1);
  EXPECT_FALSE(c.Validate().ok());
  c.nodes[1].name = "b";
  EXPECT_FALSE(c.Validate().ok()) << "two nodes with one id";
  c.nodes[1].id = NodeId(2);
  c.nodes[1].partitions = {"nope"};
  EXPECT_FALSE(c.Validate().ok());
  c.nodes[1].partitions.clear();
  EXPECT_TRUE(c.Validate().ok());
  Partition p;
  p.name = "p";
  c.partitions.push_back(p);
  EXPECT_FALSE(c.Validate().ok()) << "no default partition";
  c.partitions[0].is_default = true;
  EXPECT_TRUE(c.Validate().ok());
}

TEST(NetworkPlaceTest, Parses) {
  EXPECT_EQ(NetworkPlace::Parse("spine1/leaf3")->ToString(), "spine1/leaf3");
  EXPECT_EQ(NetworkPlace::Parse("leaf3")->spine, "spine0");
  EXPECT_FALSE(NetworkPlace::Parse("a/b/c").ok());
  EXPECT_FALSE(NetworkPlace::Parse("/x").ok());
}

TEST(RngTest, SeededAndUniform) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(a.Next(), b.Next());
  Rng r(7);
  int counts[4] = {0, 0, 0, 0};
  for (int i = 0; i < 40000; ++i)
    counts[r.Uniform(4)]++;
  for (int c : counts)
    EXPECT_NEAR(c, 10000, 600);
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

TEST(TopologyTest, LeavesAndSpines) {
  std::vector<Node> nodes(4);
  const char* places[] = {"s1/l1", "s1/l1", "s1/l2", ""};
  for (int i = 0; i < 4; ++i) {
    nodes[i].id = NodeId(static_cast<uint32_t>(i + 1));
    nodes[i].name = "n" + std::to_string(i);
    if (places[i][0] != '\0') nodes[i].place = *NetworkPlace::Parse(places[i]);
  }
  Topology t = Topology::FromNodes(nodes);
  ASSERT_EQ(t.leaves().size(), 3u);
  EXPECT_EQ(t.spines(), (std::vector<std::string>{"s1", "spine0"}));
  EXPECT_EQ(t.LeafOf(NodeId(2)), t.LeafOf(NodeId(1)));
  EXPECT_EQ(t.LeafOf(NodeId(99)), -1);
  EXPECT_EQ(t.LeavesSpanned({NodeId(1), NodeId(2)}), 1);
  EXPECT_EQ(t.LeavesSpanned({NodeId(1), NodeId(3), NodeId(4)}), 3);
  EXPECT_EQ(t.SpinesSpanned({NodeId(1), NodeId(3)}), 1);
  EXPECT_EQ(t.SpinesSpanned({NodeId(1), NodeId(4)}), 2);
}

}  // namespace
}  // namespace shoal

namespace shoal {
namespace {

TEST(StringsTest, Utf8IsCheckedAsJsonNeedsIt) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"));  // é € 🚀
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // cut short
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  JobSpec spec;
  spec.command = "echo ok";
  spec.gpus = 1;
  spec.name = "bad\xfe";
  EXPECT_EQ(spec.Validate().message(), "the job name is not valid UTF-8");
}

TEST(OverflowTest, HugeNumbersAreErrorsNotUndefinedBehaviour) {
  EXPECT_FALSE(ParseDuration("99999999999999999-00:00:00").ok());
  EXPECT_FALSE(ParseDuration("9999999999999999m").ok());
  EXPECT_FALSE(ParseDuration("ms").ok());
  EXPECT_EQ(ParseDuration("200ms").value(), Duration(200));  // agents' --heartbeat
  EXPECT_FALSE(ParseArraySpec("0-99999999999").ok());
  EXPECT_FALSE(ParseArraySpec("0-10:99999999999").ok());
  EXPECT_FALSE(ParseIntRanges("0-99999999999").ok());
  EXPECT_FALSE(ParseIntRanges("99999999999").ok());
  EXPECT_EQ(ToSeconds(TimeFromSeconds(ToSeconds(Time(Duration(741))))), 0.741)
      << "rounding, not truncation";
}

}  // namespace
}  // namespace shoal
