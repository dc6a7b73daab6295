#include "workloads/levels/adamw.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/_fused_adamw.h>

#include "kernels/profiling/range.h"

namespace lpbench::workloads {

namespace {

constexpr double kEps = 1e-8;          // torch's AdamW default
constexpr double kClipEpsilon = 1e-6;  // as clip_grad_norm_ adds to the norm

}  // namespace

AdamW::AdamW(std::vector<torch::Tensor> parameters, const TrainingOptions& options)
    : parameters_(std::move(parameters)), options_(options) {
  if (options.fusion == Fusion::none) {
    unfused_ = std::make_unique<torch::optim::AdamW>(parameters_,
                                                     torch::optim::AdamWOptions(options.lr)
                                                         .betas({options.beta1, options.beta2})
                                                         .eps(kEps)
                                                         .weight_decay(options.weight_decay));
  }
}

void AdamW::zero_grad() {
  for (torch::Tensor& p : parameters_)
    p.mutable_grad() = torch::Tensor();
}

double AdamW::step(double lr) {
  const profiling::Range range("optimizer");
  if (!unfused_) return fused_step(lr);
  for (auto& group : unfused_->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
  const double norm = torch::nn::utils::clip_grad_norm_(parameters_, options_.grad_clip);
  unfused_->step();
  return norm;
}

double AdamW::fused_step(double lr) {
  const torch::NoGradGuard no_grad;
  if (exp_avg_.empty()) {
    for (const torch::Tensor& p : parameters_) {
      exp_avg_.push_back(torch::zeros_like(p));
      exp_avg_sq_.push_back(torch::zeros_like(p));
      steps_.push_back(torch::zeros({}, p.options().dtype(torch::kFloat)));
    }
  }
  // A parameter no token reached this step (an idle expert) has no gradient and is not stepped,
  // as torch's AdamW skips it.
  std::vector<torch::Tensor> params, grads, m, v, steps;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (!parameters_[i].grad().defined()) continue;
    params.push_back(parameters_[i]);
    grads.push_back(parameters_[i].grad());
    m.push_back(exp_avg_[i]);
    v.push_back(exp_avg_sq_[i]);
    steps.push_back(steps_[i]);
  }
  if (params.empty()) return 0.0;
  const torch::Tensor norm = torch::stack(at::_foreach_norm(grads, 2)).norm();
  // The clipping rides in the optimizer's own pass: the kernel divides every gradient by
  // grad_scale (its loss-scale input), here 1 / min(1, clip / norm), instead of a pass that
  // multiplies the gradients in place first.
  const torch::Tensor unscale = ((norm + kClipEpsilon) / options_.grad_clip).clamp_min(1.0);
  // The kernel reads the step count as already advanced (torch's AdamW adds 1 before calling it).
  at::_foreach_add_(steps, 1.0);
  at::_fused_adamw_(params, grads, m, v, /*max_exp_avg_sqs=*/{}, steps, lr, options_.beta1,
                    options_.beta2, options_.weight_decay, kEps, /*amsgrad=*/false,
                    /*maximize=*/false, /*grad_scale=*/unscale, /*found_inf=*/{});
  return norm.item<double>();
}

}  // namespace lpbench::workloads
