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

// Applying them: kernels/reference/rope.h (readable), kernels/torch/attention.h (fused).

}  // namespace lpbench::workloads
