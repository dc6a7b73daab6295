#pragma once

namespace lpbench::workloads {

// What the model level asks of its optimizer: AdamW in one process (adamw.h) or sharded over
// data-parallel ranks (parallel/sharded_adamw.h), the same update either way.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Readies the gradients for the next backward.
  virtual void zero_grad() = 0;
  // Called after step(): an optimizer whose gradients are made by each backward gives their
  // memory back, so that what runs between steps (evaluation, another recipe's step) has it.
  // Buffers that live from step to step (the sharded optimizers') stay.
  virtual void release_gradients() {}
  // Clips the gradients to the options' grad_clip by their global norm and takes one step at
  // `lr`; returns the norm before clipping.
  virtual double step(double lr) = 0;
  // Whether step() also refreshes the fused BF16 copies of the weights (the layer-sharded
  // optimizer, which holds them); otherwise the caller does.
  virtual bool refreshes_compute_copies() const { return false; }
};

}  // namespace lpbench::workloads
