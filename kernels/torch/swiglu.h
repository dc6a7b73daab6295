#pragma once

#include <ATen/ATen.h>

#include "kernels/torch/amax_registry.h"
#include "kernels/torch/quantize.h"

// SwiGLU on the fused gate/up product as one differentiable operator: silu(gate) · up, forward
// and backward each one pass on the GPU (kernels/cuda/swiglu.cuh), the reference elsewhere.
namespace lpbench::kernels {

// gate_up [..., 2·inner] (gate first) → [..., inner]. `report_amax`: the kernels also report
// max |out| (and the backward max |d gate_up|) for a tensorwise quantization (amax_registry.h).
// `int8_saved`: gate_up is kept for backward as INT8 blocks (saved_activation.h), and the
// backward differentiates at the restored gate_up. `lines`: the forward's out or the
// backward's d gate_up reports every row's and column's amax instead (for a quantization per
// row both ways), where the kernel runs and gate_up is not kept as INT8. `consumer`: how the
// next product quantizes out (the down projection's X); where the GPU kernel takes it
// (quantize_swiglu_with_transpose: delayed scaling, not a history's first turn, nor under
// saved=int8 or a diagnosed step), the forward writes that quantization instead of out, and returns
// a stand-in for out whose values were never written: only that consumer may take it.
// `grad_consumer`: how the product that made gate_up quantizes its dY, d gate_up; where the GPU
// kernel takes it (quantize_swiglu_backward_with_transpose: delayed scaling, not a history's first
// turn, nor under saved=int8, lines or a diagnosed step), the backward writes that quantization
// instead and returns a stand-in for d gate_up, as the forward does for out.
at::Tensor swiglu(const at::Tensor& gate_up, bool report_amax = false, bool int8_saved = false,
                  LineAmax lines = {}, const InputQuantization& consumer = {},
                  const InputQuantization& grad_consumer = {});

}  // namespace lpbench::kernels
