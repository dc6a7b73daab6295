#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "workloads/levels/optimizer.h"
#include "workloads/levels/workload.h"

namespace lpbench::workloads {

// AdamW with global-norm gradient clipping, as the model level trains, from one of two operator
// sets: unfused, torch's AdamW and clip_grad_norm_ (several kernels per parameter); fused, a
// multi-tensor norm for the clipping and one multi-tensor update that also writes the weights'
// BF16 copies (kernels/torch/adamw_step.h: lpbench's kernel on the GPU, libtorch's fused AdamW
// elsewhere). The same update either way: lr, betas, eps 1e-8 and decoupled weight decay from
// the options, bias-corrected moments.
class AdamW final : public Optimizer {
 public:
  // `copies[i]`: the BF16 copy of parameter i that the fused step writes, or undefined (empty:
  // none; the caller refreshes them). `copy_amax`: the fused step also reports each copy's
  // max |x| (kernels/torch/adamw_step.h), where the recipe quantizes the weights tensorwise.
  AdamW(std::vector<torch::Tensor> parameters, const TrainingOptions& options,
        std::vector<torch::Tensor> copies = {}, bool copy_amax = false);
  void zero_grad() override;
  void release_gradients() override { zero_grad(); }
  double step(double lr) override;
  bool refreshes_compute_copies() const override { return !unfused_ && !copies_.empty(); }

 private:
  double fused_step(double lr);

  std::vector<torch::Tensor> parameters_;
  TrainingOptions options_;
  std::unique_ptr<torch::optim::AdamW> unfused_;
  std::vector<torch::Tensor> copies_;
  bool copy_amax_ = false;
  // Fused: the moments and step counts, one each per parameter (allocated on first use).
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;
  std::vector<int64_t> steps_;
};

}  // namespace lpbench::workloads
