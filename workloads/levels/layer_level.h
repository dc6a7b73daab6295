#pragma once

#include "workloads/levels/fallback_tally.h"
#include "workloads/levels/workload.h"
#include "workloads/models/decoder.h"

namespace lpbench::workloads {

// One decoder layer of a model at full width (dense, or mixture of experts), forward and
// backward on a micro-batch × sequence-length input, as a layer inside the model runs it: on
// the residual stream as the previous layer left it (ResidualStream).
class LayerLevel final : public Workload {
 public:
  LayerLevel(const ModelConfig& model, const kernels::Recipe& recipe,
             const TrainingOptions& options, const torch::Device& device);

  StepOutput step(int64_t index) override;
  int64_t tokens_per_step() const override;
  double flops_per_step() const override;
  FlopCount gemm_flops() const override;
  const std::vector<kernels::ModuleDecision>& modules() const override { return decisions_; }
  std::vector<StepMetric> step_metrics() override;
  bool last_step_finite() const override;
  std::string shape_description() const override;
  std::string operators() const override { return operators_; }

 private:
  ModelConfig model_;
  TrainingOptions options_;
  DecoderLayer layer_{nullptr};
  torch::Tensor cos_, sin_, x_, delta_, grad_y_, y_, y_delta_;
  std::vector<kernels::ModuleDecision> decisions_;
  FallbackTally fallback_;
  std::string operators_;
};

// The load of each expert of a layer's MoE block as metrics "moe.<layer>.expert.<e>.share".
std::vector<StepMetric> expert_load_metrics(const std::string& layer, const torch::Tensor& load);

}  // namespace lpbench::workloads
