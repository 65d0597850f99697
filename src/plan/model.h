// The shape of a decoder-only transformer, the named presets `shoal plan`
// knows, and the arithmetic every later step needs: parameters, FLOPs per
// token, KV-cache bytes. Values only; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shoal::plan {

struct ModelShape {
  std::string name;  // "llama3-70b", or "custom"
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;  // grouped-query attention; 0: as many as `heads`
  int ffn = 0;       // MLP inner size; 0: 4 x hidden
  int vocab = 0;
  int seq = 0;                  // training sequence length (tokens)
  bool gated_mlp = false;       // SwiGLU: three MLP matrices instead of two
  bool dropout = true;          // GPT-style dropout after attention and MLP
  bool tied_embeddings = true;  // output layer shares the input embedding
  std::string source;           // where the shape comes from

  int KvHeads() const { return kv_heads > 0 ? kv_heads : heads; }
  int Ffn() const { return ffn > 0 ? ffn : 4 * hidden; }
  int HeadDim() const { return heads > 0 ? hidden / heads : 0; }

  // Weights of one transformer layer (attention and MLP; norms and biases are
  // below 0.1 % and left out, as in Megatron-LM's formula).
  double LayerParams() const;
  // Input embedding plus, when untied, the output layer.
  double EmbeddingParams() const;
  double Params() const { return layers * LayerParams() + EmbeddingParams(); }

  // Training FLOPs per token, forward and backward, without recompute:
  // 6 x (layer and output-layer weights) plus attention scores and values,
  // 12 x layers x hidden x seq (PaLM, Chowdhery et al. 2022, appendix B;
  // full, not causal, attention as both Megatron-LM and PaLM count it).
  double TrainFlopsPerToken() const;
  // KV-cache bytes per token of context at `bytes_per_value`.
  double KvBytesPerToken(double bytes_per_value) const;

  Status Validate() const;
};

// A GPT-style model of this shape: multi-head attention, a 4h GELU MLP, tied
// embeddings, dropout.
ModelShape GptShape(std::string name, int layers, int hidden, int heads, int seq, int vocab,
                    std::string source);

// Presets by name ("llama3-70b", "gpt3-175b", ...), case-insensitive.
Result<ModelShape> FindModelPreset(std::string_view name);
std::vector<std::string> ModelPresetNames();

}  // namespace shoal::plan
