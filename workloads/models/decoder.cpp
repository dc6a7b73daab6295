#include "workloads/models/decoder.h"

#include <cmath>

#include "kernels/profiling/range.h"
#include "kernels/torch/quantized_linear.h"
#include "workloads/models/checkpoint.h"
#include "workloads/models/rope.h"

namespace lpbench::workloads {

namespace {

constexpr double kInitStd = 0.02;
constexpr auto kCompute = torch::kBFloat16;

// Residual projections start smaller, by depth (GPT-2's scheme), so the stream stays O(1).
double residual_std(const ModelConfig& config) {
  return kInitStd / std::sqrt(2.0 * static_cast<double>(config.num_layers));
}

}  // namespace

kernels::LinearGemms PrecisionPlan::linear(const std::string& module) {
  decisions_.push_back(kernels::decide(recipe_, module, kernels::ModuleKind::linear));
  return decisions_.back().gemms;
}

void PrecisionPlan::embedding(const std::string& module) {
  decisions_.push_back(kernels::decide(recipe_, module, kernels::ModuleKind::embedding));
}

RecipeLinearImpl::RecipeLinearImpl(int64_t in_features, int64_t out_features,
                                   kernels::LinearGemms gemms, double init_std, std::string name,
                                   torch::Device device)
    : gemms_(gemms), name_(std::move(name)) {
  weight_ = register_parameter("weight",
                               torch::empty({out_features, in_features}, torch::device(device)));
  torch::nn::init::normal_(weight_, 0.0, init_std);
}

torch::Tensor RecipeLinearImpl::forward(const torch::Tensor& x) {
  return kernels::quantized_linear(x, weight_.to(kCompute), gemms_, name_);
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps, torch::Device device) : eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({dim}, torch::device(device)));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  // Statistics in FP32, as every reference implementation does; the result back in BF16.
  torch::Tensor xf = x.to(torch::kFloat);
  torch::Tensor normed = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return (normed * weight_).to(x.scalar_type());
}

AttentionImpl::AttentionImpl(const ModelConfig& config, const std::string& prefix,
                             PrecisionPlan& plan)
    : heads_(config.num_heads), kv_heads_(config.num_kv_heads), head_dim_(config.head_dim) {
  const int64_t qkv_width = (heads_ + 2 * kv_heads_) * head_dim_;
  qkv_ = register_module(
      "qkv", RecipeLinear(config.hidden_size, qkv_width, plan.linear(prefix + ".qkv"), kInitStd,
                          prefix + ".qkv", plan.device()));
  out_ = register_module(
      "out", RecipeLinear(heads_ * head_dim_, config.hidden_size, plan.linear(prefix + ".out"),
                          residual_std(config), prefix + ".out", plan.device()));
  if (config.qk_norm) {
    q_norm_ = register_module("q_norm", RMSNorm(head_dim_, config.norm_eps, plan.device()));
    k_norm_ = register_module("k_norm", RMSNorm(head_dim_, config.norm_eps, plan.device()));
  }
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin) {
  const profiling::Range range("attention");
  const int64_t batch = x.size(0);
  const int64_t seq = x.size(1);
  torch::Tensor qkv = qkv_(x);
  torch::Tensor q = qkv.narrow(-1, 0, heads_ * head_dim_).view({batch, seq, heads_, head_dim_});
  torch::Tensor k = qkv.narrow(-1, heads_ * head_dim_, kv_heads_ * head_dim_)
                        .view({batch, seq, kv_heads_, head_dim_});
  torch::Tensor v = qkv.narrow(-1, (heads_ + kv_heads_) * head_dim_, kv_heads_ * head_dim_)
                        .view({batch, seq, kv_heads_, head_dim_});
  if (q_norm_) {
    q = q_norm_(q);
    k = k_norm_(k);
  }
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
  // Gate and up projections fused into one GEMM, as Megatron's linear_fc1 does.
  gate_up_ = register_module("gate_up", RecipeLinear(config.hidden_size, 2 * intermediate_,
                                                     plan.linear(prefix + ".gate_up"), kInitStd,
                                                     prefix + ".gate_up", plan.device()));
  down_ = register_module(
      "down", RecipeLinear(intermediate_, config.hidden_size, plan.linear(prefix + ".down"),
                           residual_std(config), prefix + ".down", plan.device()));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  const profiling::Range range("mlp");
  torch::Tensor gate_up = gate_up_(x);
  torch::Tensor gate = gate_up.narrow(-1, 0, intermediate_);
  torch::Tensor up = gate_up.narrow(-1, intermediate_, intermediate_);
  return down_(torch::silu(gate) * up);
}

MoeImpl::MoeImpl(const ModelConfig& config, const std::string& prefix, PrecisionPlan& plan)
    : top_k_(config.experts_per_token) {
  router_ = register_module("router", RecipeLinear(config.hidden_size, config.num_experts,
                                                   plan.linear(prefix + ".router"), kInitStd,
                                                   prefix + ".router", plan.device()));
  for (int64_t e = 0; e < config.num_experts; ++e) {
    // torch module names may not hold dots; the recorded module name does.
    experts_.push_back(
        register_module("expert_" + std::to_string(e),
                        Mlp(config, prefix + ".experts." + std::to_string(e), plan)));
  }
  last_load_ = torch::zeros({config.num_experts}, torch::kLong);
}

torch::Tensor MoeImpl::forward(const torch::Tensor& x) {
  const profiling::Range range("moe");
  const int64_t hidden = x.size(-1);
  const int64_t experts = static_cast<int64_t>(experts_.size());
  torch::Tensor tokens = x.reshape({-1, hidden});
  torch::Tensor probs = torch::softmax(router_(tokens).to(torch::kFloat), -1);
  auto [weights, chosen] = probs.topk(top_k_, -1);  // [N, k]
  weights = weights / weights.sum(-1, /*keepdim=*/true);

  // Group the N·k assignments by expert: one sort, and one copy of the counts to the host.
  torch::Tensor flat = chosen.reshape({-1});
  torch::Tensor order = torch::argsort(flat, /*stable=*/true);
  torch::Tensor token_of = torch::div(order, top_k_, "floor");
  torch::Tensor weight_of = weights.reshape({-1}).index_select(0, order);
  last_load_ = torch::bincount(flat, {}, experts).to(torch::kCPU);
  const auto counts = last_load_.accessor<int64_t, 1>();

  torch::Tensor out = torch::zeros_like(tokens);
  int64_t offset = 0;
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t count = counts[e];
    if (count == 0) continue;
    torch::Tensor rows = token_of.narrow(0, offset, count);
    torch::Tensor y = experts_[e]->forward(tokens.index_select(0, rows));
    torch::Tensor w = weight_of.narrow(0, offset, count).unsqueeze(1).to(y.scalar_type());
    out.index_add_(0, rows, y * w);
    offset += count;
  }
  return out.view_as(x);
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& config, int64_t index, PrecisionPlan& plan)
    : name_("layers." + std::to_string(index)) {
  const std::string& prefix = name_;
  attention_norm_ = register_module("attention_norm",
                                    RMSNorm(config.hidden_size, config.norm_eps, plan.device()));
  attention_ = register_module("attention", Attention(config, prefix + ".attention", plan));
  mlp_norm_ =
      register_module("mlp_norm", RMSNorm(config.hidden_size, config.norm_eps, plan.device()));
  if (config.is_moe()) {
    moe_ = register_module("moe", Moe(config, prefix + ".moe", plan));
  } else {
    mlp_ = register_module("mlp", Mlp(config, prefix + ".mlp", plan));
  }
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin) {
  const profiling::Range range("layer", name_);
  torch::Tensor h = x + attention_(attention_norm_(x), cos, sin);
  torch::Tensor normed = mlp_norm_(h);
  return h + (moe_ ? moe_(normed) : mlp_(normed));
}

DecoderImpl::DecoderImpl(const ModelConfig& config, const kernels::Recipe& recipe,
                         int64_t max_seq_len, torch::Device device)
    : config_(config) {
  PrecisionPlan plan(recipe, device);
  embedding_ = register_parameter(
      "embedding", torch::empty({config.vocab_size, config.hidden_size}, torch::device(device)));
  torch::nn::init::normal_(embedding_, 0.0, kInitStd);
  plan.embedding("embedding");
  for (int64_t i = 0; i < config.num_layers; ++i) {
    layers_.push_back(
        register_module("layers_" + std::to_string(i), DecoderLayer(config, i, plan)));
  }
  final_norm_ =
      register_module("final_norm", RMSNorm(config.hidden_size, config.norm_eps, plan.device()));
  if (config.tie_embeddings) {
    tied_output_ = plan.linear("output");
  } else {
    output_ = register_module(
        "output", RecipeLinear(config.hidden_size, config.vocab_size, plan.linear("output"),
                               kInitStd, "output", plan.device()));
  }
  auto [cos, sin] = rope_tables(config, max_seq_len);
  rope_cos_ = register_buffer("rope_cos", cos.to(device));
  rope_sin_ = register_buffer("rope_sin", sin.to(device));
  decisions_ = plan.decisions();
}

torch::Tensor DecoderImpl::forward(const torch::Tensor& tokens) {
  torch::Tensor h = torch::embedding(embedding_.to(kCompute), tokens);
  for (DecoderLayer& layer : layers_) {
    if (checkpointing_ && is_training()) {
      DecoderLayerImpl* impl = layer.get();
      const torch::Tensor cos = rope_cos_;
      const torch::Tensor sin = rope_sin_;
      h = checkpointed(
          [impl, cos, sin](const torch::Tensor& x) { return impl->forward(x, cos, sin); }, h);
    } else {
      h = layer(h, rope_cos_, rope_sin_);
    }
  }
  h = final_norm_(h);
  if (output_) return output_(h);
  return kernels::quantized_linear(h, embedding_.to(kCompute), tied_output_, "output");
}

}  // namespace lpbench::workloads
