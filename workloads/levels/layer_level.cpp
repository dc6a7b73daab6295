#include "workloads/levels/layer_level.h"

#include <fmt/format.h>

#include "kernels/profiling/range.h"
#include "kernels/torch/rounding_seed.h"
#include "workloads/models/rope.h"

namespace lpbench::workloads {

std::vector<StepMetric> expert_load_metrics(const std::string& layer, const torch::Tensor& load) {
  std::vector<StepMetric> metrics;
  const double total = static_cast<double>(load.sum().item<int64_t>());
  if (total <= 0) return metrics;
  for (int64_t e = 0; e < load.size(0); ++e) {
    metrics.emplace_back(fmt::format("moe.{}.expert.{}.share", layer, e),
                         static_cast<double>(load[e].item<int64_t>()) / total);
  }
  return metrics;
}

LayerLevel::LayerLevel(const ModelConfig& model, const kernels::Recipe& recipe,
                       const TrainingOptions& options, const torch::Device& device)
    : model_(model), options_(options) {
  torch::manual_seed(options.seed);
  kernels::seed_stochastic_rounding(options.seed);
  PrecisionPlan plan(recipe, device, options.fusion, options.producer_amax);
  layer_ = DecoderLayer(model, 0, plan);
  layer_->to(device);
  decisions_ = plan.decisions();
  auto [cos, sin] = rope_tables(model, options.seq_len);
  cos_ = cos.to(device);
  sin_ = sin.to(device);
  const auto bf16 = torch::dtype(torch::kBFloat16).device(device);
  const std::vector<int64_t> shape{options.micro_batch, options.seq_len, model.hidden_size};
  // A layer inside the model: the stream comes in as the previous layer left it, its residual
  // sum and its MLP's output not yet added (decoder.h, ResidualStream), and leaves the same way.
  x_ = torch::randn(shape, bf16).requires_grad_(true);
  delta_ = torch::randn(shape, bf16);
  grad_y_ = torch::randn(shape, bf16);
  operators_ = describe_operators(
      options.fusion, {model.num_heads, model.num_kv_heads, model.head_dim}, options.seq_len,
      device, options.producer_amax && quantizes_by_own_amax(recipe),
      recipe.saved == kernels::SavedActivations::int8,
      producer_line_amax(recipe, options.producer_amax),
      quantizing_producers(recipe, options.producer_amax, model.is_moe(),
                           rope_backward_quantizes(model, options.seq_len)));
}

StepOutput LayerLevel::step(int64_t /*index*/) {
  x_.mutable_grad() = torch::Tensor();
  layer_->zero_grad(/*set_to_none=*/true);
  {
    const profiling::Range range("forward");
    const ResidualStream out = layer_->forward_stream({x_, delta_}, cos_, sin_);
    y_ = out.h;
    y_delta_ = out.delta;
  }
  {
    const profiling::Range range("backward");
    // The stream's two parts are summed downstream: both receive its gradient.
    torch::autograd::backward({y_, y_delta_}, {grad_y_, grad_y_});
  }
  // Only their values are read after the step: holding the autograd graph would keep this
  // step's AccumulateGrad nodes, and their stream, for the next (which CUDA graph capture
  // refuses).
  y_ = y_.detach();
  y_delta_ = y_delta_.detach();
  fallback_.absorb();
  return {std::nullopt, std::nullopt, 0.0, tokens_per_step()};
}

int64_t LayerLevel::tokens_per_step() const {
  return options_.micro_batch * options_.seq_len;
}

double LayerLevel::flops_per_step() const {
  // One layer of the model, by the model convention: 6·N_matmul(active) + 12·H·Q·T per token.
  ModelConfig one = model_.with_layers(1);
  const double output_params = static_cast<double>(one.vocab_size * one.hidden_size);
  const double per_token =
      6.0 * (static_cast<double>(one.matmul_parameter_count(true)) - output_params) +
      12.0 * static_cast<double>(one.num_heads * one.head_dim * options_.seq_len);
  return per_token * static_cast<double>(tokens_per_step());
}

FlopCount LayerLevel::gemm_flops() const {
  return decoder_flops(model_, decisions_, static_cast<double>(tokens_per_step()), options_.seq_len,
                       1);
}

std::vector<StepMetric> LayerLevel::step_metrics() {
  std::vector<StepMetric> metrics = fallback_.take_metrics();
  if (layer_->moe()) {
    auto loads = expert_load_metrics("layers.0", layer_->moe()->last_load());
    metrics.insert(metrics.end(), loads.begin(), loads.end());
  }
  return metrics;
}

bool LayerLevel::last_step_finite() const {
  return torch::isfinite(y_).all().item<bool>() && torch::isfinite(y_delta_).all().item<bool>() &&
         torch::isfinite(x_.grad()).all().item<bool>();
}

std::string LayerLevel::shape_description() const {
  return fmt::format("one {} layer of {}: {} × {} tokens, hidden {}",
                     model_.is_moe() ? "MoE" : "dense", model_.name, options_.micro_batch,
                     options_.seq_len, model_.hidden_size);
}

}  // namespace lpbench::workloads
