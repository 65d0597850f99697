#include "trace/trace.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "trace/gavel_throughputs.h"

namespace shoal::trace {
namespace {

namespace fs = std::filesystem;

std::string WriteFile(const std::string& relative, const std::string& text) {
  fs::path path = fs::path(testing::TempDir()) / "shoal_trace_test" / relative;
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// A public trace shipped in data/traces (data/README.md).
std::string ShippedTrace(const std::string& relative) {
  return (fs::path(SHOAL_DATA_DIR) / "traces" / relative).string();
}

Duration FindDuration(const TraceJob& job, std::string_view model) {
  for (const auto& [m, d] : job.duration_by_model) {
    if (m == model) return d;
  }
  return Duration(-1);
}

// ---------------------------------------------------------------------------
// Inline files.

TEST(TraceTest, ItpRawSortsAndHandlesCrlf) {
  std::string path = WriteFile("itp/raw.csv",
                               "job_id,submission_time,duration,num_gpu\r\n"
                               "b,200,10,1\r\n"
                               "a,100,3600,8\r\n"
                               "c,200,20,64\r\n"
                               "\r\n\n");
  auto t = LoadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format, "itp");
  ASSERT_EQ(t->jobs.size(), 3u);
  EXPECT_EQ(t->jobs[0].name, "a");
  EXPECT_EQ(t->jobs[1].name, "b") << "equal submit times keep file order";
  EXPECT_EQ(t->jobs[2].name, "c");
  EXPECT_EQ(t->jobs[0].submit, TimeFromSeconds(100));
  EXPECT_EQ(t->jobs[0].duration, std::chrono::hours(1));
  EXPECT_EQ(t->jobs[0].gpus, 8);
  EXPECT_FALSE(t->notes.empty());
  EXPECT_FALSE(t->cluster.has_value());

  TraceOptions two;
  two.max_jobs = 2;
  auto truncated = LoadTrace(path, two);
  ASSERT_TRUE(truncated.ok());
  ASSERT_EQ(truncated->jobs.size(), 2u);
  EXPECT_EQ(truncated->jobs[1].name, "b") << "truncation comes after sorting";
}

TEST(TraceTest, ItpElasticflowVariantKeepsTheModel) {
  auto t = LoadTrace(WriteFile(
      "itp/ef.csv",
      "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
      "x,5,100,resnet50,99,256,4,1032"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].kind, "resnet50");
  EXPECT_EQ(t->jobs[0].gpus, 4);
  EXPECT_EQ(t->jobs[0].duration, DurationFromSeconds(1032));
}

TEST(TraceTest, GavelDurationsComeFromMeasuredThroughputs) {
  const std::string job_type = "ResNet-50 (batch size 64)";
  auto t = LoadTrace(WriteFile(
      "gavel/vc.trace", job_type + "\tcd %s && python3 main.py\t--num_steps\t1\t1000\t12.5\t4\n" +
                            "A3C\tpython3 main.py\t--max-steps\t0\t500\t0.0\t2\n"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format, "gavel");
  ASSERT_EQ(t->jobs.size(), 2u);
  const TraceJob& a3c = t->jobs[0];
  const TraceJob& resnet = t->jobs[1];
  EXPECT_EQ(resnet.name, "vc-0");
  EXPECT_EQ(resnet.kind, job_type);
  EXPECT_EQ(resnet.gpus, 4);
  EXPECT_EQ(resnet.submit, TimeFromSeconds(12.5));
  // ResNet-50 (batch size 64) was measured on 4 GPUs of each type.
  EXPECT_TRUE(GavelThroughputMeasured(job_type, 4));
  for (std::string_view gpu : {"V100", "P100", "K80"}) {
    double throughput = GavelThroughput(job_type, 4, gpu).value();
    EXPECT_EQ(FindDuration(resnet, gpu), DurationFromSeconds(1000 / throughput)) << gpu;
  }
  EXPECT_EQ(resnet.duration, FindDuration(resnet, "V100"));
  // A3C was measured on one GPU only: two GPUs are taken to be twice as fast.
  EXPECT_FALSE(GavelThroughputMeasured("A3C", 2));
  EXPECT_DOUBLE_EQ(GavelThroughput("A3C", 2, "V100").value(),
                   2 * GavelThroughput("A3C", 1, "V100").value());
  EXPECT_EQ(a3c.duration, DurationFromSeconds(500 / GavelThroughput("A3C", 2, "V100").value()));
  ASSERT_FALSE(t->notes.empty());
  EXPECT_NE(t->notes[0].find("1 of 2 jobs"), std::string::npos) << t->notes[0];
}

TEST(TraceTest, GavelLeavesOutGpusAJobDoesNotFit) {
  // Gavel records ResNet-50 (batch size 128) on two K80s as out of memory.
  ASSERT_EQ(GavelThroughput("ResNet-50 (batch size 128)", 2, "K80").value(), 0.0);
  auto t = LoadTrace(
      WriteFile("gavel/oom.trace", "ResNet-50 (batch size 128)\tcmd\t-n\t1\t100\t0\t2\n"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(FindDuration(t->jobs[0], "K80"), Duration(-1));
  EXPECT_GT(FindDuration(t->jobs[0], "P100").count(), 0);
}

TEST(TraceTest, GavelThroughputTable) {
  EXPECT_FALSE(GavelThroughput("No Such Model", 1, "V100").ok());
  EXPECT_FALSE(GavelThroughput("A3C", 1, "H100").ok());
  // The figure data/gavel/README.md cross-checks against Gavel's docs.
  EXPECT_NEAR(GavelThroughput("ResNet-18 (batch size 16)", 1, "K80").value(), 4.795, 0.001);
  int rows = 0;
  for (char c : GavelThroughputsCsv())
    rows += c == '\n' ? 1 : 0;
  EXPECT_EQ(rows, 1 + 26 + 3 * 19);
}

TEST(TraceTest, PolluxDurationModel) {
  auto t = LoadTrace(WriteFile("pollux/workload.csv",
                               "name,time,application,num_replicas,batch_size\n"
                               "imagenet-0,10.5,imagenet,8,1600\n"
                               "cifar10-1,3,cifar10,4,128\n"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format, "pollux");
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].name, "cifar10-1");
  EXPECT_EQ(t->jobs[0].duration, DurationFromSeconds(std::sqrt(0.1) * 3600 / 4));
  EXPECT_EQ(t->jobs[1].kind, "imagenet");
  EXPECT_EQ(t->jobs[1].gpus, 8);
  EXPECT_EQ(t->jobs[1].duration, DurationFromSeconds(std::sqrt(1e5) * 3600 / 8));
  EXPECT_NE(t->notes[0].find("Pollux"), std::string::npos);
}

TEST(TraceTest, OpenbPodsAndTheirCluster) {
  WriteFile("openb/openb_node_list_gpu_node.csv",
            "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,2,T4\n");
  std::string path =
      WriteFile("openb/openb_pod_list_test.csv",
                "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
                "deletion_time,scheduled_time\n"
                "p0,12000,16384,1,460,V100M16|V100M32|V100M32,LS,Running,100,300,100\n"
                "p1,4000,8192,0,0,,BE,Pending,50,,\n");
  auto t = LoadTrace(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format, "openb");
  ASSERT_EQ(t->jobs.size(), 2u);
  const TraceJob& cpu = t->jobs[0];
  const TraceJob& gpu = t->jobs[1];
  EXPECT_EQ(cpu.name, "p1");
  EXPECT_EQ(cpu.gpus_per_node, 0);
  EXPECT_EQ(cpu.nodes, 1);
  EXPECT_EQ(cpu.duration, Duration(0)) << "no deletion time";
  EXPECT_EQ(gpu.nodes, 1);
  EXPECT_EQ(gpu.gpus_per_node, 1);
  EXPECT_EQ(gpu.gpus, 0);
  EXPECT_EQ(gpu.gpu_milli, 460);
  EXPECT_EQ(gpu.cpu_milli, 12000);
  EXPECT_EQ(gpu.mem_mib, 16384);
  EXPECT_EQ(gpu.gpu_models, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_EQ(gpu.duration, DurationFromSeconds(200));
  ASSERT_TRUE(t->cluster.has_value());
  EXPECT_EQ(t->cluster->TotalGpus(), 2);

  // The multigpu variants have only the first five columns.
  auto short_form =
      LoadTrace(WriteFile("openb_short/pods.csv",
                          "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,8,1000\n"));
  ASSERT_TRUE(short_form.ok()) << short_form.status().ToString();
  EXPECT_EQ(short_form->jobs[0].gpus_per_node, 8);
  EXPECT_FALSE(short_form->cluster.has_value());
}

TEST(TraceTest, FormatOption) {
  std::string path =
      WriteFile("fmt/jobs.txt", "job_id,submission_time,duration,num_gpu\nj,0,1,1\n");
  TraceOptions as_pollux;
  as_pollux.format = "pollux";
  auto wrong = LoadTrace(path, as_pollux);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find(path + ":1: unknown column 'job_id'"), std::string::npos)
      << wrong.status().message();
  TraceOptions bogus;
  bogus.format = "slurm";
  EXPECT_FALSE(LoadTrace(path, bogus).ok());
}

// Each malformed file must be refused with "path:line: what is wrong".
TEST(TraceTest, MalformedRowsNameFileAndLine) {
  struct Case {
    std::string_view name;
    std::string file;
    std::string text;
    std::string want;  // after the path
  };
  const std::string itp = "job_id,submission_time,duration,num_gpu\n";
  const std::string pollux = "name,time,application,num_replicas,batch_size\n";
  const std::string openb = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  const Case cases[] = {
      {"too few columns", "a.csv", itp + "j,0,1,1\nk,0,1\n", ":3: expected 4 columns, found 3"},
      {"too many columns", "b.csv", itp + "j,0,1,1,9\n", ":2: expected 4 columns, found 5"},
      {"not a number", "c.csv", itp + "j,soon,1,1\n",
       ":2: submission_time: 'soon' is not a number"},
      {"negative duration", "d.csv", itp + "j,0,-5,1\n", ":2: duration: -5 is negative"},
      {"fractional GPUs", "e.csv", itp + "j,0,5,1.5\n", ":2: num_gpu: '1.5' is not an integer"},
      {"unknown column", "f.csv", "job_id,submission_time,duration,num_gpu,user\nj,0,1,1,u\n",
       ":1: unknown column 'user'"},
      {"missing column", "g.csv", "job_id,submission_time,num_gpu,model_name\nj,0,1,x\n",
       ":1: missing column 'duration'"},
      {"unknown format", "h.csv", "when,what\n1,2\n", ":1: unknown trace format"},
      {"gavel field count", "i.trace", "A3C\tcmd\t-n\t0\t10\t0\n",
       ":1: expected 7 columns, found 6"},
      {"gavel unknown job type", "j.trace",
       "A3C\tcmd\t-n\t0\t10\t0\t1\nGPT-9\tcmd\t-n\t0\t10\t5\t1\n",
       ":2: job_type: unknown Gavel job type 'GPT-9'"},
      {"gavel zero GPUs", "k.trace", "A3C\tcmd\t-n\t0\t10\t0\t0\n",
       ":1: scale_factor: 0 is out of range"},
      {"pollux application", "l.csv", pollux + "x,0,gpt3,4,8\n",
       ":2: application: unknown application 'gpt3'"},
      {"pollux replicas", "m.csv", pollux + "x,0,bert,-2,8\n", ":2: num_replicas: -2 is negative"},
      {"openb share", "n.csv", openb + "p,1,1,1,1500\n", ":2: gpu_milli: 1500 is out of range"},
      {"openb no share", "o.csv", openb + "p,1,1,1,0\n",
       ":2: gpu_milli: a pod with GPUs asks for 0 of each"},
      {"openb deleted first", "p.csv",
       "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\np,1,1,1,1000,50,"
       "10\n",
       ":2: deletion_time is before creation_time"},
      {"empty file", "q.csv", "\n\n", ": the file is empty"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = WriteFile("bad/" + c.file, c.text);
    auto r = LoadTrace(path);
    ASSERT_FALSE(r.ok()) << "accepted:\n" << c.text;
    EXPECT_NE(r.status().message().find(path + c.want), std::string::npos) << r.status().message();
  }
  auto missing = LoadTrace("/nonexistent/trace.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// ---------------------------------------------------------------------------
// The public traces in data/traces, with the counts its README states.

TEST(PublicTraceTest, MicrosoftItp) {
  // The README's "01:1595" counts lines with wc -l; the file has no final
  // newline, so it holds 1,595 jobs, and the five clusters 29,815 as stated.
  const std::pair<const char*, size_t> clusters[] = {{"cluster01", 1595},
                                                     {"cluster02", 5778},
                                                     {"cluster03", 3011},
                                                     {"cluster04", 15802},
                                                     {"cluster05", 3629}};
  size_t total = 0;
  for (const auto& [name, jobs] : clusters) {
    SCOPED_TRACE(name);
    auto raw = LoadTrace(ShippedTrace(std::string("microsoft-itp-2021/raw/") + name + ".csv"));
    ASSERT_TRUE(raw.ok()) << raw.status().ToString();
    EXPECT_EQ(raw->jobs.size(), jobs);
    total += raw->jobs.size();
    for (size_t i = 1; i < raw->jobs.size(); ++i)
      ASSERT_LE(raw->jobs[i - 1].submit, raw->jobs[i].submit);
  }
  EXPECT_EQ(total, 29'815u);
  auto ef = LoadTrace(ShippedTrace("microsoft-itp-2021/elasticflow/cluster01.csv"));
  ASSERT_TRUE(ef.ok()) << ef.status().ToString();
  EXPECT_EQ(ef->jobs.size(), 1595u);
  EXPECT_FALSE(ef->jobs[0].kind.empty());
  auto testbed = LoadTrace(ShippedTrace("microsoft-itp-2021/elasticflow/195job.csv"));
  ASSERT_TRUE(testbed.ok()) << testbed.status().ToString();
  EXPECT_EQ(testbed->jobs.size(), 195u);
}

TEST(PublicTraceTest, GavelPhilly) {
  size_t jobs = 0;
  std::map<int, int> by_gpus;
  for (const fs::directory_entry& e :
       fs::directory_iterator(ShippedTrace("gavel-philly-msr/seed=0"))) {
    if (e.path().extension() != ".trace") continue;
    SCOPED_TRACE(e.path().string());
    auto t = LoadTrace(e.path().string());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    jobs += t->jobs.size();
    for (const TraceJob& j : t->jobs) {
      ++by_gpus[j.gpus];
      ASSERT_GT(j.duration.count(), 0) << j.kind << " on " << j.gpus;
      ASSERT_GT(FindDuration(j, "V100").count(), 0);
    }
  }
  EXPECT_EQ(jobs, 15'264u);
  EXPECT_EQ(by_gpus[1], 10'480);
  EXPECT_EQ(by_gpus[8], 1'916);
}

TEST(PublicTraceTest, PolluxSiaWorkloads) {
  const std::tuple<const char*, int, size_t> sets[] = {
      {"philly", 8, 160}, {"saturn", 10, 160}, {"newtrace", 10, 960}};
  for (const auto& [dir, files, jobs] : sets) {
    for (int i = 1; i <= files; ++i) {
      std::string path =
          ShippedTrace(fmt::format("pollux-sia-workloads/{}/workload-{}.csv", dir, i));
      SCOPED_TRACE(path);
      auto t = LoadTrace(path);
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      EXPECT_EQ(t->jobs.size(), jobs);
    }
  }
}

TEST(PublicTraceTest, AlibabaOpenb) {
  auto t = LoadTrace(ShippedTrace("alibaba-gpu-v2023-openb/openb_pod_list_default.csv"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs.size(), 8'152u);
  std::map<int, int> by_gpus;
  int sharing = 0;
  for (const TraceJob& j : t->jobs) {
    ++by_gpus[j.gpus_per_node];
    sharing += j.gpus_per_node == 1 && j.gpu_milli < kMilliPerGpu ? 1 : 0;
  }
  EXPECT_EQ(by_gpus[0], 1'088);
  EXPECT_EQ(by_gpus[1], 6'989);
  EXPECT_EQ(by_gpus[8], 44);
  EXPECT_EQ(sharing, 3'078);
  ASSERT_TRUE(t->cluster.has_value());
  // The GPU nodes only, as the FGD artifact runs these pod lists.
  EXPECT_EQ(t->cluster->nodes.size(), 1'213u);
  EXPECT_EQ(t->cluster->TotalGpus(), 6'212);

  auto spec = LoadTrace(ShippedTrace("alibaba-gpu-v2023-openb/openb_pod_list_gpuspec33.csv"));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  int constrained = 0;
  for (const TraceJob& j : spec->jobs)
    constrained += j.gpu_models.empty() ? 0 : 1;
  EXPECT_EQ(constrained, 2'388);
}

}  // namespace
}  // namespace shoal::trace
