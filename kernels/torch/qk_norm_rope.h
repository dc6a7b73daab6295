#pragma once

#include <ATen/ATen.h>

#include <array>

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

// One head set's operands (the q heads or the k heads), as the two calls above take them.
struct QkNormRopeHeads {
  at::Tensor x, weight, out;
};
struct QkNormRopeGradHeads {
  at::Tensor dy, x, weight, rstd, dx;
};

// The heads that pass through the backward unchanged: attention's dV copied into the v slots of
// the projection's gradient ([B, T, heads, head_dim], any strides), its magnitudes folded into
// the backward's amax. Undefined tensors: nothing to copy.
struct QkNormRopeCopy {
  at::Tensor src, dst;
};

// The q and the k heads in one launch each way where both take the kernel with one head_dim (the
// k heads alone were a launch of a quarter of the rows: docs/perf-log.md §43), else a call each.
// Returns each set's rstd, and each set's weight gradient; dx and amax as above. The backward
// copies `v` in the launch that adds up the weight gradients where the kernel takes it too
// (docs/perf-log.md §45), else as a copy of its own.
std::array<at::Tensor, 2> qk_norm_rope_into(const QkNormRopeHeads& q, const QkNormRopeHeads& k,
                                            double eps, const at::Tensor& cos,
                                            const at::Tensor& sin);
std::array<at::Tensor, 2> qk_norm_rope_backward_into(const QkNormRopeGradHeads& q,
                                                     const QkNormRopeGradHeads& k,
                                                     const at::Tensor& cos, const at::Tensor& sin,
                                                     const at::Tensor& amax = {},
                                                     const QkNormRopeCopy& v = {});

}  // namespace lpbench::kernels
