#pragma once

#include <torch/types.h>

#include <utility>

#include "workloads/models/model_config.h"

namespace lpbench::workloads {

// cos and sin tables [max_seq_len, head_dim/2] (FP32) of the rotary embedding, with the
// config's base and frequency scaling.
std::pair<torch::Tensor, torch::Tensor> rope_tables(const ModelConfig& config, int64_t max_seq_len);

// The inverse frequencies [head_dim/2] (FP64), after the config's scaling.
torch::Tensor rope_inverse_frequencies(const ModelConfig& config);

// Rotates x [B, T, heads, head_dim] by position (the rotate-half convention of Llama), in FP32.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos,
                         const torch::Tensor& sin);

}  // namespace lpbench::workloads
