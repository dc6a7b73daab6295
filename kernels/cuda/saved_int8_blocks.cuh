#pragma once

// saved=int8 inside the element-wise kernels (rmsnorm.cu, swiglu.cu): the forward writes the INT8
// blocks of what its backward will read as it holds the values in registers, and the backward
// reads them back in place of the BF16 tensor. Device code only; the argument types are in
// saved_activation.cuh.
//
// A thread holds 8 consecutive values of a row, and the 16 threads holding one block of 128 are
// 16 consecutive lanes of a warp starting at lane 0 or 16 (the callers' layouts guarantee it:
// rows a multiple of 128, 8 values a lane, whole rows per group of 16 lanes). Both directions
// round as kernels/reference/quantize.cpp does, through quantize_math.cuh, so the bytes are the
// block quantize kernel's and the restored values the restore kernel's.
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/quantize_math.cuh"
#include "kernels/cuda/saved_activation.cuh"

namespace lpbench::cuda {

// Keeps values v (BF16 values, held as floats) of row `row`, columns col..col+7 of a `cols`-wide
// tensor. Every lane of the block's 16 calls it together.
__device__ __forceinline__ void keep_int8x8(const Bf16x8& v, int64_t row, int64_t col, int64_t cols,
                                            const Int8Blocks& out) {
  uint32_t amax = 0;
#pragma unroll
  for (int e = 0; e < kBf16PerVector; ++e) {
    const uint32_t bits = quant::abs_bits(v.v[e]);
    amax = bits > amax ? bits : amax;
  }
  // The 16 lanes of this half-warp only: the other half may hold another row, or none.
  const unsigned mask = 0xffffu << (threadIdx.x & 16u);
#pragma unroll
  for (int offset = 8; offset > 0; offset /= 2)
    amax = max(amax, __shfl_xor_sync(mask, amax, offset, 16));
  float scale = 0.0F;
  float inv = 0.0F;
  quant::scale_of(amax, 127.0F, &scale, &inv);
  const bool nonfinite = amax >= quant::kInfBits;
  float s[kBf16PerVector];
#pragma unroll
  for (int e = 0; e < kBf16PerVector; ++e)
    s[e] = quant::scaled(v.v[e], inv, nonfinite);
  const uint2 bytes = make_uint2(quant::pack4(s[0], s[1], s[2], s[3], DType::int8),
                                 quant::pack4(s[4], s[5], s[6], s[7], DType::int8));
  *reinterpret_cast<uint2*>(out.values + row * cols + col) = bytes;
  if (col % kSavedBlock == 0) out.scales[row * (cols / kSavedBlock) + col / kSavedBlock] = scale;
}

// The 8 values the restore kernel would give at (row, col): bf16(q · scale), as floats.
__device__ __forceinline__ Bf16x8 restore_int8x8(const KeptInt8Blocks& in, int64_t row, int64_t col,
                                                 int64_t cols) {
  const float scale = __ldg(in.scales + row * (cols / kSavedBlock) + col / kSavedBlock);
  const uint2 raw = __ldg(reinterpret_cast<const uint2*>(in.values + row * cols + col));
  const uint32_t words[2] = {raw.x, raw.y};
  Bf16x8 out;
#pragma unroll
  for (int e = 0; e < kBf16PerVector; ++e) {
    const auto q = static_cast<int8_t>((words[e / 4] >> (8 * (e % 4))) & 0xffu);
    out.v[e] = round_bf16(__fmul_rn(static_cast<float>(q), scale));
  }
  return out;
}

}  // namespace lpbench::cuda
