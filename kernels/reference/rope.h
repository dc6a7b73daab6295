#pragma once

#include <ATen/ATen.h>

// The readable rotary position embedding (Llama's rotate-half form), in plain ATen operations on
// any device: for each head vector the halves (x1, x2) become (x1·cos − x2·sin, x2·cos + x1·sin),
// or, `inverse` (the backward: the gradient rotated back), (x1·cos + x2·sin, x2·cos − x1·sin).
// FP32 arithmetic, one operation at a time, the result in x's type: the definition the CUDA
// kernel (kernels/cuda/rope.cuh) reproduces bit for bit.
namespace lpbench::kernels::reference {

// x [B, T, heads, head_dim], any strides; cos and sin [>= T, head_dim/2] FP32 tables.
at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                bool inverse = false);

}  // namespace lpbench::kernels::reference
