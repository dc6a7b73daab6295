// --cuda-graph's StepGraph on the GPU: a decoder layer's step (the fused operators, each recipe's
// quantization and products, cuDNN attention, autograd's backward) captured once and replayed on
// new inputs computes what the eager step computes on them. Skipped where torch sees no GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iterator>
#include <string>
#include <utility>

#include "harness/runner/step_graph.h"
#include "kernels/recipe.h"
#include "tests/support/tensor_compare.h"
#include "workloads/models/decoder.h"
#include "workloads/models/model_config.h"
#include "workloads/models/rope.h"

namespace lpbench::runner {
namespace {

using test_support::relative_error;
using workloads::ModelConfig;

struct Outputs {
  at::Tensor y, grad_x, grad_w;
};

TEST(StepGraph, AReplayedLayerStepComputesWhatTheEagerStepComputesOnNewInputs) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: CUDA graphs are not run";
  const torch::Device gpu(torch::kCUDA, 0);
  const ModelConfig& model = workloads::builtin_model("small");
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

// Delayed scaling replayed: the amax history's ring moves on on the device, so each replayed
// step is scaled by the amaxes of the steps before it, as the eager step is. Two layers from one
// seed, one stepped eagerly and one replayed, on inputs and output gradients whose size jumps (8×
// for a step, then 1/4): a replayed step scaled by any other history than its twin's would
// differ in its output (X's and W's scales) or its input gradient (dY's). A ring of 4 slots
// (amax-history=2) goes round twice. The small model's shapes take the one-pass kernel, the tiny
// model's at 96 tokens (off the 128 grid) the general path.
TEST(StepGraph, ADelayedScalingStepReplayedStepAfterStepComputesWhatItsEagerTwinComputes) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: CUDA graphs are not run";
  const torch::Device gpu(torch::kCUDA, 0);
  const auto bf16 = torch::dtype(torch::kBFloat16).device(gpu);
  struct Twin {
    workloads::DecoderLayer layer;
    at::Tensor x, grad_y, y;
  };
  for (const auto& [model_name, seq] :
       {std::pair<const char*, int64_t>{"small", 512}, {"tiny", 96}}) {
    const ModelConfig& model = workloads::builtin_model(model_name);
    auto [cos_cpu, sin_cpu] = workloads::rope_tables(model, seq);
    const at::Tensor cos = cos_cpu.to(gpu), sin = sin_cpu.to(gpu);
    for (const char* name : {"int8-tensor:amax-history=2", "int8-tensor:dy=row,amax-history=2",
                             "fp8-tensor:amax-history=2"}) {
      SCOPED_TRACE(std::string(model_name) + ", " + name);
      const auto make = [&] {
        torch::manual_seed(5);
        workloads::PrecisionPlan plan(kernels::parse_recipe(name), gpu, workloads::Fusion::fused,
                                      /*producer_amax=*/true);
        workloads::DecoderLayer layer(model, 0, plan);
        layer->to(gpu);
        return Twin{layer, torch::zeros({2, seq, model.hidden_size}, bf16).requires_grad_(true),
                    torch::zeros({2, seq, model.hidden_size}, bf16), at::Tensor()};
      };
      Twin eager = make();
      Twin replayed = make();
      const auto step = [&cos, &sin](Twin& t) {
        t.x.mutable_grad() = at::Tensor();
        t.layer->zero_grad(/*set_to_none=*/true);
        t.y = t.layer->forward(t.x, cos, sin);
        t.y.backward(t.grad_y);
        t.y = t.y.detach();
        return workloads::StepOutput{};
      };
      const auto feed = [&](double size) {
        const torch::NoGradGuard no_grad;
        const at::Tensor x = torch::randn(eager.x.sizes(), bf16) * size;
        const at::Tensor g = torch::randn(eager.grad_y.sizes(), bf16) * size;
        for (Twin* t : {&eager, &replayed}) {
          t->x.copy_(x);
          t->grad_y.copy_(g);
        }
      };
      feed(1.0);
      step(eager);  // the twin of the graph's eager warm-up step: the history's first
      StepGraph graph([&] { return step(replayed); });
      const double sizes[] = {1.0, 8.0, 1.0, 0.25, 1.0, 1.0, 4.0, 1.0};
      for (size_t i = 0; i < std::size(sizes); ++i) {
        SCOPED_TRACE("replay " + std::to_string(i));
        feed(sizes[i]);
        step(eager);
        graph.replay();
        EXPECT_TRUE(torch::equal(replayed.y, eager.y))
            << relative_error(replayed.y, eager.y) << " relative difference in the layer's output";
        EXPECT_LT(relative_error(replayed.x.grad(), eager.x.grad()), 1e-2);
        EXPECT_LT(relative_error(replayed.layer->parameters().front().grad(),
                                 eager.layer->parameters().front().grad()),
                  1e-2);
      }
    }
  }
}

}  // namespace
}  // namespace lpbench::runner
