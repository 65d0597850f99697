// The JSON form of a node report: what the cluster stores as a node's last
// result and `shoal bench --out` writes.
#include <fmt/format.h>

#include "acceptance/json_io.h"
#include "acceptance/report.h"
#include "core/strings.h"

namespace shoal::acceptance {

namespace {

Json ToJsonValue(const Check& c) {
  Json j{{"test", TestName(c.test)},
         {"metric", c.metric},
         {"gpu", c.gpu},
         {"value", c.value},
         {"unit", c.unit},
         {"model", c.model},
         {"verdict", VerdictName(c.verdict)},
         {"outlier", c.outlier},
         {"reason", c.reason}};
  if (c.peer >= 0) j["peer"] = c.peer;
  if (c.size_bytes > 0) j["size_bytes"] = c.size_bytes;
  if (c.expectation) {
    j["expected"] = c.expectation->expected;
    j["min_pass"] = c.expectation->min_pass;
    j["basis"] = c.expectation->basis;
    j["source"] = c.expectation->source;
  }
  return j;
}

Result<Check> CheckFromJson(const Json& j, const std::string& path) {
  auto f = JsonReader(j, path);
  Check c;
  std::string test, verdict;
  f.Required("test", &test);
  f.Required("metric", &c.metric);
  f.Optional("gpu", &c.gpu);
  f.Optional("peer", &c.peer);
  f.Optional("size_bytes", &c.size_bytes);
  f.Required("value", &c.value);
  f.Optional("unit", &c.unit);
  f.Optional("model", &c.model);
  f.Required("verdict", &verdict);
  f.Optional("outlier", &c.outlier);
  f.Optional("reason", &c.reason);
  if (j.is_object() && j.contains("expected")) {
    Expectation e;
    f.Required("expected", &e.expected);
    f.Required("min_pass", &e.min_pass);
    f.Optional("basis", &e.basis);
    f.Optional("source", &e.source);
    c.expectation = e;
  }
  SHOAL_RETURN_IF_ERROR(f.status());
  auto t = ParseTestName(test);
  if (!t.ok()) return t.status().WithContext(path + ".test");
  c.test = *t;
  bool known = false;
  for (Verdict v : {Verdict::kPass, Verdict::kFail, Verdict::kFlag, Verdict::kInfo}) {
    if (VerdictName(v) == verdict) {
      c.verdict = v;
      known = true;
    }
  }
  if (!known)
    return InvalidArgument(fmt::format("{}.verdict: unknown verdict '{}'", path, verdict));
  return c;
}

Json ToJsonValue(const TelemetrySample& s) {
  return Json{{"time_ms", s.time_ms},
              {"gpu_uuid", s.gpu_uuid},
              {"sm_clock_mhz", s.sm_clock_mhz},
              {"power_w", s.power_w},
              {"temperature_c", s.temperature_c},
              {"clock_reasons", s.clock_reasons},
              {"ecc_corrected_total", s.ecc_corrected_total},
              {"ecc_uncorrected_total", s.ecc_uncorrected_total},
              {"xids", s.xids}};
}

Result<TelemetrySample> SampleFromJson(const Json& j, const std::string& path) {
  auto f = JsonReader(j, path);
  TelemetrySample s;
  std::vector<double> xids;
  f.Required("time_ms", &s.time_ms);
  f.Required("gpu_uuid", &s.gpu_uuid);
  f.Optional("sm_clock_mhz", &s.sm_clock_mhz);
  f.Optional("power_w", &s.power_w);
  f.Optional("temperature_c", &s.temperature_c);
  f.Optional("clock_reasons", &s.clock_reasons);
  f.Optional("ecc_corrected_total", &s.ecc_corrected_total);
  f.Optional("ecc_uncorrected_total", &s.ecc_uncorrected_total);
  f.Optional("xids", &xids);
  SHOAL_RETURN_IF_ERROR(f.status());
  for (double x : xids)
    s.xids.push_back(static_cast<uint32_t>(x));
  return s;
}

Json ToJsonValue(const GpuTelemetry& t) {
  return Json{{"gpu_uuid", t.gpu_uuid},
              {"samples", t.samples},
              {"max_temperature_c", t.max_temperature_c},
              {"median_sm_clock_mhz", t.median_sm_clock_mhz},
              {"min_sm_clock_mhz", t.min_sm_clock_mhz},
              {"median_power_w", t.median_power_w},
              {"max_power_w", t.max_power_w},
              {"reasons_seen", ClockReasonNames(t.reasons_seen)},
              {"reasons_seen_bits", t.reasons_seen},
              {"hardware_fault_samples", t.hardware_fault_samples},
              {"sw_thermal_samples", t.sw_thermal_samples},
              {"ecc_corrected_delta", t.ecc_corrected_delta},
              {"ecc_uncorrected_delta", t.ecc_uncorrected_delta},
              {"xids", t.xids}};
}

Result<std::vector<TelemetrySample>> SamplesFromJson(const Json& j, const std::string& path) {
  std::vector<TelemetrySample> samples;
  auto f = JsonReader(j, path);
  f.List("samples", false, SampleFromJson, &samples);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  return samples;
}

}  // namespace

std::string ReportToJson(const NodeReport& r, int indent) {
  Json checks = Json::array();
  for (const Check& c : r.checks)
    checks.push_back(ToJsonValue(c));
  Json telemetry = Json::array();
  for (const GpuTelemetry& t : r.telemetry)
    telemetry.push_back(ToJsonValue(t));
  Json samples = Json::array();
  for (const TelemetrySample& s : r.samples)
    samples.push_back(ToJsonValue(s));
  const Json j{{"schema", kReportSchema},
               {"host", r.raw.host},
               {"passed", r.passed},
               {"summary", r.Summary()},
               {"failures", r.Failures()},
               {"models", r.models},
               {"checks", std::move(checks)},
               {"telemetry", std::move(telemetry)},
               {"notes", r.notes},
               {"raw", ToJsonValue(r.raw)},
               {"samples", std::move(samples)}};
  return j.dump(indent);
}

Result<NodeReport> ParseReport(std::string_view text) {
  SHOAL_ASSIGN_OR_RETURN(const Json j, ParseJsonText(text, "the report"));
  auto f = JsonReader(j, "report");
  std::string schema;
  NodeReport r;
  f.Required("schema", &schema);
  f.Required("passed", &r.passed);
  f.Optional("models", &r.models);
  f.Optional("notes", &r.notes);
  SHOAL_RETURN_IF_ERROR(f.status());
  if (schema != kReportSchema) {
    return InvalidArgument(
        fmt::format("report.schema is \"{}\", expected \"{}\"", schema, kReportSchema));
  }
  if (!j.contains("raw")) return InvalidArgument("report.raw is missing");
  SHOAL_ASSIGN_OR_RETURN(r.raw, NodeResultsFromJson(j["raw"], "report.raw"));
  f.List("checks", false, CheckFromJson, &r.checks);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  SHOAL_ASSIGN_OR_RETURN(r.samples, SamplesFromJson(j, "report"));
  // The per-GPU summaries are the samples' over the burn-in window: recomputed, not read.
  if (r.raw.burn_in_end_ms > 0) {
    r.telemetry = SummarizeTelemetry(r.samples, r.raw.burn_in_start_ms, r.raw.burn_in_end_ms);
  }
  return r;
}

Result<SavedResults> LoadSavedResults(std::string_view text) {
  if (Trim(text).empty()) return InvalidArgument("the file is empty");
  SHOAL_ASSIGN_OR_RETURN(const Json j, ParseJsonText(text, "the file"));
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string()) {
    return InvalidArgument(
        fmt::format("not a shoal bench file: no \"schema\" (expected \"{}\" or \"{}\")",
                    kReportSchema, kNodeResultsSchema));
  }
  const std::string schema = j["schema"].get<std::string>();
  SavedResults out;
  if (schema == kReportSchema) {
    if (!j.contains("raw")) return InvalidArgument("report.raw is missing");
    SHOAL_ASSIGN_OR_RETURN(out.raw, NodeResultsFromJson(j["raw"], "report.raw"));
    SHOAL_ASSIGN_OR_RETURN(out.samples, SamplesFromJson(j, "report"));
    return out;
  }
  SHOAL_ASSIGN_OR_RETURN(out.raw, NodeResultsFromJson(j, "results"));
  return out;
}

}  // namespace shoal::acceptance
