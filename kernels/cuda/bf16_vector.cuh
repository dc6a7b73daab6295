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

// Eight BF16 values as 16 bytes hold them (from memory or a shared-memory ring), widened.
__device__ __forceinline__ Bf16x8 unpack_bf16x8(const uint4& raw) {
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
  Bf16x8 out;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out.v[2 * i] = __uint_as_float(words[i] << 16);
    out.v[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
  return out;
}

// One 16-byte access of global memory as one instruction. A plain `uint4` copy is not: nvcc took
// some apart into 4- and 8-byte accesses (RoPE's loads and stores, the norm forward's and
// SwiGLU's stores; their PTX at 0bc35a8), and a warp's 4-byte stores at a 16-byte stride touch
// each sector four times (docs/perf-log.md §41). `volatile` keeps these accesses in program
// order among themselves, as the in-place kernels (RoPE) read before they write.
__device__ __forceinline__ uint4 load_global_16(const void* p) {
  uint4 r;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

__device__ __forceinline__ void store_global_16(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

__device__ __forceinline__ Bf16x8 load_bf16x8(const __nv_bfloat16* p) {
  return unpack_bf16x8(load_global_16(p));
}

// Eight FP32 values (a norm's weights for one vector of a row) in two 16-byte loads, not eight
// 4-byte ones: `p` 32-byte aligned (the launchers check 16 bytes; vectors start every 8).
__device__ __forceinline__ void load_float8(const float* p, float (&w)[kBf16PerVector]) {
  const float4 lo = __ldg(reinterpret_cast<const float4*>(p));
  const float4 hi = __ldg(reinterpret_cast<const float4*>(p) + 1);
  w[0] = lo.x, w[1] = lo.y, w[2] = lo.z, w[3] = lo.w;
  w[4] = hi.x, w[5] = hi.y, w[6] = hi.z, w[7] = hi.w;
}

// Eight values rounded to BF16 (to nearest even, as torch's casts to BF16 do) and packed as 16
// bytes hold them, the first in the low half of the first word.
__device__ __forceinline__ uint4 pack_bf16x8(const Bf16x8& in) {
  uint32_t words[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(in.v[2 * i], in.v[2 * i + 1]);
    words[i] = *reinterpret_cast<const uint32_t*>(&pair);
  }
  return make_uint4(words[0], words[1], words[2], words[3]);
}

__device__ __forceinline__ void store_bf16x8(__nv_bfloat16* p, const Bf16x8& in) {
  store_global_16(p, pack_bf16x8(in));
}

// `in` packed as a store writes it, also folding max |x| of the packed values into `amax2`: two
// BF16 magnitudes (sign cleared) side by side, compared as unsigned halves (their order is the
// values', and a NaN tops +Inf). One SIMD max a pair, on the packed words: no second rounding.
// amax_of_pairs turns the result into the FP32 bits the quantizer's amax is carried in.
__device__ __forceinline__ uint4 pack_bf16x8(const Bf16x8& in, uint32_t& amax2) {
  uint32_t words[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(in.v[2 * i], in.v[2 * i + 1]);
    words[i] = *reinterpret_cast<const uint32_t*>(&pair);
    amax2 = __vmaxu2(amax2, words[i] & 0x7fff7fffu);
  }
  return make_uint4(words[0], words[1], words[2], words[3]);
}

// The store, folding the stored magnitudes into `amax2` as pack_bf16x8 does.
__device__ __forceinline__ void store_bf16x8(__nv_bfloat16* p, const Bf16x8& in, uint32_t& amax2) {
  store_global_16(p, pack_bf16x8(in, amax2));
}

// The same store, folding the stored magnitudes into `row2` (all eight, pairwise as above) and
// into `cols2`, word by word: cols2[i] keeps the running max of elements 2i and 2i + 1 apart,
// for a thread that stores the same columns of many rows (each row's and each column's amax).
__device__ __forceinline__ void store_bf16x8(__nv_bfloat16* p, const Bf16x8& in, uint32_t& row2,
                                             uint32_t (&cols2)[4]) {
  uint32_t words[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(in.v[2 * i], in.v[2 * i + 1]);
    words[i] = *reinterpret_cast<const uint32_t*>(&pair);
    const uint32_t magnitudes = words[i] & 0x7fff7fffu;
    row2 = __vmaxu2(row2, magnitudes);
    cols2[i] = __vmaxu2(cols2[i], magnitudes);
  }
  store_global_16(p, make_uint4(words[0], words[1], words[2], words[3]));
}

__device__ __forceinline__ uint32_t amax_of_pairs(uint32_t amax2) {
  const uint32_t lo = amax2 & 0xffffu;
  const uint32_t hi = amax2 >> 16;
  return (lo > hi ? lo : hi) << 16;
}

// The value a BF16 store of `x` would hold, back in FP32 (torch rounds each op's result).
__device__ __forceinline__ float round_bf16(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}

}  // namespace lpbench::cuda
