// Reading workload files: the TOML format of docs/plan.md into a Workload.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "catalog/gpus.h"
#include "config/toml_reader.h"
#include "core/strings.h"
#include "plan/planner.h"

namespace shoal::plan {

namespace {

using config::TableReader;

// Readers that leave `out` as it is when the key is absent.
Status ReadText(const TableReader& r, std::string_view key, std::string& out) {
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::string> v, r.String(key));
  if (v) out = std::move(*v);
  return Status::Ok();
}

Status ReadInt(const TableReader& r, std::string_view key, int lo, int hi, int& out) {
  SHOAL_ASSIGN_OR_RETURN(std::optional<int64_t> v, r.Int(key, lo, hi));
  if (v) out = static_cast<int>(*v);
  return Status::Ok();
}

// A number that may not be negative (prices, powers, rates).
Status ReadNumber(const TableReader& r, std::string_view key, double& out) {
  SHOAL_ASSIGN_OR_RETURN(std::optional<double> v, r.Number(key));
  if (!v) return Status::Ok();
  if (*v < 0) return r.Error(key, "must not be negative");
  out = *v;
  return Status::Ok();
}

// A count: a number, or text with a K/M/B/T suffix ("15T").
Status ReadCount(const TableReader& r, std::string_view key, double& out) {
  SHOAL_ASSIGN_OR_RETURN(std::optional<double> v, r.NumberOrText(key, ParseCount));
  if (!v) return Status::Ok();
  if (*v < 0) return r.Error(key, "must not be negative");
  out = *v;
  return Status::Ok();
}

template <typename T>
Status ReadParsed(const TableReader& r, std::string_view key, Result<T> (*parse)(std::string_view),
                  T& out) {
  SHOAL_ASSIGN_OR_RETURN(std::optional<T> v, r.Parsed(key, parse));
  if (v) out = std::move(*v);
  return Status::Ok();
}

// The keys of a [[training]] or [[inference]] table that describe its model,
// followed by the table's own `keys`.
std::vector<std::string_view> WithModelKeys(std::initializer_list<std::string_view> keys) {
  std::vector<std::string_view> out = {"model",    "params", "layers", "hidden", "heads",
                                       "kv_heads", "ffn",    "vocab",  "seq",    "gated_mlp"};
  out.insert(out.end(), keys.begin(), keys.end());
  return out;
}

// The model of a [[training]] or [[inference]] table: a preset, a shape, or
// only a parameter count (then a GPT shape of the usual aspect ratio).
Result<ModelShape> ReadModel(const TableReader& r) {
  std::string preset;
  double params = 0;
  ModelShape shape;
  SHOAL_RETURN_IF_ERROR(ReadText(r, "model", preset));
  SHOAL_RETURN_IF_ERROR(ReadCount(r, "params", params));
  SHOAL_RETURN_IF_ERROR(ReadInt(r, "layers", 1, 1000, shape.layers));
  SHOAL_RETURN_IF_ERROR(ReadInt(r, "hidden", 1, 1 << 20, shape.hidden));
  SHOAL_RETURN_IF_ERROR(ReadInt(r, "heads", 1, 4096, shape.heads));
  SHOAL_RETURN_IF_ERROR(ReadInt(r, "kv_heads", 1, 4096, shape.kv_heads));
  SHOAL_RETURN_IF_ERROR(ReadInt(r, "ffn", 1, 1 << 22, shape.ffn));
  SHOAL_RETURN_IF_ERROR(ReadInt(r, "vocab", 1, 1 << 24, shape.vocab));
  SHOAL_RETURN_IF_ERROR(ReadInt(r, "seq", 1, 1 << 24, shape.seq));
  SHOAL_ASSIGN_OR_RETURN(std::optional<bool> gated, r.Bool("gated_mlp"));

  ModelShape m;
  if (!preset.empty()) {
    auto found = FindModelPreset(preset);
    if (!found.ok()) return r.Error("model", found.status().message());
    m = *found;
  } else if (shape.layers > 0 || shape.hidden > 0) {
    m = shape;
    m.name = "custom";
    m.source = "given in the workload";
    if (m.vocab == 0) m.vocab = 50257;
    if (m.seq == 0) m.seq = 4096;
  } else if (params > 0) {
    // GPT-3's aspect ratio: hidden = 128 x layers, 12 x layers x hidden^2 weights.
    const double hidden = std::cbrt(params * 128 / 12);
    m.hidden = std::max(128, static_cast<int>(std::lround(hidden / 128)) * 128);
    m.layers = std::max(1, static_cast<int>(std::lround(params / (12.0 * m.hidden * m.hidden))));
    m.heads = m.hidden / 128;
    m.vocab = 50257;
    m.seq = 4096;
    m.name = fmt::format("gpt-{:.0f}b", params / 1e9);
    m.source =
        "shape derived from the parameter count at GPT-3's aspect ratio (hidden = 128 x layers)";
  } else {
    return r.Error("", fmt::format("give model (a preset: {}), a shape (layers, hidden, heads), "
                                   "or params",
                                   Join(ModelPresetNames(), ", ")));
  }
  // Shape keys given beside a preset override it.
  if (!preset.empty()) {
    if (shape.seq > 0) m.seq = shape.seq;
    if (shape.vocab > 0) m.vocab = shape.vocab;
  }
  if (gated) m.gated_mlp = *gated;
  Status s = m.Validate();
  if (!s.ok()) return r.Error("", s.message());
  return m;
}

Status ReadConstraints(const TableReader& r, Workload& w) {
  SHOAL_RETURN_IF_ERROR(r.CheckKeys({"gpus", "budget_usd", "rack_power_kw", "site_power_kw",
                                     "site_power_mw", "cooling", "pue", "electricity_usd_per_kwh",
                                     "oversubscription", "psu_redundancy", "gpu_price"}));
  SHOAL_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> gpus,
                         r.StringList("gpus", "GPU models, e.g. [\"H100\", \"B200\"]"));
  if (gpus) w.gpu_models.insert(w.gpu_models.end(), gpus->begin(), gpus->end());
  SiteConstraints& site = w.site;
  SHOAL_RETURN_IF_ERROR(ReadNumber(r, "budget_usd", site.budget_usd));
  SHOAL_RETURN_IF_ERROR(ReadNumber(r, "rack_power_kw", site.rack_power_kw));
  SHOAL_RETURN_IF_ERROR(ReadNumber(r, "site_power_kw", site.site_power_kw));
  double site_mw = 0;
  SHOAL_RETURN_IF_ERROR(ReadNumber(r, "site_power_mw", site_mw));
  if (site_mw > 0) site.site_power_kw = site_mw * 1000;
  SHOAL_RETURN_IF_ERROR(ReadNumber(r, "pue", site.pue));
  SHOAL_RETURN_IF_ERROR(ReadNumber(r, "electricity_usd_per_kwh", site.electricity_usd_per_kwh));
  SHOAL_RETURN_IF_ERROR(ReadNumber(r, "oversubscription", site.oversubscription));
  SHOAL_RETURN_IF_ERROR(ReadInt(r, "psu_redundancy", 0, 8, site.psu_redundancy));
  SHOAL_ASSIGN_OR_RETURN(std::optional<TableReader> prices, r.Table("gpu_price"));
  if (prices) {
    for (const std::string& model : prices->Keys()) {
      const catalog::GpuSpec* gpu = catalog::FindGpu(model);
      if (gpu == nullptr) return prices->Error(model, catalog::UnknownGpuMessage(model));
      double usd = 0;
      SHOAL_RETURN_IF_ERROR(ReadNumber(*prices, model, usd));
      site.gpu_price_usd[std::string(gpu->model)] = usd;
    }
  }
  std::string cooling;
  SHOAL_RETURN_IF_ERROR(ReadText(r, "cooling", cooling));
  if (!cooling.empty()) {
    const std::string c = ToLower(cooling);
    if (c == "air") {
      site.cooling = Cooling::kAir;
    } else if (c == "liquid") {
      site.cooling = Cooling::kLiquid;
    } else if (c != "any") {
      return r.Error("cooling", "use air, liquid or any");
    }
  }
  if (site.pue < 1) return r.Error("pue", "must be at least 1");
  if (site.oversubscription < 1) return r.Error("oversubscription", "must be at least 1");
  return Status::Ok();
}

}  // namespace

Result<double> ParseCount(std::string_view text) {
  std::string_view s = Trim(text);
  double scale = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
      case 'k':
        scale = 1e3;
        break;
      case 'M':
      case 'm':
        scale = 1e6;
        break;
      case 'B':
      case 'b':
      case 'G':
      case 'g':
        scale = 1e9;
        break;
      case 'T':
      case 't':
        scale = 1e12;
        break;
      default:
        break;
    }
    if (scale != 1) s.remove_suffix(1);
  }
  auto v = ParseDouble(s);
  if (!v.ok() || *v < 0) {
    return InvalidArgument(
        fmt::format("'{}' is not a count (a number, or with K, M, B or T: \"15T\")", text));
  }
  return *v * scale;
}

Result<Workload> ParseWorkloadToml(std::string_view text, std::string_view origin) {
  SHOAL_ASSIGN_OR_RETURN(config::TomlDocument doc, config::TomlDocument::Parse(text, origin));
  const TableReader top = doc.Root();
  SHOAL_RETURN_IF_ERROR(top.CheckKeys({"name", "constraints", "training", "inference", "general"}));
  Workload w;
  SHOAL_RETURN_IF_ERROR(ReadText(top, "name", w.name));
  SHOAL_ASSIGN_OR_RETURN(std::optional<TableReader> constraints, top.Table("constraints"));
  if (constraints) SHOAL_RETURN_IF_ERROR(ReadConstraints(*constraints, w));

  SHOAL_ASSIGN_OR_RETURN(std::vector<TableReader> training, top.Tables("training"));
  for (const TableReader& r : training) {
    SHOAL_RETURN_IF_ERROR(r.CheckKeys(
        WithModelKeys({"name", "tokens", "days", "gpus", "precision", "global_batch_tokens"})));
    TrainingWorkload t;
    double days = 0;
    int gpus = 0;
    double batch_tokens = 0;
    SHOAL_ASSIGN_OR_RETURN(t.model, ReadModel(r));
    SHOAL_RETURN_IF_ERROR(ReadText(r, "name", t.name));
    SHOAL_RETURN_IF_ERROR(ReadCount(r, "tokens", t.tokens));
    SHOAL_RETURN_IF_ERROR(ReadNumber(r, "days", days));
    SHOAL_RETURN_IF_ERROR(ReadInt(r, "gpus", 1, 10'000'000, gpus));
    SHOAL_RETURN_IF_ERROR(ReadParsed(r, "precision", ParseNumberFormat, t.format));
    SHOAL_RETURN_IF_ERROR(ReadCount(r, "global_batch_tokens", batch_tokens));
    if (t.tokens <= 0) return r.Error("", "give tokens (e.g. tokens = \"15T\")");
    if ((days > 0) == (gpus > 0))
      return r.Error("", "give either days (a deadline) or gpus (a cluster size)");
    if (days > 0) t.days = days;
    if (gpus > 0) t.gpus = gpus;
    if (batch_tokens > 0 && batch_tokens < t.model.seq)
      return r.Error("global_batch_tokens", "must be at least one sequence of tokens");
    t.global_batch_tokens = batch_tokens > 0 ? batch_tokens : DefaultBatchTokens(t.model);
    w.training.push_back(std::move(t));
  }

  SHOAL_ASSIGN_OR_RETURN(std::vector<TableReader> inference, top.Tables("inference"));
  for (const TableReader& r : inference) {
    SHOAL_RETURN_IF_ERROR(
        r.CheckKeys(WithModelKeys({"name", "tokens_per_s", "requests_per_s", "context", "output",
                                   "tpot_ms", "ttft_ms", "precision", "kv_precision"})));
    InferenceWorkload inf;
    InferenceTarget& tg = inf.target;
    double kv_bytes = 0;
    SHOAL_ASSIGN_OR_RETURN(inf.model, ReadModel(r));
    SHOAL_RETURN_IF_ERROR(ReadText(r, "name", inf.name));
    SHOAL_RETURN_IF_ERROR(ReadCount(r, "tokens_per_s", tg.output_tokens_per_s));
    SHOAL_RETURN_IF_ERROR(ReadNumber(r, "requests_per_s", tg.requests_per_s));
    SHOAL_RETURN_IF_ERROR(ReadInt(r, "context", 0, 1 << 24, tg.context));
    SHOAL_RETURN_IF_ERROR(ReadInt(r, "output", 1, 1 << 24, tg.output));
    SHOAL_RETURN_IF_ERROR(ReadNumber(r, "tpot_ms", tg.tpot_ms));
    SHOAL_RETURN_IF_ERROR(ReadNumber(r, "ttft_ms", tg.ttft_ms));
    SHOAL_RETURN_IF_ERROR(ReadParsed(r, "precision", ParseServingBytes, tg.weight_bytes));
    SHOAL_RETURN_IF_ERROR(ReadParsed(r, "kv_precision", ParseServingBytes, kv_bytes));
    // KV caches stay in 8 bits or more unless told otherwise.
    tg.kv_bytes = kv_bytes > 0 ? kv_bytes : std::max(1.0, tg.weight_bytes);
    if (tg.output_tokens_per_s <= 0 && tg.requests_per_s <= 0)
      return r.Error("", "give tokens_per_s or requests_per_s");
    w.inference.push_back(std::move(inf));
  }

  SHOAL_ASSIGN_OR_RETURN(std::vector<TableReader> general, top.Tables("general"));
  for (const TableReader& r : general) {
    SHOAL_RETURN_IF_ERROR(r.CheckKeys({"name", "gpus", "trace"}));
    GeneralWorkload g;
    SHOAL_RETURN_IF_ERROR(ReadText(r, "name", g.name));
    SHOAL_RETURN_IF_ERROR(ReadInt(r, "gpus", 0, 1'000'000, g.gpus));
    SHOAL_RETURN_IF_ERROR(ReadText(r, "trace", g.from));
    if (g.gpus == 0 && g.from.empty()) return r.Error("", "give gpus or trace");
    if (g.gpus > 0) g.from = "given";
    w.general.push_back(std::move(g));
  }
  if (w.training.empty() && w.inference.empty() && w.general.empty()) {
    return InvalidArgument(
        fmt::format("{}: no [[training]], [[inference]] or [[general]] table", origin));
  }
  return w;
}

}  // namespace shoal::plan
