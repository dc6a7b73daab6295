#pragma once

#include <ATen/ATen.h>

#include "kernels/reference/quantize.h"

namespace lpbench::kernels {

using reference::Quantized;
using reference::QuantSpec;

// x (2-D, BF16 or FP32) quantized on its own device with the numerics of
// kernels/reference/quantize.h. With `transpose`, xᵀ is quantized (fused on the GPU; the spec's
// blocks are in the transposed matrix's coordinates).
Quantized quantize(const at::Tensor& x, const QuantSpec& spec, bool transpose = false);

}  // namespace lpbench::kernels
