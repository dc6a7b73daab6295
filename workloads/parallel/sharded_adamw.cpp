#include "workloads/parallel/sharded_adamw.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_fused_adamw.h>
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "kernels/profiling/range.h"

namespace lpbench::workloads::parallel {

namespace {

constexpr double kEps = 1e-8;          // as adamw.cpp (torch's AdamW default)
constexpr double kClipEpsilon = 1e-6;  // as clip_grad_norm_ adds to the norm

}  // namespace

// Unfused, the operations of clip_grad_norm_ and torch::optim::AdamW in their order, on the
// slice: elementwise, so each element gets the bits one process's per-parameter update gives it.
void ShardedAdamW::unfused_update(torch::Tensor& mine, double norm, double lr) {
  const double clip = options_.grad_clip / (norm + kClipEpsilon);
  if (clip < 1.0) grad_shard_.mul_(clip);
  const double step = steps_.item<double>();
  mine.mul_(1.0 - lr * options_.weight_decay);
  exp_avg_.mul_(options_.beta1).add_(grad_shard_, 1.0 - options_.beta1);
  exp_avg_sq_.mul_(options_.beta2).addcmul_(grad_shard_, grad_shard_, 1.0 - options_.beta2);
  const double bias_correction1 = 1.0 - std::pow(options_.beta1, step);
  const double bias_correction2 = 1.0 - std::pow(options_.beta2, step);
  const torch::Tensor denom = (exp_avg_sq_.sqrt() / std::sqrt(bias_correction2)).add_(kEps);
  mine.addcdiv_(exp_avg_, denom, -lr / bias_correction1);
}

ShardedAdamW::ShardedAdamW(std::vector<torch::Tensor> parameters, const TrainingOptions& options,
                           std::shared_ptr<const Group> group)
    : parameters_(std::move(parameters)), options_(options), group_(std::move(group)) {
  if (parameters_.empty()) throw std::invalid_argument("ShardedAdamW: no parameters");
  const torch::TensorOptions flat_options = parameters_.front().options();
  int64_t total = 0;
  for (const torch::Tensor& p : parameters_) {
    if (p.scalar_type() != torch::kFloat || p.device() != parameters_.front().device()) {
      throw std::invalid_argument(
          "ShardedAdamW: every parameter must be an FP32 master on the run's device");
    }
    total += p.numel();
  }
  shard_ = (total + group_->size - 1) / group_->size;
  const torch::NoGradGuard no_grad;
  flat_params_ = torch::zeros({shard_ * group_->size}, flat_options);
  flat_grads_ = torch::zeros({shard_ * group_->size}, flat_options);
  // The parameters move into the flat buffer (set_ keeps each one's identity, so the modules and
  // the BF16 compute copies that refer to it follow); their gradients become views of the other.
  int64_t offset = 0;
  for (torch::Tensor& p : parameters_) {
    const int64_t n = p.numel();
    flat_params_.narrow(0, offset, n).copy_(p.reshape({-1}));
    p.set_(flat_params_.storage(), offset, p.sizes(), c10::contiguous_strides(p.sizes()));
    p.mutable_grad() = flat_grads_.narrow(0, offset, n).view(p.sizes());
    offset += n;
  }
  // Every rank starts from rank 0's weights, whatever its own generator drew.
  broadcast(*group_, flat_params_, 0);
  grad_shard_ = torch::zeros({shard_}, flat_options);
  send_ = torch::zeros({shard_}, flat_options);
  exp_avg_ = torch::zeros({shard_}, flat_options);
  exp_avg_sq_ = torch::zeros({shard_}, flat_options);
  steps_ = torch::zeros({}, flat_options);
}

// The gradients stay views of the flat buffer: autograd adds into a defined gradient in place.
void ShardedAdamW::zero_grad() {
  flat_grads_.zero_();
}

double ShardedAdamW::step(double lr) {
  const profiling::Range range("optimizer");
  const torch::NoGradGuard no_grad;
  // Each rank's gradient is its own micro-batch's mean; the global batch's is their mean.
  reduce_scatter_sum(*group_, grad_shard_, flat_grads_);
  grad_shard_.div_(static_cast<double>(group_->size));
  torch::Tensor squares = grad_shard_.square().sum().reshape({1});
  all_reduce_sum(*group_, squares);
  const torch::Tensor norm = squares.sqrt().reshape({});
  torch::Tensor mine = flat_params_.narrow(0, group_->rank * shard_, shard_);
  std::vector<torch::Tensor> steps{steps_};
  at::_foreach_add_(steps, 1.0);
  if (options_.fusion == Fusion::fused) {
    // As adamw.cpp: the clipping rides in the fused kernel's grad_scale.
    const torch::Tensor unscale = ((norm + kClipEpsilon) / options_.grad_clip).clamp_min(1.0);
    at::_fused_adamw_({mine}, {grad_shard_}, {exp_avg_}, {exp_avg_sq_}, /*max_exp_avg_sqs=*/{},
                      steps, lr, options_.beta1, options_.beta2, options_.weight_decay, kEps,
                      /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/unscale,
                      /*found_inf=*/{});
  } else {
    unfused_update(mine, norm.item<double>(), lr);
  }
  send_.copy_(mine);
  all_gather(*group_, flat_params_, send_);
  return norm.item<double>();
}

}  // namespace lpbench::workloads::parallel
