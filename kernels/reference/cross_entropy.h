#pragma once

#include <ATen/ATen.h>

// The readable softmax cross-entropy of a chunk of the output layer's logits, in plain ATen
// operations on any device, as the CUDA kernel (kernels/cuda/cross_entropy.cuh) computes it:
//   log_probs = log_softmax(FP32(logits))                   ((x − max) − log Σ exp(x − max))
//   loss_sum  = −Σ_rows log_probs[row, target]
//   grad      = (exp(log_probs) − one_hot(target)) / divisor, rounded to logits' type once
// where the whole batch's mean loss is Σ loss_sum / divisor. Holds the chunk in FP32 twice.
namespace lpbench::kernels::reference {

struct CrossEntropyRows {
  at::Tensor grad;      // [rows, vocab], logits' type
  at::Tensor loss_sum;  // FP32 scalar
};

CrossEntropyRows softmax_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                                       int64_t divisor);

}  // namespace lpbench::kernels::reference
