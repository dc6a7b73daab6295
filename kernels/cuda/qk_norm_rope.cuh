#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace lpbench::cuda {

// Qwen3's per-head query/key norm followed by RoPE, one pass each way. For each head vector x of
// head_dim elements (the q or the k heads of one token):
//   rstd = 1 / sqrt(mean(x²) + eps)                      (FP32, kept for the backward)
//   n    = x · rstd · weight                             (FP32 math, rounded once to BF16)
//   y    = RoPE(n)                                        (rope.cuh's rotate-half form)
// and backward, from the gradient dy of y:
//   g  = RoPE⁻¹(dy)                                      (rounded to BF16)
//   dx = rstd · (g·weight − xhat · mean(g·weight · xhat)),  xhat = x · rstd   (BF16)
//   dweight = Σ_heads,tokens g · xhat                    (FP32, written)
// Each step rounds where rmsnorm.cuh's and rope.cuh's kernels round and sums in their order, so
// the forward's y and rstd and the backward's dx are those of rmsnorm_forward then rope (and
// rope's inverse then rmsnorm_backward) bit for bit; dweight adds its partial sums in another
// grouping. What the pass saves is the norm's output and RoPE's input and output round trips
// through memory, and the contiguous copies of q and k that the norm kernel needs.
//
// Element (b, t, h, i) sits at ptr + b·batch_stride + t·token_stride + h·head_stride + i for
// every strided operand. head_dim a power of two from 16 to 256 (qk_norm_rope_applies), strides
// multiples of 8, pointers 16-byte aligned.
struct QkNormRopeStrides {
  int64_t batch = 0, token = 0, head = 0;
};

struct QkNormRopeArgs {
  const void* x = nullptr;  // bf16, the heads as the projection wrote them
  QkNormRopeStrides x_strides;
  void* y = nullptr;  // bf16, normalized and rotated
  QkNormRopeStrides y_strides;
  const float* weight = nullptr;  // [head_dim]
  float* rstd = nullptr;          // [batch·seq·heads], row (b, t, h) at (b·seq + t)·heads + h
  int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  const float* cos = nullptr;  // [>= seq, head_dim / 2]
  const float* sin = nullptr;
  float eps = 1e-6F;
};

struct QkNormRopeBackwardArgs {
  const void* dy = nullptr;  // bf16, the gradient of y (attention's dQ or dK, any layout)
  QkNormRopeStrides dy_strides;
  const void* x = nullptr;  // bf16, the forward's input
  QkNormRopeStrides x_strides;
  void* dx = nullptr;  // bf16 (the q or k slots of the projection's gradient)
  QkNormRopeStrides dx_strides;
  const float* weight = nullptr;
  const float* rstd = nullptr;
  float* dweight = nullptr;     // [head_dim], written
  void* workspace = nullptr;    // qk_norm_rope_backward_workspace_bytes
  uint32_t* dx_amax = nullptr;  // optional: max |dx| folded in (amax.cuh)
  int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  const float* cos = nullptr;
  const float* sin = nullptr;
};

bool qk_norm_rope_applies(int64_t head_dim);
void qk_norm_rope_forward(const QkNormRopeArgs& args, cudaStream_t stream);
size_t qk_norm_rope_backward_workspace_bytes(int64_t rows, int64_t head_dim);
void qk_norm_rope_backward(const QkNormRopeBackwardArgs& args, cudaStream_t stream);

// The q heads and the k heads of a layer (one head_dim) in one launch each way, with what the
// two calls above would compute (the weight gradients' partial sums in another grouping). The
// backward's workspace is q's: qk_norm_rope_backward_workspace_bytes(q rows + k rows, head_dim).
void qk_norm_rope_forward(const QkNormRopeArgs& q, const QkNormRopeArgs& k, cudaStream_t stream);
void qk_norm_rope_backward(const QkNormRopeBackwardArgs& q, const QkNormRopeBackwardArgs& k,
                           cudaStream_t stream);

// The heads that pass through the backward unchanged (attention's dV into the v slots of the
// projection's gradient), strided as the head sets are, head_dim a multiple of 8.
struct QkNormRopeCopyArgs {
  const void* src = nullptr;  // bf16
  QkNormRopeStrides src_strides;
  void* dst = nullptr;  // bf16
  QkNormRopeStrides dst_strides;
  int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  uint32_t* amax = nullptr;  // optional: max |copied| folded in (amax.cuh)
};

// The call above, and `v` copied by the launch that adds up the weight gradients' partial sums:
// its copying blocks read and write nothing the backward kernel touches, so they take SMs as
// that kernel's blocks leave them instead of a launch of their own after the sums.
void qk_norm_rope_backward(const QkNormRopeBackwardArgs& q, const QkNormRopeBackwardArgs& k,
                           const QkNormRopeCopyArgs& v, cudaStream_t stream);

}  // namespace lpbench::cuda
