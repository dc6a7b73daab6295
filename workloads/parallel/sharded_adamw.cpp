#include "workloads/parallel/sharded_adamw.h"

#include <fmt/format.h>

#include <stdexcept>

#include "kernels/profiling/range.h"

namespace lpbench::workloads::parallel {

ShardedAdamW::ShardedAdamW(std::vector<torch::Tensor> parameters, const TrainingOptions& options,
                           std::shared_ptr<const Group> group)
    : parameters_(std::move(parameters)),
      options_(options),
      group_(std::move(group)),
      state_(0, torch::kFloat) {
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
  state_ = ShardState(shard_, flat_options);
}

// The gradients stay views of the flat buffer: autograd adds into a defined gradient in place.
void ShardedAdamW::zero_grad() {
  flat_grads_.zero_();
}

double ShardedAdamW::step(double lr) {
  const profiling::Range range("optimizer");
  const torch::NoGradGuard no_grad;
  reduce_scatter_sum(*group_, grad_shard_, flat_grads_);
  torch::Tensor mine = flat_params_.narrow(0, group_->rank * shard_, shard_);
  const double norm = update_shard(*group_, options_, mine, grad_shard_, state_, lr);
  send_.copy_(mine);
  all_gather(*group_, flat_params_, send_);
  return norm;
}

}  // namespace lpbench::workloads::parallel
