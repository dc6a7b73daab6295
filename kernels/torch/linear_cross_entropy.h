#pragma once

#include <ATen/ATen.h>

// The output layer and the cross-entropy loss as one differentiable operator, without FP32
// logits for the whole batch. On the GPU (BF16): one product writes the BF16 logits and one
// kernel (kernels/cuda/cross_entropy.cuh) turns them in place into their gradient and each
// token's loss, in FP32 registers. Elsewhere: logits made a chunk of `chunk_tokens` tokens at a
// time, each chunk's softmax and loss by the reference in FP32 (kernels/reference/
// cross_entropy.h), its gradient kept in BF16. The backward is two GEMMs over those gradients
// (dH = dLogits·W, dW = dLogitsᵀ·H in FP32 for the master weight). Peak memory: the BF16 logit
// gradients (plus one chunk's FP32 softmax off the GPU), where the unfused loss holds the
// logits in BF16 and FP32, their log-softmax and its gradient.
namespace lpbench::kernels {

// The reference path's tokens a chunk (the memory plan counts one chunk's FP32 logits).
constexpr int64_t kLossChunkTokens = 1024;

// h [N, hidden] (BF16), weight [vocab, hidden] (the BF16 copy the product reads), master: the
// FP32 parameter that receives the weight gradient, targets [N] (int64) → the mean loss (FP32).
at::Tensor linear_cross_entropy(const at::Tensor& h, const at::Tensor& weight,
                                const at::Tensor& master, const at::Tensor& targets,
                                int64_t chunk_tokens = kLossChunkTokens);

// Whether the operator's loss runs as the CUDA kernel on `device` (for BF16 hidden states);
// elsewhere the reference by chunks. What a run records among its operators.
bool linear_cross_entropy_on_kernel(const at::Device& device);

}  // namespace lpbench::kernels
