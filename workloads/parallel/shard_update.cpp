#include "workloads/parallel/shard_update.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_fused_adamw.h>

#include <algorithm>
#include <cmath>

namespace lpbench::workloads::parallel {

namespace {

constexpr double kEps = 1e-8;          // as adamw.cpp (torch's AdamW default)
constexpr double kClipEpsilon = 1e-6;  // as clip_grad_norm_ adds to the norm

// In chunks: squaring the whole slice at once would allocate a temporary its size (26 GB a rank
// for Llama2-13B on two ranks), the step's peak (docs/perf-log.md §17). A norm kernel would not,
// but on the CPU it sums less accurately (3e-4 off one process's norm on the tiny model).
torch::Tensor sum_of_squares(const torch::Tensor& flat) {
  constexpr int64_t kChunk = int64_t{1} << 26;
  torch::Tensor sum = flat.narrow(0, 0, std::min(kChunk, flat.numel())).square().sum();
  for (int64_t at = kChunk; at < flat.numel(); at += kChunk) {
    sum += flat.narrow(0, at, std::min(kChunk, flat.numel() - at)).square().sum();
  }
  return sum;
}

}  // namespace

ShardState::ShardState(int64_t numel, const torch::TensorOptions& options)
    : exp_avg(torch::zeros({numel}, options)),
      exp_avg_sq(torch::zeros({numel}, options)),
      steps(torch::zeros({}, options)) {}

double update_shard(const Group& group, const TrainingOptions& options, torch::Tensor& master,
                    torch::Tensor& grad, ShardState& state, double lr) {
  const torch::NoGradGuard no_grad;
  // Each rank's gradient is its own micro-batch's mean; the global batch's is their mean.
  grad.div_(static_cast<double>(group.size));
  torch::Tensor squares = sum_of_squares(grad).reshape({1});
  all_reduce_sum(group, squares);
  const torch::Tensor norm = squares.sqrt().reshape({});
  std::vector<torch::Tensor> steps{state.steps};
  at::_foreach_add_(steps, 1.0);
  if (options.fusion == Fusion::fused) {
    const torch::Tensor unscale = ((norm + kClipEpsilon) / options.grad_clip).clamp_min(1.0);
    at::_fused_adamw_({master}, {grad}, {state.exp_avg}, {state.exp_avg_sq},
                      /*max_exp_avg_sqs=*/{}, steps, lr, options.beta1, options.beta2,
                      options.weight_decay, kEps, /*amsgrad=*/false, /*maximize=*/false,
                      /*grad_scale=*/unscale, /*found_inf=*/{});
    return norm.item<double>();
  }
  const double norm_value = norm.item<double>();
  const double clip = options.grad_clip / (norm_value + kClipEpsilon);
  if (clip < 1.0) grad.mul_(clip);
  const double step = state.steps.item<double>();
  master.mul_(1.0 - lr * options.weight_decay);
  state.exp_avg.mul_(options.beta1).add_(grad, 1.0 - options.beta1);
  state.exp_avg_sq.mul_(options.beta2).addcmul_(grad, grad, 1.0 - options.beta2);
  const double bias_correction1 = 1.0 - std::pow(options.beta1, step);
  const double bias_correction2 = 1.0 - std::pow(options.beta2, step);
  const torch::Tensor denom = (state.exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(kEps);
  master.addcdiv_(state.exp_avg, denom, -lr / bias_correction1);
  return norm_value;
}

}  // namespace lpbench::workloads::parallel
