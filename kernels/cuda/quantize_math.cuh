#pragma once

// The arithmetic every quantization kernel shares (quantize.cu, quantize_tensorwise.cu,
// quantize_row_pair.cu), so that each path rounds the same way, bit for bit as
// kernels/reference/quantize.cpp defines it: FP32 amaxes carried as bits, scales and inverse
// scales, the 16-byte vector unpack and the packing of four values into format bytes.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/types.cuh"

namespace lpbench::cuda::quant {

constexpr uint32_t kInfBits = 0x7f800000u;

// Host side, for the launchers: whether a pointer allows `bytes`-wide accesses.
inline bool aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

__device__ __forceinline__ uint32_t abs_bits(float v) {
  return __float_as_uint(v) & 0x7fffffffu;
}

__device__ __forceinline__ float load_elem(const __nv_bfloat16* p) {
  return __uint_as_float(static_cast<uint32_t>(__ldg(reinterpret_cast<const uint16_t*>(p))) << 16);
}
__device__ __forceinline__ float load_elem(const float* p) {
  return __ldg(p);
}

// The 16-byte vector of InT as floats.
template <typename InT>
struct Vec;
template <>
struct Vec<__nv_bfloat16> {
  static constexpr int kSize = 8;
  __device__ __forceinline__ static void unpack(const uint4& v, float* f) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
};
template <>
struct Vec<float> {
  static constexpr int kSize = 4;
  __device__ __forceinline__ static void unpack(const uint4& v, float* f) {
    f[0] = __uint_as_float(v.x);
    f[1] = __uint_as_float(v.y);
    f[2] = __uint_as_float(v.z);
    f[3] = __uint_as_float(v.w);
  }
};

__device__ __forceinline__ uint4 load_vec(const void* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

// Per block: scale = amax / fmax and the inverse fmax / amax, IEEE FP32 divisions. An amax of 0,
// or one so small that fmax / amax overflows (below fmax / FLT_MAX, about 1e-36), gives 1 and 1:
// its values round to 0 where an infinite inverse would have sent every one of them to ±fmax. A
// non-finite amax gives the non-finite scale and a NaN inverse, which quantize_one turns into a
// 0 value.
__device__ __forceinline__ void scale_of(uint32_t amax_bits, float fmax, float* scale, float* inv) {
  const float amax = __uint_as_float(amax_bits);
  if (amax_bits >= kInfBits) {
    *scale = __fdiv_rn(amax, fmax);
    *inv = __int_as_float(0x7fffffff);
    return;
  }
  const float inverse = __fdiv_rn(fmax, amax);
  if (isinf(inverse)) {
    *scale = 1.0f;
    *inv = 1.0f;
  } else {
    *scale = __fdiv_rn(amax, fmax);
    *inv = inverse;
  }
}

// x · inv, the value that is rounded to the format. A NaN product only comes from a block with a
// non-finite amax, whose values are all 0.
__device__ __forceinline__ float scaled(float x, float inv) {
  const float q = __fmul_rn(x, inv);
  return q != q ? 0.0f : q;
}

// The same where one inverse serves several values: `nonfinite` (inv is NaN) tested once.
__device__ __forceinline__ float scaled(float x, float inv, bool nonfinite) {
  return nonfinite ? 0.0f : __fmul_rn(x, inv);
}

// q rounded half to even, as the low byte of the result (the other bytes are not the value).
// Adding 1.5·2²³ leaves round(q) in the low mantissa bits, exact and two's complement for
// |q| < 2²², with one FADD where a conversion instruction runs at a quarter of its rate (the
// tile kernel was issue-bound, docs/perf-log.md). The reference's clamp to ±127 never binds:
// |q| = |x| · (127 / amax) stays below 127.5 for |x| ≤ amax.
__device__ __forceinline__ uint32_t int8_low_byte(float q) {
  return __float_as_uint(__fadd_rn(q, 12582912.0f));
}

// Two values to two format bytes (the first in the low byte). For FP8 the reference clamps to
// ±fmax, then rounds to nearest even; the saturating conversion is the same function (a finite
// value that would round past fmax becomes fmax either way), so it needs no separate clamp.
__device__ __forceinline__ uint32_t pack2(float a, float b, DType fmt) {
  if (fmt == DType::int8) return __byte_perm(int8_low_byte(a), int8_low_byte(b), 0x0040) & 0xffffu;
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE,
                                  fmt == DType::fp8_e4m3 ? __NV_E4M3 : __NV_E5M2);
}

// Four values to four format bytes, the first in the low byte.
__device__ __forceinline__ uint32_t pack4(float a, float b, float c, float d, DType fmt) {
  if (fmt == DType::int8) {
    const uint32_t ab = __byte_perm(int8_low_byte(a), int8_low_byte(b), 0x0040);
    const uint32_t cd = __byte_perm(int8_low_byte(c), int8_low_byte(d), 0x0040);
    return __byte_perm(ab, cd, 0x5410);
  }
  return pack2(a, b, fmt) | (pack2(c, d, fmt) << 16);
}

__device__ __forceinline__ uint8_t pack1(float a, DType fmt) {
  return static_cast<uint8_t>(pack2(a, 0.0f, fmt) & 0xffu);
}

}  // namespace lpbench::cuda::quant
