#pragma once

#include "workloads/levels/fallback_tally.h"
#include "workloads/levels/workload.h"
#include "workloads/models/decoder.h"

namespace lpbench::workloads {

// One linear layer of a model (its `part`), forward and backward at micro-batch × sequence-length
// tokens, with the recipe's quantization included: the unit the seed paper accelerates.
class LinearLevel final : public Workload {
 public:
  LinearLevel(const WorkloadSpec& spec, const ModelConfig& model, const kernels::Recipe& recipe,
              const TrainingOptions& options, const torch::Device& device);

  StepOutput step(int64_t index) override;
  int64_t tokens_per_step() const override { return tokens_; }
  double flops_per_step() const override;
  FlopCount gemm_flops() const override;
  const std::vector<kernels::ModuleDecision>& modules() const override { return decisions_; }
  bool last_step_finite() const override;
  std::vector<StepMetric> step_metrics() override { return fallback_.take_metrics(); }
  std::string shape_description() const override;

 private:
  LinearShape shape_;
  int64_t tokens_ = 0;
  RecipeLinear linear_{nullptr};
  torch::Tensor x_, grad_y_, y_;
  std::vector<kernels::ModuleDecision> decisions_;
  FallbackTally fallback_;
};

}  // namespace lpbench::workloads
