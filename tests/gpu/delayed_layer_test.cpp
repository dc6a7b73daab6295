// Delayed scaling (amax-history=<n>) in a fused decoder layer on the GPU, where every tensorwise
// quantization reads its amax history and records into it in the one-pass kernel itself
// (QuantizeArgs::history): a history's first quantization is scaled by the operand's own amax,
// and a step whose operands are those of the step before is scaled by that step's amaxes, their
// own, so both steps are the dynamic recipe's step, bit for bit. Skipped where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <utility>

#include "kernels/recipe.h"
#include "tests/support/gpu_layer.h"
#include "workloads/models/decoder.h"

namespace lpbench::kernels {
namespace {

// The layer's output and gradients after `steps` steps on the same input and output gradient.
test_support::LayerStep layer_steps(const char* recipe, int steps) {
  test_support::GpuLayer layer(recipe, /*producer_amax=*/true, 5);
  const at::Tensor x = layer.random_input().requires_grad_(true);
  const at::Tensor grad = layer.random_input();
  at::Tensor y;
  for (int s = 0; s < steps; ++s)
    y = layer.step(x, grad);
  return layer.result(y);
}

TEST(DelayedLayerOnGpu, StepsToTheDynamicRecipesBitsWhileItsOperandsRepeat) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const std::pair<const char*, const char*> twins[] = {
      {"int8-tensor", "int8-tensor:amax-history=4"},
      {"fp8-tensor", "fp8-tensor:amax-history=4"},
      {"int8-tensor:dy=row", "int8-tensor:dy=row,amax-history=4"}};
  for (const auto& [dynamic, delayed] : twins) {
    SCOPED_TRACE(delayed);
    const test_support::LayerStep reference = layer_steps(dynamic, 1);
    for (const int steps : {1, 3}) {
      SCOPED_TRACE(std::to_string(steps) + " steps");
      test_support::expect_same_layer_step(reference, layer_steps(delayed, steps));
    }
  }
}

}  // namespace
}  // namespace lpbench::kernels
