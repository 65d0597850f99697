// The human-readable form of a node report.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "acceptance/collectives.h"
#include "acceptance/report.h"
#include "core/strings.h"

namespace shoal::acceptance {

namespace {

// Column headers for long metric names.
std::string Header(std::string_view metric) {
  static const std::map<std::string_view, std::string_view> kShort = {
      {"min_over_median", "min/median"},
      {"median_sm_clock", "clock MHz"},
      {"max_temperature", "max C"},
      {"max_power", "max W"},
      {"hw_slowdown_samples", "hw slow"},
      {"sw_thermal_samples", "sw therm"},
      {"ecc_uncorrected", "ecc uncorr"},
      {"ecc_corrected", "ecc corr"},
      {"xid_events", "xid"},
  };
  auto it = kShort.find(metric);
  return std::string(it == kShort.end() ? metric : it->second);
}

std::string Number(double v) {
  return FormatFigure(v, "");
}

std::string Marked(const Check& c) {
  const char* mark = c.verdict == Verdict::kFail ? "!" : (c.verdict == Verdict::kFlag ? "*" : " ");
  // Counts (samples, errors, peer access) read better without decimals.
  const bool count = c.unit.empty() && c.value == std::floor(c.value) && std::fabs(c.value) < 1e9;
  return (count ? fmt::format("{:.0f}", c.value) : Number(c.value)) + mark;
}

// "8", "1K", "256M", "8G": binary multiples, as nccl-tests sizes are.
std::string Bytes(int64_t b) {
  static constexpr const char* kUnits[] = {"", "K", "M", "G", "T"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:g}{}", v, kUnits[u]);
}

std::string TestTitle(TestKind t) {
  switch (t) {
    case TestKind::kGemm:
      return "GEMM, cuBLASLt (TFLOP/s)";
    case TestKind::kHbm:
      return "GPU memory (GB/s)";
    case TestKind::kPcie:
      return "host <-> GPU, pinned (GB/s)";
    case TestKind::kP2p:
      return "GPU <-> GPU";
    case TestKind::kNccl:
      return "NCCL";
    case TestKind::kBurnIn:
      return "burn-in";
  }
  return "";
}

// One table per test of per-GPU figures: a column per metric, a row per GPU,
// with the expected figure and the pass mark above when all share them.
void PerGpuTable(const NodeReport& r, TestKind test, std::string* out) {
  std::vector<std::string> columns;
  std::map<int, std::map<std::string, const Check*>> rows;
  for (const Check& c : r.checks) {
    if (c.test != test || c.gpu < 0 || c.peer >= 0 || c.metric == "error") continue;
    if (std::find(columns.begin(), columns.end(), c.metric) == columns.end())
      columns.push_back(c.metric);
    rows[c.gpu][c.metric] = &c;
  }
  if (rows.empty()) return;
  constexpr int kLabel = 10;
  std::vector<int> width;
  for (const std::string& col : columns)
    width.push_back(std::max<int>(9, static_cast<int>(Header(col).size()) + 1));
  *out += fmt::format("\n{}\n{:<{}}", TestTitle(test), "", kLabel);
  for (size_t i = 0; i < columns.size(); ++i)
    *out += fmt::format(" {:>{}}", Header(columns[i]), width[i]);
  *out += "\n";
  for (const char* which : {"expected", "pass at"}) {
    std::string line = fmt::format("{:<{}}", which, kLabel);
    bool any = false;
    for (size_t i = 0; i < columns.size(); ++i) {
      std::set<std::pair<double, double>> seen;
      for (const auto& [gpu, cells] : rows) {
        auto it = cells.find(columns[i]);
        if (it != cells.end() && it->second->expectation) {
          seen.insert({it->second->expectation->expected, it->second->expectation->min_pass});
        }
      }
      std::string cell = "-";
      if (seen.size() == 1) {
        cell = Number(std::string_view(which) == "expected" ? seen.begin()->first
                                                            : seen.begin()->second) +
               " ";
        any = true;
      }
      line += fmt::format(" {:>{}}", cell, width[i]);
    }
    if (any) *out += line + "\n";
  }
  for (const auto& [gpu, cells] : rows) {
    *out += fmt::format("{:<{}}", fmt::format("gpu{}", gpu), kLabel);
    for (size_t i = 0; i < columns.size(); ++i) {
      auto it = cells.find(columns[i]);
      *out += fmt::format(" {:>{}}", it == cells.end() ? std::string("- ") : Marked(*it->second),
                          width[i]);
    }
    *out += "\n";
  }
}

// The P2P figures as matrices, source GPU by row, destination by column.
void P2pMatrices(const NodeReport& r, std::string* out) {
  std::map<std::string, std::map<std::pair<int, int>, const Check*>> by_metric;
  std::set<int> gpus;
  for (const Check& c : r.checks) {
    if (c.test != TestKind::kP2p || c.peer < 0) continue;
    by_metric[c.metric][{c.gpu, c.peer}] = &c;
    gpus.insert(c.gpu);
    gpus.insert(c.peer);
  }
  for (const auto& [metric, cells] : by_metric) {
    const std::string unit = cells.begin()->second->unit;
    *out += fmt::format("\nGPU <-> GPU {}{} (row: from, column: to)\n{:>6}", metric,
                        unit.empty() ? "" : fmt::format(" ({})", unit), "");
    for (int g : gpus)
      *out += fmt::format(" {:>8}", fmt::format("gpu{}", g));
    *out += "\n";
    for (int from : gpus) {
      *out += fmt::format("{:>6}", fmt::format("gpu{}", from));
      for (int to : gpus) {
        auto it = cells.find({from, to});
        *out += fmt::format(" {:>8}", it == cells.end() ? std::string("- ") : Marked(*it->second));
      }
      *out += "\n";
    }
  }
}

// Bus bandwidth by size, one column per collective, as nccl-tests' busbw column.
void NcclTable(const NodeReport& r, std::string* out) {
  std::vector<std::string> columns;
  std::map<int64_t, std::map<std::string, const Measurement*>> rows;
  int ranks = 0;
  for (const Measurement& m : r.raw.measurements) {
    if (m.test != TestKind::kNccl) continue;
    if (std::find(columns.begin(), columns.end(), m.metric) == columns.end())
      columns.push_back(m.metric);
    rows[m.size_bytes][m.metric] = &m;
    ranks = std::max(ranks, m.ranks);
  }
  if (rows.empty()) return;
  std::map<std::string, const Check*> judged;
  for (const Check& c : r.checks) {
    if (c.test == TestKind::kNccl && c.metric != "error") judged[c.metric] = &c;
  }
  *out +=
      fmt::format("\nNCCL bus bandwidth (GB/s, nccl-tests' busbw), {} ranks\n{:>8}", ranks, "size");
  for (const std::string& col : columns)
    *out += fmt::format(" {:>15}", col);
  *out += "\n";
  for (const auto& [size, cells] : rows) {
    *out += fmt::format("{:>8}", Bytes(size));
    for (const std::string& col : columns) {
      auto it = cells.find(col);
      std::string cell = "- ";
      if (it != cells.end()) {
        auto j = judged.find(col);
        const bool is_judged = j != judged.end() && j->second->size_bytes == size;
        cell = is_judged ? Marked(*j->second)
                         : Number(it->second->value) + (it->second->ok ? " " : "!");
      }
      *out += fmt::format(" {:>15}", cell);
    }
    *out += "\n";
  }
  for (const std::string& col : columns) {
    auto j = judged.find(col);
    if (j != judged.end() && j->second->expectation) {
      *out += fmt::format("  {} at {}: expected {}, pass at {}\n", col,
                          Bytes(j->second->size_bytes), Number(j->second->expectation->expected),
                          Number(j->second->expectation->min_pass));
    }
  }
}

}  // namespace

std::string FormatReport(const NodeReport& r) {
  std::string out;
  std::map<std::string, int> names;
  for (size_t i = 0; i < r.raw.gpus.size(); ++i) {
    const std::string& model = i < r.models.size() ? r.models[i] : "";
    ++names[r.raw.gpus[i].name + (model.empty() ? " (not in the catalogue)" : " (" + model + ")")];
  }
  std::vector<std::string> gpu_text;
  for (const auto& [name, n] : names)
    gpu_text.push_back(fmt::format("{} x {}", n, name));
  const double seconds = static_cast<double>(r.raw.finished_ms - r.raw.started_ms) / 1000.0;
  out += fmt::format("shoal bench: {}, {}, {} mode, {:.0f} s", r.raw.host,
                     gpu_text.empty() ? "no GPUs" : Join(gpu_text, ", "),
                     r.raw.quick ? "quick" : "default", std::max(0.0, seconds));
  if (r.raw.world_size > 1) out += fmt::format(", rank {} of {}", r.raw.rank, r.raw.world_size);
  out += "\n";
  if (!r.raw.versions.empty()) {
    std::vector<std::string> v;
    for (const auto& [k, value] : r.raw.versions)
      v.push_back(k + " " + value);
    out += "versions: " + Join(v, ", ") + "\n";
  }
  for (TestKind t : {TestKind::kGemm, TestKind::kHbm, TestKind::kPcie})
    PerGpuTable(r, t, &out);
  P2pMatrices(r, &out);
  NcclTable(r, &out);
  PerGpuTable(r, TestKind::kBurnIn, &out);

  out += "\n('!' failed, '*' outlier among identical GPUs)\n";
  out += fmt::format("RESULT: {} ({} failed, {} flagged, {} passed, {} measured only)\n",
                     r.passed ? "PASS" : "FAIL", r.Count(Verdict::kFail), r.Count(Verdict::kFlag),
                     r.Count(Verdict::kPass), r.Count(Verdict::kInfo));
  for (const Check& c : r.checks) {
    if (c.verdict != Verdict::kFail && c.verdict != Verdict::kFlag) continue;
    out += fmt::format(
        "  {} {}{}: {}\n", VerdictName(c.verdict), CheckName(c),
        c.size_bytes > 0 && c.test == TestKind::kNccl ? " " + Bytes(c.size_bytes) : "", c.reason);
  }
  if (!r.notes.empty()) {
    out += "notes:\n";
    for (const std::string& n : r.notes)
      out += "  - " + n + "\n";
  }
  return out;
}

}  // namespace shoal::acceptance
