#include "workloads/levels/linear_level.h"

#include <fmt/format.h>

#include "kernels/profiling/range.h"
#include "kernels/torch/rounding_seed.h"

#include <stdexcept>

namespace lpbench::workloads {

LinearLevel::LinearLevel(const WorkloadSpec& spec, const ModelConfig& model,
                         const kernels::Recipe& recipe, const TrainingOptions& options,
                         const torch::Device& device)
    : tokens_(options.micro_batch * options.seq_len) {
  bool found = false;
  for (const LinearShape& s : linear_shapes(model)) {
    if (s.part == spec.part) {
      shape_ = s;
      found = true;
    }
  }
  if (!found) throw std::invalid_argument("unknown linear part '" + spec.part + "'");
  torch::manual_seed(options.seed);
  kernels::seed_stochastic_rounding(options.seed);
  linear_ = RecipeLinear(shape_.in_features, shape_.out_features, recipe.gemms, 0.02, spec.part,
                         device, options.fusion);
  linear_->to(device);
  const auto bf16 = torch::dtype(torch::kBFloat16).device(device);
  x_ = torch::randn({tokens_, shape_.in_features}, bf16).requires_grad_(true);
  grad_y_ = torch::randn({tokens_, shape_.out_features}, bf16);
  decisions_.push_back({spec.part, kernels::ModuleKind::linear, recipe.gemms,
                        recipe.gemms.any_quantized(),
                        "linear level: the layer under the recipe's specs"});
}

StepOutput LinearLevel::step(int64_t /*index*/) {
  x_.mutable_grad() = torch::Tensor();
  linear_->zero_grad(/*set_to_none=*/true);
  {
    const profiling::Range range("forward");
    y_ = linear_->forward(x_);
  }
  {
    const profiling::Range range("backward");
    y_.backward(grad_y_);
  }
  // Only its values are read after the step: holding its autograd graph would keep this step's
  // AccumulateGrad nodes, and their stream, for the next (which CUDA graph capture refuses).
  y_ = y_.detach();
  fallback_.absorb();
  return {std::nullopt, std::nullopt, 0.0, tokens_};
}

bool LinearLevel::last_step_finite() const {
  return torch::isfinite(y_).all().item<bool>() && torch::isfinite(x_.grad()).all().item<bool>();
}

double LinearLevel::flops_per_step() const {
  return 6.0 * static_cast<double>(tokens_) * static_cast<double>(shape_.in_features) *
         static_cast<double>(shape_.out_features);
}

FlopCount LinearLevel::gemm_flops() const {
  return linear_flops(static_cast<double>(tokens_), static_cast<double>(shape_.in_features),
                      static_cast<double>(shape_.out_features), decisions_.front().gemms);
}

std::string LinearLevel::shape_description() const {
  return fmt::format("{}: {} tokens × {} → {}", shape_.part, tokens_, shape_.in_features,
                     shape_.out_features);
}

}  // namespace lpbench::workloads
