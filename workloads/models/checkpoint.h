#pragma once

#include <torch/types.h>

#include <functional>

namespace lpbench::workloads {

// Activation checkpointing for one block: forward runs `block` without recording its
// activations and keeps only its input; backward runs it again with gradients on, then
// propagates. Parameters receive their gradients during that second run. `block` must be
// deterministic (no dropout here) and outlive the backward pass.
using Block = std::function<torch::Tensor(const torch::Tensor&)>;
torch::Tensor checkpointed(const Block& block, const torch::Tensor& x);

}  // namespace lpbench::workloads
