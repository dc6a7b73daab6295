#pragma once

#include <ATen/ATen.h>

namespace lpbench::kernels {

// a · bᵀ of BF16 operands with the result in `out` (BF16, or FP32 for a master weight's
// gradient): on the GPU one cuBLAS product with FP32 accumulation writing `out` directly (no
// BF16 result rounded and then widened); elsewhere the same product in FP32.
at::Tensor matmul_nt(const at::Tensor& a, const at::Tensor& b, at::ScalarType out);

}  // namespace lpbench::kernels
