#include "workloads/models/operators.h"

#include "kernels/profiling/range.h"
#include "kernels/reference/rope.h"
#include "kernels/torch/rmsnorm.h"
#include "kernels/torch/swiglu.h"

namespace lpbench::workloads {

namespace {

// The readable RMSNorm: statistics in FP32, as every reference implementation keeps them.
torch::Tensor unfused_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  torch::Tensor xf = x.to(torch::kFloat);
  torch::Tensor normed = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return (normed * weight).to(x.scalar_type());
}

}  // namespace

std::string_view to_string(Fusion fusion) {
  return fusion == Fusion::fused ? "fused" : "none";
}

std::string describe_operators(Fusion fusion, const kernels::AttentionShape& shape, int64_t seq,
                               const torch::Device& device, bool producer_amax, bool int8_saved,
                               kernels::LineAmax lines, const std::string& quantizing_producers) {
  const std::string backend = kernels::attention_backend(
      shape, seq, torch::TensorOptions().dtype(torch::kBFloat16).device(device));
  const bool fused = fusion == Fusion::fused;
  const char* swiglu_lines = lines.forward && lines.backward ? "its output and gradient"
                             : lines.forward                 ? "its output"
                             : lines.backward                ? "its gradient"
                                                             : nullptr;
  return std::string(to_string(fusion)) + "; attention: " + backend +
         (producer_amax && fused ? "; producers report amax" : "") +
         (swiglu_lines != nullptr && fused
              ? std::string("; SwiGLU reports the row and column amaxes of ") + swiglu_lines
              : std::string()) +
         (lines.backward && fused
              ? "; so does RoPE's backward of its gradient, where no per-head norm comes first"
              : "") +
         (!quantizing_producers.empty() && fused
              ? "; operands written quantized by their producer: " + quantizing_producers
              : std::string()) +
         (int8_saved && fused ? "; activations saved as INT8" : "");
}

kernels::InputQuantization Operators::quantizing(const kernels::InputQuantization& consumer) const {
  return quantizing_producers_ ? consumer : kernels::InputQuantization{};
}

torch::Tensor Operators::norm(const torch::Tensor& x, const torch::Tensor& weight, double eps,
                              const kernels::InputQuantization& consumer) const {
  if (fusion_ == Fusion::fused) {
    return kernels::rms_norm(x, weight, eps, producer_amax_, int8_saved_, quantizing(consumer));
  }
  return unfused_norm(x, weight, eps);
}

std::pair<torch::Tensor, torch::Tensor> Operators::residual_norm(
    const torch::Tensor& x, const torch::Tensor& weight, double eps,
    const kernels::InputQuantization& consumer) const {
  if (fusion_ == Fusion::fused) {
    return kernels::rms_norm_residual(x, weight, eps, producer_amax_, int8_saved_,
                                      quantizing(consumer));
  }
  return {x, unfused_norm(x, weight, eps)};
}

std::pair<torch::Tensor, torch::Tensor> Operators::add_norm(
    const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& weight, double eps,
    const kernels::InputQuantization& consumer) const {
  if (fusion_ == Fusion::fused) {
    return kernels::add_rms_norm(x, residual, weight, eps, producer_amax_, int8_saved_,
                                 quantizing(consumer));
  }
  torch::Tensor h = x + residual;
  return {h, unfused_norm(h, weight, eps)};
}

torch::Tensor Operators::swiglu(const torch::Tensor& gate_up,
                                const kernels::InputQuantization& consumer,
                                const kernels::InputQuantization& grad_consumer) const {
  if (fusion_ == Fusion::fused) {
    return kernels::swiglu(gate_up, producer_amax_, int8_saved_, lines_, quantizing(consumer),
                           quantizing(grad_consumer));
  }
  const int64_t inner = gate_up.size(-1) / 2;
  return torch::silu(gate_up.narrow(-1, 0, inner)) * gate_up.narrow(-1, inner, inner);
}

torch::Tensor Operators::attention(const torch::Tensor& qkv, const kernels::AttentionShape& s,
                                   const torch::Tensor& cos, const torch::Tensor& sin,
                                   const torch::Tensor& q_norm, const torch::Tensor& k_norm,
                                   double eps,
                                   const kernels::InputQuantization& grad_consumer) const {
  const int64_t batch = qkv.size(0);
  const int64_t seq = qkv.size(1);
  if (fusion_ == Fusion::fused && q_norm.defined() && int8_saved_) {
    return kernels::qk_norm_attention_int8_saved(qkv, s, q_norm, k_norm, eps, cos, sin);
  }
  if (fusion_ == Fusion::fused) {
    return kernels::causal_attention(qkv, s, cos, sin, producer_amax_, int8_saved_,
                                     {q_norm, k_norm, eps}, lines_.backward,
                                     quantizing(grad_consumer));
  }
  const int64_t d = s.head_dim;
  torch::Tensor q = qkv.narrow(-1, 0, s.heads * d).view({batch, seq, s.heads, d});
  torch::Tensor k = qkv.narrow(-1, s.heads * d, s.kv_heads * d).view({batch, seq, s.kv_heads, d});
  torch::Tensor v =
      qkv.narrow(-1, (s.heads + s.kv_heads) * d, s.kv_heads * d).view({batch, seq, s.kv_heads, d});
  // The unfused operators: each step its own differentiable operation.
  if (q_norm.defined()) {
    q = norm(q, q_norm, eps);
    k = norm(k, k_norm, eps);
  }
  q = kernels::reference::rope(q, cos, sin);
  k = kernels::reference::rope(k, cos, sin);
  torch::Tensor o;
  {
    const profiling::Range range("sdpa");
    o = at::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true,
                                         /*scale=*/std::nullopt,
                                         /*enable_gqa=*/s.kv_heads != s.heads);
  }
  return o.transpose(1, 2).reshape({batch, seq, s.heads * d});
}

}  // namespace lpbench::workloads
