#pragma once

// The 128 × 128 tile of X that the one-pass quantize kernels (quantize_tensorwise.cu,
// quantize_row_pair.cu) work in, a CTA of 256 threads a tile:
//   - loading it: each half-warp reads one row's 256 bytes, the block 16 rows a load, eight
//     16-byte loads a thread, all in flight before the first is used;
//   - quantizing eight values a load in registers (X's layout is stored from there);
//   - the format bytes of Xᵀ's layout stashed in shared memory and written out 128 contiguous
//     bytes a warp instruction. Writing them 16 bytes a lane into 32 rows at once, the first
//     version, ran at half the copy rate (docs/perf-log.md §19).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/quantize_math.cuh"

namespace lpbench::cuda::byte_tile {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 128;                            // the tile's side
constexpr int kLoads = kTile * kTile / 8 / kThreads;  // 16-byte loads a thread: 8
constexpr int kRowsPerLoad = kThreads / (kTile / 8);  // rows of the tile one load covers: 16
constexpr int kWords = kTile * kTile / 4;             // the byte tile, in 4-byte words

// The tile row of this thread's load i, and its first column (eight columns from there).
__device__ __forceinline__ int load_row(int i) {
  return i * kRowsPerLoad + static_cast<int>(threadIdx.x) / (kTile / 8);
}
__device__ __forceinline__ int load_col() {
  return (static_cast<int>(threadIdx.x) % (kTile / 8)) * 8;
}

// The thread's eight loads of the tile at (r0, c0) of X (row stride ld).
__device__ __forceinline__ void load(const __nv_bfloat16* x, int64_t ld, int64_t r0, int64_t c0,
                                     uint4 (&raw)[kLoads]) {
#pragma unroll
  for (int i = 0; i < kLoads; ++i)
    raw[i] = quant::load_vec(x + (r0 + load_row(i)) * ld + c0 + load_col());
}

// Eight BF16 values times `inv` (one inverse for all), as eight format bytes, the first in the
// low byte. The caller has made sure no product is NaN (the tensorwise kernel reads nothing
// where its inverse is).
template <bool kInt8>
__device__ __forceinline__ uint2 quantize8(const uint4& raw, float inv, DType fmt) {
  float f[8];
  quant::Vec<__nv_bfloat16>::unpack(raw, f);
#pragma unroll
  for (int e = 0; e < 8; ++e)
    f[e] = __fmul_rn(f[e], inv);
  const DType out = kInt8 ? DType::int8 : fmt;
  return make_uint2(quant::pack4(f[0], f[1], f[2], f[3], out),
                    quant::pack4(f[4], f[5], f[6], f[7], out));
}

// max |x| of a thread's loads, as FP32 bits (a NaN above +Inf): taken on the BF16 bits two at a
// time (sign cleared, an unsigned 16-bit max a pair), which order as the values do, then widened
// to FP32's place. One instruction or two a pair where a max a value after unpacking was four.
template <int N>
__device__ __forceinline__ uint32_t loads_amax(const uint4 (&raw)[N]) {
  uint32_t pairs = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    pairs = __vmaxu2(pairs, raw[i].x & 0x7fff7fffu);
    pairs = __vmaxu2(pairs, raw[i].y & 0x7fff7fffu);
    pairs = __vmaxu2(pairs, raw[i].z & 0x7fff7fffu);
    pairs = __vmaxu2(pairs, raw[i].w & 0x7fff7fffu);
  }
  return max(pairs >> 16, pairs & 0xffffu) << 16;
}

// Eight values under a scale that X may outgrow (delayed scaling): values past ±fmax saturate,
// as the general path's apply pass (quantize.cu) and reference::quantize_by_amax round them. With
// no NaN among the values that is a clamp for INT8 and nothing for FP8, whose saturating
// conversion (pack2) takes any value past ±fmax, infinities included, to ±fmax itself; kNan
// (where the caller found one) tests each value too and makes a NaN 0. With the test for every
// value and the amax folded value by value, each launch of the record's kernel ran 3–7 µs longer
// than the dynamic kernel's; this way, about 2 (docs/perf-log.md §54).
template <bool kInt8, bool kNan>
__device__ __forceinline__ uint2 quantize8_saturating(const uint4& raw, float inv, float fmax,
                                                      DType fmt) {
  float f[8];
  quant::Vec<__nv_bfloat16>::unpack(raw, f);
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float q = kNan ? quant::scaled(f[e], inv) : __fmul_rn(f[e], inv);
    f[e] = kInt8 ? fminf(fmaxf(q, -fmax), fmax) : q;
  }
  const DType out = kInt8 ? DType::int8 : fmt;
  return make_uint2(quant::pack4(f[0], f[1], f[2], f[3], out),
                    quant::pack4(f[4], f[5], f[6], f[7], out));
}

// The same with an inverse per value, any of which may be NaN (a row or column with a NaN or an
// Inf): those values become 0, as quant::scaled makes them.
template <bool kInt8>
__device__ __forceinline__ uint2 quantize8(const uint4& raw, const float (&inv)[8], DType fmt) {
  float f[8];
  quant::Vec<__nv_bfloat16>::unpack(raw, f);
#pragma unroll
  for (int e = 0; e < 8; ++e)
    f[e] = quant::scaled(f[e], inv[e]);
  const DType out = kInt8 ? DType::int8 : fmt;
  return make_uint2(quant::pack4(f[0], f[1], f[2], f[3], out),
                    quant::pack4(f[4], f[5], f[6], f[7], out));
}

// Where a format byte of tile row r, word jw (columns 4·jw..4·jw+3) sits in shared memory: the
// word index XOR-ed with a function of the row, so that both the row-wise stores (a half-warp
// writes one row's 32 words as 16 pairs) and the transposing reads (lane l reads rows
// 4l..4l+3 of one word column) touch 32 distinct banks. The swizzle's low bit swaps the two
// words of a pair, so pairs stay 8-byte aligned: bits 1–4 come from r / 4 (lanes 0–15 of the
// transposing read), bit 0 from r / 64 (lanes 16–31).
__device__ __forceinline__ int swizzle(int r) {
  return (((r >> 2) & 15) << 1) | ((r >> 6) & 1);
}

// Puts the eight bytes of tile row r, columns col..col+7 (col a multiple of 8) in the tile.
__device__ __forceinline__ void stash(uint32_t* tile, int r, int col, uint2 q) {
  const int s = swizzle(r);
  *reinterpret_cast<uint2*>(&tile[r * (kTile / 4) + ((col / 4) ^ (s & ~1))]) =
      (s & 1) ? make_uint2(q.y, q.x) : q;
}

// The 4×4 byte transpose: a, b, c, d are four rows' words (four columns each, the first in the
// low byte); col[e] gets column e of the four rows, row a in the low byte.
__device__ __forceinline__ void transpose_bytes(uint32_t a, uint32_t b, uint32_t c, uint32_t d,
                                                uint32_t (&col)[4]) {
  const uint32_t ab_lo = __byte_perm(a, b, 0x5140);  // a0 b0 a1 b1
  const uint32_t ab_hi = __byte_perm(a, b, 0x7362);  // a2 b2 a3 b3
  const uint32_t cd_lo = __byte_perm(c, d, 0x5140);
  const uint32_t cd_hi = __byte_perm(c, d, 0x7362);
  col[0] = __byte_perm(ab_lo, cd_lo, 0x5410);  // a0 b0 c0 d0
  col[1] = __byte_perm(ab_lo, cd_lo, 0x7632);  // a1 b1 c1 d1
  col[2] = __byte_perm(ab_hi, cd_hi, 0x5410);
  col[3] = __byte_perm(ab_hi, cd_hi, 0x7632);
}

// Writes the stashed tile (after a __syncthreads) as rows c0..c0+127, columns r0..r0+127 of Xᵀ
// (`rows` bytes a row). Warp w transposes word columns w, w + 8, w + 16, w + 24; lane l holds
// rows 4l..4l+3 of the word column and writes bytes 4l..4l+3 of four rows of Xᵀ.
__device__ __forceinline__ void store_transposed(const uint32_t* tile, uint8_t* values_t,
                                                 int64_t rows, int64_t r0, int64_t c0) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
#pragma unroll
  for (int k = 0; k < kTile / 4 / kWarps; ++k) {
    const int jw = warp + kWarps * k;
    uint32_t w[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int r = 4 * lane + q;
      w[q] = tile[r * (kTile / 4) + (jw ^ swizzle(r))];
    }
    uint32_t cols[4];
    transpose_bytes(w[0], w[1], w[2], w[3], cols);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      *reinterpret_cast<uint32_t*>(values_t + (c0 + 4 * jw + e) * rows + r0 + 4 * lane) = cols[e];
    }
  }
}

}  // namespace lpbench::cuda::byte_tile
