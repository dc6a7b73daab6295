// --cuda-graph's StepGraph on the GPU: a decoder layer's step (the fused operators, each recipe's
// quantization and products, cuDNN attention, autograd's backward) captured once and replayed on
// new inputs computes what the eager step computes on them. Skipped where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>

#include "harness/runner/step_graph.h"
#include "kernels/recipe.h"
#include "tests/support/tensor_compare.h"
#include "workloads/models/decoder.h"
#include "workloads/models/model_zoo.h"
#include "workloads/models/rope.h"

namespace lpbench::runner {
namespace {

using test_support::relative_error;
using workloads::ModelConfig;

const ModelConfig& small_model() {
  const auto& zoo = workloads::model_zoo();
  return *std::find_if(zoo.begin(), zoo.end(),
                       [](const ModelConfig& m) { return m.name == "small"; });
}

struct Outputs {
  at::Tensor y, grad_x, grad_w;
};

TEST(StepGraph, AReplayedLayerStepComputesWhatTheEagerStepComputesOnNewInputs) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: CUDA graphs are not run";
  const torch::Device gpu(torch::kCUDA, 0);
  const ModelConfig& model = small_model();
  const int64_t seq = 512;
  auto [cos_cpu, sin_cpu] = workloads::rope_tables(model, seq);
  const at::Tensor cos = cos_cpu.to(gpu), sin = sin_cpu.to(gpu);
  const auto bf16 = torch::dtype(torch::kBFloat16).device(gpu);
  for (const char* name : {"bf16", "int8-tensor", "int8-row", "int8-tensor:dy=row", "fp8-tensor"}) {
    SCOPED_TRACE(name);
    torch::manual_seed(5);
    workloads::PrecisionPlan plan(kernels::parse_recipe(name), gpu, workloads::Fusion::fused,
                                  /*producer_amax=*/true);
    workloads::DecoderLayer layer(model, 0, plan);
    layer->to(gpu);
    const at::Tensor x = torch::randn({2, seq, model.hidden_size}, bf16).requires_grad_(true);
    const at::Tensor grad_y = torch::randn({2, seq, model.hidden_size}, bf16);
    at::Tensor y;
    const auto step = [&] {
      x.mutable_grad() = at::Tensor();
      layer->zero_grad(/*set_to_none=*/true);
      y = layer->forward(x, cos, sin);
      y.backward(grad_y);
      y = y.detach();  // as the levels do: no autograd graph kept from one step to the next
      return workloads::StepOutput{};
    };
    const auto outputs = [&] {
      return Outputs{y.detach().clone(), x.grad().clone(),
                     layer->parameters().front().grad().clone()};
    };
    StepGraph graph(step);
    // New values in the captured inputs' memory: a replay that did not recompute would be caught.
    {
      const torch::NoGradGuard no_grad;
      x.copy_(torch::randn(x.sizes(), bf16) * 2.0);
      grad_y.copy_(torch::randn(grad_y.sizes(), bf16));
    }
    graph.replay();
    const Outputs replayed = outputs();
    step();
    const Outputs eager = outputs();
    EXPECT_TRUE(torch::equal(replayed.y, eager.y))
        << relative_error(replayed.y, eager.y) << " relative difference in the layer's output";
    // Attention's backward may sum in another order from run to run (cuDNN's dQ): close, not equal.
    EXPECT_LT(relative_error(replayed.grad_x, eager.grad_x), 1e-2);
    EXPECT_LT(relative_error(replayed.grad_w, eager.grad_w), 1e-2);
    EXPECT_GT(replayed.grad_x.abs().sum().item<double>(), 0.0);
  }
}

}  // namespace
}  // namespace lpbench::runner
