#pragma once

#include <string>
#include <vector>

#include "kernels/torch/gemm.h"
#include "workloads/levels/fallback_tally.h"
#include "workloads/levels/workload.h"

namespace lpbench::workloads {

// Matrix products alone: one given shape, or the fprop, dgrad and wgrad products of a model's
// linear layers at micro-batch × sequence-length tokens. The operands are BF16 tensors (X, W and
// dY of each linear layer, or A and B of a bare shape), and by default a step quantizes them as a
// training step does (each source once for both of its layouts where that is exact, as the
// linear layer does) and then runs the products with their dequantization: the cost of INT8 or
// FP8 products as a training step pays it, without the rest of the layer. The `prequantized`
// variant (gemm:<model>:prequantized) quantizes once when it is built and times the products
// alone. Every product runs under the recipe's spec for its kind: this level measures formats,
// not a model's module filter.
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
    kernels::GemmKind kind;
    GemmShape shape;
    kernels::GemmOperand a, b;  // prepared operands (the prequantized variant, and BF16 specs)
  };
  // The BF16 sources of one linear layer (or of a bare shape: a = A, b = B) and its products.
  struct Sources {
    std::string part;
    at::Tensor x, w, dy;  // [tokens, in], [out, in], [tokens, out]; a bare shape: x = A, w = B
    std::vector<size_t> products;
  };
  // The products' operands from the sources, quantized under the recipe.
  void prepare(const Sources& sources);

  kernels::LinearGemms gemms_;
  bool prequantized_ = false;
  bool bare_shape_ = false;
  std::vector<Sources> sources_;
  std::vector<Product> products_;
  std::vector<kernels::ModuleDecision> decisions_;
  int64_t tokens_ = 0;
  torch::Tensor last_;
  FallbackTally fallback_;
};

}  // namespace lpbench::workloads
