#pragma once

#include <vector>

#include "workloads/models/decoder.h"
#include "workloads/models/parameter_hooks.h"

namespace lpbench::workloads {

// Fused, the products read BF16 copies of the linear weights, kept beside the FP32 masters from
// step to step: 2 bytes a parameter. A layer that activation checkpointing recomputes needs its
// copies only while it runs, so for those layers they are cast from the masters just before the
// layer's forward and again before its recomputation, and their memory is given back after
// each. The values are the ones a kept copy holds (the same cast of the same masters); the cost
// is two casts of the layer's weights a step where a kept copy has one. The layers after the
// first `recomputed` keep their copies, which their saved activations need until backward.
// The optimizer's refresh skips the copies whose memory is given back (Decoder).
class LayerCopies final : public ParameterHooks {
 public:
  // `layers`: each decoder layer's copies, from the first.
  LayerCopies(std::vector<std::vector<ComputeCopy>> layers, int64_t recomputed);

  void before_forward(int64_t layer) override { make(layer); }
  void after_forward(int64_t layer) override { drop(layer); }
  void before_backward(int64_t layer) override { make(layer); }
  void after_backward(int64_t layer) override { drop(layer); }
  bool needs_recomputation() const override { return false; }

 private:
  void make(int64_t layer);
  void drop(int64_t layer);

  std::vector<std::vector<ComputeCopy>> layers_;
  int64_t recomputed_;
};

}  // namespace lpbench::workloads
