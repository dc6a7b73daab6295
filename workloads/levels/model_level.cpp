#include "workloads/levels/model_level.h"

#include "workloads/data/synthetic_tokens.h"

namespace lpbench::workloads {

ModelLevel::ModelLevel(const ModelConfig& model, const kernels::Recipe& recipe,
                       const TrainingOptions& options, const torch::Device& device)
    : model_(model), options_(options), device_(device) {
  // Same seed, same initial weights for every recipe: parameters are drawn on the CPU in a
  // fixed order, then moved, so the device does not change them either.
  torch::manual_seed(options.seed);
  decoder_ = Decoder(model, recipe, options.seq_len);
  decoder_->to(device);
  optimizer_ = std::make_unique<torch::optim::AdamW>(decoder_->parameters(),
                                                     torch::optim::AdamWOptions(options.lr)
                                                         .betas({options.beta1, options.beta2})
                                                         .weight_decay(options.weight_decay));
  data_ = std::make_unique<SyntheticTokens>(model.vocab_size, options.seed);
}

StepOutput ModelLevel::step(int64_t index) {
  const double lr = learning_rate_at(index, options_);
  for (auto& group : optimizer_->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  const int64_t seq = options_.seq_len;
  torch::Tensor tokens = data_->batch(index, options_.micro_batch, seq).to(device_);
  torch::Tensor inputs = tokens.narrow(1, 0, seq);
  torch::Tensor targets = tokens.narrow(1, 1, seq);

  optimizer_->zero_grad(/*set_to_none=*/true);
  torch::Tensor logits = decoder_->forward(inputs);
  torch::Tensor loss = torch::nn::functional::cross_entropy(
      logits.to(torch::kFloat).view({-1, model_.vocab_size}), targets.reshape({-1}));
  loss.backward();
  const double grad_norm =
      torch::nn::utils::clip_grad_norm_(decoder_->parameters(), options_.grad_clip);
  optimizer_->step();
  return {loss.item<double>(), grad_norm, lr, tokens_per_step()};
}

}  // namespace lpbench::workloads
