#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "workloads/levels/optimizer.h"
#include "workloads/levels/workload.h"

namespace lpbench::workloads {

// AdamW with global-norm gradient clipping, as the model level trains, from one of two operator
// sets: unfused, torch's AdamW and clip_grad_norm_ (several kernels per parameter); fused, a
// multi-tensor norm and scale for the clipping and libtorch's multi-tensor AdamW
// (at::_fused_adamw_, a few launches over every parameter). The same update either way: lr,
// betas, eps 1e-8 and decoupled weight decay from the options, bias-corrected moments.
class AdamW final : public Optimizer {
 public:
  AdamW(std::vector<torch::Tensor> parameters, const TrainingOptions& options);
  void zero_grad() override;
  void release_gradients() override { zero_grad(); }
  double step(double lr) override;

 private:
  double fused_step(double lr);

  std::vector<torch::Tensor> parameters_;
  TrainingOptions options_;
  std::unique_ptr<torch::optim::AdamW> unfused_;
  // Fused: the moments and step counts, one each per parameter (allocated on first use).
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_, steps_;
};

}  // namespace lpbench::workloads
