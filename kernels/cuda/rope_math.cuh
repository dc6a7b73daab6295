#pragma once

// RoPE's rotate-half values for one pair (x1, x2) of a head, shared by RoPE's kernels (rope.cu)
// and the tensorwise quantization that computes RoPE's backward as it quantizes it
// (quantize_tensorwise.cu), so that both round alike: each product and sum rounded in FP32 as
// the reference's separate operations round them, never fused into an FMA (the caller rounds the
// result once, to BF16).
namespace lpbench::cuda {

// The pair's first element: x1·cos − x2·sin (forward), x1·cos + x2·sin (inverse).
__device__ __forceinline__ float rope_first(float x1, float x2, float c, float s, bool inverse) {
  const float a1c = __fmul_rn(x1, c);
  const float a2s = __fmul_rn(x2, s);
  return inverse ? __fadd_rn(a1c, a2s) : __fsub_rn(a1c, a2s);
}

// The pair's second element: x2·cos + x1·sin (forward), x2·cos − x1·sin (inverse).
__device__ __forceinline__ float rope_second(float x1, float x2, float c, float s, bool inverse) {
  const float a2c = __fmul_rn(x2, c);
  const float a1s = __fmul_rn(x1, s);
  return inverse ? __fsub_rn(a2c, a1s) : __fadd_rn(a2c, a1s);
}

}  // namespace lpbench::cuda
