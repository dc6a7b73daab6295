#pragma once

#include <ATen/ATen.h>

// The output layer and the cross-entropy loss as one differentiable operator, without FP32
// logits for the whole batch: logits are made a chunk of tokens at a time (BF16, as the output
// GEMM writes them), each chunk's softmax and loss computed in FP32 and its gradient kept in
// BF16, and the backward is two GEMMs over those gradients (dH = dLogits·W, dW = dLogitsᵀ·H in
// FP32 for the master weight). Peak memory: BF16 logit gradients plus one chunk's FP32
// softmax, where the unfused loss holds the logits in BF16 and FP32, their log-softmax and its
// gradient.
namespace lpbench::kernels {

// h [N, hidden] (BF16), weight [vocab, hidden] (the BF16 copy the product reads), master: the
// FP32 parameter that receives the weight gradient, targets [N] (int64) → the mean loss (FP32).
at::Tensor linear_cross_entropy(const at::Tensor& h, const at::Tensor& weight,
                                const at::Tensor& master, const at::Tensor& targets,
                                int64_t chunk_tokens = 1024);

}  // namespace lpbench::kernels
