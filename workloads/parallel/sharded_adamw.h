#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "workloads/levels/optimizer.h"
#include "workloads/levels/workload.h"
#include "workloads/parallel/group.h"
#include "workloads/parallel/shard_update.h"

namespace lpbench::workloads::parallel {

// AdamW over data-parallel ranks with the optimizer state sharded (ZeRO stage 1):
//   - every parameter becomes a view of one flat FP32 buffer, every gradient a view of another,
//     so that backward accumulates straight into the buffer the collectives send;
//   - after backward, a reduce-scatter leaves each rank the mean gradient of its 1/size slice;
//   - each rank steps its slice, its moments held for that slice only (shard_update.h);
//   - an all-gather gives every rank the whole updated parameters.
// The update is AdamW's as in adamw.h (lr, betas, eps 1e-8, decoupled weight decay, clipping by
// the global norm), on the gradient of the global batch; the sums differ from one process's in
// their order of addition only. Unlike one process, a parameter no token reached this step (an
// idle expert) has a zero gradient and is stepped (decayed) like the others.
class ShardedAdamW final : public Optimizer {
 public:
  ShardedAdamW(std::vector<torch::Tensor> parameters, const TrainingOptions& options,
               std::shared_ptr<const Group> group);
  void zero_grad() override;
  double step(double lr) override;

  int64_t shard_numel() const { return shard_; }

 private:
  std::vector<torch::Tensor> parameters_;
  TrainingOptions options_;
  std::shared_ptr<const Group> group_;
  int64_t shard_ = 0;          // elements per rank (the flat buffers are padded to size · shard_)
  torch::Tensor flat_params_;  // [size · shard_], the parameters' storage
  torch::Tensor flat_grads_;   // [size · shard_], the gradients' storage
  torch::Tensor grad_shard_, send_;
  ShardState state_;
};

}  // namespace lpbench::workloads::parallel
