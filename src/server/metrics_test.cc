// /metrics text, GPU efficiency, idle GPUs and the telemetry series, driven
// through the controller with a fixed clock (no threads, no HTTP).
#include "server/metrics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "server/controller.h"
#include "server/controller_testing.h"
#include "server/telemetry_store.h"

namespace shoal::server {
namespace {

using testing::kAdmin;
using testing::kAlice;
using testing::kNodeAgent;
using testing::MakeNode;

using std::chrono::minutes;
using std::chrono::seconds;

GpuReport Report(int index, double util, int64_t fb_used, double power, double energy_j) {
  GpuReport r;
  r.index = index;
  GpuTelemetry& t = r.telemetry;
  t.present = true;
  t.util_pct = util;
  t.mem_copy_util_pct = util / 2;
  t.fb_used_mib = fb_used;
  t.fb_free_mib = 81920 - fb_used;
  t.power_w = power;
  t.temperature_c = 61;
  t.sm_clock_mhz = 1980;
  t.energy_j = energy_j;
  t.last_xid = 0;
  return r;
}

// Every sample's family has HELP and TYPE lines before it.
void ExpectEveryFamilyTyped(const std::string& text) {
  std::set<std::string> typed;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("# TYPE ", 0) == 0) {
      typed.insert(line.substr(7, line.find(' ', 7) - 7));
    } else if (line[0] != '#') {
      std::string name = line.substr(0, line.find_first_of("{ "));
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        if (!typed.count(name) && name.size() > strlen(suffix) &&
            name.compare(name.size() - strlen(suffix), std::string::npos, suffix) == 0) {
          name.resize(name.size() - strlen(suffix));
        }
      }
      EXPECT_TRUE(typed.count(name)) << line;
    }
  }
}

class MetricsTest : public ::testing::Test {
 protected:
  MetricsTest() : c_(Config()) { c_.SetTelemetryStore(&store_); }

  static ControllerConfig Config() {
    ControllerConfig cfg;
    Partition p;
    p.name = "gpu";
    p.is_default = true;
    p.idle_util_pct = 5;
    p.idle_minutes = 2;
    p.idle_action = "cancel";
    cfg.partitions.push_back(p);
    return cfg;
  }

  Time At(int s) const { return kTimeZero + seconds(1000000 + s); }

  JobId StartJob(int gpus) {
    JobSpec spec;
    spec.gpus = gpus;
    spec.command = "train.sh";
    spec.account = "";
    spec.time_limit = std::chrono::hours(1);
    auto r = c_.Submit(kAlice, spec, At(0));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    c_.SchedulePass(At(0));
    (void)c_.TakeOutbox();
    return JobId((*r)["jobs"][0].get<uint64_t>());
  }

  // A heartbeat from gpu01 that reports `job` running, with telemetry for both GPUs.
  void Beat(int at, JobId job, std::vector<GpuReport> gpus) {
    Heartbeat hb;
    if (job.value() != 0) hb.running.push_back({job, 1});
    hb.gpus = std::move(gpus);
    auto r = c_.ReceiveHeartbeat(kNodeAgent, "gpu01", hb, At(at));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  api::Json Show(JobId id) { return *c_.ShowJob(kAdmin, id); }

  TelemetryStore store_;
  Controller c_;
};

// By default: Shoal's own families, cluster aggregates and a few lines per
// node, and no per-GPU series (the agents serve those).
TEST_F(MetricsTest, DefaultIsAggregatesAndNodeStates) {
  ASSERT_TRUE(c_.RegisterNode(kNodeAgent, MakeNode("gpu01", 2), At(0)).ok());
  const JobId job = StartJob(1);
  ASSERT_TRUE(c_.RegisterNode(kNodeAgent, MakeNode("gpu02", 2), At(0)).ok());
  Beat(1, job, {Report(0, 87, 40000, 650, 5000), Report(1, 0, 0, 70, 100)});
  ASSERT_TRUE(c_.Drain(kAdmin, "gpu02", "maintenance", At(2)).ok());
  c_.SchedulePass(At(2));  // the view's node table follows the registrations at a pass
  const std::string text = RenderMetrics(c_.Metrics(), LoopStats{}, At(4));

  EXPECT_EQ(text.find("DCGM_FI_"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE shoal_node_state gauge\n"), std::string::npos);
  EXPECT_NE(text.find("shoal_node_state{node=\"gpu01\",state=\"up\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("shoal_node_state{node=\"gpu02\",state=\"draining\"} 1\n"), std::string::npos)
      << text;
  // One series per node, for its current state only.
  EXPECT_EQ(text.find("shoal_node_state{node=\"gpu01\",state=\"down\"}"), std::string::npos);
  EXPECT_NE(text.find("shoal_node_heartbeat_age_seconds{node=\"gpu01\"} 3\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("shoal_node_heartbeat_age_seconds{node=\"gpu02\"} 4\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("shoal_node_gpus{node=\"gpu01\",model=\"H100-SXM-80GB\"} 2\n"),
            std::string::npos);
  // gpu01's two GPUs reported; gpu02 has sent no telemetry.
  EXPECT_NE(text.find("shoal_gpus_reporting{model=\"H100-SXM-80GB\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("shoal_gpu_utilization_ratio{model=\"H100-SXM-80GB\"} 0.435\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("shoal_gpu_power_watts{model=\"H100-SXM-80GB\"} 720\n"), std::string::npos);
  EXPECT_NE(text.find("shoal_gpu_memory_used_bytes{model=\"H100-SXM-80GB\"} 41943040000\n"),
            std::string::npos);
  EXPECT_NE(text.find("shoal_gpus{model=\"H100-SXM-80GB\",state=\"allocated\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("shoal_job_gpu_idle{hpc_job=\"1\",user=\"alice\",account=\"\"} 0\n"),
            std::string::npos);
  ExpectEveryFamilyTyped(text);
  EXPECT_EQ(text.find("shoal_http_connections"), std::string::npos);  // no listener given
  const std::string with_listener =
      RenderMetrics(c_.Metrics(), LoopStats{}, At(4),
                    MetricsOptions{.listener = ListenerCounts{.open = 9, .idle = 7, .refused = 3}});
  EXPECT_NE(with_listener.find("shoal_http_connections{state=\"active\"} 2\n"), std::string::npos);
  EXPECT_NE(with_listener.find("shoal_http_connections{state=\"idle\"} 7\n"), std::string::npos);
  EXPECT_NE(with_listener.find("shoal_http_connections_refused_total 3\n"), std::string::npos);
  ExpectEveryFamilyTyped(with_listener);
  // Lines grow with nodes, not with GPUs x fields: the per-GPU view adds 11
  // series for each GPU that reports.
  const std::string per_gpu =
      RenderMetrics(c_.Metrics(), LoopStats{}, At(4), MetricsOptions{.per_gpu = true});
  EXPECT_EQ(
      std::count(per_gpu.begin(), per_gpu.end(), '\n') - std::count(text.begin(), text.end(), '\n'),
      11 * 2 + 11 * 2)
      << "11 families of HELP and TYPE lines, 11 samples for each of the 2 GPUs";
}

// Each job's wait, from its submission or its begin time to its first start,
// lands in its partition's histogram once.
TEST_F(MetricsTest, WaitsToFirstStartByPartition) {
  ASSERT_TRUE(c_.RegisterNode(kNodeAgent, MakeNode("gpu01", 2), At(0)).ok());
  StartJob(1);  // started in the pass at once: under a second
  JobSpec later;
  later.gpus = 1;
  later.command = "train.sh";
  later.time_limit = std::chrono::hours(1);
  later.begin_time = At(30);
  auto r = c_.Submit(kAlice, later, At(0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  c_.SchedulePass(At(10));  // not yet: its begin time is to come
  c_.SchedulePass(At(45));  // 15 s after its begin time
  (void)c_.TakeOutbox();
  const std::string text = RenderMetrics(c_.Metrics(), LoopStats{}, At(50));
  EXPECT_NE(text.find("# TYPE shoal_job_wait_seconds histogram\n"), std::string::npos) << text;
  EXPECT_NE(text.find("shoal_job_wait_seconds_bucket{partition=\"gpu\",le=\"1\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("shoal_job_wait_seconds_bucket{partition=\"gpu\",le=\"10\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("shoal_job_wait_seconds_bucket{partition=\"gpu\",le=\"60\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("shoal_job_wait_seconds_bucket{partition=\"gpu\",le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("shoal_job_wait_seconds_sum{partition=\"gpu\"} 15\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("shoal_job_wait_seconds_count{partition=\"gpu\"} 2\n"), std::string::npos);
  ExpectEveryFamilyTyped(text);
}

// Scheduling passes' time by phase, summed: every phase is a counter, and
// the passes' time went somewhere.
TEST_F(MetricsTest, SchedulingTimeByPhase) {
  for (double spent : c_.Metrics().pass_phases.seconds)
    EXPECT_EQ(spent, 0.0);
  ASSERT_TRUE(c_.RegisterNode(kNodeAgent, MakeNode("gpu01", 2), At(0)).ok());
  StartJob(1);
  for (int i = 0; i < 20; ++i)
    c_.SchedulePass(At(1 + i));
  const MetricsView after = c_.Metrics();
  double total = 0;
  for (size_t p = 0; p < PassPhases::kNames.size(); ++p) {
    EXPECT_GE(after.pass_phases.seconds[p], 0.0) << PassPhases::kNames[p];
    total += after.pass_phases.seconds[p];
  }
  EXPECT_GT(total, 0.0);
  EXPECT_GT(after.pass_phases.seconds[2], 0.0) << "the policy ran in every pass";
  const std::string text = RenderMetrics(after, LoopStats{}, At(30));
  EXPECT_NE(text.find("# TYPE shoal_scheduling_phase_seconds_total counter\n"), std::string::npos);
  for (const char* phase : PassPhases::kNames) {
    EXPECT_NE(
        text.find(fmt::format("shoal_scheduling_phase_seconds_total{{phase=\"{}\"}} ", phase)),
        std::string::npos)
        << phase << "\n"
        << text;
  }
  ExpectEveryFamilyTyped(text);
}

TEST_F(MetricsTest, DcgmNamesLabelsAndValues) {
  ASSERT_TRUE(c_.RegisterNode(kNodeAgent, MakeNode("gpu01", 2), At(0)).ok());
  const JobId job = StartJob(1);
  Beat(1, job, {Report(0, 87, 40000, 650, 5000), Report(1, 0, 0, 70, 100)});
  const MetricsOptions per_gpu{.per_gpu = true};
  const std::string text = RenderMetrics(c_.Metrics(), LoopStats{}, At(2), per_gpu);

  EXPECT_NE(text.find("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE "
                      "DCGM_FI_DEV_GPU_UTIL gauge\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-gpu01-0\",device=\"nvidia0\",modelName=\"H100-"
          "SXM-80GB\","
          "Hostname=\"gpu01\",hostname=\"gpu01\",hpc_job=\"1\",user=\"alice\",account=\"\"} 87\n"),
      std::string::npos)
      << text;
  // The free GPU has no job labels.
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-gpu01-1\",device=\"nvidia1\","
                      "modelName=\"H100-SXM-80GB\","
                      "Hostname=\"gpu01\",hostname=\"gpu01\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("} 5000000\n"), std::string::npos);  // 5000 J in mJ
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("shoal_gpus{model=\"H100-SXM-80GB\",state=\"allocated\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("shoal_gpus{model=\"H100-SXM-80GB\",state=\"idle\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("shoal_jobs{partition=\"gpu\",state=\"running\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("shoal_nodes{state=\"up\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("shoal_job_submissions_total 1\n"), std::string::npos);
  EXPECT_NE(text.find("shoal_job_gpu_idle{hpc_job=\"1\",user=\"alice\",account=\"\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("shoal_scheduling_pass_duration_seconds_bucket{le=\"+Inf\"} 0\n"),
            std::string::npos);
  // A node that stops answering shows no stale readings.
  c_.Tick(At(100));
  const std::string later = RenderMetrics(c_.Metrics(), LoopStats{}, At(100), per_gpu);
  EXPECT_EQ(later.find("DCGM_FI_DEV_GPU_UTIL"), std::string::npos);
  EXPECT_NE(later.find("shoal_nodes{state=\"down\"} 1\n"), std::string::npos);
  EXPECT_NE(later.find("shoal_gpus{model=\"H100-SXM-80GB\",state=\"unavailable\"} 2\n"),
            std::string::npos);
  EXPECT_NE(later.find("shoal_node_state{node=\"gpu01\",state=\"down\"} 1\n"), std::string::npos);
  EXPECT_EQ(later.find("shoal_gpus_reporting{"), std::string::npos)
      << "no GPU of a node that is down reports";
  ExpectEveryFamilyTyped(text);
}

TEST_F(MetricsTest, EfficiencyAccumulatesAndIdleJobsAreCancelled) {
  ASSERT_TRUE(c_.RegisterNode(kNodeAgent, MakeNode("gpu01", 2), At(0)).ok());
  const JobId job = StartJob(2);
  // Busy for 20 s: the energy counters rise by 7,200 J on each GPU (4 Wh).
  Beat(0, job, {Report(0, 80, 30000, 600, 1000), Report(1, 60, 50000, 500, 2000)});
  Beat(10, job, {Report(0, 100, 40000, 700, 4600), Report(1, 40, 50000, 500, 5600)});
  Beat(20, job, {Report(0, 90, 20000, 650, 8200), Report(1, 50, 10000, 500, 9200)});
  c_.Tick(At(21));
  api::Json e = Show(job)["efficiency"];
  EXPECT_EQ(e["samples"].get<int>(), 6);
  EXPECT_NEAR(e["util_mean_pct"].get<double>(), 70, 1e-9);
  EXPECT_DOUBLE_EQ(e["util_peak_pct"].get<double>(), 100);
  EXPECT_NEAR(e["mem_mean_mib"].get<double>(), 33333.333, 0.01);
  EXPECT_EQ(e["mem_peak_mib"].get<int64_t>(), 50000);
  EXPECT_NEAR(e["energy_wh"].get<double>(), 4.0, 1e-9);
  EXPECT_FALSE(Show(job).contains("idle"));

  // Then idle (under 5 %) on both GPUs: flagged after 2 minutes and cancelled.
  for (int t = 30; t <= 150; t += 10) {
    Beat(t, job, {Report(0, 1, 20000, 90, 9000 + t), Report(1, 3, 10000, 90, 10000 + t)});
    c_.Tick(At(t));
  }
  api::Json j = Show(job);
  ASSERT_TRUE(j.value("idle", false)) << j.dump();
  EXPECT_NEAR(j["idle_since"].get<double>(), ToSeconds(At(20)), 1e-6);
  EXPECT_EQ(j["reason_detail"], "idle GPUs");
  Outbox out = c_.TakeOutbox();
  ASSERT_EQ(out.kills.size(), 1u);
  EXPECT_EQ(out.kills[0].why, "idle GPUs");
  // The metric says so too.
  const std::string text = RenderMetrics(c_.Metrics(), LoopStats{}, At(151));
  EXPECT_NE(text.find("shoal_job_gpu_idle{hpc_job=\"1\",user=\"alice\",account=\"\"} 1\n"),
            std::string::npos);

  // The agent confirms: the job ends cancelled, its efficiency in its record.
  Heartbeat hb;
  hb.events.push_back({job, 1, 0, JobEvent::kExited, 0, 15, ""});
  ASSERT_TRUE(c_.ReceiveHeartbeat(kNodeAgent, "gpu01", hb, At(152)).ok());
  EXPECT_EQ(Show(job)["state"], "cancelled");
  state::Batch batch = c_.TakeBatch();
  bool recorded = false;
  for (const Job& b : batch.jobs) {
    if (b.id == job) {
      recorded = true;
      EXPECT_EQ(b.efficiency.samples, 32u);
      EXPECT_DOUBLE_EQ(b.efficiency.util_peak_pct, 100);
      EXPECT_TRUE(b.idle);
    }
  }
  EXPECT_TRUE(recorded);
}

TEST_F(MetricsTest, BusyGpusClearTheIdleFlagAndZeroMinutesTurnsItOff) {
  ControllerConfig cfg = Config();
  cfg.partitions[0].idle_action = "notify";
  Controller c(cfg);
  ASSERT_TRUE(c.RegisterNode(kNodeAgent, MakeNode("gpu01", 1), At(0)).ok());
  JobSpec spec;
  spec.gpus = 1;
  spec.command = "x";
  auto r = c.Submit(kAlice, spec, At(0));
  ASSERT_TRUE(r.ok());
  c.SchedulePass(At(0));
  const JobId job(1);
  auto beat = [&](int at, double util) {
    Heartbeat hb;
    hb.running.push_back({job, 1});
    hb.gpus = {Report(0, util, 100, 80, 0)};
    ASSERT_TRUE(c.ReceiveHeartbeat(kNodeAgent, "gpu01", hb, At(at)).ok());
    c.Tick(At(at));
  };
  for (int t = 0; t <= 130; t += 10)
    beat(t, 0);
  EXPECT_TRUE((*c.ShowJob(kAdmin, job)).value("idle", false));
  EXPECT_EQ((*c.ShowJob(kAdmin, job))["state"], "running");  // notify only
  beat(140, 50);
  EXPECT_FALSE((*c.ShowJob(kAdmin, job)).value("idle", false));
  // Energy without counters: power x interval (80 W for 140 s).
  EXPECT_NEAR((*c.ShowJob(kAdmin, job))["efficiency"]["energy_wh"].get<double>(), 80.0 * 140 / 3600,
              1e-9);
}

TEST_F(MetricsTest, RunningJobsKeepTheirEfficiencyAcrossARestart) {
  state::Loaded loaded;
  Node node = MakeNode("gpu01", 2);
  node.id = NodeId(1);
  loaded.nodes.push_back(node);
  Job job;
  job.id = JobId(5);
  job.spec.gpus = 1;
  job.spec.command = "train.sh";
  job.spec.user = "alice";
  job.state = JobState::kRunning;
  job.submit_time = At(-200);
  job.start_time = At(-100);
  job.time_limit = std::chrono::hours(1);
  job.epoch = 1;
  job.allocation.nodes.push_back({.node = NodeId(1), .gpu_mask = 1});
  job.efficiency = {.samples = 10,
                    .util_mean_pct = 50,
                    .util_peak_pct = 60,
                    .mem_mean_mib = 1000,
                    .mem_peak_mib = 2000,
                    .energy_wh = 1};
  loaded.active_jobs.push_back(job);
  loaded.next_job_id = 6;
  Controller c(Config());
  ASSERT_TRUE(c.Restore(loaded, At(0)).ok());
  Heartbeat hb;
  hb.running.push_back({JobId(5), 1});
  hb.gpus = {Report(0, 100, 12000, 500, 0)};
  ASSERT_TRUE(c.ReceiveHeartbeat(kNodeAgent, "gpu01", hb, At(1)).ok());
  c.Tick(At(2));
  const api::Json e = (*c.ShowJob(kAdmin, JobId(5)))["efficiency"];
  EXPECT_EQ(e["samples"].get<int>(), 11);
  EXPECT_NEAR(e["util_mean_pct"].get<double>(), 600.0 / 11, 1e-9);
  EXPECT_EQ(e["util_peak_pct"].get<double>(), 100);
  EXPECT_EQ(e["mem_peak_mib"].get<int64_t>(), 12000);
}

TEST(TelemetryStoreTest, SamplesAtMostEveryIntervalAndWraps) {
  TelemetryStore s(seconds(10), 3);
  auto at = [](int sec) { return kTimeZero + seconds(1700000000 + sec); };
  for (int t = 0; t <= 50; t += 5)
    s.Record("n1", at(t), {Report(0, t, t * 10, 100, 0), Report(1, 1, 1, 1, 0)});
  auto result = s.NodeSeries("n1", {at(0)});
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->step_s, 10);
  const auto* series = &result->gpus;
  ASSERT_EQ(series->size(), 2u);
  // Samples at 0, 10, 20, 30, 40, 50; the last three kept, oldest first.
  ASSERT_EQ((*series)[0].points.size(), 3u);
  EXPECT_DOUBLE_EQ((*series)[0].points[0].t, 1700000030);
  EXPECT_DOUBLE_EQ((*series)[0].points[0].util_pct, 30);
  EXPECT_DOUBLE_EQ((*series)[0].points[2].mem_mib, 500);
  EXPECT_DOUBLE_EQ((*series)[0].points[2].power_w, 100);
  EXPECT_EQ(s.NodeSeries("n1", {at(45)})->gpus.at(0).points.size(), 1u);
  EXPECT_EQ(s.NodeSeries("n1", {at(30), at(40)})->gpus.at(0).points.size(), 2u);
  EXPECT_EQ(s.GpuPoints("n1", 0, {at(30), at(40)}).size(), 2u);
  EXPECT_FALSE(s.NodeSeries("n2", {}).has_value());
  s.RecordCluster(at(0), 50, 0.5);
  s.RecordCluster(at(5), 60, 0.5);  // too soon
  s.RecordCluster(at(10), 70, 0.25);
  auto cluster = s.ClusterSeries({}).points;
  ASSERT_EQ(cluster.size(), 2u);
  EXPECT_DOUBLE_EQ(cluster[1].mean_util_pct, 70);
  EXPECT_DOUBLE_EQ(cluster[1].allocated_fraction, 0.25);
}

// A range older than the fine tier holds is answered from the means of each
// rollup step, the step under way last; a range the fine tier holds, from it.
TEST(TelemetryStoreTest, OlderRangesComeFromStepMeans) {
  TelemetryStore s(seconds(10), 6, std::chrono::minutes(1), 5);
  const int64_t base = 1699999980;  // a whole minute
  auto at = [&](int sec) { return kTimeZero + seconds(base + sec); };
  for (int t = 0; t < 300; t += 10) {  // util t/10, 30 samples: 5 minutes
    s.Record("n1", at(t), {Report(0, t / 10.0, t, 100 + t, 0)});
    s.RecordCluster(at(t), t / 10.0, 0.5);
  }
  // The fine tier keeps 240..290: from 250 it answers.
  auto fine = s.NodeSeries("n1", {at(250)});
  EXPECT_EQ(fine->step_s, 10);
  ASSERT_EQ(fine->gpus.at(0).points.size(), 5u);
  EXPECT_DOUBLE_EQ(fine->gpus[0].points[0].t, base + 250);
  // From 100: the minutes that start at 120 and 180, then the one under way
  // (240..290), each the mean of its samples.
  auto old = s.NodeSeries("n1", {at(100)});
  EXPECT_EQ(old->step_s, 60);
  const auto& p = old->gpus.at(0).points;
  ASSERT_EQ(p.size(), 3u);
  EXPECT_DOUBLE_EQ(p[0].t, base + 120);
  EXPECT_DOUBLE_EQ(p[0].util_pct, 14.5);
  EXPECT_DOUBLE_EQ(p[0].power_w, 245);
  EXPECT_DOUBLE_EQ(p[2].t, base + 240);
  EXPECT_DOUBLE_EQ(p[2].util_pct, 26.5);
  EXPECT_DOUBLE_EQ(p[2].mem_mib, 265);
  EXPECT_EQ(s.NodeSeries("n1", {})->gpus[0].points.size(), 5u);
  EXPECT_EQ(s.NodeSeries("n1", {at(60), at(130)})->gpus[0].points.size(), 2u);
  EXPECT_EQ(s.GpuPoints("n1", 0, {at(0), at(299)}).size(), 5u);
  auto cluster = s.ClusterSeries({at(0)});
  EXPECT_EQ(cluster.step_s, 60);
  ASSERT_EQ(cluster.points.size(), 5u);
  EXPECT_DOUBLE_EQ(cluster.points[1].mean_util_pct, 8.5);
  EXPECT_DOUBLE_EQ(cluster.points[4].allocated_fraction, 0.5);
  EXPECT_EQ(s.ClusterSeries({at(270)}).step_s, 10);
}

}  // namespace
}  // namespace shoal::server
