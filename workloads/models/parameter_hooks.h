#pragma once

#include <cstdint>

namespace lpbench::workloads {

// Called by the decoder around each layer's use of its weights, so that an owner may keep them
// elsewhere between uses (sharded data parallel: each rank holds a slice, gathers a layer's
// weights before it runs and reduce-scatters its gradients after its backward). Layers are
// numbered from 0; backward visits them from the last. Under activation checkpointing, a layer
// runs twice: once in forward, once again at the start of its backward.
class ParameterHooks {
 public:
  virtual ~ParameterHooks() = default;
  virtual void before_forward(int64_t layer) = 0;
  virtual void after_forward(int64_t layer) = 0;
  virtual void before_backward(int64_t layer) = 0;
  virtual void after_backward(int64_t layer) = 0;
  // Whether training needs every layer recomputed: hooks that put a layer's weights away after
  // its forward do; the decoder refuses to train a layer that keeps its activations under them.
  virtual bool needs_recomputation() const { return true; }
};

}  // namespace lpbench::workloads
