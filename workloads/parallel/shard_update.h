#pragma once

#include <torch/torch.h>

#include "workloads/levels/workload.h"
#include "workloads/parallel/group.h"

namespace lpbench::workloads::parallel {

// One rank's slice of the optimizer: AdamW's moments for the slice and its step count.
struct ShardState {
  torch::Tensor exp_avg, exp_avg_sq, steps;
  explicit ShardState(int64_t numel, const torch::TensorOptions& options);
};

// The update every sharded optimizer makes once its slice of the summed gradient is in `grad`:
// the mean over the ranks, the global norm (one all-reduce of the slices' sums of squares),
// clipping by it, and AdamW on `master` (fused: libtorch's fused AdamW, the clipping in its
// grad_scale; unfused: the operations of torch's AdamW and clip_grad_norm_, as adamw.h runs
// them, elementwise, so each element gets the bits one process's update gives it). Returns the
// norm before clipping.
double update_shard(const Group& group, const TrainingOptions& options, torch::Tensor& master,
                    torch::Tensor& grad, ShardState& state, double lr);

}  // namespace lpbench::workloads::parallel
