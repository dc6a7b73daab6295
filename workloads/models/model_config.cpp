#include "workloads/models/model_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "workloads/models/model_zoo.h"

namespace lpbench::workloads {

int64_t ModelConfig::matmul_parameter_count(bool active) const {
  const int64_t qkv = hidden_size * (num_heads + 2 * num_kv_heads) * head_dim;
  const int64_t attn_out = num_heads * head_dim * hidden_size;
  const int64_t expert = 3 * hidden_size * intermediate_size;
  int64_t mlp = expert;
  if (is_moe()) {
    const int64_t router = hidden_size * num_experts;
    mlp = (active ? experts_per_token : num_experts) * expert + router;
  }
  const int64_t output = vocab_size * hidden_size;
  return num_layers * (qkv + attn_out + mlp) + output;
}

int64_t ModelConfig::parameter_count(bool active) const {
  const int64_t layer_norms = 2 * hidden_size + (qk_norm ? 2 * head_dim : 0);
  const int64_t norms = num_layers * layer_norms + hidden_size;
  const int64_t embedding = vocab_size * hidden_size;
  // matmul_parameter_count counts the output layer; a tied one is the embedding itself.
  const int64_t untied_output = tie_embeddings ? 0 : embedding;
  return matmul_parameter_count(active) - embedding + untied_output + embedding + norms;
}

double ModelConfig::flops_per_token(int64_t seq_len) const {
  return 6.0 * static_cast<double>(matmul_parameter_count(/*active=*/true)) +
         12.0 * static_cast<double>(num_layers) * static_cast<double>(num_heads) *
             static_cast<double>(head_dim) * static_cast<double>(seq_len);
}

ModelConfig ModelConfig::with_layers(int64_t layers) const {
  ModelConfig copy = *this;
  copy.num_layers = layers;
  return copy;
}

const ModelConfig& builtin_model(std::string_view name) {
  for (const ModelConfig& model : model_zoo()) {
    if (model.name == name) return model;
  }
  throw std::out_of_range(fmt::format("unknown model '{}'", name));
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const ModelConfig& model : model_zoo())
    names.push_back(model.name);
  return names;
}

std::string check_model_config(const ModelConfig& c) {
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_layers <= 0 ||
      c.num_heads <= 0 || c.num_kv_heads <= 0 || c.head_dim <= 0 || c.num_experts < 0) {
    return fmt::format("model '{}': every dimension must be positive", c.name);
  }
  // Bounds far past any published model, so that the parameter and FLOP counts (int64) cannot
  // overflow: each dimension at most 2^20, the whole model at most 2^44 parameters.
  constexpr int64_t kMaxDimension = int64_t{1} << 20;
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"vocab_size", c.vocab_size},
                                    {"hidden_size", c.hidden_size},
                                    {"intermediate_size", c.intermediate_size},
                                    {"num_layers", c.num_layers},
                                    {"num_heads", c.num_heads},
                                    {"num_kv_heads", c.num_kv_heads},
                                    {"head_dim", c.head_dim},
                                    {"num_experts", c.num_experts}}) {
    if (value > kMaxDimension) {
      return fmt::format("model '{}': {} is {}, at most {} is supported", c.name, name, value,
                         kMaxDimension);
    }
  }
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  const double per_layer =
      d(c.hidden_size) * d(c.num_heads + 2 * c.num_kv_heads) * d(c.head_dim) +
      d(c.num_heads) * d(c.head_dim) * d(c.hidden_size) +
      d(std::max<int64_t>(1, c.num_experts)) * 3.0 * d(c.hidden_size) * d(c.intermediate_size) +
      d(c.hidden_size) * d(c.num_experts);
  const double parameters = d(c.num_layers) * per_layer + 2.0 * d(c.vocab_size) * d(c.hidden_size);
  constexpr double kMaxParameters = 17592186044416.0;  // 2^44
  if (parameters > kMaxParameters) {
    return fmt::format("model '{}': {:.3g} parameters, at most {:.3g} are supported", c.name,
                       parameters, kMaxParameters);
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return fmt::format("model '{}': {} attention heads are not a multiple of {} key/value heads",
                       c.name, c.num_heads, c.num_kv_heads);
  }
  if (c.head_dim % 2 != 0) {
    return fmt::format("model '{}': rotary embeddings need an even head dimension, got {}", c.name,
                       c.head_dim);
  }
  if (c.is_moe() && (c.experts_per_token <= 0 || c.experts_per_token > c.num_experts)) {
    return fmt::format("model '{}': {} experts per token out of {} experts", c.name,
                       c.experts_per_token, c.num_experts);
  }
  if (!(c.norm_eps > 0.0) || !(c.rope_theta > 0.0)) {
    return fmt::format("model '{}': norm epsilon and RoPE base must be positive", c.name);
  }
  if (!c.rope_scaling.type.empty() && c.rope_scaling.type != "llama3") {
    return fmt::format("model '{}': unsupported rope scaling '{}' (supported: llama3)", c.name,
                       c.rope_scaling.type);
  }
  return {};
}

}  // namespace lpbench::workloads
