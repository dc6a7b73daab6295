#pragma once

namespace lpbench::workloads {

// What the model level asks of its optimizer: AdamW in one process (adamw.h) or sharded over
// data-parallel ranks (parallel/sharded_adamw.h), the same update either way.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Readies the gradients for the next backward.
  virtual void zero_grad() = 0;
  // Clips the gradients to the options' grad_clip by their global norm and takes one step at
  // `lr`; returns the norm before clipping.
  virtual double step(double lr) = 0;
};

}  // namespace lpbench::workloads
