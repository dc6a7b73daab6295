#pragma once

#include <ATen/ATen.h>

#include <string>

#include "kernels/torch/quantize.h"

// Causal self-attention on a fused QKV product, and the rotary embedding, as differentiable
// operators: lpbench's RoPE kernel on the GPU (the reference elsewhere) and torch's scaled dot
// product attention (on Hopper its cuDNN or flash backend).
namespace lpbench::kernels {

struct AttentionShape {
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
};

// qkv [B, T, (heads + 2·kv_heads)·head_dim] (q heads, then k, then v) → [B, T, heads·head_dim].
// RoPE rotates q and k where they lie in qkv (in place: qkv is the projection's output and
// nothing else reads it), attention reads q, k and v as views of it (no layout copies), and the
// backward writes the rotated-back dQ and dK and the dV straight into the gradient of qkv (no
// zero fill, no slices copied into it). cos and sin: [>= T, head_dim/2] FP32.
// `report_amax`: the backward also reports max |dqkv| for a tensorwise quantization of it
// (amax_registry.h). `int8_saved`: only the rotated qkv is kept for backward, as INT8 blocks
// (saved_activation.h), and the backward runs the attention again on it before differentiating
// (one more SDPA forward a layer; none of SDPA's state between forward and backward).
// `report_lines`: the backward reports every row's and column's amax of dqkv instead, for a
// quantization of it per row both ways (amax_registry.h's remember_line_amax), where RoPE's
// kernel writes dqkv (not after per-head norms: their backward reports only the tensor's).
//
// `grad_consumer`: how the QKV product quantizes its dY (its backward's, kernels/torch/quantize.h).
// Under its history (delayed scaling), on the GPU, RoPE's backward then writes that quantization
// in place of dqkv where its kernel takes the shapes (heads of 16 to 128 elements dividing 128,
// the q and the k/v heads each a multiple of 128 columns, sequences of a multiple of 128 tokens;
// not with per-head norms nor lines), and the gradient it returns is a stand-in only that
// product's backward may read.
//
// `qk_norms` (Qwen3): RMSNorms over each head of q and of k (weights [head_dim] FP32), before
// RoPE, in one pass with it (qk_norm_rope.h): q and k go normalized and rotated into a buffer of
// their own, qkv is kept as the projection wrote it (the norms' input), and the backward also
// returns the two weights' gradients. Not with `int8_saved` (qk_norm_attention_int8_saved).
struct QkNorms {
  at::Tensor q, k;
  double eps = 1e-6;
};
at::Tensor causal_attention(const at::Tensor& qkv, const AttentionShape& shape,
                            const at::Tensor& cos, const at::Tensor& sin, bool report_amax = false,
                            bool int8_saved = false, const QkNorms& qk_norms = {},
                            bool report_lines = false, const InputQuantization& grad_consumer = {});

// Qwen3's attention (per-head RMSNorms of q and k with weights q_norm and k_norm [head_dim],
// then RoPE, then causal SDPA) under saved=int8: the same forward as composing rms_norm, rope
// and SDPA, but only qkv (as the projection made it) is kept for backward, as INT8 blocks, and
// the backward runs the norms, RoPE and SDPA again on it before differentiating. Returns
// [B, T, heads·head_dim]; differentiable in qkv, q_norm and k_norm.
at::Tensor qk_norm_attention_int8_saved(const at::Tensor& qkv, const AttentionShape& shape,
                                        const at::Tensor& q_norm, const at::Tensor& k_norm,
                                        double eps, const at::Tensor& cos, const at::Tensor& sin);

// RoPE of x [B, T, heads, head_dim] (any strides) into a new tensor, differentiable: for q and k
// that are not views of one product (after Qwen3's per-head norms).
at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// The SDPA backend torch chooses for causal attention of this shape, dtype and device: "cudnn",
// "flash", "efficient" or "math".
std::string attention_backend(const AttentionShape& shape, int64_t tokens,
                              const at::TensorOptions& options);

}  // namespace lpbench::kernels
