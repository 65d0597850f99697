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
// # GPUs, global batch, micro batch, hidden, heads, layers, seq, TP, DP, PP,
// iteration time (ms).
constexpr size_t kVtrainFields = 11;

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

// A CSV file read strictly: the header names known columns only, each
// once, the required ones among them; every row has as many fields as the
// header (an extra or missing comma would shift every value after it); a
// number that does not read is an error naming its line and column.
class CsvTable {
 public:
  struct Row {
    int line = 0;
    std::vector<std::string> fields;
  };

  static Result<CsvTable> Read(std::string_view text, std::string_view file,
                               const std::vector<std::string_view>& known,
                               const std::vector<std::string_view>& required) {
    const auto lines = Lines(text);
    if (lines.empty()) return InvalidArgument(fmt::format("{}: empty file", file));
    CsvTable t;
    t.file_ = std::string(file);
    const std::vector<std::string> header = SplitCsvLine(lines.front().second);
    for (size_t i = 0; i < header.size(); ++i) {
      const std::string name(Trim(header[i]));
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        return InvalidArgument(fmt::format("{} line {}: unknown column '{}'{}", file,
                                           lines.front().first, name,
                                           UnknownNameHint(name, known)));
      }
      if (!t.index_.emplace(name, i).second) {
        return InvalidArgument(
            fmt::format("{} line {}: column '{}' twice", file, lines.front().first, name));
      }
    }
    for (std::string_view name : required) {
      if (!t.index_.contains(std::string(name)))
        return InvalidArgument(fmt::format("{}: no column '{}'", file, name));
    }
    for (size_t i = 1; i < lines.size(); ++i) {
      Row row{lines[i].first, SplitCsvLine(lines[i].second)};
      if (row.fields.size() != header.size()) {
        return InvalidArgument(fmt::format("{} line {}: {} fields where the header names {}", file,
                                           row.line, row.fields.size(), header.size()));
      }
      t.rows_.push_back(std::move(row));
    }
    return t;
  }

  const std::vector<Row>& rows() const { return rows_; }
  // The field, trimmed; empty where the file has no such column.
  std::string_view Get(const Row& row, std::string_view column) const {
    auto it = index_.find(std::string(column));
    return it == index_.end() ? std::string_view() : Trim(row.fields[it->second]);
  }
  // The number in the field; `empty` when the field is.
  Result<double> Number(const Row& row, std::string_view column, double empty = 0) const {
    const std::string_view text = Get(row, column);
    if (text.empty()) return empty;
    auto v = ParseDouble(text);
    if (!v.ok()) return Error(row, column, fmt::format("'{}' is not a number", text));
    return *v;
  }
  // A whole number from `least` up; `empty` when the field is empty.
  Result<int> Int(const Row& row, std::string_view column, int least, int empty) const {
    SHOAL_ASSIGN_OR_RETURN(double v, Number(row, column, empty));
    if (v != std::floor(v) || v < least || v > 1e9)
      return Error(row, column, fmt::format("'{}' is not a whole number from {}", v, least));
    return static_cast<int>(v);
  }
  Status Error(const Row& row, std::string_view column, std::string_view message) const {
    return InvalidArgument(fmt::format("{} line {}: {}: {}", file_, row.line, column, message));
  }

 private:
  std::string file_;
  std::map<std::string, size_t> index_;
  std::vector<Row> rows_;
};

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
  published_searched = ValidationGroup{.group = "published runs, searched layouts"};
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
    if (r.searched_s > 0) add(published_searched, r.searched_error);
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
  for (ValidationGroup* g : {&published, &published_searched, &vtrain, &all}) {
    if (g->rows > 0) g->mae /= g->rows;
  }
}

namespace {

constexpr std::string_view kPublishedFile = "published_training_runs.csv";

// What a row states about how its run was made beyond the parallel sizes:
// each column pins its knob; an empty field leaves the stack and precision
// to what the row's source implies (Megatron-Core and Llama 3 rows are
// modern, bf16; the others Megatron-LM 2021, fp16), and the other knobs to
// the row's notes (cp=N), its name (ZeRO-3), the 2021 papers' full
// recompute, or the search.
Status ReadStatedKnobs(const CsvTable& t, const CsvTable::Row& row, TrainingJob& job,
                       LayoutConstraints& c) {
  const std::string_view source = t.Get(row, "source");
  const std::string_view notes = t.Get(row, "notes");
  const bool modern_source = StartsWith(source, "Megatron-Core") || StartsWith(source, "Llama3");
  if (const std::string_view stack = t.Get(row, "stack"); !stack.empty()) {
    if (stack != TraitsOf(Stack::kModern).name && stack != TraitsOf(Stack::kMegatron2021).name) {
      return t.Error(row, "stack",
                     fmt::format("'{}': use {} or {}", stack, TraitsOf(Stack::kModern).name,
                                 TraitsOf(Stack::kMegatron2021).name));
    }
    job.stack = stack == TraitsOf(Stack::kModern).name ? Stack::kModern : Stack::kMegatron2021;
  } else {
    job.stack = modern_source ? Stack::kModern : Stack::kMegatron2021;
  }
  const bool modern = job.stack == Stack::kModern;
  job.format = modern ? NumberFormat::kBf16 : NumberFormat::kFp16;
  if (const std::string_view p = t.Get(row, "precision"); !p.empty()) {
    auto f = ParseNumberFormat(p);
    if (!f.ok()) return t.Error(row, "precision", f.status().message());
    job.format = *f;
  }
  if (const std::string_view rc = t.Get(row, "recompute"); !rc.empty()) {
    bool known = false;
    for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      if (rc == RecomputeName(r)) {
        c.recompute = r;
        known = true;
      }
    }
    if (!known) return t.Error(row, "recompute", fmt::format("'{}': none, selective or full", rc));
  } else if (!modern) {
    c.recompute = Recompute::kFull;  // the 2021 papers recompute activations
  }
  if (const std::string_view sp = t.Get(row, "sequence_parallel"); !sp.empty()) {
    if (sp != "yes" && sp != "no") return t.Error(row, "sequence_parallel", "yes or no");
    c.sequence_parallel = sp == "yes";
  }
  int cp_note = 1;
  if (const size_t at = notes.find("cp="); at != std::string_view::npos) {
    auto v = ParseInt(notes.substr(at + 3, notes.find(';', at) - at - 3));
    if (!v.ok() || *v < 1) return t.Error(row, "notes", "cp= is not a whole number from 1");
    cp_note = static_cast<int>(*v);
  }
  SHOAL_ASSIGN_OR_RETURN(c.cp, t.Int(row, "cp", 1, cp_note));
  if (!t.Get(row, "micro_batch").empty()) {
    SHOAL_ASSIGN_OR_RETURN(c.micro_batch, t.Int(row, "micro_batch", 1, 1));
  }
  if (!t.Get(row, "virtual_stages").empty()) {
    SHOAL_ASSIGN_OR_RETURN(c.virtual_stages, t.Int(row, "virtual_stages", 1, 1));
  }
  if (!t.Get(row, "zero").empty()) {
    SHOAL_ASSIGN_OR_RETURN(c.zero, t.Int(row, "zero", 0, 0));
    if (*c.zero > 3) return t.Error(row, "zero", "a ZeRO stage is 0 to 3");
  } else if (t.Get(row, "model").find("ZeRO-3") != std::string_view::npos) {
    c.zero = 3;
  }
  return Status::Ok();
}

// The measured step: as reported, or from the reported TFLOP/s per GPU and
// the FLOP count the source used.
void MeasuredStep(std::string_view source, std::string_view kind, double iter_s, double tflops,
                  const TrainingJob& job, ValidationRow& row) {
  const double b = static_cast<double>(job.global_batch), s = job.model.seq, l = job.model.layers,
               h = job.model.hidden, v = job.model.vocab;
  if (kind == "measured" || (iter_s > 0 && StartsWith(source, "Narayanan2021_Table1"))) {
    row.measured_s = iter_s;
    row.measured_how = kind == "measured" ? "measured" : "as derived in the row";
  } else if (StartsWith(source, "Narayanan2021")) {
    row.measured_s =
        96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)) / (row.gpus * tflops * 1e12);
    row.measured_how =
        "96BslH^2(1+s/6h+V/16lh) / (GPUs x TFLOP/s): Megatron-LM's count with recompute";
  } else if (StartsWith(source, "Megatron-Core")) {
    row.measured_s =
        72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h)) / (row.gpus * tflops * 1e12);
    row.measured_how = "72BslH^2(1+s/6h+V/12lh) / (GPUs x TFLOP/s): Megatron-LM's model FLOPs";
  } else {
    row.measured_s = job.model.TrainFlopsPerToken() * b * s / (row.gpus * tflops * 1e12);
    row.measured_how = "(6N + 12lhs) x tokens / (GPUs x TFLOP/s): PaLM's model FLOPs";
  }
}

// The planner's own choice for the same run, its software, precision and
// (where stated) sequence parallelism kept: what a plan of this workload
// would have predicted.
void CompareSearched(const TrainingJob& job, const TrainingSystem& sys,
                     const LayoutConstraints& pinned, ValidationRow& row) {
  LayoutConstraints software;
  software.sequence_parallel = pinned.sequence_parallel;
  auto searched = BestLayout(job, row.gpus, sys, software);
  if (!searched.ok()) {
    row.searched_failure = searched.status().message();
    return;
  }
  row.searched_layout = searched->layout.ToString();
  row.searched_s = searched->step.step_s;
  row.searched_error = row.searched_s / row.measured_s - 1;
}

// One row of the published runs: compared with its own layout pinned and
// with the planner's searched one, skipped with the reason, or an error.
Result<ValidationRow> PublishedRun(const CsvTable& t, const CsvTable::Row& f) {
  ValidationRow row;
  row.line = f.line;
  const std::string_view source = t.Get(f, "source");
  const std::string_view name = t.Get(f, "model");
  row.group = GroupOf(source);
  SHOAL_ASSIGN_OR_RETURN(row.gpus, t.Int(f, "gpus", 1, 1));
  const std::string_view gpu_text = t.Get(f, "gpu");
  row.gpu = std::string(gpu_text.substr(0, gpu_text.find(' ')));
  row.label = fmt::format("{} on {} x {}", name, row.gpus, row.gpu);
  SHOAL_ASSIGN_OR_RETURN(const int layers, t.Int(f, "layers", 0, 0));
  SHOAL_ASSIGN_OR_RETURN(const int hidden, t.Int(f, "hidden", 0, 0));
  SHOAL_ASSIGN_OR_RETURN(const int heads, t.Int(f, "heads", 0, 0));
  SHOAL_ASSIGN_OR_RETURN(const int seq, t.Int(f, "seq", 0, 0));
  SHOAL_ASSIGN_OR_RETURN(const int vocab, t.Int(f, "vocab", 0, 0));
  SHOAL_ASSIGN_OR_RETURN(const double tflops, t.Number(f, "tflops_per_gpu"));
  SHOAL_ASSIGN_OR_RETURN(const double iter_s, t.Number(f, "iter_time_s"));
  const std::string_view batch_text = t.Get(f, "global_batch");
  const catalog::GpuSpec* gpu = catalog::FindGpu(row.gpu);
  if (gpu == nullptr) {
    row.skipped = true;
    row.skip_reason = fmt::format("GPU '{}' is not in the catalogue", gpu_text);
    return row;
  }
  row.gpu = std::string(gpu->model);
  row.label = fmt::format("{} on {} x {}", name, row.gpus, row.gpu);
  if (batch_text.empty() || vocab <= 0 || (tflops <= 0 && iter_s <= 0)) {
    row.skipped = true;
    row.skip_reason =
        "the row gives no step time or throughput (a time-to-train without the "
        "tokens it covers, or no batch or vocabulary)";
    return row;
  }
  TrainingJob job;
  job.model = ModelOfRow(name, layers, hidden, heads, seq, vocab);
  // "16M tokens" is Llama 3's 16 Mi tokens per step.
  if (const size_t m = batch_text.find("M tokens"); m != std::string_view::npos) {
    auto mi_tokens = ParseDouble(batch_text.substr(0, m));
    if (!mi_tokens.ok() || seq <= 0) return t.Error(f, "global_batch", "'N M tokens' with a seq");
    job.global_batch = static_cast<int64_t>(*mi_tokens * 1024 * 1024) / seq;
  } else {
    SHOAL_ASSIGN_OR_RETURN(job.global_batch, t.Int(f, "global_batch", 1, 1));
  }
  LayoutConstraints c;
  SHOAL_RETURN_IF_ERROR(ReadStatedKnobs(t, f, job, c));
  SHOAL_ASSIGN_OR_RETURN(c.tp, t.Int(f, "tp", 1, 1));
  SHOAL_ASSIGN_OR_RETURN(c.pp, t.Int(f, "pp", 1, 1));
  const int model_parallel = *c.tp * *c.pp * *c.cp;
  c.dp = row.gpus / model_parallel;
  SHOAL_ASSIGN_OR_RETURN(const int dp, t.Int(f, "dp", 1, *c.dp));
  if (row.gpus % model_parallel != 0 || dp != *c.dp) {
    return t.Error(f, "dp",
                   fmt::format("TP{} x PP{} x CP{} x DP{} is not the row's {} GPUs", *c.tp, *c.pp,
                               *c.cp, dp, row.gpus));
  }
  MeasuredStep(source, t.Get(f, "iter_time_kind"), iter_s, tflops, job, row);

  const TrainingSystem sys = MakeTrainingSystem(*gpu, NodeDesignFor(*gpu));
  auto choice = BestLayout(job, row.gpus, sys, c);
  if (!choice.ok()) {
    row.skipped = true;
    row.skip_reason = "the model finds no layout: " + choice.status().message();
    return row;
  }
  row.layout = choice->layout.ToString();
  row.predicted_s = choice->step.step_s;
  row.error = row.predicted_s / row.measured_s - 1;
  CompareSearched(job, sys, c, row);
  return row;
}

}  // namespace

Result<std::vector<ValidationRow>> ValidatePublishedRuns(std::string_view csv_text) {
  SHOAL_ASSIGN_OR_RETURN(
      const CsvTable table,
      CsvTable::Read(csv_text, kPublishedFile,
                     {"source",
                      "model",
                      "params_B",
                      "layers",
                      "hidden",
                      "heads",
                      "seq",
                      "vocab",
                      "gpu",
                      "gpus",
                      "tp",
                      "pp",
                      "dp",
                      "global_batch",
                      "tflops_per_gpu",
                      "pct_peak",
                      "mfu_pct",
                      "aggregate_pflops",
                      "iter_time_s",
                      "iter_time_kind",
                      "train_time",
                      "notes",
                      "stack",
                      "precision",
                      "recompute",
                      "sequence_parallel",
                      "micro_batch",
                      "virtual_stages",
                      "zero",
                      "cp"},
                     {"source", "model", "params_B", "layers", "hidden", "heads", "seq", "vocab",
                      "gpu", "gpus", "tp", "pp", "dp", "global_batch", "tflops_per_gpu",
                      "iter_time_s", "iter_time_kind", "notes"}));
  std::vector<ValidationRow> out;
  for (const CsvTable::Row& f : table.rows()) {
    SHOAL_ASSIGN_OR_RETURN(ValidationRow row, PublishedRun(table, f));
    out.push_back(std::move(row));
  }
  return out;
}

Result<std::vector<ValidationRow>> ValidateInferenceAnchors(std::string_view csv_text) {
  SHOAL_ASSIGN_OR_RETURN(
      const CsvTable table,
      CsvTable::Read(csv_text, "inference_anchors.csv",
                     {"model", "gpu", "tp", "precision", "engine", "isl", "osl", "batch_or_load",
                      "metric", "value", "unit", "source"},
                     {"model", "gpu", "tp", "precision", "isl", "osl", "batch_or_load", "value"}));
  std::vector<ValidationRow> out;
  for (const CsvTable::Row& f : table.rows()) {
    if (table.Get(f, "batch_or_load") != "max-throughput") continue;
    const std::string_view name = table.Get(f, "model");
    const std::string_view gpu_text = table.Get(f, "gpu");
    ValidationRow row;
    row.group = "TensorRT-LLM serving";
    row.line = f.line;
    SHOAL_ASSIGN_OR_RETURN(const int tp, table.Int(f, "tp", 1, 1));
    SHOAL_ASSIGN_OR_RETURN(const int isl, table.Int(f, "isl", 0, 0));
    SHOAL_ASSIGN_OR_RETURN(const int osl, table.Int(f, "osl", 0, 0));
    row.label =
        fmt::format("{} {} TP{} {} {}/{}", name, gpu_text, tp, table.Get(f, "precision"), isl, osl);
    row.gpus = tp;
    SHOAL_ASSIGN_OR_RETURN(row.measured_s, table.Number(f, "value"));
    row.measured_how = "output tokens/s at maximum throughput";
    // Llama 3.1 and 3.3 share Llama 3's shapes.
    std::string lower = ToLower(name);
    std::string preset;
    if (!StartsWith(lower, "llama-3")) lower.clear();
    if (lower.find("8b") != std::string::npos) preset = "llama3-8b";
    if (lower.find("70b") != std::string::npos) preset = "llama3-70b";
    if (lower.find("405b") != std::string::npos) preset = "llama3-405b";
    const catalog::GpuSpec* gpu = catalog::FindGpu(gpu_text.substr(0, gpu_text.find(' ')));
    auto bytes = ParseServingBytes(table.Get(f, "precision"));
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
  if (const size_t n = SplitCsvLine(lines.front().second).size(); n != kVtrainFields) {
    return InvalidArgument(
        fmt::format("vTrain line {}: a header of {} columns where {} are expected",
                    lines.front().first, n, kVtrainFields));
  }
  const catalog::GpuSpec* gpu = catalog::FindGpu(kVtrainGpu);
  const TrainingSystem sys = MakeTrainingSystem(*gpu, NodeDesignFor(*gpu));
  std::vector<ValidationRow> out;
  every = std::max(1, every);
  for (size_t i = 1; i < lines.size(); i += static_cast<size_t>(every)) {
    const auto& [line_number, line] = lines[i];
    const std::vector<std::string> f = SplitCsvLine(line);
    if (f.size() != kVtrainFields) {
      return InvalidArgument(fmt::format("vTrain line {}: {} fields where {} are expected",
                                         line_number, f.size(), kVtrainFields));
    }
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
