#pragma once

#include <ATen/ATen.h>

#include <cstdint>

// The block Hadamard rotation of issue 23's `hadamard=<b>` recipes (QuaRot's and HALO's idea for
// low-bit gradients): both operands of a product rotated by the same orthogonal matrix along
// the dimension the product sums over leave the product unchanged, (A·H)(B·H)ᵀ = A·Bᵀ, while a
// value far above its neighbours is spread over the b values of its block, so that one outlier
// no longer sets a scale that flushes the rest to zero before rounding.
//
// In plain ATen operations on any device, FP32, one butterfly stage at a time: for strides
// s = 1, 2, 4, …, b/2 each pair (lo, hi) = (x[i], x[i + s]) with bit s of i clear becomes
// (lo + hi, lo − hi), then every value is multiplied by 1/√b rounded once to FP32. That is the
// normalised Sylvester matrix H_b / √b, in the order of additions the CUDA kernel
// (kernels/cuda/quantize_hadamard.cuh) follows, so that the two agree bit for bit.
namespace lpbench::kernels::reference {

// m [R, C] (any floating type) with each run of `block` consecutive columns multiplied by
// H_b / √b (orthogonal, symmetric); a last run shorter than `block` is left as it is (the
// identity there is orthogonal too). `block`: a power of two from 2 to 4096. Returns a
// contiguous FP32 [R, C].
at::Tensor hadamard_rotate(const at::Tensor& m, int64_t block);

}  // namespace lpbench::kernels::reference
