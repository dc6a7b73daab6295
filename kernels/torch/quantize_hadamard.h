#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "kernels/torch/amax_history.h"
#include "kernels/torch/quantize.h"

// The glue of the hadamard=<b> recipes' quantization: an operand rotated by
// reference::hadamard_rotate along the dimension its product sums over, then quantized.
namespace lpbench::kernels {

// t (2-D), or tᵀ with `transpose`, rotated in blocks of `block` along its columns and quantized
// under `spec` (with `history`: delayed scaling): equal to
//   quantize(reference::hadamard_rotate(transpose ? t.t() : t, block), spec, false, history).
// On the GPU a BF16 operand scaled per tensor or per row, rounded to nearest, without a
// history, takes the fused kernel where it applies (kernels/cuda/quantize_hadamard.cuh): two
// reads of t in place of an FP32 copy, a matmul by H per block and two passes over FP32. Other
// scalings (blocks, stochastic rounding, a history) have the kernel write the rotated FP32
// values, which quantize() then takes as it takes any FP32 input.
Quantized quantize_hadamard(const at::Tensor& t, bool transpose, int64_t block,
                            const QuantSpec& spec, AmaxHistory* history = nullptr);

// Whether that call takes the fused kernel (rotation and quantization in one).
bool hadamard_kernel_takes(const at::Tensor& t, bool transpose, int64_t block,
                           const QuantSpec& spec, const AmaxHistory* history = nullptr);

}  // namespace lpbench::kernels
