#include "plan/validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "catalog/gpus.h"
#include "core/strings.h"
#include "plan/inference.h"

namespace shoal::plan {

namespace {

// vTrain's runs: Megatron-DeepSpeed with the GPT-2 vocabulary, on one DGX
// A100 node. Its README gives neither the A100's memory size nor the
// vocabulary padding; Shoal assumes the 80 GB part and no padding beyond a
// multiple of TP (docs/plan.md).
constexpr int kVtrainVocab = 50257;
constexpr std::string_view kVtrainGpu = "A100-SXM4-80GB";

// The lines of a text, with their numbers, skipping blank ones and a BOM.
std::vector<std::pair<int, std::string_view>> Lines(std::string_view text) {
  if (StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<std::pair<int, std::string_view>> lines;
  int number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++number;
    if (!Trim(line).empty()) lines.emplace_back(number, line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

class Columns {
 public:
  explicit Columns(const std::vector<std::string>& header) {
    for (size_t i = 0; i < header.size(); ++i)
      index_[std::string(Trim(header[i]))] = i;
  }
  Status Require(std::initializer_list<std::string_view> names) const {
    for (std::string_view n : names) {
      if (!index_.contains(std::string(n)))
        return InvalidArgument(fmt::format("no column '{}'", n));
    }
    return Status::Ok();
  }
  std::string_view Get(const std::vector<std::string>& row, std::string_view name) const {
    auto it = index_.find(std::string(name));
    if (it == index_.end() || it->second >= row.size()) return {};
    return Trim(row[it->second]);
  }

 private:
  std::map<std::string, size_t> index_;
};

double Number(std::string_view s) {
  auto v = ParseDouble(s);
  return v.ok() ? *v : 0;
}

// "MT-NLG (Smith2022 ...)" -> "MT-NLG"; "Llama3 paper (arXiv ...) Table 4" -> "Llama3 paper".
std::string GroupOf(std::string_view source) {
  const size_t paren = source.find(" (");
  return std::string(Trim(source.substr(0, paren)));
}

// The row's model: a preset when the name is one (Llama 3 has grouped-query
// attention and a gated MLP that the columns cannot say), else a GPT of the
// columns' shape.
ModelShape ModelOfRow(std::string_view name, int layers, int hidden, int heads, int seq,
                      int vocab) {
  const std::string lower = ToLower(name);
  if (lower.find("llama-3") != std::string::npos && lower.find("405b") != std::string::npos) {
    ModelShape m = *FindModelPreset("llama3-405b");
    m.seq = seq;
    return m;
  }
  return GptShape(std::string(name), layers, hidden, heads, seq, vocab,
                  "published_training_runs.csv columns");
}

}  // namespace

std::vector<std::string> SplitCsvLine(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back().push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back().push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back().push_back(c);
    }
  }
  return fields;
}

void ValidationReport::Summarise() {
  std::map<std::string, ValidationGroup> by_group;
  std::vector<std::string> order;
  published = ValidationGroup{.group = "published runs"};
  vtrain = ValidationGroup{.group = "vTrain"};
  all = ValidationGroup{.group = "all rows"};
  worst = -1;
  auto add = [](ValidationGroup& g, double e) {
    g.mae += std::abs(e);
    g.worst = std::max(g.worst, std::abs(e));
    ++g.rows;
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const ValidationRow& r = rows[i];
    if (r.skipped) continue;
    if (!by_group.contains(r.group)) order.push_back(r.group);
    ValidationGroup& g = by_group[r.group];
    g.group = r.group;
    add(g, r.error);
    add(r.group == "vTrain" ? vtrain : published, r.error);
    add(all, r.error);
    if (worst < 0 || std::abs(r.error) > std::abs(rows[static_cast<size_t>(worst)].error)) {
      worst = static_cast<int>(i);
    }
  }
  serving_summary = ValidationGroup{.group = "TensorRT-LLM serving"};
  for (const ValidationRow& r : serving) {
    if (!r.skipped) add(serving_summary, r.error);
  }
  if (serving_summary.rows > 0) serving_summary.mae /= serving_summary.rows;
  groups.clear();
  for (const std::string& name : order)
    groups.push_back(by_group[name]);
  for (ValidationGroup& g : groups) {
    if (g.rows > 0) g.mae /= g.rows;
  }
  for (ValidationGroup* g : {&published, &vtrain, &all}) {
    if (g->rows > 0) g->mae /= g->rows;
  }
}

Result<std::vector<ValidationRow>> ValidatePublishedRuns(std::string_view csv_text) {
  const auto lines = Lines(csv_text);
  if (lines.empty()) return InvalidArgument("published runs: empty file");
  const Columns col(SplitCsvLine(lines.front().second));
  SHOAL_RETURN_IF_ERROR(
      col.Require({"source", "model", "params_B", "layers", "hidden", "heads", "seq", "vocab",
                   "gpu", "gpus", "tp", "pp", "dp", "global_batch", "tflops_per_gpu", "iter_time_s",
                   "iter_time_kind", "notes"}));
  std::vector<ValidationRow> out;
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto& [line_number, line] = lines[i];
    const std::vector<std::string> f = SplitCsvLine(line);
    ValidationRow row;
    row.line = line_number;
    const std::string_view source = col.Get(f, "source");
    const std::string_view name = col.Get(f, "model");
    row.group = GroupOf(source);
    row.gpus = static_cast<int>(Number(col.Get(f, "gpus")));
    const std::string_view gpu_text = col.Get(f, "gpu");
    row.gpu = std::string(gpu_text.substr(0, gpu_text.find(' ')));
    row.label = fmt::format("{} on {} x {}", name, row.gpus, row.gpu);
    const catalog::GpuSpec* gpu = catalog::FindGpu(row.gpu);
    const bool modern = StartsWith(source, "Megatron-Core") || StartsWith(source, "Llama3");
    const int layers = static_cast<int>(Number(col.Get(f, "layers")));
    const int hidden = static_cast<int>(Number(col.Get(f, "hidden")));
    const int heads = static_cast<int>(Number(col.Get(f, "heads")));
    const int seq = static_cast<int>(Number(col.Get(f, "seq")));
    const int vocab = static_cast<int>(Number(col.Get(f, "vocab")));
    const double tflops = Number(col.Get(f, "tflops_per_gpu"));
    const double iter_s = Number(col.Get(f, "iter_time_s"));
    const std::string_view batch_text = col.Get(f, "global_batch");
    const std::string_view notes = col.Get(f, "notes");
    if (gpu == nullptr) {
      row.skipped = true;
      row.skip_reason = fmt::format("GPU '{}' is not in the catalogue", gpu_text);
      out.push_back(std::move(row));
      continue;
    }
    row.gpu = std::string(gpu->model);
    row.label = fmt::format("{} on {} x {}", name, row.gpus, row.gpu);
    if (batch_text.empty() || vocab <= 0 || (tflops <= 0 && iter_s <= 0)) {
      row.skipped = true;
      row.skip_reason =
          "the row gives no step time or throughput (a time-to-train without the "
          "tokens it covers, or no batch or vocabulary)";
      out.push_back(std::move(row));
      continue;
    }
    TrainingJob job;
    job.model = ModelOfRow(name, layers, hidden, heads, seq, vocab);
    job.stack = modern ? Stack::kModern : Stack::kMegatron2021;
    job.format = modern ? NumberFormat::kBf16 : NumberFormat::kFp16;
    // "16M tokens" is Llama 3's 16 Mi tokens per step.
    if (batch_text.find("M tokens") != std::string_view::npos) {
      const double mi_tokens = Number(batch_text.substr(0, batch_text.find('M')));
      job.global_batch = static_cast<int64_t>(mi_tokens * 1024 * 1024) / seq;
    } else {
      job.global_batch = static_cast<int64_t>(Number(batch_text));
    }
    LayoutConstraints c;
    c.tp = std::max(1, static_cast<int>(Number(col.Get(f, "tp"))));
    c.pp = std::max(1, static_cast<int>(Number(col.Get(f, "pp"))));
    int cp = 1;
    if (const size_t at = notes.find("cp="); at != std::string_view::npos) {
      cp =
          std::max(1, static_cast<int>(Number(notes.substr(at + 3, notes.find(';', at) - at - 3))));
    }
    c.cp = cp;
    c.dp = row.gpus / (*c.tp * *c.pp * cp);
    if (!modern) c.recompute = Recompute::kFull;  // the 2021 papers recompute activations
    if (name.find("ZeRO-3") != std::string_view::npos) c.zero = 3;

    // The measured step: as reported, or from the reported TFLOP/s per GPU
    // and the FLOP count the source used.
    const double b = static_cast<double>(job.global_batch), s = seq, l = layers, h = hidden,
                 v = vocab;
    if (col.Get(f, "iter_time_kind") == "measured" ||
        (iter_s > 0 && StartsWith(source, "Narayanan2021_Table1"))) {
      row.measured_s = iter_s;
      row.measured_how =
          col.Get(f, "iter_time_kind") == "measured" ? "measured" : "as derived in the row";
    } else if (StartsWith(source, "Narayanan2021")) {
      row.measured_s = 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)) /
                       (row.gpus * tflops * 1e12);
      row.measured_how =
          "96BslH^2(1+s/6h+V/16lh) / (GPUs x TFLOP/s): Megatron-LM's count with recompute";
    } else if (StartsWith(source, "Megatron-Core")) {
      row.measured_s = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h)) /
                       (row.gpus * tflops * 1e12);
      row.measured_how = "72BslH^2(1+s/6h+V/12lh) / (GPUs x TFLOP/s): Megatron-LM's model FLOPs";
    } else {
      row.measured_s = job.model.TrainFlopsPerToken() * b * s / (row.gpus * tflops * 1e12);
      row.measured_how = "(6N + 12lhs) x tokens / (GPUs x TFLOP/s): PaLM's model FLOPs";
    }
    const TrainingSystem sys = MakeTrainingSystem(*gpu, NodeDesignFor(*gpu));
    auto choice = BestLayout(job, row.gpus, sys, c);
    if (!choice.ok()) {
      row.skipped = true;
      row.skip_reason = "the model finds no layout: " + choice.status().message();
      out.push_back(std::move(row));
      continue;
    }
    row.layout = choice->layout.ToString();
    row.predicted_s = choice->step.step_s;
    row.error = row.predicted_s / row.measured_s - 1;
    out.push_back(std::move(row));
  }
  return out;
}

Result<std::vector<ValidationRow>> ValidateInferenceAnchors(std::string_view csv_text) {
  const auto lines = Lines(csv_text);
  if (lines.empty()) return InvalidArgument("inference anchors: empty file");
  const Columns col(SplitCsvLine(lines.front().second));
  SHOAL_RETURN_IF_ERROR(
      col.Require({"model", "gpu", "tp", "precision", "isl", "osl", "batch_or_load", "value"}));
  std::vector<ValidationRow> out;
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto& [line_number, line] = lines[i];
    const std::vector<std::string> f = SplitCsvLine(line);
    if (col.Get(f, "batch_or_load") != "max-throughput") continue;
    const std::string_view name = col.Get(f, "model");
    const std::string_view gpu_text = col.Get(f, "gpu");
    ValidationRow row;
    row.group = "TensorRT-LLM serving";
    row.line = line_number;
    const int tp = std::max(1, static_cast<int>(Number(col.Get(f, "tp"))));
    const int isl = static_cast<int>(Number(col.Get(f, "isl")));
    const int osl = static_cast<int>(Number(col.Get(f, "osl")));
    row.label =
        fmt::format("{} {} TP{} {} {}/{}", name, gpu_text, tp, col.Get(f, "precision"), isl, osl);
    row.gpus = tp;
    row.measured_s = Number(col.Get(f, "value"));
    row.measured_how = "output tokens/s at maximum throughput";
    // Llama 3.1 and 3.3 share Llama 3's shapes.
    std::string lower = ToLower(name);
    std::string preset;
    if (!StartsWith(lower, "llama-3")) lower.clear();
    if (lower.find("8b") != std::string::npos) preset = "llama3-8b";
    if (lower.find("70b") != std::string::npos) preset = "llama3-70b";
    if (lower.find("405b") != std::string::npos) preset = "llama3-405b";
    const catalog::GpuSpec* gpu = catalog::FindGpu(gpu_text.substr(0, gpu_text.find(' ')));
    auto bytes = ParseServingBytes(col.Get(f, "precision"));
    if (preset.empty() || gpu == nullptr || !bytes.ok() || row.measured_s <= 0) {
      row.skipped = true;
      row.skip_reason = "model, GPU or precision not known to the planner";
      out.push_back(std::move(row));
      continue;
    }
    row.gpu = std::string(gpu->model);
    const ModelShape m = *FindModelPreset(preset);
    const TrainingSystem sys = MakeTrainingSystem(*gpu, NodeDesignFor(*gpu));
    InferenceTarget t;
    t.context = isl;
    t.output = osl;
    t.weight_bytes = *bytes;
    t.kv_bytes = std::max(1.0, *bytes);
    // The engine picks its batch; so does the model, within memory.
    const double capacity = static_cast<double>(gpu->memory_mib) * 1024 * 1024 * 0.9;
    double best = 0;
    for (int batch = 1; batch <= 4096; batch *= 2) {
      const InferenceEstimate e = EstimateInference(m, t, sys, tp, batch);
      if (e.weights_bytes_per_gpu + e.kv_bytes_per_gpu > capacity) break;
      if (e.tokens_per_s_per_replica > best) {
        best = e.tokens_per_s_per_replica;
        row.layout = fmt::format("TP{} batch {}", tp, batch);
      }
    }
    if (best <= 0) {
      row.skipped = true;
      row.skip_reason = "does not fit at this TP";
    } else {
      row.predicted_s = best;
      row.error = best / row.measured_s - 1;
    }
    out.push_back(std::move(row));
  }
  return out;
}

Result<std::vector<ValidationRow>> ValidateVtrain(std::string_view csv_text, int every) {
  const auto lines = Lines(csv_text);
  if (lines.empty()) return InvalidArgument("vTrain: empty file");
  const catalog::GpuSpec* gpu = catalog::FindGpu(kVtrainGpu);
  const TrainingSystem sys = MakeTrainingSystem(*gpu, NodeDesignFor(*gpu));
  std::vector<ValidationRow> out;
  every = std::max(1, every);
  for (size_t i = 1; i < lines.size(); i += static_cast<size_t>(every)) {
    const auto& [line_number, line] = lines[i];
    const std::vector<std::string> f = SplitCsvLine(line);
    if (f.size() < 11)
      return InvalidArgument(fmt::format("vTrain line {}: expected 11 fields", line_number));
    std::vector<double> x;
    for (const std::string& field : f) {
      auto v = ParseDouble(field);
      if (!v.ok())
        return InvalidArgument(
            fmt::format("vTrain line {}: {}", line_number, v.status().message()));
      x.push_back(*v);
    }
    // # GPUs, global batch, micro batch, hidden, heads, layers, seq, TP, DP, PP, iteration ms
    TrainingJob job;
    job.model =
        GptShape("GPT", static_cast<int>(x[5]), static_cast<int>(x[3]), static_cast<int>(x[4]),
                 static_cast<int>(x[6]), kVtrainVocab, "vTrain ground_truth_single.csv");
    job.stack = Stack::kMegatron2021;
    job.format = NumberFormat::kFp16;
    job.pad_vocab = false;
    job.global_batch = static_cast<int64_t>(x[1]);
    LayoutConstraints c;
    c.micro_batch = static_cast<int>(x[2]);
    c.tp = static_cast<int>(x[7]);
    c.dp = static_cast<int>(x[8]);
    c.pp = static_cast<int>(x[9]);
    c.cp = 1;
    c.virtual_stages = 1;
    ValidationRow row;
    row.group = "vTrain";
    row.line = line_number;
    row.gpu = std::string(gpu->model);
    row.gpus = static_cast<int>(x[0]);
    row.label = fmt::format("GPT h{} L{} gbs{} on {} GPUs", job.model.hidden, job.model.layers,
                            job.global_batch, row.gpus);
    row.measured_s = x[10] / 1000;
    row.measured_how = "measured";
    auto choice = BestLayout(job, row.gpus, sys, c);
    if (!choice.ok()) {
      row.skipped = true;
      row.skip_reason = "the model finds no layout: " + choice.status().message();
    } else {
      row.layout = choice->layout.ToString();
      row.predicted_s = choice->step.step_s;
      row.error = row.predicted_s / row.measured_s - 1;
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace shoal::plan
