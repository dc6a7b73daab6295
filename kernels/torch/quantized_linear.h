#pragma once

#include <ATen/ATen.h>

#include "kernels/recipe.h"

namespace lpbench::kernels {

// Y = X·Wᵀ for X[..., K] and W[N, K] (BF16), as a torch autograd function whose three GEMMs
// (fprop, dgrad, wgrad) are computed as `gemms` says. A quantized operand is quantized once and
// saved for backward as INT8 with its scale instead of BF16, as Jetfire does, so the memory the
// layer holds between forward and backward falls with the recipe.
at::Tensor quantized_linear(const at::Tensor& x, const at::Tensor& w, const LinearGemms& gemms);

}  // namespace lpbench::kernels
