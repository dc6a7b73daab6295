#pragma once

#include <torch/torch.h>

#include <memory>

#include "workloads/data/token_source.h"
#include "workloads/levels/fallback_tally.h"
#include "workloads/levels/optimizer.h"
#include "workloads/levels/workload.h"
#include "workloads/models/decoder.h"
#include "workloads/parallel/group.h"

namespace lpbench::workloads {

// The whole model: embedding to loss, with the optimizer step, at the config's depth. With a
// data-parallel group each rank trains its rows of the global batch (rank r takes rows
// r·micro_batch … of the batch one process would draw for size · micro_batch sequences) and the
// optimizer is sharded (parallel/sharded_adamw.h); the step's loss is the global batch's mean.
// With gradient accumulation a step runs grad_accum micro-batches of micro_batch sequences
// (each rank its grad_accum · micro_batch rows of the step's batch) before the optimizer.
class ModelLevel final : public Workload {
 public:
  ModelLevel(const ModelConfig& model, const kernels::Recipe& recipe,
             const TrainingOptions& options, const torch::Device& device);

  StepOutput step(int64_t index) override;
  // The global batch's tokens (every rank's); flops_per_step and gemm_flops are one rank's, so
  // that MFU stays a per-GPU figure.
  int64_t tokens_per_step() const override { return ranks() * options_.grad_accum * rank_tokens(); }
  double flops_per_step() const override;
  FlopCount gemm_flops() const override;
  const std::vector<kernels::ModuleDecision>& modules() const override {
    return decoder_->decisions();
  }
  std::string data_description() const override { return data_->describe(); }
  std::optional<EvalOutput> evaluate() override;
  std::vector<StepMetric> step_metrics() override;
  std::string shape_description() const override;
  std::string checkpointing_description() const;
  std::string operators() const override { return operators_; }

 private:
  torch::Tensor loss_of(const torch::Tensor& tokens);
  int64_t ranks() const { return options_.group ? options_.group->size : 1; }
  // One micro-batch's tokens on one rank.
  int64_t rank_tokens() const { return options_.micro_batch * options_.seq_len; }
  bool caches_weights() const { return options_.grad_accum > 1 && options_.weight_cache; }

  ModelConfig model_;
  TrainingOptions options_;
  torch::Device device_;
  Decoder decoder_{nullptr};
  std::shared_ptr<Optimizer> optimizer_;
  std::unique_ptr<TokenSource> data_;
  FallbackTally fallback_;
  std::string operators_;
};

}  // namespace lpbench::workloads
