#pragma once

// Eight BF16 values moved as one 16-byte access and widened to FP32 in registers: the unit of
// the element-wise kernels (norm, RoPE, SwiGLU), whose rows are multiples of 8 elements.
#include <cuda_bf16.h>

#include <cstdint>

namespace lpbench::cuda {

constexpr int kBf16PerVector = 8;

struct Bf16x8 {
  float v[kBf16PerVector];
};

__device__ __forceinline__ Bf16x8 load_bf16x8(const __nv_bfloat16* p) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
  Bf16x8 out;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out.v[2 * i] = __uint_as_float(words[i] << 16);
    out.v[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
  return out;
}

// Round to nearest even, as torch's casts to BF16 do.
__device__ __forceinline__ void store_bf16x8(__nv_bfloat16* p, const Bf16x8& in) {
  uint32_t words[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(in.v[2 * i], in.v[2 * i + 1]);
    words[i] = *reinterpret_cast<const uint32_t*>(&pair);
  }
  *reinterpret_cast<uint4*>(p) = make_uint4(words[0], words[1], words[2], words[3]);
}

// The value a BF16 store of `x` would hold, back in FP32 (torch rounds each op's result).
__device__ __forceinline__ float round_bf16(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}

}  // namespace lpbench::cuda

namespace lpbench::cuda {

// The running max of |x| over the values a store rounds `in` to (what a quantizer would read).
__device__ __forceinline__ uint32_t stored_amax(const Bf16x8& in, uint32_t running) {
#pragma unroll
  for (int i = 0; i < kBf16PerVector; ++i) {
    const uint32_t bits = __float_as_uint(round_bf16(in.v[i])) & 0x7fffffffu;
    running = bits > running ? bits : running;
  }
  return running;
}

}  // namespace lpbench::cuda
