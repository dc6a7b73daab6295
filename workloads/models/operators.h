#pragma once

#include <torch/torch.h>

#include <string>
#include <string_view>
#include <utility>

#include "kernels/torch/amax_registry.h"
#include "kernels/torch/attention.h"
#include "kernels/torch/quantize.h"

// The operators a decoder step is assembled from, other than its matrix products, in one of two
// sets: `none`, the readable composition of libtorch operations (the unfused ablation, and what
// the tests hold the fused set to), or `fused`, lpbench's one-pass operators (kernels/torch:
// their CUDA kernels on the GPU, their references elsewhere). The decoder is the same code under
// both; `--fusion` picks the set.
namespace lpbench::workloads {

enum class Fusion { none, fused };
std::string_view to_string(Fusion fusion);

// "fused; attention: cudnn": the set, and the SDPA backend torch chooses for the model's
// attention at `seq` tokens on `device` (BF16), as a run records it; then what the recipe
// changes in the set (producers reporting amax, activations saved as INT8).
std::string describe_operators(Fusion fusion, const kernels::AttentionShape& shape, int64_t seq,
                               const torch::Device& device, bool producer_amax = false,
                               bool int8_saved = false, kernels::LineAmax lines = {},
                               const std::string& quantizing_producers = "");

class Operators {
 public:
  // `producer_amax`: the fused kernels report max |x| of what they write, so that the recipe's
  // tensorwise quantization of it skips its own pass (kernels/torch/amax_registry.h).
  // `int8_saved` (the recipe's saved=int8, fused only): the norms, SwiGLU and attention keep
  // what their backward reads as INT8 blocks (kernels/torch/saved_activation.h).
  // `lines` (fused only): SwiGLU's forward, and SwiGLU's and RoPE's backward, report every row's
  // and column's amax of what they write instead, for a recipe that quantizes that operand per
  // row both ways (producer_line_amax, decoder.h).
  // `quantizing_producers` (fused only): the norms and SwiGLU write the next product's
  // quantization of their output in its place where that product asks for one they can make
  // (their `consumer`).
  explicit Operators(Fusion fusion, bool producer_amax = false, bool int8_saved = false,
                     kernels::LineAmax lines = {}, bool quantizing_producers = false)
      : fusion_(fusion),
        producer_amax_(producer_amax && fusion == Fusion::fused),
        int8_saved_(int8_saved && fusion == Fusion::fused),
        lines_(fusion == Fusion::fused ? lines : kernels::LineAmax{}),
        quantizing_producers_(quantizing_producers && fusion == Fusion::fused) {}
  Fusion fusion() const { return fusion_; }
  bool int8_saved() const { return int8_saved_; }
  bool producer_amax() const { return producer_amax_; }

  // RMSNorm over the last dimension (statistics in FP32), the result in x's type. `consumer`
  // (fused only), as for swiglu: how the one product that reads the result quantizes it, for the
  // norm to write that quantization in its place where it can (kernels::rms_norm).
  torch::Tensor norm(const torch::Tensor& x, const torch::Tensor& weight, double eps,
                     const kernels::InputQuantization& consumer = {}) const;
  // (x, RMSNorm(x)) for an x that the residual stream also carries on; fused, the stream's
  // gradient joins the norm's in the norm's backward pass.
  std::pair<torch::Tensor, torch::Tensor> residual_norm(
      const torch::Tensor& x, const torch::Tensor& weight, double eps,
      const kernels::InputQuantization& consumer = {}) const;
  // (x + residual, RMSNorm(x + residual)): the residual stream and the next sublayer's input.
  std::pair<torch::Tensor, torch::Tensor> add_norm(
      const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& weight,
      double eps, const kernels::InputQuantization& consumer = {}) const;
  // silu(gate) · up of the fused gate/up product [..., 2·inner]. `consumer` (fused only): how
  // the next product quantizes it, for SwiGLU to write that quantization in its place where it
  // can (kernels::swiglu); the result is then a stand-in only that product may read.
  // `grad_consumer`: how the product that made gate_up quantizes its dY, for SwiGLU's backward
  // to write that in the gradient's place likewise.
  torch::Tensor swiglu(const torch::Tensor& gate_up,
                       const kernels::InputQuantization& consumer = {},
                       const kernels::InputQuantization& grad_consumer = {}) const;
  // Causal attention of the fused QKV product [B, T, (H + 2·KV)·D] → [B, T, H·D]: RoPE on q and
  // k (after per-head norms, where q_norm and k_norm are given: Qwen3), then SDPA.
  // `grad_consumer` (fused only): how the QKV product quantizes its dY, for RoPE's backward to
  // write that quantization in the gradient's place where it can (kernels::causal_attention).
  torch::Tensor attention(const torch::Tensor& qkv, const kernels::AttentionShape& shape,
                          const torch::Tensor& cos, const torch::Tensor& sin,
                          const torch::Tensor& q_norm, const torch::Tensor& k_norm, double eps,
                          const kernels::InputQuantization& grad_consumer = {}) const;

 private:
  Fusion fusion_;
  bool producer_amax_;
  bool int8_saved_;
  kernels::LineAmax lines_;
  bool quantizing_producers_;

  // `consumer` where producers quantize for their consumers, else none.
  kernels::InputQuantization quantizing(const kernels::InputQuantization& consumer) const;
};

}  // namespace lpbench::workloads
