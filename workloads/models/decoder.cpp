#include "workloads/models/decoder.h"

#include <cmath>

#include "kernels/torch/quantized_linear.h"

namespace lpbench::workloads {

namespace {

constexpr double kInitStd = 0.02;
constexpr auto kCompute = torch::kBFloat16;

}  // namespace

kernels::LinearGemms PrecisionPlan::linear(const std::string& module) {
  decisions_.push_back(kernels::decide(recipe_, module, kernels::ModuleKind::linear));
  return decisions_.back().gemms;
}

void PrecisionPlan::embedding(const std::string& module) {
  decisions_.push_back(kernels::decide(recipe_, module, kernels::ModuleKind::embedding));
}

RecipeLinearImpl::RecipeLinearImpl(int64_t in_features, int64_t out_features,
                                   kernels::LinearGemms gemms, double init_std)
    : gemms_(gemms) {
  weight_ = register_parameter("weight", torch::empty({out_features, in_features}));
  torch::nn::init::normal_(weight_, 0.0, init_std);
}

torch::Tensor RecipeLinearImpl::forward(const torch::Tensor& x) {
  return kernels::quantized_linear(x, weight_.to(kCompute), gemms_);
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  // Statistics in FP32, as every reference implementation does; the result back in BF16.
  torch::Tensor xf = x.to(torch::kFloat);
  torch::Tensor normed = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return (normed * weight_).to(x.scalar_type());
}

std::pair<torch::Tensor, torch::Tensor> rope_tables(int64_t max_seq_len, int64_t head_dim,
                                                    double theta) {
  torch::Tensor exponents = torch::arange(0, head_dim, 2, torch::kDouble) / head_dim;
  torch::Tensor inv_freq = torch::pow(theta, -exponents);
  torch::Tensor angles = torch::outer(torch::arange(max_seq_len, torch::kDouble), inv_freq);
  return {angles.cos().to(torch::kFloat), angles.sin().to(torch::kFloat)};
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos,
                         const torch::Tensor& sin) {
  const int64_t seq = x.size(1);
  const int64_t half = x.size(-1) / 2;
  // [T, D/2] → [1, T, 1, D/2] to broadcast over batch and heads.
  torch::Tensor c = cos.narrow(0, 0, seq).unsqueeze(0).unsqueeze(2);
  torch::Tensor s = sin.narrow(0, 0, seq).unsqueeze(0).unsqueeze(2);
  torch::Tensor xf = x.to(torch::kFloat);
  torch::Tensor x1 = xf.narrow(-1, 0, half);
  torch::Tensor x2 = xf.narrow(-1, half, half);
  return torch::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1).to(x.scalar_type());
}

AttentionImpl::AttentionImpl(const ModelConfig& config, const std::string& prefix,
                             PrecisionPlan& plan)
    : heads_(config.num_heads), kv_heads_(config.num_kv_heads), head_dim_(config.head_dim) {
  const int64_t qkv_width = (heads_ + 2 * kv_heads_) * head_dim_;
  // Residual projections start smaller, by depth (GPT-2's scheme), so the stream stays O(1).
  const double out_std = kInitStd / std::sqrt(2.0 * static_cast<double>(config.num_layers));
  qkv_ = register_module(
      "qkv", RecipeLinear(config.hidden_size, qkv_width, plan.linear(prefix + ".qkv"), kInitStd));
  out_ = register_module("out", RecipeLinear(heads_ * head_dim_, config.hidden_size,
                                             plan.linear(prefix + ".out"), out_std));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin) {
  const int64_t batch = x.size(0);
  const int64_t seq = x.size(1);
  torch::Tensor qkv = qkv_(x);
  torch::Tensor q = qkv.narrow(-1, 0, heads_ * head_dim_).view({batch, seq, heads_, head_dim_});
  torch::Tensor k = qkv.narrow(-1, heads_ * head_dim_, kv_heads_ * head_dim_)
                        .view({batch, seq, kv_heads_, head_dim_});
  torch::Tensor v = qkv.narrow(-1, (heads_ + kv_heads_) * head_dim_, kv_heads_ * head_dim_)
                        .view({batch, seq, kv_heads_, head_dim_});
  q = apply_rope(q, cos, sin).transpose(1, 2);
  k = apply_rope(k, cos, sin).transpose(1, 2);
  v = v.transpose(1, 2);
  torch::Tensor o = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                                     /*is_causal=*/true, /*scale=*/std::nullopt,
                                                     /*enable_gqa=*/kv_heads_ != heads_);
  return out_(o.transpose(1, 2).reshape({batch, seq, heads_ * head_dim_}));
}

MlpImpl::MlpImpl(const ModelConfig& config, const std::string& prefix, PrecisionPlan& plan)
    : intermediate_(config.intermediate_size) {
  const double out_std = kInitStd / std::sqrt(2.0 * static_cast<double>(config.num_layers));
  // Gate and up projections fused into one GEMM, as Megatron's linear_fc1 does.
  gate_up_ = register_module("gate_up", RecipeLinear(config.hidden_size, 2 * intermediate_,
                                                     plan.linear(prefix + ".gate_up"), kInitStd));
  down_ = register_module("down", RecipeLinear(intermediate_, config.hidden_size,
                                               plan.linear(prefix + ".down"), out_std));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  torch::Tensor gate_up = gate_up_(x);
  torch::Tensor gate = gate_up.narrow(-1, 0, intermediate_);
  torch::Tensor up = gate_up.narrow(-1, intermediate_, intermediate_);
  return down_(torch::silu(gate) * up);
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& config, int64_t index, PrecisionPlan& plan) {
  const std::string prefix = "layers." + std::to_string(index);
  attention_norm_ = register_module("attention_norm", RMSNorm(config.hidden_size, config.norm_eps));
  attention_ = register_module("attention", Attention(config, prefix + ".attention", plan));
  mlp_norm_ = register_module("mlp_norm", RMSNorm(config.hidden_size, config.norm_eps));
  mlp_ = register_module("mlp", Mlp(config, prefix + ".mlp", plan));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin) {
  torch::Tensor h = x + attention_(attention_norm_(x), cos, sin);
  return h + mlp_(mlp_norm_(h));
}

DecoderImpl::DecoderImpl(const ModelConfig& config, const kernels::Recipe& recipe,
                         int64_t max_seq_len)
    : config_(config) {
  PrecisionPlan plan(recipe);
  embedding_ =
      register_parameter("embedding", torch::empty({config.vocab_size, config.hidden_size}));
  torch::nn::init::normal_(embedding_, 0.0, kInitStd);
  plan.embedding("embedding");
  for (int64_t i = 0; i < config.num_layers; ++i) {
    layers_.push_back(
        register_module("layers_" + std::to_string(i), DecoderLayer(config, i, plan)));
  }
  final_norm_ = register_module("final_norm", RMSNorm(config.hidden_size, config.norm_eps));
  if (config.tie_embeddings) {
    tied_output_ = plan.linear("output");
  } else {
    output_ = register_module("output", RecipeLinear(config.hidden_size, config.vocab_size,
                                                     plan.linear("output"), kInitStd));
  }
  auto [cos, sin] = rope_tables(max_seq_len, config.head_dim, config.rope_theta);
  rope_cos_ = register_buffer("rope_cos", cos);
  rope_sin_ = register_buffer("rope_sin", sin);
  decisions_ = plan.decisions();
}

torch::Tensor DecoderImpl::forward(const torch::Tensor& tokens) {
  torch::Tensor h = torch::embedding(embedding_.to(kCompute), tokens);
  for (DecoderLayer& layer : layers_)
    h = layer(h, rope_cos_, rope_sin_);
  h = final_norm_(h);
  if (output_) return output_(h);
  return kernels::quantized_linear(h, embedding_.to(kCompute), tied_output_);
}

}  // namespace lpbench::workloads
