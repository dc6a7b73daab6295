#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lpbench::workloads {

// The dimensions of a Llama-style decoder, as a model's published configuration gives them.
struct ModelConfig {
  std::string name;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // SwiGLU width
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // grouped-query attention: num_heads is a multiple of it
  int64_t head_dim = 0;
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  bool tie_embeddings = false;
  // A size that trains this model in a sensible time when the command line names none.
  int64_t default_micro_batch = 1;
  int64_t default_seq_len = 2048;
  double default_lr = 3e-4;

  // Parameters of the matrix products (attention and MLP projections, and the output layer).
  int64_t matmul_parameter_count() const;
  // Every parameter, the embedding and the norms included; a tied output layer counted once.
  int64_t parameter_count() const;
  // Model FLOPs per token, MEASURE.md's convention: 6·N_matmul + 12·L·H·Q·T.
  double flops_per_token(int64_t seq_len) const;
};

// Throws std::out_of_range for an unknown name.
const ModelConfig& builtin_model(std::string_view name);
std::vector<std::string> builtin_model_names();

// Empty when the config is consistent, else what is wrong with it.
std::string check_model_config(const ModelConfig& config);

}  // namespace lpbench::workloads
