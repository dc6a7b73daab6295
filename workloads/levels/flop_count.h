#pragma once

#include <string>
#include <vector>

#include "kernels/recipe.h"
#include "workloads/models/model_config.h"

namespace lpbench::workloads {

// The matrix-product FLOPs of one step, by the format each product actually runs in: the basis
// of the roofline fraction, which counts every GEMM at the peak of its own precision.
struct FlopCount {
  double bf16 = 0.0;
  double int8 = 0.0;
  double fp8 = 0.0;
  double total() const { return bf16 + int8 + fp8; }
  void add(kernels::NumberFormat format, double flops);
  FlopCount& operator+=(const FlopCount& other);
};

// fprop, dgrad and wgrad of one linear layer (2·tokens·in·out each) in their formats.
FlopCount linear_flops(double tokens, double in_features, double out_features,
                       const kernels::LinearGemms& gemms);

// Forward and backward of one decoder layer's attention products (QKᵀ and PV), in BF16: 12·H·Q·T
// per token, causal-free (MEASURE.md's convention).
double attention_flops(const ModelConfig& model, double tokens, int64_t seq_len);

// Every matrix product of `layers` decoder layers (and, with `output`, the output layer) of a
// model at `tokens` tokens, with the formats the recipe's module decisions gave each linear layer.
FlopCount decoder_flops(const ModelConfig& model,
                        const std::vector<kernels::ModuleDecision>& modules, double tokens,
                        int64_t seq_len, int64_t layers);

}  // namespace lpbench::workloads
