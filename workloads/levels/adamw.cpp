#include "workloads/levels/adamw.h"

#include <ATen/ops/_foreach_norm.h>

#include <stdexcept>

#include "kernels/profiling/range.h"
#include "kernels/torch/adamw_step.h"
#include "workloads/models/storage.h"

namespace lpbench::workloads {

namespace {

constexpr double kEps = 1e-8;          // torch's AdamW default
constexpr double kClipEpsilon = 1e-6;  // as clip_grad_norm_ adds to the norm

}  // namespace

AdamW::AdamW(std::vector<torch::Tensor> parameters, const TrainingOptions& options,
             std::vector<torch::Tensor> copies, bool copy_amax)
    : parameters_(std::move(parameters)),
      options_(options),
      copies_(std::move(copies)),
      copy_amax_(copy_amax) {
  if (!copies_.empty() && copies_.size() != parameters_.size()) {
    throw std::invalid_argument("AdamW: one copy slot a parameter");
  }
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
    }
    steps_.assign(parameters_.size(), 0);
  }
  // A parameter no token reached this step (an idle expert) has no gradient and is not stepped,
  // as torch's AdamW skips it.
  std::vector<torch::Tensor> params, grads, m, v, copies;
  std::vector<int64_t> steps;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (!parameters_[i].grad().defined()) continue;
    params.push_back(parameters_[i]);
    // A gradient by rows arrives with distinct rows (kernels/torch/embedding.h) but autograd's
    // accumulation may drop the flag that says so; coalescing distinct rows moves no value.
    const torch::Tensor& g = parameters_[i].grad();
    grads.push_back(g.is_sparse() && !g.is_coalesced() ? g.coalesce() : g);
    m.push_back(exp_avg_[i]);
    v.push_back(exp_avg_sq_[i]);
    steps.push_back(++steps_[i]);
    // A copy made where it is used (models/layer_copies.h) has no memory now: it is cast from
    // the master when next needed.
    const bool copied = !copies_.empty() && copies_[i].defined() && !storage_freed(copies_[i]);
    copies.push_back(copied ? copies_[i] : torch::Tensor());
  }
  if (params.empty()) return 0.0;
  // A gradient by rows (the embedding's) counts the rows it holds: the others are zero.
  std::vector<torch::Tensor> held;
  held.reserve(grads.size());
  for (const torch::Tensor& g : grads)
    held.push_back(g.is_sparse() ? g._values() : g);
  const torch::Tensor norm = torch::stack(at::_foreach_norm(held, 2)).norm();
  // The clipping rides in the update's own pass: it divides every gradient by grad_scale, here
  // 1 / min(1, clip / norm), instead of a pass that multiplies the gradients in place first.
  const torch::Tensor unscale = ((norm + kClipEpsilon) / options_.grad_clip).clamp_min(1.0);
  kernels::adamw_step(params, grads, m, v, copies, steps,
                      {lr, options_.beta1, options_.beta2, kEps, options_.weight_decay}, unscale,
                      copy_amax_);
  return norm.item<double>();
}

}  // namespace lpbench::workloads
