#pragma once

#include <ATen/ATen.h>

namespace lpbench::kernels {

// The rows of `weight` (the BF16 copy of an FP32 master table) picked by `tokens`, differentiable
// for `master`: the gradient is accumulated in FP32 straight into a gradient of the master's
// shape, so neither the table is cast in the forward nor its gradient in the backward.
at::Tensor embedding(const at::Tensor& weight, const at::Tensor& master, const at::Tensor& tokens);

}  // namespace lpbench::kernels
