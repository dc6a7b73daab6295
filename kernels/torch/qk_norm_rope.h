#pragma once

#include <ATen/ATen.h>

// Qwen3's per-head query/key norm followed by RoPE (kernels/cuda/qk_norm_rope.cuh) as the fused
// attention calls it: from the q or k heads where the projection wrote them into a buffer that
// attention reads, and back from attention's gradient into the projection's. The kernel where
// it applies (CUDA, BF16, FP32 weight, head_dim a power of two from 16 to 256, unit stride
// within a head), the reference (kernels/reference/qk_norm_rope.h) elsewhere.
namespace lpbench::kernels {

// x and out [B, T, heads, head_dim] (any strides, not overlapping); weight [head_dim] FP32; cos
// and sin [>= T, head_dim / 2] FP32. Writes RoPE(RMSNorm(x)) into out; returns the inverse RMS
// of every head vector, [B·T·heads] FP32, for the backward.
at::Tensor qk_norm_rope_into(const at::Tensor& x, const at::Tensor& weight, double eps,
                             const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& out);

// dy: the gradient of out (any strides); x, weight and rstd as the forward had and gave them.
// Writes x's gradient into dx (x's shape, any strides); returns weight's. `amax` (optional, a
// device int32, amax_registry.h): max |dx| is folded into it.
at::Tensor qk_norm_rope_backward_into(const at::Tensor& dy, const at::Tensor& x,
                                      const at::Tensor& weight, const at::Tensor& rstd,
                                      const at::Tensor& cos, const at::Tensor& sin,
                                      const at::Tensor& dx, const at::Tensor& amax = {});

}  // namespace lpbench::kernels
