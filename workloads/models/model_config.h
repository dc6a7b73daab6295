#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lpbench::workloads {

// Llama 3.1's rotary frequency rescaling (type "llama3"): long wavelengths are divided by
// `factor`, short ones kept, the band between interpolated.
struct RopeScaling {
  std::string type;  // "" (none) or "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position = 8192;
};

// The dimensions of a Llama-style decoder (dense or mixture-of-experts), as a model's published
// configuration gives them.
struct ModelConfig {
  std::string name;
  std::string family;  // llama, mistral, qwen2, qwen3, mixtral, or lpbench for the test models
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // SwiGLU width (of each expert, for MoE)
  int64_t num_layers = 0;         // the depth this config builds
  int64_t published_layers = 0;   // the model's published depth (num_layers when not pruned)
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // grouped-query attention: num_heads is a multiple of it
  int64_t head_dim = 0;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  double norm_eps = 1e-5;
  bool tie_embeddings = false;
  bool qk_norm = false;           // Qwen3: RMSNorm over each head's queries and keys
  int64_t num_experts = 0;        // 0: a dense MLP
  int64_t experts_per_token = 0;  // top-k routing
  // For the small test models: the vocabulary follows a token file's tokenizer.
  bool vocab_follows_data = false;
  // A size that trains this model in a sensible time when the command line names none.
  int64_t default_micro_batch = 1;
  int64_t default_seq_len = 2048;
  double default_lr = 3e-4;

  bool is_moe() const { return num_experts > 0; }
  // Parameters of the matrix products (attention, MLP or experts, router, output layer);
  // `active` counts only experts_per_token experts of each MoE layer.
  int64_t matmul_parameter_count(bool active = false) const;
  // Every parameter, the embedding and norms included; a tied output layer counted once.
  int64_t parameter_count(bool active = false) const;
  // Model FLOPs per token, MEASURE.md's convention: 6·N_matmul(active) + 12·L·H·Q·T.
  double flops_per_token(int64_t seq_len) const;
  // This config at another depth (`--layers N`), published depth unchanged.
  ModelConfig with_layers(int64_t layers) const;
};

// Throws std::out_of_range for an unknown name.
const ModelConfig& builtin_model(std::string_view name);
std::vector<std::string> builtin_model_names();

// Empty when the config is consistent, else what is wrong with it.
std::string check_model_config(const ModelConfig& config);

}  // namespace lpbench::workloads
