#pragma once

#include <ATen/ATen.h>

// The readable form of Qwen3's per-head query/key norm followed by RoPE: reference::rmsnorm over
// each head vector, then reference::rope, forward and backward, in plain ATen operations on any
// device. The definition kernels/cuda/qk_norm_rope.cuh computes in one pass, and the fused
// attention's path where there is no kernel (the CPU).
namespace lpbench::kernels::reference {

struct QkNormRopeOut {
  at::Tensor y;     // [B, T, heads, head_dim], x's type
  at::Tensor rstd;  // [B·T·heads] FP32, rows in (b, t, h) order
};

// x [B, T, heads, head_dim] (any strides), weight [head_dim] FP32, cos and sin [>= T,
// head_dim / 2] FP32.
QkNormRopeOut qk_norm_rope_forward(const at::Tensor& x, const at::Tensor& weight, double eps,
                                   const at::Tensor& cos, const at::Tensor& sin);

struct QkNormRopeGrads {
  at::Tensor dx;       // like x
  at::Tensor dweight;  // [head_dim] FP32
};

// dy: the gradient of y (any strides); x, weight and rstd as the forward had and gave them.
QkNormRopeGrads qk_norm_rope_backward(const at::Tensor& dy, const at::Tensor& x,
                                      const at::Tensor& weight, const at::Tensor& rstd,
                                      const at::Tensor& cos, const at::Tensor& sin);

}  // namespace lpbench::kernels::reference
