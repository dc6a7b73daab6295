#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/recipe.h"
#include "workloads/levels/workload.h"

namespace lpbench::workloads {

// What a workload will hold on its device at its peak, estimated from its shapes before anything
// is allocated. The activation terms follow what this implementation saves for backward (see
// memory_plan.cpp), so a run can record the estimate beside its measured peak and the two can be
// checked against each other.
struct MemoryEstimate {
  double weights_gib = 0.0;    // FP32 master weights
  double gradients_gib = 0.0;  // FP32 gradients
  double optimizer_gib = 0.0;  // AdamW's two moments
  // The weights' BF16 copies kept beside the masters (fused); at the layer level also the
  // copies saved for the dgrad GEMMs, which the model level counts with the activations.
  double weight_copies_gib = 0.0;
  double activations_gib = 0.0;  // everything else saved between forward and backward
  double transient_gib = 0.0;    // the largest temporaries (logits, operands, workspaces)
  // One layer's recomputed activations, alive beside the gradients made so far (model level).
  double recompute_gib = 0.0;
  // Whether the gradients live from step to step (data parallel's flat buffers); otherwise
  // backward makes them as it frees the activations, and the peak counts the larger of the two.
  bool gradients_persist = false;

  double total_gib() const;
  std::string describe() const;
};

MemoryEstimate estimate_memory(const WorkloadSpec& spec, const ModelConfig& model,
                               const kernels::Recipe& recipe, const TrainingOptions& options);

// Bytes saved for backward per token by one decoder layer under this operator set.
double activation_bytes_per_token(const ModelConfig& model, const kernels::Recipe& recipe,
                                  Fusion fusion);

}  // namespace lpbench::workloads
