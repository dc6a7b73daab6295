#pragma once

// SwiGLU's values, shared by the SwiGLU kernels (swiglu.cu) and the tensorwise quantization that
// computes SwiGLU's output or its gradient as it quantizes it (quantize_tensorwise.cu), so that
// both round alike, as kernels/reference/swiglu.h defines: silu(gate) to BF16 as torch's silu of
// a BF16 tensor does, the rest in FP32 (the caller rounds each result once, to BF16).
#include "kernels/cuda/bf16_vector.cuh"

namespace lpbench::cuda {

// torch's silu: x / (1 + exp(−x)) in FP32.
__device__ __forceinline__ float silu(float x) {
  return x / (1.0F + expf(-x));
}

__device__ __forceinline__ float swiglu_value(float gate, float up) {
  return round_bf16(silu(gate)) * up;
}

// The backward's: d_gate = d_out · up · σ(gate) · (1 + gate · (1 − σ(gate))), d_up = d_out ·
// silu(gate) rounded as the forward rounds it.
__device__ __forceinline__ float swiglu_d_gate(float gate, float up, float d_out) {
  const float sigmoid = 1.0F / (1.0F + expf(-gate));
  return d_out * up * sigmoid * (1.0F + gate * (1.0F - sigmoid));
}

__device__ __forceinline__ float swiglu_d_up(float gate, float d_out) {
  return d_out * round_bf16(silu(gate));
}

}  // namespace lpbench::cuda
