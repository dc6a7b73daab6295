#pragma once

#include <vector>

#include "kernels/torch/gemm.h"
#include "workloads/levels/fallback_tally.h"
#include "workloads/levels/workload.h"

namespace lpbench::workloads {

// Matrix products alone: one given shape, or the fprop, dgrad and wgrad products of a model's
// linear layers at micro-batch × sequence-length tokens. Operands are drawn once and already in
// each GEMM's format (INT8 with scales, or BF16), so a step times the products and their
// dequantization, not the quantization (the linear level includes that). Every product runs
// under the recipe's spec for its kind: this level measures formats, not a model's module filter.
class GemmLevel final : public Workload {
 public:
  GemmLevel(const WorkloadSpec& spec, const ModelConfig& model, const kernels::Recipe& recipe,
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
  struct Product {
    std::string name;  // "gate_up.fprop", or the shape
    kernels::GemmSpec spec;
    kernels::GemmKind kind;
    GemmShape shape;
    kernels::GemmOperand a, b;
  };
  std::vector<Product> products_;
  std::vector<kernels::ModuleDecision> decisions_;
  int64_t tokens_ = 0;
  torch::Tensor last_;
  FallbackTally fallback_;
};

}  // namespace lpbench::workloads
