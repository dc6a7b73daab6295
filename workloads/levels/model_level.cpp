#include "workloads/levels/model_level.h"

#include <fmt/format.h>

#include "kernels/profiling/range.h"
#include "kernels/torch/adamw_step.h"
#include "kernels/torch/gemm_stats.h"
#include "kernels/torch/linear_cross_entropy.h"
#include "kernels/torch/rounding_seed.h"
#include "workloads/levels/adamw.h"
#include "workloads/levels/layer_level.h"
#include "workloads/models/layer_copies.h"
#include "workloads/parallel/layer_sharded_adamw.h"
#include "workloads/parallel/sharded_adamw.h"

namespace lpbench::workloads {

namespace {

// The layer-sharded optimizer steps what the units hold: they must be every parameter.
void check_units_cover(const DecoderImpl& decoder) {
  int64_t in_units = 0;
  auto count = [&](const ParameterUnit& unit) {
    for (const torch::Tensor& p : unit.parameters)
      in_units += p.numel();
  };
  count(decoder.outer_unit());
  for (const ParameterUnit& unit : decoder.layer_units())
    count(unit);
  int64_t all = 0;
  for (const torch::Tensor& p : decoder.parameters())
    all += p.numel();
  if (in_units != all) {
    throw std::logic_error(fmt::format(
        "Decoder: its parameter units hold {} elements of its {} parameters", in_units, all));
  }
}

}  // namespace

ModelLevel::ModelLevel(const ModelConfig& model, const kernels::Recipe& recipe,
                       const TrainingOptions& options, const torch::Device& device)
    : model_(model), options_(options), device_(device) {
  data_ = open_token_source(options.data, model.vocab_size, options.seed, options.seq_len);
  // Same seed, same initial weights for every recipe: parameters are drawn on the run's device
  // (from its seeded generator) in a fixed order.
  torch::manual_seed(options.seed);
  // Each rank's gradients get their own rounding noise.
  kernels::seed_stochastic_rounding(options.seed,
                                    options.group ? static_cast<uint64_t>(options.group->rank) : 0);
  const bool layer_sharded = options.group && options.sharding != Sharding::zero1;
  const int64_t recomputed = recomputed_layers(options, model.num_layers);
  // Made per layer only for recomputed layers (layer_copies.h).
  const bool copies_per_layer = options.copies_per_layer && options.fusion == Fusion::fused &&
                                !layer_sharded && recomputed > 0;
  // Layer sharding and copies made per layer free and take back a layer's buffers at each use,
  // and one process's backward replaces the activations with gradients of other sizes: in the
  // caching allocator's fixed segments both leave memory in pieces (seen under layer sharding:
  // a 5.4 GiB buffer refused with 5 GiB free in fragments). Every GPU model run gets them, so
  // that its recipes and its memory plan compare under one allocator.
  const bool expandable = parallel::prefer_expandable_segments(device);
  decoder_ = Decoder(model, recipe, options.seq_len, device, options.fusion, options.producer_amax);
  decoder_->set_checkpointed_layers(recomputed);
  const bool by_rows = embedding_gradient_by_rows(options, model.tie_embeddings);
  decoder_->set_embedding_gradient_by_rows(by_rows);
  decoder_->to(device);
  if (copies_per_layer) {
    std::vector<std::vector<ComputeCopy>> copies;
    for (const ParameterUnit& unit : decoder_->layer_units())
      copies.push_back(unit.copies);
    decoder_->set_parameter_hooks(std::make_shared<LayerCopies>(std::move(copies), recomputed));
  }
  bool copy_amax = false;  // whether the optimizer reports its BF16 copies' amax
  if (layer_sharded) {
    check_units_cover(*decoder_);
    auto sharded = std::make_shared<parallel::LayerShardedAdamW>(
        decoder_->outer_unit(), decoder_->layer_units(), options.sharding, options, options.group);
    decoder_->set_parameter_hooks(sharded);
    optimizer_ = sharded;
  } else if (options.group) {
    optimizer_ =
        std::make_shared<parallel::ShardedAdamW>(decoder_->parameters(), options, options.group);
    // The BF16 copies follow the weights rank 0 broadcast.
    decoder_->refresh_compute_weights();
  } else {
    // Fused, the step writes the BF16 copies the products read (kept, or made per layer);
    // unfused there are none. Where the recipe scales a tensor by its own amax, the step also
    // reports each copy's amax, as the fused operators report theirs.
    copy_amax = options.fusion == Fusion::fused && options.producer_amax &&
                quantizes_by_own_amax(recipe) && kernels::adamw_on_kernel(device);
    std::vector<torch::Tensor> parameters = decoder_->parameters();
    std::vector<torch::Tensor> copies(parameters.size());
    for (const ComputeCopy& c : decoder_->compute_copies()) {
      for (size_t i = 0; i < parameters.size(); ++i) {
        if (parameters[i].unsafeGetTensorImpl() == c.master.unsafeGetTensorImpl()) {
          copies[i] = c.bf16;
        }
      }
    }
    optimizer_ =
        std::make_shared<AdamW>(std::move(parameters), options, std::move(copies), copy_amax);
  }
  operators_ = describe_operators(
      options.fusion, {model.num_heads, model.num_kv_heads, model.head_dim}, options.seq_len,
      device, options.producer_amax && quantizes_by_own_amax(recipe),
      recipe.saved == kernels::SavedActivations::int8,
      producer_line_amax(recipe, options.producer_amax),
      quantizing_producers(recipe, options.producer_amax, model.is_moe(),
                           rope_backward_quantizes(model, options.seq_len)));
  if (options.fusion == Fusion::fused) {
    if (!decoder_->fusable_output()) {
      operators_ += "; output layer quantized: loss unfused";
    } else if (kernels::linear_cross_entropy_on_kernel(device)) {
      operators_ += "; output layer and loss fused (the loss one kernel on the BF16 logits)";
    } else {
      operators_ += fmt::format("; output layer and loss fused (the loss by chunks of {} tokens)",
                                kernels::kLossChunkTokens);
    }
    if (copy_amax) operators_ += "; the optimizer reports the weight copies' amax";
  }
  if (copies_per_layer) {
    operators_ +=
        fmt::format("; BF16 weight copies made per layer for the {} recomputed layers", recomputed);
  }
  if (by_rows) operators_ += "; the embedding's gradient by rows";
  if (expandable) operators_ += "; CUDA allocator: expandable segments";
  if (options.fusion == Fusion::fused) {
    decoder_->add_into_gradients(options.gradient_accumulation_fusion);
    // It acts where a gradient is defined when backward reaches a layer: after the first
    // micro-batch of a step, and under zero1's flat buffers (zero2/3 empty them layer by layer).
    const bool defined_grads = options_.grad_accum > 1 || (options.group && !layer_sharded);
    if (options.gradient_accumulation_fusion && defined_grads) {
      operators_ += "; wgrad products add into the FP32 gradients (gradient accumulation fusion)";
    }
  }
  if (caches_weights()) {
    decoder_->cache_quantized_weights(true);
    if (recipe.gemms.any_quantized()) {
      operators_ +=
          fmt::format("; quantized weights made once an optimizer step ({} micro-batches)",
                      options_.grad_accum);
    }
  }
}

torch::Tensor ModelLevel::loss_of(const torch::Tensor& tokens) {
  const int64_t seq = options_.seq_len;
  torch::Tensor inputs = tokens.narrow(1, 0, seq);
  torch::Tensor targets = tokens.narrow(1, 1, seq);
  // Fused, a BF16 output layer and the loss are one operator (no FP32 logits of the batch).
  if (const std::optional<ComputeCopy> output = decoder_->fusable_output()) {
    const torch::Tensor h = decoder_->hidden(inputs);
    return kernels::linear_cross_entropy(h.reshape({-1, h.size(-1)}), output->bf16, output->master,
                                         targets.reshape({-1}));
  }
  torch::Tensor logits = decoder_->forward(inputs);
  return torch::nn::functional::cross_entropy(
      logits.to(torch::kFloat).view({-1, model_.vocab_size}), targets.reshape({-1}));
}

StepOutput ModelLevel::step(int64_t index) {
  const double lr = learning_rate_at(index, options_);
  const int64_t accum = options_.grad_accum;
  const int64_t rows = accum * options_.micro_batch;  // this rank's sequences this step
  torch::Tensor tokens = data_->batch(index, ranks() * rows, options_.seq_len);
  if (options_.group) tokens = tokens.narrow(0, options_.group->rank * rows, rows);
  tokens = tokens.to(device_);
  optimizer_->zero_grad();
  torch::Tensor loss;  // the mean over this rank's micro-batches
  for (int64_t i = 0; i < accum; ++i) {
    torch::Tensor part;
    {
      const profiling::Range range("forward");
      part = loss_of(tokens.narrow(0, i * options_.micro_batch, options_.micro_batch));
    }
    {
      const profiling::Range range("backward");
      // Equal micro-batches: the mean of their means is the step's mean loss.
      (accum > 1 ? part / static_cast<double>(accum) : part).backward();
    }
    torch::Tensor contribution = part.detach().to(torch::kFloat);
    if (accum > 1) contribution = contribution / static_cast<double>(accum);
    loss = loss.defined() ? loss + contribution : contribution;
  }
  const double grad_norm = optimizer_->step(lr);
  optimizer_->release_gradients();
  if (caches_weights()) decoder_->clear_quantized_weights();
  // The BF16 copies the products read follow the masters (fused; nothing to do unfused).
  if (!optimizer_->refreshes_compute_copies()) decoder_->refresh_compute_weights();
  fallback_.absorb();
  if (options_.group) {
    torch::Tensor mean = loss.reshape({1}) / static_cast<double>(options_.group->size);
    parallel::all_reduce_sum(*options_.group, mean);
    return {mean.item<double>(), grad_norm, lr, tokens_per_step()};
  }
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
  // Every rank evaluates the same batches with the same weights: one rank's count.
  return EvalOutput{sum / static_cast<double>(options_.eval_batches),
                    options_.eval_batches * rank_tokens()};
}

double ModelLevel::flops_per_step() const {
  return model_.flops_per_token(options_.seq_len) *
         static_cast<double>(options_.grad_accum * rank_tokens());
}

FlopCount ModelLevel::gemm_flops() const {
  return decoder_flops(model_, decoder_->decisions(),
                       static_cast<double>(options_.grad_accum * rank_tokens()), options_.seq_len,
                       model_.num_layers);
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

std::string ModelLevel::checkpointing_description() const {
  const int64_t recomputed = recomputed_layers(options_, model_.num_layers);
  if (recomputed == 0) return "";
  if (recomputed == model_.num_layers) return ", activation checkpointing";
  return fmt::format(", activation checkpointing of {} layers", recomputed);
}

std::string ModelLevel::shape_description() const {
  return fmt::format(
      "{}: {} of {} layers, {}{}{} × {} tokens{}", model_.name, model_.num_layers,
      model_.published_layers,
      options_.group ? fmt::format("{} ranks × ", options_.group->size) : "",
      options_.grad_accum > 1 ? fmt::format("{} micro-batches × ", options_.grad_accum) : "",
      options_.micro_batch, options_.seq_len, checkpointing_description());
}

}  // namespace lpbench::workloads
