#include "workloads/levels/model_level.h"

#include <fmt/format.h>

#include "kernels/profiling/range.h"
#include "kernels/torch/gemm_stats.h"
#include "workloads/levels/layer_level.h"

namespace lpbench::workloads {

ModelLevel::ModelLevel(const ModelConfig& model, const kernels::Recipe& recipe,
                       const TrainingOptions& options, const torch::Device& device)
    : model_(model), options_(options), device_(device) {
  data_ = open_token_source(options.data, model.vocab_size, options.seed, options.seq_len);
  // Same seed, same initial weights for every recipe: parameters are drawn on the run's device
  // (from its seeded generator) in a fixed order.
  torch::manual_seed(options.seed);
  decoder_ = Decoder(model, recipe, options.seq_len, device);
  decoder_->set_activation_checkpointing(options.activation_checkpointing);
  decoder_->to(device);
  optimizer_ = std::make_unique<torch::optim::AdamW>(decoder_->parameters(),
                                                     torch::optim::AdamWOptions(options.lr)
                                                         .betas({options.beta1, options.beta2})
                                                         .weight_decay(options.weight_decay));
}

torch::Tensor ModelLevel::loss_of(const torch::Tensor& tokens) {
  const int64_t seq = options_.seq_len;
  torch::Tensor inputs = tokens.narrow(1, 0, seq);
  torch::Tensor targets = tokens.narrow(1, 1, seq);
  torch::Tensor logits = decoder_->forward(inputs);
  return torch::nn::functional::cross_entropy(
      logits.to(torch::kFloat).view({-1, model_.vocab_size}), targets.reshape({-1}));
}

StepOutput ModelLevel::step(int64_t index) {
  const double lr = learning_rate_at(index, options_);
  for (auto& group : optimizer_->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  torch::Tensor tokens = data_->batch(index, options_.micro_batch, options_.seq_len).to(device_);
  optimizer_->zero_grad(/*set_to_none=*/true);
  torch::Tensor loss;
  {
    const profiling::Range range("forward");
    loss = loss_of(tokens);
  }
  {
    const profiling::Range range("backward");
    loss.backward();
  }
  double grad_norm = 0.0;
  {
    const profiling::Range range("optimizer");
    grad_norm = torch::nn::utils::clip_grad_norm_(decoder_->parameters(), options_.grad_clip);
    optimizer_->step();
  }
  fallback_.absorb();
  return {loss.item<double>(), grad_norm, lr, tokens_per_step()};
}

std::optional<EvalOutput> ModelLevel::evaluate() {
  torch::NoGradGuard no_grad;
  decoder_->eval();
  double sum = 0.0;
  for (int64_t i = 0; i < options_.eval_batches; ++i) {
    torch::Tensor tokens =
        data_->validation_batch(i, options_.micro_batch, options_.seq_len).to(device_);
    sum += loss_of(tokens).item<double>();
  }
  decoder_->train();
  kernels::take_fallback_counts();  // evaluation is not training: its outlier blocks are not
                                    // counted
  return EvalOutput{sum / static_cast<double>(options_.eval_batches),
                    options_.eval_batches * tokens_per_step()};
}

double ModelLevel::flops_per_step() const {
  return model_.flops_per_token(options_.seq_len) * static_cast<double>(tokens_per_step());
}

FlopCount ModelLevel::gemm_flops() const {
  return decoder_flops(model_, decoder_->decisions(), static_cast<double>(tokens_per_step()),
                       options_.seq_len, model_.num_layers);
}

std::vector<StepMetric> ModelLevel::step_metrics() {
  std::vector<StepMetric> metrics = fallback_.take_metrics();
  const auto& layers = decoder_->layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i]->moe()) continue;
    auto layer = expert_load_metrics("layers." + std::to_string(i), layers[i]->moe()->last_load());
    metrics.insert(metrics.end(), layer.begin(), layer.end());
  }
  return metrics;
}

std::string ModelLevel::shape_description() const {
  return fmt::format("{}: {} of {} layers, {} × {} tokens{}", model_.name, model_.num_layers,
                     model_.published_layers, options_.micro_batch, options_.seq_len,
                     options_.activation_checkpointing ? ", activation checkpointing" : "");
}

}  // namespace lpbench::workloads
