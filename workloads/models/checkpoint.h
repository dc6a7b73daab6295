#pragma once

#include <torch/types.h>

#include <functional>

namespace lpbench::workloads {

// Activation checkpointing for one block: forward runs `block` without recording its
// activations and keeps only its input; backward runs it again with gradients on, then
// propagates. Parameters receive their gradients during that second run. `block` must be
// deterministic (no dropout here) and outlive the backward pass.
using Block = std::function<torch::Tensor(const torch::Tensor&)>;

// What a block's owner does around its two runs (sharded data parallel gathers the block's
// weights before each and reduces its gradients after backward). Each may be empty.
struct BlockHooks {
  std::function<void()> before_forward, after_forward;    // around the first run
  std::function<void()> before_backward, after_backward;  // around the second run and backward
};

torch::Tensor checkpointed(const Block& block, const torch::Tensor& x, BlockHooks hooks = {});

}  // namespace lpbench::workloads
