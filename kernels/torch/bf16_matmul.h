#pragma once

#include <ATen/ATen.h>

namespace lpbench::kernels {

// a · bᵀ of BF16 operands with the result in `out` (BF16, or FP32 for a master weight's
// gradient): FP32 products and sums, rounded once to `out`. On the GPU one cuBLAS product
// writing `out` directly (no BF16 result rounded and then widened); on the CPU an FP32 sgemm of
// the widened operands, so the CPU path is fast and gives the same bits on machines with and
// without AVX-512 BF16 (whose libtorch kernels sum in different orders).
at::Tensor matmul_nt(const at::Tensor& a, const at::Tensor& b, at::ScalarType out);

// c += a · bᵀ, c FP32 and contiguous: on the GPU one cuBLAS product with beta = 1 into c (no
// product written out and added after); on the CPU matmul_nt's FP32 product, then one add.
void matmul_nt_add(const at::Tensor& a, const at::Tensor& b, at::Tensor& c);

}  // namespace lpbench::kernels
