#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "kernels/recipe.h"
#include "kernels/torch/amax_history.h"
#include "kernels/torch/gemm.h"

namespace lpbench::kernels {

// Y = X·Wᵀ for X[..., K] and W[N, K] (BF16), as a torch autograd function whose three GEMMs
// (fprop, dgrad, wgrad) are computed as `gemms` says. The operands backward needs are quantized
// in forward, in the layout backward uses them in, and saved that way instead of in BF16 (as
// Jetfire does): the memory a layer holds between forward and backward falls with the recipe.
// `module` names the layer in the statistics the GEMMs report (int8-fallback's outlier blocks).
//
// With `master` (the FP32 parameter that `w` is a BF16 copy of), the weight's gradient is
// computed by the wgrad product itself in FP32 and given to `master`, as Megatron's gradient
// accumulation into FP32 main grads does: no cast of W in the forward, no cast of dW in the
// backward. Without it, the gradient goes to `w` in w's type.
//
// `histories`: the layer's delayed-scaling state, needed where the gemms have amax_history > 0
// (owned by the caller, alive until the backward has run).
//
// `weight_cache`: W as the products read it, quantized by the first forward that finds the
// cache empty and read by every forward until the caller clears it. With gradient accumulation
// the micro-batches of one optimizer step share one quantization of W (W does not change
// between them, so the bits are the same); the caller clears it after each optimizer step.
// Ignored where no product quantizes W or where W's scale follows an amax history (delayed
// scaling updates the history at every quantization).
struct WeightQuantCache {
  bool filled = false;
  bool has_dgrad = false;  // whether dgrad's layout was made (a forward without grad makes none)
  GemmOperand fprop;       // W as fprop reads it
  GemmOperand dgrad;       // Wᵀ as dgrad reads it
  void clear() { *this = WeightQuantCache{}; }
};

// W quantized as quantized_linear's forward under `gemms` quantizes it: fprop's layout, and
// dgrad's where `with_dgrad` (a forward whose X requires grad reads it), as one filled cache for
// that forward to read. For a caller that launches the quantization before the forward runs (a
// layer quantizing its weights at its start, so that the GPU works on them while the host
// prepares the ops before them). Nullopt where the forward reads no cache.
std::optional<WeightQuantCache> quantize_weight(const at::Tensor& w, const LinearGemms& gemms,
                                                bool with_dgrad);

// Whether quantized_linear's forward under `gemms` quantizes W with one scale for the whole
// tensor, found from W's own amax (no amax history, no rotation): where it does, an amax of W
// remembered beforehand (amax_registry.h: AdamW's, or a layer's ScopedAmaxes) saves that
// quantization its amax pass.
bool forward_quantizes_w_tensorwise(const LinearGemms& gemms);

// The quantization of X that quantized_linear's forward under `gemms` makes in one pass for
// fprop and, transposed, wgrad, where a producer of X can make it in its place
// (quantize.h's InputQuantization): tensorwise, rounded to nearest, no rotation or fallback, and
// nothing of the linear reading X in BF16; scaled by the linear's X history where fprop's scale
// is delayed (`delayed`), by X's own amax where no product of the linear keeps a history. None
// otherwise.
struct Producible {
  QuantSpec spec;
  bool delayed = false;
};
std::optional<Producible> producible_x(const LinearGemms& gemms);

// The same for dY, which backward quantizes in one pass for dgrad and, transposed, wgrad, where
// the producer of dY (the op after the linear, in its backward) can make it in its place: scaled
// by the linear's dY history where both products' scales are delayed (`delayed`), by dY's own
// amax where neither is. None otherwise (dY in BF16 anywhere, per row or block, stochastic
// rounding, a rotation or fallback).
std::optional<Producible> producible_dy(const LinearGemms& gemms);

// `add_into_grad` (with `master`): where master's gradient is already defined when backward
// runs (the micro-batches after the first of a step; the flat gradient buffers of data
// parallel), the wgrad product adds into it (gemm_nt_add: Megatron's gradient accumulation
// fusion; for BF16 on the GPU cuBLAS adds as it stores) and backward hands autograd no weight
// gradient to add (hooks on master get an undefined one). The sum is the same: bit for bit but for
// BF16 products on the GPU (see gemm_nt_add). Where the gradient is undefined, or not a contiguous
// FP32 tensor of master's shape, or the backward builds a graph, the gradient goes to autograd as
// without it.
at::Tensor quantized_linear(const at::Tensor& x, const at::Tensor& w, const LinearGemms& gemms,
                            const std::string& module = "", const at::Tensor& master = {},
                            LinearAmaxHistories* histories = nullptr,
                            WeightQuantCache* weight_cache = nullptr, bool add_into_grad = false);

}  // namespace lpbench::kernels
