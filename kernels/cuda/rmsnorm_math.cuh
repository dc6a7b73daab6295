#pragma once

// RMSNorm's output value before it is rounded to BF16, shared by the norm's forward (rmsnorm.cu)
// and the tensorwise quantization that computes the norm's output from h as it quantizes it
// (quantize_tensorwise.cu), so that both give the same bits: h times its row's inverse RMS, then
// times the weight, each product rounded in FP32 in that order (the caller rounds the result
// once, to BF16).

namespace lpbench::cuda {

__device__ __forceinline__ float rmsnorm_value(float h, float rstd, float weight) {
  return __fmul_rn(__fmul_rn(h, rstd), weight);
}

}  // namespace lpbench::cuda
