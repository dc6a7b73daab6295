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
#include "tests/support/layer_steps.h"
#include "tests/support/rope_tables.h"
#include "workloads/models/decoder.h"
#include "workloads/models/model_zoo.h"

namespace lpbench::kernels {
namespace {

// The layer's output and gradients after `steps` steps on the same input and output gradient.
test_support::LayerStep layer_steps(const char* recipe, int steps) {
  const torch::Device gpu(torch::kCUDA, 0);
  const workloads::ModelConfig model = workloads::builtin_model("small");
  const int64_t seq = 256;
  const auto [cos_cpu, sin_cpu] = test_support::rope_tables(seq, model.head_dim);
  const at::Tensor cos = cos_cpu.to(gpu), sin = sin_cpu.to(gpu);
  torch::manual_seed(5);
  workloads::PrecisionPlan plan(parse_recipe(recipe), gpu, workloads::Fusion::fused,
                                /*producer_amax=*/true);
  workloads::DecoderLayer layer(model, 0, plan);
  layer->to(gpu);
  const auto bf16 = torch::dtype(torch::kBFloat16).device(gpu);
  const at::Tensor x = torch::randn({2, seq, model.hidden_size}, bf16).requires_grad_(true);
  const at::Tensor grad = torch::randn({2, seq, model.hidden_size}, bf16);
  test_support::LayerStep step;
  for (int s = 0; s < steps; ++s) {
    layer->zero_grad();
    const at::Tensor out = layer->forward(x, cos, sin);
    out.backward(grad);
    step.y = out.detach();
  }
  for (const auto& p : layer->named_parameters())
    step.grads.emplace_back(p.key(), p.value().grad().clone());
  return step;
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
