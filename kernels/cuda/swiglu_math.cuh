#pragma once

// SwiGLU's forward value, shared by the SwiGLU kernels (swiglu.cu) and the tensorwise quantization
// that computes SwiGLU's output as it quantizes it (quantize_tensorwise.cu), so that both round
// alike: silu(gate) to BF16 as torch's silu of a BF16 tensor does, then times up in FP32 (the
// caller rounds the product once, to BF16), as kernels/reference/swiglu.h defines.
#include "kernels/cuda/bf16_vector.cuh"

namespace lpbench::cuda {

// torch's silu: x / (1 + exp(−x)) in FP32.
__device__ __forceinline__ float silu(float x) {
  return x / (1.0F + expf(-x));
}

__device__ __forceinline__ float swiglu_value(float gate, float up) {
  return round_bf16(silu(gate)) * up;
}

}  // namespace lpbench::cuda
