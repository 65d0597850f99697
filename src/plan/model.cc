#include "plan/model.h"

#include <fmt/format.h>

#include "core/strings.h"

namespace shoal::plan {

namespace {

constexpr std::string_view kCalculon = "calculon-ai/calculon models/{} (Apache-2.0)";

ModelShape Gpt(std::string name, int layers, int hidden, int heads, int seq, int vocab,
               std::string source) {
  return GptShape(std::move(name), layers, hidden, heads, seq, vocab, std::move(source));
}

ModelShape Llama(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn,
                 int seq, int vocab, std::string source) {
  ModelShape m = Gpt(std::move(name), layers, hidden, heads, seq, vocab, std::move(source));
  m.kv_heads = kv_heads;
  m.ffn = ffn;
  m.gated_mlp = true;
  m.dropout = false;
  m.tied_embeddings = false;
  return m;
}

const std::vector<ModelShape>& Presets() {
  // GPT-3 and Megatron models use the GPT-2 BPE vocabulary of 50,257 tokens;
  // Llama 2 uses 32,000 and Llama 3 128,256 (their papers and model cards).
  static const std::vector<ModelShape> presets = {
      // The paper's d_model of 5140 is not 40 heads x 128; 5120 is.
      Gpt("gpt3-13b", 40, 5120, 40, 2048, 50257,
          fmt::format(kCalculon, "gpt3-13B.json") +
              " (hidden 5140 there, as in the GPT-3 paper Table 2.1; 40 heads x 128 = 5120 here)"),
      Gpt("gpt3-175b", 96, 12288, 96, 2048, 50257,
          fmt::format(kCalculon, "gpt3-175B.json") + "; GPT-3 paper Table 2.1"),
      Gpt("megatron-1t", 128, 25600, 160, 2048, 50257, fmt::format(kCalculon, "megatron-1T.json")),
      Gpt("mt-nlg-530b", 105, 20480, 128, 2048, 50272,
          fmt::format(kCalculon, "turing-530B.json") + "; vocabulary 50,272 as "
                                                       "data/compiled/published_training_runs.csv"),
      Gpt("chinchilla-70b", 80, 8192, 64, 2048, 32000,
          fmt::format(kCalculon, "chinchilla.json") +
              "; 32,000-token vocabulary (Hoffmann et al. 2022)"),
      Llama("llama2-7b", 32, 4096, 32, 32, 11008, 4096, 32000,
            "Llama 2 paper (Touvron et al. 2023) and model card: 32 layers, 4096 hidden, 32 heads, "
            "MLP 11008, 4k context"),
      Llama("llama2-70b", 80, 8192, 64, 8, 28672, 4096, 32000,
            "Llama 2 paper and model card: 80 layers, 8192 hidden, 64 heads (8 KV), MLP 28672"),
      Llama("llama3-8b", 32, 4096, 32, 8, 14336, 8192, 128256,
            "Llama 3 paper (arXiv 2407.21783) Table 3: 32 layers, 4096 hidden, 32 heads (8 KV), "
            "FFN 14336, vocabulary 128,256"),
      Llama("llama3-70b", 80, 8192, 64, 8, 28672, 8192, 128256,
            "Llama 3 paper Table 3: 80 layers, 8192 hidden, 64 heads (8 KV), FFN 28672"),
      Llama("llama3-405b", 126, 16384, 128, 8, 53248, 8192, 128256,
            "Llama 3 paper Table 3: 126 layers, 16384 hidden, 128 heads (8 KV), FFN 53248"),
  };
  return presets;
}

}  // namespace

ModelShape GptShape(std::string name, int layers, int hidden, int heads, int seq, int vocab,
                    std::string source) {
  ModelShape m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.seq = seq;
  m.vocab = vocab;
  m.source = std::move(source);
  return m;
}

double ModelShape::LayerParams() const {
  const double h = hidden;
  const double kv = static_cast<double>(KvHeads()) * HeadDim();
  const double attention = 2 * h * h + 2 * h * kv;  // Q and output, K and V
  const double mlp = (gated_mlp ? 3.0 : 2.0) * h * Ffn();
  return attention + mlp;
}

double ModelShape::EmbeddingParams() const {
  return (tied_embeddings ? 1.0 : 2.0) * static_cast<double>(vocab) * hidden;
}

double ModelShape::TrainFlopsPerToken() const {
  const double weights = layers * LayerParams() + static_cast<double>(vocab) * hidden;
  return 6 * weights + 12.0 * layers * hidden * seq;
}

double ModelShape::KvBytesPerToken(double bytes_per_value) const {
  return 2.0 * layers * KvHeads() * HeadDim() * bytes_per_value;
}

Status ModelShape::Validate() const {
  if (layers <= 0 || hidden <= 0 || heads <= 0 || vocab <= 0 || seq <= 0) {
    return InvalidArgument(
        fmt::format("model '{}' needs layers, hidden, heads, vocab and seq, all positive", name));
  }
  if (hidden % heads != 0) {
    return InvalidArgument(fmt::format("model '{}': hidden ({}) is not a multiple of heads ({})",
                                       name, hidden, heads));
  }
  if (KvHeads() > heads || heads % KvHeads() != 0) {
    return InvalidArgument(fmt::format("model '{}': heads ({}) must be a multiple of kv_heads ({})",
                                       name, heads, KvHeads()));
  }
  return Status::Ok();
}

Result<ModelShape> FindModelPreset(std::string_view name) {
  const std::string lower = ToLower(Trim(name));
  for (const ModelShape& m : Presets()) {
    if (m.name == lower) return m;
  }
  const std::vector<std::string> names = ModelPresetNames();
  return NotFound(fmt::format("unknown model '{}'{}", name,
                              UnknownNameHint(name, {names.begin(), names.end()})));
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  for (const ModelShape& m : Presets())
    names.push_back(m.name);
  return names;
}

}  // namespace shoal::plan
