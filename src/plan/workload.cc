// Reading workload files: the TOML format of docs/plan.md into a Workload.
#include <fmt/format.h>
#include <toml++/toml.h>

#include <cmath>
#include <functional>
#include <optional>

#include "catalog/gpus.h"
#include "core/strings.h"
#include "plan/planner.h"

namespace shoal::plan {

namespace {

// One key of a table and how to store its value. A table is read by
// declaring its keys; any other key is an error that names the nearest one.
struct Key {
  std::string_view name;
  std::function<Status(const toml::node&)> store;
};

std::string Where(std::string_view origin, const toml::node& n, std::string_view path) {
  return fmt::format("{}:{}: {}", origin, n.source().begin.line, path);
}

Status ReadKeys(std::string_view origin, const toml::table& table, std::string_view path,
                const std::vector<Key>& keys) {
  for (auto&& [name, value] : table) {
    const std::string_view k = name.str();
    const Key* key = nullptr;
    for (const Key& candidate : keys) {
      if (candidate.name == k) key = &candidate;
    }
    const std::string full = path.empty() ? std::string(k) : fmt::format("{}.{}", path, k);
    if (key == nullptr) {
      std::string_view nearest;
      size_t best = 3;
      std::vector<std::string> names;
      for (const Key& candidate : keys) {
        names.emplace_back(candidate.name);
        if (const size_t d = EditDistance(k, candidate.name); d < best) {
          best = d;
          nearest = candidate.name;
        }
      }
      return InvalidArgument(fmt::format("{}: unknown key{}", Where(origin, value, full),
                                         nearest.empty()
                                             ? fmt::format(" (known: {})", Join(names, ", "))
                                             : fmt::format(" (did you mean '{}'?)", nearest)));
    }
    Status s = key->store(value);
    if (!s.ok())
      return InvalidArgument(fmt::format("{}: {}", Where(origin, value, full), s.message()));
  }
  return Status::Ok();
}

// Stores for the kinds of values a workload has.
std::function<Status(const toml::node&)> Number(double& out) {
  return [&out](const toml::node& n) -> Status {
    if (n.is_integer()) {
      out = static_cast<double>(n.as_integer()->get());
    } else if (n.is_floating_point()) {
      out = n.as_floating_point()->get();
    } else {
      return InvalidArgument("must be a number");
    }
    if (out < 0) return InvalidArgument("must not be negative");
    return Status::Ok();
  };
}

// A count: a number, or text with a K/M/B/T suffix ("15T").
std::function<Status(const toml::node&)> CountOf(double& out) {
  return [&out](const toml::node& n) -> Status {
    if (n.is_string()) {
      SHOAL_ASSIGN_OR_RETURN(out, ParseCount(n.as_string()->get()));
      return Status::Ok();
    }
    return Number(out)(n);
  };
}

std::function<Status(const toml::node&)> Int(int& out, int lo, int hi) {
  return [&out, lo, hi](const toml::node& n) -> Status {
    if (!n.is_integer()) return InvalidArgument("must be an integer");
    const int64_t v = n.as_integer()->get();
    if (v < lo || v > hi)
      return InvalidArgument(fmt::format("{} is out of range [{}, {}]", v, lo, hi));
    out = static_cast<int>(v);
    return Status::Ok();
  };
}

std::function<Status(const toml::node&)> Text(std::string& out) {
  return [&out](const toml::node& n) -> Status {
    if (!n.is_string()) return InvalidArgument("must be a string");
    out = n.as_string()->get();
    return Status::Ok();
  };
}

// A string turned into a value by `parse` (a precision, say).
template <typename T>
std::function<Status(const toml::node&)> Parsed(T& out, Result<T> (*parse)(std::string_view)) {
  return [&out, parse](const toml::node& n) -> Status {
    if (!n.is_string()) return InvalidArgument("must be a string");
    SHOAL_ASSIGN_OR_RETURN(out, parse(n.as_string()->get()));
    return Status::Ok();
  };
}

std::function<Status(const toml::node&)> Flag(bool& out) {
  return [&out](const toml::node& n) -> Status {
    if (!n.is_boolean()) return InvalidArgument("must be true or false");
    out = n.as_boolean()->get();
    return Status::Ok();
  };
}

// The model of a [[training]] or [[inference]] table: a preset, a shape, or
// only a parameter count (then a GPT shape of the usual aspect ratio).
struct ModelKeys {
  std::string preset;
  double params = 0;
  ModelShape shape;
  bool gated = false, gated_set = false;

  std::vector<Key> Keys() {
    return {
        {"model", Text(preset)},
        {"params", CountOf(params)},
        {"layers", Int(shape.layers, 1, 1000)},
        {"hidden", Int(shape.hidden, 1, 1 << 20)},
        {"heads", Int(shape.heads, 1, 4096)},
        {"kv_heads", Int(shape.kv_heads, 1, 4096)},
        {"ffn", Int(shape.ffn, 1, 1 << 22)},
        {"vocab", Int(shape.vocab, 1, 1 << 24)},
        {"seq", Int(shape.seq, 1, 1 << 24)},
        {"gated_mlp",
         [this](const toml::node& n) {
           gated_set = true;
           return Flag(gated)(n);
         }},
    };
  }

  Result<ModelShape> Build(std::string_view where) const {
    ModelShape m;
    if (!preset.empty()) {
      SHOAL_ASSIGN_OR_RETURN(m, FindModelPreset(preset));
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
      return InvalidArgument(
          fmt::format("{}: give model (a preset: {}), a shape (layers, hidden, heads), "
                      "or params",
                      where, Join(ModelPresetNames(), ", ")));
    }
    // Shape keys given beside a preset override it.
    if (!preset.empty()) {
      if (shape.seq > 0) m.seq = shape.seq;
      if (shape.vocab > 0) m.vocab = shape.vocab;
    }
    if (gated_set) m.gated_mlp = gated;
    Status s = m.Validate();
    if (!s.ok()) return InvalidArgument(fmt::format("{}: {}", where, s.message()));
    return m;
  }
};

Result<std::vector<const toml::table*>> Tables(std::string_view origin, const toml::table& top,
                                               std::string_view key) {
  std::vector<const toml::table*> out;
  const toml::node* n = top.get(key);
  if (n == nullptr) return out;
  const toml::array* array = n->as_array();
  if (array == nullptr)
    return InvalidArgument(fmt::format("{}: write [[{}]] tables", Where(origin, *n, key), key));
  for (const toml::node& e : *array) {
    if (!e.is_table())
      return InvalidArgument(fmt::format("{}: write [[{}]] tables", Where(origin, e, key), key));
    out.push_back(e.as_table());
  }
  return out;
}

Status ReadConstraints(std::string_view origin, const toml::table& t, Workload& w) {
  std::string cooling;
  double site_mw = 0;
  std::vector<Key> keys = {
      {"gpus",
       [&](const toml::node& n) -> Status {
         const toml::array* a = n.as_array();
         if (a == nullptr)
           return InvalidArgument("must be a list of GPU models, e.g. [\"H100\", \"B200\"]");
         for (const toml::node& e : *a) {
           if (!e.is_string()) return InvalidArgument("must be a list of GPU models");
           w.gpu_models.push_back(e.as_string()->get());
         }
         return Status::Ok();
       }},
      {"budget_usd", Number(w.site.budget_usd)},
      {"rack_power_kw", Number(w.site.rack_power_kw)},
      {"site_power_kw", Number(w.site.site_power_kw)},
      {"site_power_mw", Number(site_mw)},
      {"cooling", Text(cooling)},
      {"pue", Number(w.site.pue)},
      {"electricity_usd_per_kwh", Number(w.site.electricity_usd_per_kwh)},
      {"oversubscription", Number(w.site.oversubscription)},
      {"psu_redundancy", Int(w.site.psu_redundancy, 0, 8)},
      {"gpu_price",
       [&](const toml::node& n) -> Status {
         const toml::table* prices = n.as_table();
         if (prices == nullptr) return InvalidArgument("must be a table of model = USD");
         for (auto&& [model, price] : *prices) {
           const catalog::GpuSpec* gpu = catalog::FindGpu(model.str());
           if (gpu == nullptr) return InvalidArgument(fmt::format("unknown GPU '{}'", model.str()));
           double usd = 0;
           SHOAL_RETURN_IF_ERROR(Number(usd)(price));
           w.site.gpu_price_usd[std::string(gpu->model)] = usd;
         }
         return Status::Ok();
       }},
  };
  SHOAL_RETURN_IF_ERROR(ReadKeys(origin, t, "constraints", keys));
  if (site_mw > 0) w.site.site_power_kw = site_mw * 1000;
  if (!cooling.empty()) {
    const std::string c = ToLower(cooling);
    if (c == "air") {
      w.site.cooling = Cooling::kAir;
    } else if (c == "liquid") {
      w.site.cooling = Cooling::kLiquid;
    } else if (c != "any") {
      return InvalidArgument(
          fmt::format("{}: constraints.cooling: use air, liquid or any", origin));
    }
  }
  if (w.site.pue < 1)
    return InvalidArgument(fmt::format("{}: constraints.pue must be at least 1", origin));
  if (w.site.oversubscription < 1) {
    return InvalidArgument(
        fmt::format("{}: constraints.oversubscription must be at least 1", origin));
  }
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
  toml::table top;
  try {
    top = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(fmt::format("{}:{}:{}: {}", origin, e.source().begin.line,
                                       e.source().begin.column, e.description()));
  }
  Workload w;
  SHOAL_RETURN_IF_ERROR(ReadKeys(origin, top, "",
                                 {{"name", Text(w.name)},
                                  {"constraints", [](const toml::node&) { return Status::Ok(); }},
                                  {"training", [](const toml::node&) { return Status::Ok(); }},
                                  {"inference", [](const toml::node&) { return Status::Ok(); }},
                                  {"general", [](const toml::node&) { return Status::Ok(); }}}));
  if (const toml::node* c = top.get("constraints")) {
    if (!c->is_table())
      return InvalidArgument(
          fmt::format("{}: write a [constraints] table", Where(origin, *c, "constraints")));
    SHOAL_RETURN_IF_ERROR(ReadConstraints(origin, *c->as_table(), w));
  }

  SHOAL_ASSIGN_OR_RETURN(auto training, Tables(origin, top, "training"));
  for (size_t i = 0; i < training.size(); ++i) {
    const std::string path = fmt::format("training[{}]", i + 1);
    TrainingWorkload t;
    ModelKeys model;
    double days = 0;
    int gpus = 0;
    double batch_tokens = 0;
    std::vector<Key> keys = model.Keys();
    keys.insert(keys.end(), {{"name", Text(t.name)},
                             {"tokens", CountOf(t.tokens)},
                             {"days", Number(days)},
                             {"gpus", Int(gpus, 1, 10'000'000)},
                             {"precision", Parsed(t.format, ParseNumberFormat)},
                             {"global_batch_tokens", CountOf(batch_tokens)}});
    SHOAL_RETURN_IF_ERROR(ReadKeys(origin, *training[i], path, keys));
    const std::string where = Where(origin, *training[i], path);
    SHOAL_ASSIGN_OR_RETURN(t.model, model.Build(where));
    if (t.tokens <= 0)
      return InvalidArgument(fmt::format("{}: give tokens (e.g. tokens = \"15T\")", where));
    if ((days > 0) == (gpus > 0)) {
      return InvalidArgument(
          fmt::format("{}: give either days (a deadline) or gpus (a cluster size)", where));
    }
    if (days > 0) t.days = days;
    if (gpus > 0) t.gpus = gpus;
    if (batch_tokens > 0 && batch_tokens < t.model.seq) {
      return InvalidArgument(
          fmt::format("{}: global_batch_tokens is less than one sequence", where));
    }
    t.global_batch_tokens = batch_tokens > 0 ? batch_tokens : DefaultBatchTokens(t.model);
    w.training.push_back(std::move(t));
  }

  SHOAL_ASSIGN_OR_RETURN(auto inference, Tables(origin, top, "inference"));
  for (size_t i = 0; i < inference.size(); ++i) {
    const std::string path = fmt::format("inference[{}]", i + 1);
    InferenceWorkload inf;
    ModelKeys model;
    double kv_bytes = 0;
    InferenceTarget& tg = inf.target;
    std::vector<Key> keys = model.Keys();
    keys.insert(keys.end(), {{"name", Text(inf.name)},
                             {"tokens_per_s", CountOf(tg.output_tokens_per_s)},
                             {"requests_per_s", Number(tg.requests_per_s)},
                             {"context", Int(tg.context, 0, 1 << 24)},
                             {"output", Int(tg.output, 1, 1 << 24)},
                             {"tpot_ms", Number(tg.tpot_ms)},
                             {"ttft_ms", Number(tg.ttft_ms)},
                             {"precision", Parsed(tg.weight_bytes, ParseServingBytes)},
                             {"kv_precision", Parsed(kv_bytes, ParseServingBytes)}});
    SHOAL_RETURN_IF_ERROR(ReadKeys(origin, *inference[i], path, keys));
    const std::string where = Where(origin, *inference[i], path);
    SHOAL_ASSIGN_OR_RETURN(inf.model, model.Build(where));
    // KV caches stay in 8 bits or more unless told otherwise.
    tg.kv_bytes = kv_bytes > 0 ? kv_bytes : std::max(1.0, tg.weight_bytes);
    if (tg.output_tokens_per_s <= 0 && tg.requests_per_s <= 0) {
      return InvalidArgument(fmt::format("{}: give tokens_per_s or requests_per_s", where));
    }
    w.inference.push_back(std::move(inf));
  }

  SHOAL_ASSIGN_OR_RETURN(auto general, Tables(origin, top, "general"));
  for (size_t i = 0; i < general.size(); ++i) {
    const std::string path = fmt::format("general[{}]", i + 1);
    GeneralWorkload g;
    SHOAL_RETURN_IF_ERROR(ReadKeys(
        origin, *general[i], path,
        {{"name", Text(g.name)}, {"gpus", Int(g.gpus, 0, 1'000'000)}, {"trace", Text(g.from)}}));
    if (g.gpus == 0 && g.from.empty()) {
      return InvalidArgument(
          fmt::format("{}: give gpus or trace", Where(origin, *general[i], path)));
    }
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
