#include "acceptance/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "acceptance/stats.h"
#include "core/strings.h"

namespace shoal::acceptance {

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kFlag:
      return "flag";
    case Verdict::kInfo:
      return "info";
  }
  return "?";
}

std::string FormatFigure(double value, std::string_view unit) {
  const double a = std::fabs(value);
  const std::string number = fmt::format("{:.{}f}", value, a >= 100 ? 0 : (a >= 10 ? 1 : 2));
  return unit.empty() ? number : fmt::format("{} {}", number, unit);
}

std::string CheckName(const Check& c) {
  const std::string where = c.gpu < 0     ? "node"
                            : c.peer >= 0 ? fmt::format("gpu{}->gpu{}", c.gpu, c.peer)
                                          : fmt::format("gpu{}", c.gpu);
  return fmt::format("{} {} {}", where, TestName(c.test), c.metric);
}

int NodeReport::Count(Verdict v) const {
  return static_cast<int>(
      std::count_if(checks.begin(), checks.end(), [v](const Check& c) { return c.verdict == v; }));
}

namespace {

// Figures whose spread among identical GPUs means something; counts of
// samples or errors are judged on their own.
bool Comparable(const Check& c) {
  return c.unit == kUnitTflops || c.unit == kUnitGbps || c.unit == kUnitUs || c.unit == "MHz" ||
         c.unit == "C";
}
// Latencies and temperatures are better low; throughputs and clocks high.
bool HigherIsBetter(const Check& c) {
  return c.unit != kUnitUs && c.unit != "C";
}

Check CheckFrom(const Measurement& m) {
  Check c;
  c.test = m.test;
  c.metric = m.metric;
  c.gpu = m.gpu;
  c.peer = m.peer;
  c.size_bytes = m.size_bytes;
  c.value = m.value;
  c.unit = m.unit;
  return c;
}

void Judge(Check& c) {
  if (!c.expectation) return;
  if (c.value >= c.expectation->min_pass) {
    c.verdict = Verdict::kPass;
    return;
  }
  c.verdict = Verdict::kFail;
  c.reason = fmt::format("{}, below {} ({}% of the expected {}: {})", FormatFigure(c.value, c.unit),
                         FormatFigure(c.expectation->min_pass, c.unit),
                         static_cast<int>(100 * c.value / std::max(c.expectation->expected, 1e-9)),
                         FormatFigure(c.expectation->expected, c.unit), c.expectation->basis);
}

// The largest size of each NCCL collective is the one judged, as nccl-tests
// users read the bottom line; the others stay in the raw results and the table.
std::map<std::string, int64_t> LargestNcclSizes(const NodeResults& raw) {
  std::map<std::string, int64_t> largest;
  for (const Measurement& m : raw.measurements) {
    if (m.test != TestKind::kNccl) continue;
    int64_t& s = largest[m.metric];
    s = std::max(s, m.size_bytes);
  }
  return largest;
}

// Checks from burn-in telemetry for one GPU.
void TelemetryChecks(const GpuTelemetry& t, int gpu, const std::string& model,
                     std::vector<Check>* out) {
  auto add = [&](std::string metric, double value, std::string unit, Verdict verdict,
                 std::string reason) {
    Check c;
    c.test = TestKind::kBurnIn;
    c.metric = std::move(metric);
    c.gpu = gpu;
    c.value = value;
    c.unit = std::move(unit);
    c.model = model;
    c.verdict = verdict;
    if (verdict != Verdict::kInfo) c.reason = std::move(reason);
    out->push_back(std::move(c));
  };
  auto fail_if = [](bool bad) { return bad ? Verdict::kFail : Verdict::kInfo; };
  add("median_sm_clock", t.median_sm_clock_mhz, "MHz", Verdict::kInfo, "");
  add("max_temperature", t.max_temperature_c, "C", Verdict::kInfo, "");
  add("max_power", t.max_power_w, "W", Verdict::kInfo, "");
  add("hw_slowdown_samples", t.hardware_fault_samples, "", fail_if(t.hardware_fault_samples > 0),
      fmt::format("the GPU slowed itself down ({}) in {} of {} samples",
                  ClockReasonNames(t.reasons_seen & kClocksHardwareFaults),
                  t.hardware_fault_samples, t.samples));
  // Brief software thermal slowdowns happen on healthy GPUs in warm rooms; a
  // tenth of the burn-in or more means the cooling does not keep up.
  add("sw_thermal_samples", t.sw_thermal_samples, "",
      fail_if(t.sw_thermal_samples * 10 >= std::max(t.samples, 1)),
      fmt::format("software thermal slowdown in {} of {} samples (max {:.0f} C)",
                  t.sw_thermal_samples, t.samples, t.max_temperature_c));
  add("ecc_uncorrected", static_cast<double>(t.ecc_uncorrected_delta), "",
      fail_if(t.ecc_uncorrected_delta > 0),
      fmt::format("{} uncorrected ECC errors during burn-in", t.ecc_uncorrected_delta));
  // Corrected errors are what ECC is for; a GPU that makes them under load is
  // worth watching, not rejecting.
  add("ecc_corrected", static_cast<double>(t.ecc_corrected_delta), "",
      t.ecc_corrected_delta > 0 ? Verdict::kFlag : Verdict::kInfo,
      fmt::format("{} corrected ECC errors during burn-in", t.ecc_corrected_delta));
  std::vector<std::string> xids;
  for (uint32_t x : t.xids)
    xids.push_back(std::to_string(x));
  add("xid_events", static_cast<double>(t.xids.size()), "", fail_if(!t.xids.empty()),
      fmt::format("XID {} during burn-in", Join(xids, ", ")));
}

}  // namespace

std::vector<std::string> NodeReport::Failures() const {
  std::vector<std::string> out;
  for (const Check& c : checks) {
    if (c.verdict == Verdict::kFail) out.push_back(fmt::format("{}: {}", CheckName(c), c.reason));
  }
  return out;
}

std::string NodeReport::Summary(size_t max_chars) const {
  const std::vector<std::string> failures = Failures();
  if (failures.empty()) return "passed";
  std::string s = fmt::format("failed {} check{}: {}", failures.size(),
                              failures.size() == 1 ? "" : "s", Join(failures, "; "));
  if (s.size() > max_chars && max_chars > 3) s = s.substr(0, max_chars - 3) + "...";
  return s;
}

NodeReport Evaluate(NodeResults raw, const EvaluateOptions& options) {
  NodeReport report;
  report.samples = options.samples;
  std::vector<const catalog::GpuSpec*> specs;
  std::map<int, size_t> slot_of_gpu;
  for (size_t i = 0; i < raw.gpus.size(); ++i) {
    const GpuInfo& g = raw.gpus[i];
    const catalog::GpuSpec* spec = options.spec_for ? options.spec_for(g) : nullptr;
    specs.push_back(spec);
    slot_of_gpu[g.index] = i;
    report.models.emplace_back(spec ? std::string(spec->model) : "");
    if (spec == nullptr) {
      report.notes.push_back(
          fmt::format("gpu{} ({}, {} MiB) is not in the catalogue: its figures are measured, "
                      "not judged (--model names one)",
                      g.index, g.name, g.memory_mib));
    }
  }
  // Node-wide figures (NCCL) are judged against the node's model when all its GPUs share one.
  const catalog::GpuSpec* node_spec = specs.empty() ? nullptr : specs.front();
  for (const catalog::GpuSpec* s : specs) {
    if (s != node_spec) node_spec = nullptr;
  }
  auto spec_of = [&](int gpu) -> const catalog::GpuSpec* {
    if (gpu < 0) return node_spec;
    auto it = slot_of_gpu.find(gpu);
    return it == slot_of_gpu.end() ? nullptr : specs[it->second];
  };

  ExpectContext ctx;
  ctx.node_gpus = static_cast<int>(raw.gpus.size());
  ctx.multi_node = raw.world_size > 1;
  ctx.nccl_min_busbw_gbps = options.nccl_min_busbw_gbps;
  const std::map<std::string, int64_t> largest = LargestNcclSizes(raw);

  for (const Measurement& m : raw.measurements) {
    if (m.test == TestKind::kNccl && m.size_bytes != largest.at(m.metric) && m.ok) continue;
    Check c = CheckFrom(m);
    const catalog::GpuSpec* spec = spec_of(m.gpu);
    if (spec != nullptr) {
      c.model = std::string(spec->model);
      c.expectation = Expect(m, *spec, ctx);
    }
    if (!m.ok) {
      c.verdict = Verdict::kFail;
      c.reason = fmt::format("wrong result: {}", m.check);
    } else {
      Judge(c);
    }
    report.checks.push_back(std::move(c));

    // Burn-in throughput must hold up over time, not only on average.
    if (m.test == TestKind::kBurnIn && m.series.size() >= 2) {
      const double median = Median(m.series);
      const double low = *std::min_element(m.series.begin(), m.series.end());
      Check s = CheckFrom(m);
      s.metric = "min_over_median";
      s.value = median > 0 ? low / median : 0;
      s.unit = "";
      s.model = spec ? std::string(spec->model) : "";
      s.expectation =
          Expectation{1.0, kBurnInStability,
                      fmt::format("the slowest 1 s interval within {:.0f}% of the median",
                                  (1 - kBurnInStability) * 100),
                      "a healthy GPU holds its clocks under sustained load"};
      Judge(s);
      if (s.verdict == Verdict::kFail) {
        s.reason = fmt::format(
            "throughput fell to {:.0f}% of its median ({:.0f} of {:.0f} {}) during burn-in",
            100 * s.value, low, median, m.unit);
      }
      report.checks.push_back(std::move(s));
    }
  }

  for (const TestError& e : raw.errors) {
    Check c;
    c.test = e.test;
    c.metric = "error";
    c.gpu = e.gpu;
    c.verdict = Verdict::kFail;
    c.reason = e.message;
    report.checks.push_back(std::move(c));
  }

  const bool burn_in_ran = raw.burn_in_end_ms > 0;
  if (burn_in_ran && !options.samples.empty()) {
    report.telemetry =
        SummarizeTelemetry(options.samples, raw.burn_in_start_ms, raw.burn_in_end_ms);
    for (const GpuTelemetry& t : report.telemetry) {
      auto g = std::find_if(raw.gpus.begin(), raw.gpus.end(),
                            [&](const GpuInfo& x) { return x.uuid == t.gpu_uuid; });
      if (g == raw.gpus.end()) continue;  // a GPU the node test did not use
      const catalog::GpuSpec* spec = spec_of(g->index);
      TelemetryChecks(t, g->index, spec ? std::string(spec->model) : "", &report.checks);
    }
    if (report.telemetry.empty())
      report.notes.push_back("no telemetry sample fell inside the burn-in window");
  } else if (burn_in_ran) {
    report.notes.push_back(
        "burn-in telemetry was not sampled (no NVML hook): clocks, power, temperature, "
        "throttling, ECC and XID were not watched");
  }
  report.notes.insert(report.notes.end(), raw.notes.begin(), raw.notes.end());
  report.raw = std::move(raw);

  NodeReport* one[] = {&report};
  FlagOutlierGpus(one, options.outliers, options.outliers_fail);
  return report;
}

void FlagOutlierGpus(std::span<NodeReport* const> reports, const OutlierOptions& options,
                     bool outliers_fail) {
  // Identical GPUs doing the same thing: same model, test, metric and size.
  // P2P pairs form one group per metric, so a slow link stands out among all;
  // node-wide NCCL figures form groups across the nodes of a cluster.
  using Key = std::tuple<std::string, TestKind, std::string, int64_t>;
  std::map<Key, std::vector<Check*>> groups;
  for (NodeReport* r : reports) {
    for (Check& c : r->checks) {
      if (c.model.empty() || !Comparable(c) || c.verdict == Verdict::kFail) continue;
      groups[Key{c.model, c.test, c.metric, c.size_bytes}].push_back(&c);
    }
  }
  for (auto& [key, checks] : groups) {
    std::vector<double> values;
    for (const Check* c : checks)
      values.push_back(c->value);
    const bool higher = HigherIsBetter(*checks.front());
    const std::vector<bool> flags = FlagOutliers(values, higher, options);
    const double median = Median(values);
    for (size_t i = 0; i < checks.size(); ++i) {
      Check& c = *checks[i];
      if (!flags[i] || c.outlier) continue;
      c.outlier = true;
      c.verdict = outliers_fail ? Verdict::kFail : Verdict::kFlag;
      c.reason = fmt::format("{}, {:.0f}% {} the median of {} identical {} figures ({})",
                             FormatFigure(c.value, c.unit),
                             100 * std::fabs(c.value - median) / std::max(std::fabs(median), 1e-9),
                             higher ? "below" : "above", checks.size(), std::get<0>(key),
                             FormatFigure(median, c.unit));
    }
  }
  for (NodeReport* r : reports)
    r->passed = r->Count(Verdict::kFail) == 0;
}

}  // namespace shoal::acceptance
