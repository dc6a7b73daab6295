#pragma once

#include <ATen/ATen.h>

// CPU reference of the INT8 GEMM with INT32 accumulation, in the "TN" layout that all three
// training GEMMs are expressed in: C[M,N] = A[M,K] · B[N,K]ᵀ, both operands K-contiguous.
namespace lpbench::kernels::reference {

// Largest K for which no INT32 accumulator can overflow: K·127² < 2³¹.
inline constexpr int64_t kInt8GemmMaxK = 133143;

// Largest K for which every partial sum of INT8 products is below 2²⁴: K·127² < 2²⁴.
inline constexpr int64_t kInt8GemmFp32ExactMaxK = 1040;

// Exact, at BLAS speed: every product of two INT8 values, and every partial sum of K of them, is
// an integer that a float GEMM represents without rounding, whatever its summation order or use
// of FMA: below 2²⁴ (float32) up to kInt8GemmFp32ExactMaxK, below 2⁵³ (float64) beyond. This is
// the CPU path of the INT8 recipes: its numerics are the GPU's INT32 tensor-core numerics.
at::Tensor int8_gemm(const at::Tensor& a, const at::Tensor& b);

// The oracle for tests: 64-bit integer arithmetic, slow and obviously right.
at::Tensor int8_gemm_int64(const at::Tensor& a, const at::Tensor& b);

}  // namespace lpbench::kernels::reference
