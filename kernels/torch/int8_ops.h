#pragma once

#include <ATen/ATen.h>

#include "kernels/reference/int8_quantize.h"

// The INT8 operations as the training path calls them, on any device. Each picks its
// implementation by the tensors' device; the CPU reference is the definition they all match.
namespace lpbench::kernels {

using reference::Int8Tensor;

Int8Tensor quantize_int8_tensorwise(const at::Tensor& x);

// C[M,N] = A[M,K] · B[N,K]ᵀ in INT32, exact.
at::Tensor int8_gemm(const at::Tensor& a, const at::Tensor& b);

// A·Bᵀ dequantized with both tensorwise scales to `dtype`.
at::Tensor int8_gemm_dequantize(const Int8Tensor& a, const Int8Tensor& b, at::ScalarType dtype);

// Where the INT8 products of this device run, as recorded with a run: "cpu-exact" (the exact
// CPU reference, an emulation of the GPU numerics, not a hardware speed) or the GPU path's name.
const char* int8_gemm_backend(const at::Device& device);

}  // namespace lpbench::kernels
