#pragma once

#include <ATen/ATen.h>

#include "kernels/reference/quantize.h"

namespace lpbench::kernels::reference {

// C[M,N] = A[M,K] · B[N,K]ᵀ of two quantized operands (the TN layout of every training GEMM),
// computed the way the GPU kernels compute it:
//   - K is cut into blocks where a scale changes (the operands' block_cols, which must agree
//     or span all of K);
//   - per K block, the partial product of the stored values: exact in INT32 for INT8, in FP64
//     rounded once to FP32 for FP8;
//   - converted to FP32, times the FP32 product scale_a · scale_b, added in K-block order in
//     FP32 (separate roundings: no fused multiply-add);
//   - rounded once to `dtype`, after adding `bias` [N] (FP32) when given.
at::Tensor scaled_gemm(const Quantized& a, const Quantized& b, at::ScalarType dtype,
                       const at::Tensor& bias = {});

}  // namespace lpbench::kernels::reference
