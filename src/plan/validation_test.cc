#include "plan/validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace shoal::plan {
namespace {

namespace fs = std::filesystem;

// A file of data/ (data/README.md); empty when it cannot be read.
std::string ReadData(const std::string& relative) {
  const fs::path p = fs::path(SHOAL_DATA_DIR) / relative;
  std::ifstream in(p);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ValidationTest, SplitsQuotedCsv) {
  struct Case {
    std::string_view line;
    std::vector<std::string> fields;
  };
  const Case cases[] = {
      {"a,b,c", {"a", "b", "c"}},
      {R"csv("MT-NLG (Smith2022, via x)",530,)csv", {"MT-NLG (Smith2022, via x)", "530", ""}},
      {R"csv(x,"say ""hi""",y)csv", {"x", R"csv(say "hi")csv", "y"}},
      {"", {""}},
  };
  for (const Case& c : cases)
    EXPECT_EQ(SplitCsvLine(c.line), c.fields) << c.line;
}

constexpr std::string_view kHeader =
    "source,model,params_B,layers,hidden,heads,seq,vocab,gpu,gpus,tp,pp,dp,global_batch,tflops_per_"
    "gpu,pct_peak,"
    "mfu_pct,aggregate_pflops,iter_time_s,iter_time_kind,train_time,notes\n";

TEST(ValidationTest, ComparesWhatItCanAndSaysWhyNot) {
  const std::string csv =
      std::string(kHeader) +
      "Narayanan2021_Table1 "
      "(x),GPT-18.4B,18.4,40,6144,48,2048,51200,A100-SXM4-80GB,256,8,1,32,1024,135,43,,34.6,"
      "9.4,derived,,\n"
      "PaLM (Chowdhery 2022),PaLM-540B,540,118,18432,48,2048,256000,TPU v4,6144,,,,,,,46.2,,,,,\n"
      "MLPerf Training v3.0,GPT-3 175B,175,96,12288,96,2048,,H100-SXM-80GB,3584,,,,,,,,,,,10.94 "
      "min,\n"
      "\"MT-NLG (Smith2022, via y)\",MT-NLG-530B,530,105,20480,128,2048,50272,A100-SXM4-80GB (DGX "
      "A100),2240,8,35,8,"
      "1920,126,40.4,,,60.1,measured,,\n";
  auto rows = ValidatePublishedRuns(csv);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 4u);
  const ValidationRow& t1 = (*rows)[0];
  EXPECT_FALSE(t1.skipped);
  EXPECT_EQ(t1.group, "Narayanan2021_Table1");
  EXPECT_DOUBLE_EQ(t1.measured_s, 9.4);
  EXPECT_GT(t1.predicted_s, 0);
  EXPECT_NE(t1.layout.find("TP8 PP1 DP32"), std::string::npos)
      << "reported sizes are kept: " << t1.layout;
  EXPECT_NE(t1.layout.find("rc=full"), std::string::npos) << "the 2021 runs recompute";
  EXPECT_NEAR(t1.error, t1.predicted_s / t1.measured_s - 1, 1e-12);
  EXPECT_TRUE((*rows)[1].skipped);
  EXPECT_NE((*rows)[1].skip_reason.find("TPU v4"), std::string::npos);
  EXPECT_TRUE((*rows)[2].skipped);
  EXPECT_NE((*rows)[2].skip_reason.find("no step time"), std::string::npos);
  const ValidationRow& mtnlg = (*rows)[3];
  EXPECT_FALSE(mtnlg.skipped);
  EXPECT_EQ(mtnlg.group, "MT-NLG");
  EXPECT_EQ(mtnlg.measured_how, "measured");
  EXPECT_EQ(mtnlg.gpu, "A100-SXM4-80GB");

  ValidationReport report;
  report.rows = *rows;
  report.Summarise();
  EXPECT_EQ(report.published.rows, 2);
  EXPECT_EQ(report.vtrain.rows, 0);
  EXPECT_NEAR(report.published.mae, (std::abs(t1.error) + std::abs(mtnlg.error)) / 2, 1e-12);
  ASSERT_GE(report.worst, 0);
  EXPECT_DOUBLE_EQ(std::abs(report.rows[static_cast<size_t>(report.worst)].error),
                   std::max(std::abs(t1.error), std::abs(mtnlg.error)));
}

TEST(ValidationTest, ServingAnchorsAreComparedAsThroughput) {
  const std::string csv =
      "model,gpu,tp,precision,engine,isl,osl,batch_or_load,metric,value,unit,source\n"
      "Llama-3.1-8B,H100 SXM,1,FP8,TensorRT-LLM,128,128,max-throughput,total output "
      "throughput,28312,tok/s,x\n"
      "LLaMA-70B (v1),H100 SXM,4,FP8,TensorRT-LLM 0.5.0,128,128,BS64,output "
      "throughput,3317,tok/s,y\n"
      "Llama-2-70B,GB200 NVL72 (72 GPU),,FP4?,MLPerf,,,max-throughput,throughput per "
      "rack,865000,tok/s,z\n";
  auto rows = ValidateInferenceAnchors(csv);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u) << "only maximum-throughput rows";
  EXPECT_FALSE((*rows)[0].skipped);
  EXPECT_EQ((*rows)[0].gpu, "H100-SXM-80GB");
  EXPECT_GT((*rows)[0].predicted_s, 0);
  EXPECT_NEAR((*rows)[0].error, (*rows)[0].predicted_s / 28312 - 1, 1e-12);
  EXPECT_TRUE((*rows)[1].skipped) << "FP4? on a whole rack is not a planner case";
}

TEST(ValidationTest, MissingColumnsAreErrors) {
  auto rows = ValidatePublishedRuns("source,model\nx,y\n");
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("no column"), std::string::npos);
  auto vtrain = ValidateVtrain("h\n1,2,3\n");
  ASSERT_FALSE(vtrain.ok());
  EXPECT_NE(vtrain.status().message().find("line 1: a header of 1 columns where 11"),
            std::string::npos)
      << vtrain.status().message();
  auto short_row = ValidateVtrain("a,b,c,d,e,f,g,h,i,j,k\n1,2,3\n");
  ASSERT_FALSE(short_row.ok());
  EXPECT_EQ(short_row.status().message(), "vTrain line 2: 3 fields where 11 are expected");
}

// One Megatron-LM 2021 row (Narayanan et al. 2021, Table 1's 18.4B run),
// with columns added where a test asks.
std::string OneRun(std::string_view extra_columns = "", std::string_view extra_fields = "") {
  std::string header(kHeader);
  header.pop_back();  // its newline
  return header + std::string(extra_columns) + "\n" +
         "Narayanan2021_Table1 (x),GPT-18.4B,18.4,40,6144,48,2048,51200,A100-SXM4-80GB,256,8,1,"
         "32,1024,135,43,,34.6,9.4,derived,," +
         std::string(extra_fields) + "\n";
}

// Why ValidatePublishedRuns refuses `csv` ("accepted" when it does not).
std::string Refusal(const std::string& csv) {
  auto rows = ValidatePublishedRuns(csv);
  return rows.ok() ? "accepted" : rows.status().message();
}

// The file's shape is checked before any row is read: a column out of
// place or unknown, a row with a field too many, a number that is not one.
TEST(ValidationTest, ARunThatCannotBeReadIsAnErrorWithItsLine) {
  EXPECT_EQ(Refusal("id," + OneRun()),
            "published_training_runs.csv line 1: unknown column 'id' (known: source, model, "
            "params_B, layers, hidden, heads, seq, vocab, gpu, gpus, tp, pp, dp, global_batch, "
            "tflops_per_gpu, pct_peak, mfu_pct, aggregate_pflops, iter_time_s, iter_time_kind, "
            "train_time, notes, stack, precision, recompute, sequence_parallel, micro_batch, "
            "virtual_stages, zero, cp)")
      << "an extra leading column would shift every value";
  EXPECT_NE(Refusal(OneRun(",recompte", ",full")).find("(did you mean 'recompute'?)"),
            std::string::npos);
  EXPECT_NE(Refusal(OneRun(",notes", ",x")).find("column 'notes' twice"), std::string::npos);
  EXPECT_EQ(Refusal(OneRun("", ",surplus")),
            "published_training_runs.csv line 2: 23 fields where the header names 22");
  std::string csv = OneRun();
  csv.replace(csv.find(",256,"), 5, ",2x6,");
  EXPECT_EQ(Refusal(csv), "published_training_runs.csv line 2: gpus: '2x6' is not a number");
  std::string wrong_dp = OneRun();
  wrong_dp.replace(wrong_dp.find(",8,1,32,"), 8, ",8,1,16,");
  EXPECT_EQ(Refusal(wrong_dp),
            "published_training_runs.csv line 2: dp: TP8 x PP1 x CP1 x DP16 is not the row's 256 "
            "GPUs");
  EXPECT_EQ(Refusal(OneRun(",recompute", ",most")),
            "published_training_runs.csv line 2: recompute: 'most': none, selective or full");
}

// What a row states is pinned; the planner's own layout for the same run is
// reported beside it.
TEST(ValidationTest, StatedKnobsArePinnedAndTheSearchedLayoutIsReportedBeside) {
  auto guessed = ValidatePublishedRuns(OneRun());
  ASSERT_TRUE(guessed.ok()) << guessed.status().message();
  const ValidationRow& g = guessed->front();
  EXPECT_NE(g.layout.find("rc=full"), std::string::npos) << "the 2021 papers recompute";
  ASSERT_GT(g.searched_s, 0);
  EXPECT_FALSE(g.searched_layout.empty());
  EXPECT_NEAR(g.searched_error, g.searched_s / g.measured_s - 1, 1e-12);
  EXPECT_LE(g.searched_s, g.predicted_s * (1 + 1e-9))
      << "the search includes the pinned layout, so it is never slower";

  auto stated = ValidatePublishedRuns(
      OneRun(",recompute,micro_batch,precision,stack", ",selective,2,bf16,megatron-core"));
  ASSERT_TRUE(stated.ok()) << stated.status().message();
  const ValidationRow& s = stated->front();
  EXPECT_NE(s.layout.find("TP8 PP1 DP32"), std::string::npos) << s.layout;
  EXPECT_NE(s.layout.find("mb2"), std::string::npos) << s.layout;
  EXPECT_NE(s.layout.find("rc=selective"), std::string::npos) << s.layout;
  EXPECT_NE(s.predicted_s, g.predicted_s);
}

// The shipped files themselves: every published row is compared or says why
// not, every comparison is finite, and the model stays where docs/plan.md
// says it is (a guard against silent regressions, not the targets).
TEST(ValidationTest, ShippedDataRuns) {
  const std::string published = ReadData("compiled/published_training_runs.csv");
  const std::string vtrain = ReadData("vtrain/ground_truth_single.csv");
  ASSERT_FALSE(published.empty()) << SHOAL_DATA_DIR;
  ASSERT_FALSE(vtrain.empty()) << SHOAL_DATA_DIR;
  auto pub = ValidatePublishedRuns(published);
  ASSERT_TRUE(pub.ok()) << pub.status().message();
  auto vt = ValidateVtrain(vtrain, 10);
  ASSERT_TRUE(vt.ok()) << vt.status().message();
  ValidationReport report;
  report.rows = *pub;
  report.rows.insert(report.rows.end(), vt->begin(), vt->end());
  report.Summarise();
  int compared = 0;
  for (const ValidationRow& r : report.rows) {
    if (r.skipped) {
      EXPECT_FALSE(r.skip_reason.empty()) << r.label;
      continue;
    }
    ++compared;
    EXPECT_TRUE(std::isfinite(r.error)) << r.label;
    EXPECT_GT(r.measured_s, 0) << r.label;
  }
  EXPECT_GE(report.published.rows, 35);
  EXPECT_EQ(report.vtrain.rows, 144);
  EXPECT_LT(report.published.mae, 0.10);
  EXPECT_LT(report.vtrain.mae, 0.10);
  EXPECT_LT(report.published.worst, 0.25);
  EXPECT_LT(report.vtrain.worst, 0.25);
  EXPECT_EQ(compared, report.all.rows);
}

}  // namespace
}  // namespace shoal::plan
