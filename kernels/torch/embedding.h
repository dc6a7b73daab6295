#pragma once

#include <ATen/ATen.h>

namespace lpbench::kernels {

// The rows of the FP32 `master` table picked by `tokens`, rounded to `compute` (the bits of the
// same rows of a `compute` copy of the table, so no such copy is kept for the lookup: at
// Qwen3-8B's vocabulary one is 1.16 GiB), differentiable for `master`: the gradient is summed in
// FP32, so neither the table is cast in the forward nor its gradient in the backward.
// The gradient is a dense table of the master's shape, or with `gradient_by_rows` a coalesced
// sparse tensor of the rows the tokens reached (their sums to the bit, kernels/torch/adamw_step.h
// steps by it): at 4096 tokens and Qwen3-8B's 151 936 rows, 64 MiB where the table is 2.3 GiB,
// at the end of backward, where the step's memory peaks.
at::Tensor embedding(const at::Tensor& master, const at::Tensor& tokens, at::ScalarType compute,
                     bool gradient_by_rows = false);

}  // namespace lpbench::kernels
