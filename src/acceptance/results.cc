#include "acceptance/results.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "acceptance/json_io.h"
#include "api/json.h"
#include "core/strings.h"

namespace shoal::acceptance {

const std::vector<TestKind>& AllTests() {
  static const std::vector<TestKind> kAll = {TestKind::kGemm, TestKind::kHbm,  TestKind::kPcie,
                                             TestKind::kP2p,  TestKind::kNccl, TestKind::kBurnIn};
  return kAll;
}

std::string_view TestName(TestKind t) {
  switch (t) {
    case TestKind::kGemm:
      return "gemm";
    case TestKind::kHbm:
      return "hbm";
    case TestKind::kPcie:
      return "pcie";
    case TestKind::kP2p:
      return "p2p";
    case TestKind::kNccl:
      return "nccl";
    case TestKind::kBurnIn:
      return "burnin";
  }
  return "?";
}

Result<TestKind> ParseTestName(std::string_view name) {
  for (TestKind t : AllTests()) {
    if (TestName(t) == name) return t;
  }
  return InvalidArgument(
      fmt::format("unknown test '{}' (gemm, hbm, pcie, p2p, nccl, burnin, all)", name));
}

Result<std::vector<TestKind>> ParseTestList(std::string_view csv) {
  std::vector<bool> wanted(AllTests().size(), false);
  for (std::string_view part : Split(csv, ',')) {
    const std::string name = ToLower(Trim(part));
    if (name.empty()) continue;
    if (name == "all") {
      std::fill(wanted.begin(), wanted.end(), true);
      continue;
    }
    SHOAL_ASSIGN_OR_RETURN(const TestKind t, ParseTestName(name));
    wanted[static_cast<size_t>(t)] = true;
  }
  std::vector<TestKind> out;
  for (TestKind t : AllTests()) {
    if (wanted[static_cast<size_t>(t)]) out.push_back(t);
  }
  if (out.empty())
    return InvalidArgument("no tests named (gemm, hbm, pcie, p2p, nccl, burnin, all)");
  return out;
}

// ---- JSON helpers ----------------------------------------------------------

Result<Json> ParseJsonText(std::string_view text, std::string_view what) {
  auto j = api::Parse(text);
  if (!j.ok())
    return InvalidArgument(fmt::format("{}: not valid JSON ({})", what, j.status().message()));
  return j;
}

namespace {

// JSON has no NaN or infinity; a figure that is not finite is written as 0.
double Finite(double v) {
  return std::isfinite(v) ? v : 0.0;
}

Json ToJsonValue(const Stats& s) {
  return Json{{"count", s.count},       {"min", Finite(s.min)},       {"max", Finite(s.max)},
              {"mean", Finite(s.mean)}, {"median", Finite(s.median)}, {"stddev", Finite(s.stddev)}};
}

Status StatsFromJson(api::ObjectReader& parent, const Json& j, const char* key, Stats* s) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  auto f = JsonReader(*it, parent.PathOf(key));
  f.Optional("count", &s->count);
  f.Optional("min", &s->min);
  f.Optional("max", &s->max);
  f.Optional("mean", &s->mean);
  f.Optional("median", &s->median);
  f.Optional("stddev", &s->stddev);
  return f.status();
}

Result<TestKind> TestFromJson(api::ObjectReader& f, const char* key) {
  std::string name;
  f.Required(key, &name);
  SHOAL_RETURN_IF_ERROR(f.status());
  auto t = ParseTestName(name);
  if (!t.ok()) return t.status().WithContext(f.PathOf(key));
  return t;
}

Json ToJsonValue(const TestError& e) {
  return Json{{"test", TestName(e.test)}, {"gpu", e.gpu}, {"message", e.message}};
}

Result<TestError> TestErrorFromJson(const Json& j, const std::string& path) {
  auto f = JsonReader(j, path);
  TestError e;
  SHOAL_ASSIGN_OR_RETURN(e.test, TestFromJson(f, "test"));
  f.Optional("gpu", &e.gpu);
  f.Required("message", &e.message);
  SHOAL_RETURN_IF_ERROR(f.status());
  return e;
}

Json ToJsonValue(const GpuInfo& g) {
  return Json{{"index", g.index},
              {"name", g.name},
              {"uuid", g.uuid},
              {"pci_bus_id", g.pci_bus_id},
              {"memory_mib", g.memory_mib},
              {"numa_node", g.numa_node},
              {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
              {"sm_count", g.sm_count}};
}

Result<GpuInfo> GpuInfoFromJson(const Json& j, const std::string& path) {
  auto f = JsonReader(j, path);
  GpuInfo g;
  std::string cc;
  f.Required("index", &g.index);
  f.Required("name", &g.name);
  f.Optional("uuid", &g.uuid);
  f.Optional("pci_bus_id", &g.pci_bus_id);
  f.Required("memory_mib", &g.memory_mib);
  f.Optional("numa_node", &g.numa_node);
  f.Optional("compute_capability", &cc);
  f.Optional("sm_count", &g.sm_count);
  SHOAL_RETURN_IF_ERROR(f.status());
  if (!cc.empty()) {
    const auto parts = Split(cc, '.');
    auto major = ParseInt(parts[0]);
    auto minor = parts.size() == 2 ? ParseInt(parts[1]) : Result<int64_t>(InvalidArgument(""));
    if (!major.ok() || !minor.ok()) {
      return InvalidArgument(
          fmt::format("{}.compute_capability must look like \"9.0\", not \"{}\"", path, cc));
    }
    g.cc_major = static_cast<int>(*major);
    g.cc_minor = static_cast<int>(*minor);
  }
  return g;
}

Json ToJsonValue(const Measurement& m) {
  Json j{{"test", TestName(m.test)}, {"metric", m.metric}, {"gpu", m.gpu},
         {"value", Finite(m.value)}, {"unit", m.unit},     {"ok", m.ok},
         {"check", m.check}};
  if (m.peer >= 0) j["peer"] = m.peer;
  if (m.ranks > 0) j["ranks"] = m.ranks;
  if (m.size_bytes > 0) j["size_bytes"] = m.size_bytes;
  if (m.stats.count > 0) j["stats"] = ToJsonValue(m.stats);
  if (!m.params.empty()) {
    Json params = Json::object();
    for (const auto& [k, v] : m.params)
      params[k] = Finite(v);
    j["params"] = std::move(params);
  }
  if (!m.series.empty()) {
    Json series = Json::array();
    for (double v : m.series)
      series.push_back(Finite(v));
    j["series"] = std::move(series);
  }
  return j;
}

Result<Measurement> MeasurementFromJson(const Json& j, const std::string& path) {
  auto f = JsonReader(j, path);
  Measurement m;
  SHOAL_ASSIGN_OR_RETURN(m.test, TestFromJson(f, "test"));
  f.Required("metric", &m.metric);
  f.Optional("gpu", &m.gpu);
  f.Optional("peer", &m.peer);
  f.Optional("ranks", &m.ranks);
  f.Optional("size_bytes", &m.size_bytes);
  f.Required("value", &m.value);
  f.Required("unit", &m.unit);
  f.Optional("params", &m.params);
  f.Optional("series", &m.series);
  f.Required("ok", &m.ok);
  f.Optional("check", &m.check);
  SHOAL_RETURN_IF_ERROR(f.status());
  SHOAL_RETURN_IF_ERROR(StatsFromJson(f, j, "stats", &m.stats));
  return m;
}

}  // namespace

Json ToJsonValue(const NodeResults& r) {
  Json gpus = Json::array();
  for (const GpuInfo& g : r.gpus)
    gpus.push_back(ToJsonValue(g));
  Json measurements = Json::array();
  for (const Measurement& m : r.measurements)
    measurements.push_back(ToJsonValue(m));
  Json errors = Json::array();
  for (const TestError& e : r.errors)
    errors.push_back(ToJsonValue(e));
  Json j{{"schema", kNodeResultsSchema},
         {"host", r.host},
         {"started_ms", r.started_ms},
         {"finished_ms", r.finished_ms},
         {"quick", r.quick},
         {"rank", r.rank},
         {"world_size", r.world_size},
         {"versions", r.versions},
         {"gpus", std::move(gpus)},
         {"measurements", std::move(measurements)},
         {"errors", std::move(errors)},
         {"notes", r.notes}};
  if (r.burn_in_end_ms > 0) {
    j["burn_in_start_ms"] = r.burn_in_start_ms;
    j["burn_in_end_ms"] = r.burn_in_end_ms;
  }
  return j;
}

Result<NodeResults> NodeResultsFromJson(const Json& j, const std::string& path) {
  auto f = JsonReader(j, path);
  std::string schema;
  f.Required("schema", &schema);
  SHOAL_RETURN_IF_ERROR(f.status());
  if (schema != kNodeResultsSchema) {
    return InvalidArgument(
        fmt::format("{}.schema is \"{}\", expected \"{}\"", path, schema, kNodeResultsSchema));
  }
  NodeResults r;
  f.Required("host", &r.host);
  f.Optional("started_ms", &r.started_ms);
  f.Optional("finished_ms", &r.finished_ms);
  f.Optional("quick", &r.quick);
  f.Optional("rank", &r.rank);
  f.Optional("world_size", &r.world_size);
  f.Optional("versions", &r.versions);
  f.Optional("notes", &r.notes);
  f.Optional("burn_in_start_ms", &r.burn_in_start_ms);
  f.Optional("burn_in_end_ms", &r.burn_in_end_ms);
  f.List("gpus", true, GpuInfoFromJson, &r.gpus);
  f.List("measurements", true, MeasurementFromJson, &r.measurements);
  f.List("errors", false, TestErrorFromJson, &r.errors);
  SHOAL_RETURN_IF_ERROR(f.Finish());
  for (const Measurement& m : r.measurements) {
    const bool known_gpu =
        m.gpu < 0 || std::any_of(r.gpus.begin(), r.gpus.end(),
                                 [&](const GpuInfo& g) { return g.index == m.gpu; });
    if (!known_gpu) {
      return InvalidArgument(fmt::format("{}: a {} {} figure names GPU {}, which is not in gpus",
                                         path, TestName(m.test), m.metric, m.gpu));
    }
  }
  return r;
}

std::string ToJson(const NodeResults& r, int indent) {
  return ToJsonValue(r).dump(indent);
}

Result<NodeResults> ParseNodeResults(std::string_view text) {
  if (Trim(text).empty()) return InvalidArgument("the node results are empty");
  SHOAL_ASSIGN_OR_RETURN(const Json j, ParseJsonText(text, "the node results"));
  return NodeResultsFromJson(j, "results");
}

}  // namespace shoal::acceptance
