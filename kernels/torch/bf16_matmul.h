#pragma once

#include <ATen/ATen.h>

namespace lpbench::kernels {

// a · bᵀ of BF16 operands with the result in `out` (BF16, or FP32 for a master weight's
// gradient): on the GPU one cuBLAS product with FP32 accumulation writing `out` directly (no
// BF16 result rounded and then widened); elsewhere cpu_matmul(a, bᵀ).
at::Tensor matmul_nt(const at::Tensor& a, const at::Tensor& b, at::ScalarType out);

// a · b on the CPU as a BF16 product is defined: FP32 products and sums, rounded once to `out`.
// It runs as an FP32 sgemm on every CPU, so the CPU path is fast and gives the same bits on
// machines with and without AVX-512 BF16 (whose libtorch kernels sum in different orders).
at::Tensor cpu_matmul(const at::Tensor& a, const at::Tensor& b, at::ScalarType out);

}  // namespace lpbench::kernels
