#pragma once

// SwiGLU's values, forward and backward, shared by the SwiGLU kernels (swiglu.cu) and the
// tensorwise quantization that computes SwiGLU's output or gradient as it quantizes it
// (quantize_tensorwise.cu), so that both round alike: silu(gate) to BF16 as torch's silu of a
// BF16 tensor does, the rest in FP32 (the caller rounds each value once, to BF16), as
// kernels/reference/swiglu.h defines.
#include "kernels/cuda/bf16_vector.cuh"

namespace lpbench::cuda {

// torch's silu: x / (1 + exp(−x)) in FP32.
__device__ __forceinline__ float silu(float x) {
  return x / (1.0F + expf(-x));
}

__device__ __forceinline__ float swiglu_value(float gate, float up) {
  return round_bf16(silu(gate)) * up;
}

// The backward's d_gate = d · up · σ(gate) · (1 + gate · (1 − σ(gate))) and d_up = d · silu(gate).
__device__ __forceinline__ float swiglu_d_gate(float gate, float up, float d) {
  const float sigmoid = 1.0F / (1.0F + expf(-gate));
  return d * up * sigmoid * (1.0F + gate * (1.0F - sigmoid));
}

__device__ __forceinline__ float swiglu_d_up(float gate, float d) {
  return d * round_bf16(silu(gate));
}

}  // namespace lpbench::cuda
