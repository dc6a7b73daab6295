#pragma once

// One decoder layer of the small model, fused on the GPU under a recipe, stepped on inputs of
// its shape: the setup the GPU tests share that check a change does not move a layer's bits
// (compared with layer_steps.h).
#include <torch/torch.h>

#include <cstdint>

#include "kernels/recipe.h"
#include "tests/support/layer_steps.h"
#include "tests/support/rope_tables.h"
#include "workloads/models/decoder.h"
#include "workloads/models/model_zoo.h"

namespace lpbench::test_support {

// The tokens of each of the layer's two sequences.
constexpr int64_t kLayerSeq = 256;

class GpuLayer {
 public:
  // Layer 0 of the small model under `recipe`, its parameters drawn after torch's seed `seed`.
  GpuLayer(const char* recipe, bool producer_amax, uint64_t seed)
      : plan_(kernels::parse_recipe(recipe), gpu(), workloads::Fusion::fused, producer_amax) {
    const auto [cos, sin] = rope_tables(kSeq, model_.head_dim);
    cos_ = cos.to(gpu());
    sin_ = sin.to(gpu());
    torch::manual_seed(seed);
    layer_ = workloads::DecoderLayer(model_, 0, plan_);
    layer_->to(gpu());
  }

  workloads::DecoderLayer& layer() { return layer_; }

  // N(0, scale²) values of the layer's input and output shape (two sequences of kSeq tokens).
  at::Tensor random_input(double scale = 1.0) const {
    return torch::randn({2, kSeq, model_.hidden_size}, torch::dtype(torch::kBFloat16).device(gpu()))
        .mul(scale);
  }

  // One step from zeroed gradients: the forward of x, the backward of `grad`; the output.
  at::Tensor step(const at::Tensor& x, const at::Tensor& grad) {
    layer_->zero_grad();
    const at::Tensor out = layer_->forward(x, cos_, sin_);
    out.backward(grad);
    return out.detach();
  }

  // The last step's output `y` and every parameter's gradient, by name.
  LayerStep result(const at::Tensor& y) {
    LayerStep s{y, {}};
    for (const auto& p : layer_->named_parameters())
      s.grads.emplace_back(p.key(), p.value().grad().clone());
    return s;
  }

 private:
  static constexpr int64_t kSeq = kLayerSeq;
  static torch::Device gpu() { return {torch::kCUDA, 0}; }
  workloads::ModelConfig model_ = workloads::builtin_model("small");
  workloads::PrecisionPlan plan_;
  workloads::DecoderLayer layer_{nullptr};
  at::Tensor cos_, sin_;
};

}  // namespace lpbench::test_support
