#include "workloads/models/model_config.h"

#include <fmt/format.h>

#include <stdexcept>

namespace lpbench::workloads {

namespace {

std::vector<ModelConfig> build_builtin_models() {
  std::vector<ModelConfig> models;
  // A few million parameters: trains in seconds on two CPU cores, for tests and the demo.
  ModelConfig tiny;
  tiny.name = "tiny";
  tiny.vocab_size = 512;
  tiny.hidden_size = 256;
  tiny.intermediate_size = 704;
  tiny.num_layers = 4;
  tiny.num_heads = 8;
  tiny.num_kv_heads = 4;
  tiny.head_dim = 32;
  tiny.default_micro_batch = 8;
  tiny.default_seq_len = 64;
  tiny.default_lr = 3e-3;
  models.push_back(tiny);
  return models;
}

const std::vector<ModelConfig>& builtin_models() {
  static const std::vector<ModelConfig> models = build_builtin_models();
  return models;
}

}  // namespace

int64_t ModelConfig::matmul_parameter_count() const {
  const int64_t qkv = hidden_size * (num_heads + 2 * num_kv_heads) * head_dim;
  const int64_t attn_out = num_heads * head_dim * hidden_size;
  const int64_t mlp = 3 * hidden_size * intermediate_size;
  const int64_t output = vocab_size * hidden_size;
  return num_layers * (qkv + attn_out + mlp) + output;
}

int64_t ModelConfig::parameter_count() const {
  const int64_t norms = num_layers * 2 * hidden_size + hidden_size;
  const int64_t embedding = vocab_size * hidden_size;
  const int64_t untied = tie_embeddings ? 0 : embedding;
  // matmul_parameter_count counts the output layer; a tied one shares the embedding's weights.
  return matmul_parameter_count() - vocab_size * hidden_size + untied + embedding + norms;
}

double ModelConfig::flops_per_token(int64_t seq_len) const {
  return 6.0 * static_cast<double>(matmul_parameter_count()) +
         12.0 * static_cast<double>(num_layers * num_heads * head_dim * seq_len);
}

const ModelConfig& builtin_model(std::string_view name) {
  for (const ModelConfig& model : builtin_models()) {
    if (model.name == name) return model;
  }
  throw std::out_of_range(fmt::format("unknown model '{}'", name));
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const ModelConfig& model : builtin_models())
    names.push_back(model.name);
  return names;
}

std::string check_model_config(const ModelConfig& c) {
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_layers <= 0 ||
      c.num_heads <= 0 || c.num_kv_heads <= 0 || c.head_dim <= 0) {
    return fmt::format("model '{}': every dimension must be positive", c.name);
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return fmt::format("model '{}': {} attention heads are not a multiple of {} key/value heads",
                       c.name, c.num_heads, c.num_kv_heads);
  }
  if (c.head_dim % 2 != 0) {
    return fmt::format("model '{}': rotary embeddings need an even head dimension, got {}", c.name,
                       c.head_dim);
  }
  return {};
}

}  // namespace lpbench::workloads
