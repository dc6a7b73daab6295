// Dynamic scaled quantization (INT8, FP8 E4M3/E5M2) of BF16/FP32 matrices, with an optional fused
// transpose, bit for bit as kernels/reference/quantize.cpp defines it.
//
// Tensorwise quantization of BF16 with sides multiples of 128 (the training step's int8-tensor
// and fp8-tensor operands) goes to its own one-pass kernel (quantize_tensorwise.cu), and so do
// rowwise pairs (X per row and Xᵀ per row: int8-row's operands, quantize_row_pair.cu). Everything
// else takes one of four paths, chosen by plan() from the block shape in output coordinates:
//   tile    one pass: an output tile of 128×128 through shared memory holds whole blocks (block
//           sides powers of two, at most 128, the columns at least 4; a side spanning its whole
//           dimension of at most 128 counts as 128). {1,128}, {128,128}, {32,32} go here.
//   rows    one pass: rowwise without transpose, one CTA per row, the row held in registers.
//   segments one pass: 1 × bc blocks (bc 256 to 1024 for BF16) without transpose, one warp per
//           block, the block held in registers.
//   columns one pass: the same blocks of Xᵀ (bc 256, 512 or 1024, BF16), a CTA per run of bc
//           rows × 32 columns of X held in registers (quantize_columns.cu).
//   general two passes for everything else (other tensorwise, rowwise of Xᵀ, odd blocks):
//           block amaxes into the workspace (atomicMax on the float bits), scales and inverse
//           scales per block, then the tile kernel reading the inverse scales (one per tile
//           where blocks are multiples of the tile, as the long K blocks' kb × kb weights are).
//
// The tile and general paths can also write Xᵀ from the same tile (square blocks only, where
// the transpose of the quantization is the quantization of the transpose): a training step
// reads each operand in both layouts, and one pass saves a read of X and, for tensorwise, its
// amax pass.
//
// Amax is carried as the bits of |x| (sign cleared) compared as unsigned integers: for
// non-negative floats the order is the same, and every NaN (sign cleared) compares above +Inf,
// so a NaN anywhere in a block makes its amax NaN without a separate flag.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/amax_ring.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/quantize.cuh"
#include "kernels/cuda/quantize_columns.cuh"
#include "kernels/cuda/quantize_math.cuh"
#include "kernels/cuda/quantize_row_pair.cuh"
#include "kernels/cuda/quantize_tensorwise.cuh"
#include "kernels/rounding_noise.h"

namespace lpbench::cuda {

namespace {

using namespace quant;

constexpr int kThreads = 256;
constexpr int kTile = 128;            // output tile side of the tile kernel
constexpr int kAmaxRowsPerCta = 128;  // rows one CTA of the amax kernel reduces
constexpr int kRowCache = 8;          // 16-byte vectors per thread the rows kernel keeps

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
bool is_pow2(int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

// ---------------------------------------------------------------------------------------------
// Tile kernel: one 128×128 output tile per CTA
// ---------------------------------------------------------------------------------------------

struct TileParams {
  const void* x;
  int64_t ld;
  int64_t in_rows, in_cols;
  bool transpose;
  bool vec_in;         // 16-byte input loads (aligned base and leading dimension)
  bool vec_out;        // 4-byte output stores (aligned base, C % 4 == 0)
  int64_t rows, cols;  // of the output
  DType fmt;
  float fmax;
  uint8_t* values;
  float* scales;
  int64_t nbr, nbc;  // the scale grid of the whole output
  // The transposed copy (nullptr: none; only with transpose false): [cols, rows], its scales
  // the transposed grid [nbc, nbr].
  uint8_t* values_t;
  float* scales_t;
  bool vec_out_t;
  // Fused (in-tile amax): the block, powers of two dividing the tile, and their log2.
  int br, bc;
  int br_log2, bc_log2;
  // Apply (amax from the general path): inverse scales per block and the real block shape;
  // one_scale when a single block covers the matrix (tensorwise), tile_scale when every tile
  // lies inside one block (both block sides multiples of the tile).
  const float* inv;
  int64_t gbr, gbc;
  bool one_scale;
  bool tile_scale;
  // Delayed scaling (one_scale only): values past the given amax saturate (harmless under the
  // matrix's own amax, which no value exceeds), NaN values become 0, and the running max |x|
  // goes to amax_seen (optional).
  bool saturate;
  uint32_t* amax_seen;
  // Stochastic rounding (apply path only; QuantizeArgs::stochastic).
  bool stochastic;
  uint64_t seed;
};

// The tile in input orientation, FP32, 128 rows of 32 four-float chunks; a row's chunks are
// XOR-swizzled by (row / 4) % 8 so that both the row-wise reads (8 lanes, 8 chunks of one row)
// and the transposing reads (8 lanes, one chunk of rows 4l..4l+3) hit distinct bank groups.
__device__ __forceinline__ int swz(int i, int j) {
  return i * kTile + ((((j >> 2) ^ (i >> 2)) & 7) | ((j >> 2) & ~7)) * 4 + (j & 3);
}

template <typename InT>
__device__ __forceinline__ void load_tile(const TileParams& p, float* tile, int64_t ir0,
                                          int64_t ic0) {
  constexpr int V = Vec<InT>::kSize;
  constexpr int kVecPerRow = kTile / V;
  constexpr int kIters = kTile * kVecPerRow / kThreads;  // 8 (bf16) or 16 (fp32)
  constexpr int kBatch = 4;
  const InT* x = static_cast<const InT*>(p.x);
#pragma unroll
  for (int b0 = 0; b0 < kIters; b0 += kBatch) {
    uint4 raw[kBatch];
    bool full[kBatch];
#pragma unroll
    for (int it = 0; it < kBatch; ++it) {
      const int v = (b0 + it) * kThreads + static_cast<int>(threadIdx.x);
      const int i = v / kVecPerRow;
      const int j = (v % kVecPerRow) * V;
      const int64_t gi = ir0 + i;
      const int64_t gj = ic0 + j;
      full[it] = p.vec_in && gi < p.in_rows && gj + V <= p.in_cols;
      raw[it] = full[it] ? load_vec(x + gi * p.ld + gj) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int it = 0; it < kBatch; ++it) {
      const int v = (b0 + it) * kThreads + static_cast<int>(threadIdx.x);
      const int i = v / kVecPerRow;
      const int m = v % kVecPerRow;
      const int64_t gi = ir0 + i;
      const int64_t gj = ic0 + m * V;
      float f[V];
      if (full[it]) {
        Vec<InT>::unpack(raw[it], f);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) {
          f[e] = (gi < p.in_rows && gj + e < p.in_cols) ? load_elem(x + gi * p.ld + gj + e) : 0.0f;
        }
      }
      if constexpr (V == 8) {
        // Two chunks per thread: lanes 4..7 of each 8 store their odd chunk first, so that each
        // store instruction's 8 lanes hit 8 distinct bank groups.
        const bool odd_first = (m >> 2) & 1;
        const float4 lo = make_float4(f[0], f[1], f[2], f[3]);
        const float4 hi = make_float4(f[4], f[5], f[6], f[7]);
        *reinterpret_cast<float4*>(&tile[swz(i, m * 8 + (odd_first ? 4 : 0))]) =
            odd_first ? hi : lo;
        *reinterpret_cast<float4*>(&tile[swz(i, m * 8 + (odd_first ? 0 : 4))]) =
            odd_first ? lo : hi;
      } else {
        *reinterpret_cast<float4*>(&tile[swz(i, m * 4)]) = make_float4(f[0], f[1], f[2], f[3]);
      }
    }
  }
}

// The 4×4 output micro-tile of this thread in pass `pass`: output rows r..r+3 (r = pass·32 +
// warp·4), columns 4·lane..4·lane+3, as v[row][col].
__device__ __forceinline__ void read_micro(const float* tile, bool transpose, int r, int lane,
                                           float (&v)[4][4]) {
  if (!transpose) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float4 t = *reinterpret_cast<const float4*>(&tile[swz(r + q, 4 * lane)]);
      v[q][0] = t.x;
      v[q][1] = t.y;
      v[q][2] = t.z;
      v[q][3] = t.w;
    }
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float4 t = *reinterpret_cast<const float4*>(&tile[swz(4 * lane + e, r)]);
      v[0][e] = t.x;
      v[1][e] = t.y;
      v[2][e] = t.z;
      v[3][e] = t.w;
    }
  }
}

__device__ __forceinline__ void store4(uint8_t* values, int64_t rows, int64_t cols, bool vec_out,
                                       DType fmt, int64_t gr, int64_t gc, const float (&q)[4]) {
  if (gr >= rows) return;
  uint8_t* out = values + gr * cols + gc;
  if (vec_out && gc + 4 <= cols) {
    *reinterpret_cast<uint32_t*>(out) = pack4(q[0], q[1], q[2], q[3], fmt);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (gc + e < cols) out[e] = pack1(q[e], fmt);
    }
  }
}

// Quantizes the tile held in shared memory and stores one output: the output itself
// (`second` false) or the transposed copy of an untransposed output. `block_inv` holds the
// tile's inverse scales (kFused), in the first output's block coordinates; otherwise they come
// from p.inv. Each thread handles 4×4 micro-tiles: output rows r..r+3 (r = pass·32 + warp·4)
// of the tile, columns 4·lane..4·lane+3.
template <bool kFused>
__device__ __forceinline__ void quantize_and_store(const TileParams& p, const float* tile,
                                                   const uint32_t* block_inv, int64_t r0,
                                                   int64_t c0, bool second, uint32_t& seen) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int nbc_tile = kTile >> p.bc_log2;
  // The transposed copy swaps the output's origin and extent; its element (i, j) is the first
  // output's (j, i), whose block gives its inverse scale.
  const int64_t o_r0 = second ? c0 : r0;
  const int64_t o_c0 = second ? r0 : c0;
  const int64_t o_rows = second ? p.cols : p.rows;
  const int64_t o_cols = second ? p.rows : p.cols;
  uint8_t* values = second ? p.values_t : p.values;
  const bool vec_out = second ? p.vec_out_t : p.vec_out;

  // Block index = row part (this output's row) + column part (its column), fixed per column.
  int64_t col_part[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int tc = 4 * lane + e;
    if constexpr (kFused) {
      col_part[e] = second ? (tc >> p.br_log2) * nbc_tile : (tc >> p.bc_log2);
    } else {
      const int64_t gc = o_c0 + tc;
      const uint32_t clamped = static_cast<uint32_t>(gc < o_cols ? gc : o_cols - 1);
      col_part[e] = second ? static_cast<int64_t>(clamped / static_cast<uint32_t>(p.gbr)) * p.nbc
                           : clamped / static_cast<uint32_t>(p.gbc);
    }
  }
  // Tensorwise, or a tile inside one block: one inverse for the tile, read once (no per-element
  // lookups). (r0, c0) is the first output's tile, whose block the transposed copy shares.
  float inv0 = 0.0f;
  if (!kFused && p.one_scale) inv0 = __ldg(p.inv);
  if (!kFused && p.tile_scale) inv0 = __ldg(p.inv + (r0 / p.gbr) * p.nbc + c0 / p.gbc);
  const bool nonfinite0 = inv0 != inv0;
#pragma unroll 1
  for (int pass = 0; pass < kTile / 32; ++pass) {
    const int r = pass * 32 + warp * 4;
    float v[4][4];
    read_micro(tile, second || p.transpose, r, lane, v);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int tr = r + q;
      const int64_t gr = o_r0 + tr;
      float out[4];
      if constexpr (kFused) {
        // Blocks are at least 4 wide along the micro-tile's columns: one inverse for all four.
        const int row_part = second ? (tr >> p.bc_log2) : (tr >> p.br_log2) * nbc_tile;
        const float inv = __uint_as_float(block_inv[row_part + col_part[0]]);
        const bool nonfinite = inv != inv;
#pragma unroll
        for (int e = 0; e < 4; ++e)
          out[e] = scaled(v[q][e], inv, nonfinite);
      } else if (p.one_scale && p.saturate) {
        // The tile's padding beyond the matrix is zero: it changes no amax.
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          seen = max(seen, abs_bits(v[q][e]));
          out[e] = nonfinite0 ? 0.0f : fminf(fmaxf(scaled(v[q][e], inv0), -p.fmax), p.fmax);
        }
      } else if (p.one_scale || p.tile_scale) {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          out[e] = scaled(v[q][e], inv0, nonfinite0);
      } else {
        const uint32_t clamped = static_cast<uint32_t>(gr < o_rows ? gr : o_rows - 1);
        const int64_t row_part =
            second ? clamped / static_cast<uint32_t>(p.gbc)
                   : static_cast<int64_t>(clamped / static_cast<uint32_t>(p.gbr)) * p.nbc;
#pragma unroll
        for (int e = 0; e < 4; ++e)
          out[e] = scaled(v[q][e], __ldg(p.inv + row_part + col_part[e]));
      }
      if (!kFused && p.stochastic) {
        // The noise of the element's index in the first output; the transposed copy's (gr, gc)
        // is its (gc, gr). floor(v + u) is an integer in [-127, 127] for |v| ≤ 127: exact
        // through int8_low_byte.
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t gc = o_c0 + 4 * lane + e;
          const int64_t index = second ? gc * p.cols + gr : gr * p.cols + gc;
          out[e] = floorf(
              __fadd_rn(out[e], kernels::rounding_uniform(p.seed, static_cast<uint64_t>(index))));
        }
      }
      store4(values, o_rows, o_cols, vec_out, p.fmt, gr, o_c0 + 4 * lane, out);
    }
  }
}

// kFused: block amaxes computed in the tile (p.br × p.bc blocks). Otherwise the inverse scales
// come from p.inv (the general path's second pass).
template <typename InT, bool kFused>
__global__ void __launch_bounds__(kThreads, 3) quantize_tile_kernel(const TileParams p) {
  extern __shared__ __align__(16) float smem[];
  float* tile = smem;                                                        // [128][128]
  uint32_t* block_amax = reinterpret_cast<uint32_t*>(smem + kTile * kTile);  // [128/br][128/bc]
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int nbc_tile = kTile >> p.bc_log2;
  const int nblocks_tile = (kTile >> p.br_log2) * nbc_tile;

  if constexpr (kFused) {
    for (int b = static_cast<int>(threadIdx.x); b < nblocks_tile; b += kThreads)
      block_amax[b] = 0;
  }
  load_tile<InT>(p, tile, p.transpose ? c0 : r0, p.transpose ? r0 : c0);
  __syncthreads();

  if constexpr (kFused) {
    const int lanes_per_block = p.bc / 4;  // 1..32
    const int row_step = p.br < 4 ? p.br : 4;
#pragma unroll 1
    for (int pass = 0; pass < kTile / 32; ++pass) {
      const int r = pass * 32 + warp * 4;
      float v[4][4];
      read_micro(tile, p.transpose, r, lane, v);
      uint32_t m[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        m[q] = max(max(abs_bits(v[q][0]), abs_bits(v[q][1])),
                   max(abs_bits(v[q][2]), abs_bits(v[q][3])));
      }
      for (int off = 1; off < lanes_per_block; off <<= 1) {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          m[q] = max(m[q], __shfl_xor_sync(0xffffffffu, m[q], off));
      }
      if (p.br >= 2) {
        m[0] = max(m[0], m[1]);
        m[2] = max(m[2], m[3]);
      }
      if (p.br >= 4) m[0] = max(m[0], m[2]);
      if ((lane & (lanes_per_block - 1)) == 0) {
        const int cb = (4 * lane) >> p.bc_log2;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          if (q % row_step == 0)
            atomicMax(&block_amax[((r + q) >> p.br_log2) * nbc_tile + cb], m[q]);
        }
      }
    }
    __syncthreads();
    // Scales of the tile's blocks (those inside the matrix), inverse scales in place.
    for (int b = static_cast<int>(threadIdx.x); b < nblocks_tile; b += kThreads) {
      const int rb = b / nbc_tile;
      const int cb = b % nbc_tile;
      float scale;
      float inv;
      scale_of(block_amax[b], p.fmax, &scale, &inv);
      if (r0 + static_cast<int64_t>(rb) * p.br < p.rows &&
          c0 + static_cast<int64_t>(cb) * p.bc < p.cols) {
        const int64_t grb = r0 / p.br + rb;
        const int64_t gcb = c0 / p.bc + cb;
        p.scales[grb * p.nbc + gcb] = scale;
        if (p.scales_t != nullptr) p.scales_t[gcb * p.nbr + grb] = scale;
      }
      block_amax[b] = __float_as_uint(inv);
    }
    __syncthreads();
  }

  uint32_t seen = 0;
  quantize_and_store<kFused>(p, tile, block_amax, r0, c0, /*second=*/false, seen);
  if (p.values_t != nullptr) {
    uint32_t again = 0;  // the same elements: counted once
    quantize_and_store<kFused>(p, tile, block_amax, r0, c0, true, again);
  }
  if constexpr (!kFused) report_amax(p.amax_seen, seen);
}

// ---------------------------------------------------------------------------------------------
// Rows kernel: rowwise without transpose, one CTA per row
// ---------------------------------------------------------------------------------------------

struct RowParams {
  const void* x;
  int64_t ld;
  int64_t cols;
  bool vec;  // 16-byte loads and V-byte stores: aligned bases, ld and cols multiples of V
  DType fmt;
  float fmax;
  uint8_t* values;
  float* scales;
};

template <typename InT>
__device__ __forceinline__ void store_vec(uint8_t* out, const float* q, DType fmt) {
  if constexpr (Vec<InT>::kSize == 8) {
    *reinterpret_cast<uint2*>(out) =
        make_uint2(pack4(q[0], q[1], q[2], q[3], fmt), pack4(q[4], q[5], q[6], q[7], fmt));
  } else {
    *reinterpret_cast<uint32_t*>(out) = pack4(q[0], q[1], q[2], q[3], fmt);
  }
}

template <typename InT>
__global__ void __launch_bounds__(kThreads) quantize_rows_kernel(const RowParams p) {
  constexpr int V = Vec<InT>::kSize;
  __shared__ uint32_t warp_amax[kThreads / 32];
  __shared__ float row_inv;
  const int64_t row = blockIdx.x;
  const InT* x = static_cast<const InT*>(p.x) + row * p.ld;
  uint8_t* out = p.values + row * p.cols;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t nvec = p.vec ? p.cols / V : 0;

  // Pass 1: amax, keeping the first kRowCache vectors of each thread in registers.
  uint4 cache[kRowCache];
  uint32_t amax = 0;
#pragma unroll
  for (int u = 0; u < kRowCache; ++u) {
    const int64_t idx = tid + static_cast<int64_t>(u) * kThreads;
    if (idx < nvec) cache[u] = load_vec(x + idx * V);
  }
#pragma unroll
  for (int u = 0; u < kRowCache; ++u) {
    const int64_t idx = tid + static_cast<int64_t>(u) * kThreads;
    if (idx < nvec) {
      float f[V];
      Vec<InT>::unpack(cache[u], f);
#pragma unroll
      for (int e = 0; e < V; ++e)
        amax = max(amax, abs_bits(f[e]));
    }
  }
  for (int64_t idx = tid + static_cast<int64_t>(kRowCache) * kThreads; idx < nvec;
       idx += kThreads) {
    float f[V];
    Vec<InT>::unpack(load_vec(x + idx * V), f);
#pragma unroll
    for (int e = 0; e < V; ++e)
      amax = max(amax, abs_bits(f[e]));
  }
  for (int64_t j = nvec * V + tid; j < p.cols; j += kThreads)
    amax = max(amax, abs_bits(load_elem(x + j)));

  amax = __reduce_max_sync(0xffffffffu, amax);
  if ((tid & 31) == 0) warp_amax[tid >> 5] = amax;
  __syncthreads();
  if (tid < 32) {
    uint32_t a = tid < kThreads / 32 ? warp_amax[tid] : 0;
    a = __reduce_max_sync(0xffffffffu, a);
    if (tid == 0) {
      float scale;
      float inv;
      scale_of(a, p.fmax, &scale, &inv);
      p.scales[row] = scale;
      row_inv = inv;
    }
  }
  __syncthreads();
  const float inv = row_inv;
  const bool nonfinite = inv != inv;

  // Pass 2: quantize; vectors past the cache are read again (from L2: this CTA just read them).
#pragma unroll
  for (int u = 0; u < kRowCache; ++u) {
    const int64_t idx = tid + static_cast<int64_t>(u) * kThreads;
    if (idx < nvec) {
      float f[V];
      Vec<InT>::unpack(cache[u], f);
#pragma unroll
      for (int e = 0; e < V; ++e)
        f[e] = scaled(f[e], inv, nonfinite);
      store_vec<InT>(out + idx * V, f, p.fmt);
    }
  }
  for (int64_t idx = tid + static_cast<int64_t>(kRowCache) * kThreads; idx < nvec;
       idx += kThreads) {
    float f[V];
    Vec<InT>::unpack(load_vec(x + idx * V), f);
#pragma unroll
    for (int e = 0; e < V; ++e)
      f[e] = scaled(f[e], inv, nonfinite);
    store_vec<InT>(out + idx * V, f, p.fmt);
  }
  for (int64_t j = nvec * V + tid; j < p.cols; j += kThreads) {
    out[j] = pack1(scaled(load_elem(x + j), inv, nonfinite), p.fmt);
  }
}

// ---------------------------------------------------------------------------------------------
// Segments kernel: blocks of one row × bc columns without transpose, bc a multiple of 32·V up
// to 32·V·kSegVecs: one warp per block, its vectors held in registers, one warp reduction, one
// pass. The blockwise recipes' activations and gradients under K blocks of 256 to 1024
// (int8-block:k-block=<kb>), which the tile kernel cannot hold and the general path read twice
// with one busy warp a CTA (8.5 ms a llama2-7b layer step; docs/perf-log.md §27).
// ---------------------------------------------------------------------------------------------

constexpr int kSegVecs = 4;  // vectors a lane holds: blocks up to 1024 columns of BF16

struct SegParams {
  const void* x;
  int64_t ld;
  int64_t rows, cols;
  int64_t bc;   // block columns (the last block of a row may be shorter)
  int64_t nbc;  // blocks per row
  DType fmt;
  float fmax;
  uint8_t* values;
  float* scales;
};

template <typename InT>
__global__ void __launch_bounds__(kThreads) quantize_segments_kernel(const SegParams p) {
  constexpr int V = Vec<InT>::kSize;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t block =
      static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + (static_cast<int>(threadIdx.x) >> 5);
  if (block >= p.rows * p.nbc) return;  // a whole warp: blocks are per warp
  const int64_t row = block / p.nbc;
  const int64_t c0 = (block % p.nbc) * p.bc;
  const InT* x = static_cast<const InT*>(p.x) + row * p.ld;
  const int per_lane = static_cast<int>(p.bc / (32 * V));
  const auto column = [&](int u) { return c0 + (static_cast<int64_t>(u) * 32 + lane) * V; };
  uint4 cache[kSegVecs];
  uint32_t amax = 0;
#pragma unroll
  for (int u = 0; u < kSegVecs; ++u) {
    if (u < per_lane && column(u) < p.cols) {
      cache[u] = load_vec(x + column(u));
      float f[V];
      Vec<InT>::unpack(cache[u], f);
#pragma unroll
      for (int e = 0; e < V; ++e)
        amax = max(amax, abs_bits(f[e]));
    }
  }
  amax = __reduce_max_sync(0xffffffffu, amax);
  float scale;
  float inv;
  scale_of(amax, p.fmax, &scale, &inv);
  if (lane == 0) p.scales[block] = scale;
  const bool nonfinite = inv != inv;
  uint8_t* out = p.values + row * p.cols;
#pragma unroll
  for (int u = 0; u < kSegVecs; ++u) {
    if (u < per_lane && column(u) < p.cols) {
      float f[V];
      Vec<InT>::unpack(cache[u], f);
#pragma unroll
      for (int e = 0; e < V; ++e)
        f[e] = scaled(f[e], inv, nonfinite);
      store_vec<InT>(out + column(u), f, p.fmt);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// General path: block amax into the workspace, then scales and inverse scales
// ---------------------------------------------------------------------------------------------

struct AmaxParams {
  const void* x;
  int64_t ld;
  int64_t in_rows, in_cols;
  bool vec;
  int64_t ibr, ibc;  // the block in input coordinates
  bool transpose;
  int64_t nbc;     // scale columns of the output
  int64_t strips;  // strips of 32·V input columns
  int64_t chunks;  // CTAs per block row
  uint32_t* amax;  // [blocks] in output coordinates, zeroed
};

// One CTA: a strip of 32·V input columns × up to kAmaxRowsPerCta rows inside one block row. Each
// thread keeps a running amax per column of its vector; the warps' maxima meet in shared memory,
// then columns of one block are merged before the atomicMax.
template <typename InT>
__global__ void __launch_bounds__(kThreads) block_amax_kernel(const AmaxParams p) {
  constexpr int V = Vec<InT>::kSize;
  constexpr int W = 32 * V;
  constexpr int kWarps = kThreads / 32;
  constexpr int kUnroll = 4;
  __shared__ uint32_t red[kWarps][W];
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int64_t strip = blockIdx.x % p.strips;
  const int64_t rest = blockIdx.x / p.strips;
  const int64_t brow = rest / p.chunks;
  const int64_t chunk = rest % p.chunks;
  const int64_t row_begin = brow * p.ibr + chunk * kAmaxRowsPerCta;
  const int64_t row_end = min(min(brow * p.ibr + p.ibr, row_begin + kAmaxRowsPerCta), p.in_rows);
  const int64_t j0 = strip * W + lane * V;
  const InT* x = static_cast<const InT*>(p.x);
  const bool full = p.vec && j0 + V <= p.in_cols;

  uint32_t m[V];
#pragma unroll
  for (int e = 0; e < V; ++e)
    m[e] = 0;
  for (int64_t i = row_begin + warp; i < row_end; i += kWarps * kUnroll) {
    uint4 raw[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t ii = i + u * kWarps;
      raw[u] = (full && ii < row_end) ? load_vec(x + ii * p.ld + j0) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t ii = i + u * kWarps;
      float f[V];
      if (full) {
        Vec<InT>::unpack(raw[u], f);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) {
          f[e] = (ii < row_end && j0 + e < p.in_cols) ? load_elem(x + ii * p.ld + j0 + e) : 0.0f;
        }
      }
#pragma unroll
      for (int e = 0; e < V; ++e)
        m[e] = max(m[e], abs_bits(f[e]));
    }
  }
#pragma unroll
  for (int e = 0; e < V; ++e)
    red[warp][lane * V + e] = m[e];
  __syncthreads();
  if (row_begin >= row_end) return;
  for (int t = static_cast<int>(threadIdx.x); t < W; t += kThreads) {
    uint32_t a = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      a = max(a, red[w][t]);
    const int64_t j = strip * W + t;
    const bool valid = j < p.in_cols;
    const int64_t bcol = valid ? j / p.ibc : -1;
    // t < W is a whole number of warps, so the warp is converged here.
    const int64_t bcol0 = __shfl_sync(0xffffffffu, bcol, 0);
    const bool same = __all_sync(0xffffffffu, valid && bcol == bcol0);
    const int64_t out_rb = p.transpose ? bcol : brow;
    const int64_t out_cb = p.transpose ? brow : bcol;
    if (same) {
      a = __reduce_max_sync(0xffffffffu, a);
      if ((t & 31) == 0 && a != 0) atomicMax(&p.amax[out_rb * p.nbc + out_cb], a);
    } else if (valid && a != 0) {
      atomicMax(&p.amax[out_rb * p.nbc + out_cb], a);
    }
  }
}

// Scales (and the transposed grid's, when scales_t is set) and inverse scales in place.
__global__ void finalize_scales_kernel(uint32_t* amax_inv, float* scales, float* scales_t,
                                       int64_t nbr, int64_t nbc, float fmax) {
  for (int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; b < nbr * nbc;
       b += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float scale;
    float inv;
    scale_of(amax_inv[b], fmax, &scale, &inv);
    scales[b] = scale;
    if (scales_t != nullptr) scales_t[(b % nbc) * nbr + b / nbc] = scale;
    amax_inv[b] = __float_as_uint(inv);
  }
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

enum class Path { tile, rows, segments, columns, general };

struct Plan {
  int64_t rows = 0, cols = 0;  // output
  int64_t br = 0, bc = 0;      // real block, clamped to the output like the reference
  int64_t nbr = 0, nbc = 0;    // scale grid
  Path path = Path::general;
  int tile_br = 0, tile_bc = 0;  // tile path: the block as the tile sees it
  // General path: its apply pass on the tensorwise kernel, one scale a tile (square blocks
  // spanning whole tiles, BF16 on the tile grid: the long K blocks' weights).
  bool block_tiles = false;
};

// The segments kernel: one-row blocks of whole vectors per lane (bf16 V = 8, fp32 V = 4), at most
// kSegVecs a lane, 16-byte aligned loads and V-byte aligned stores.
bool segments_take(const QuantizeArgs& a, const Plan& p) {
  const int64_t elem = a.x_type == DType::bf16 ? 2 : 4;
  const int64_t v = 16 / elem;
  return !a.transpose && p.br == 1 && p.bc < p.cols && p.bc % (32 * v) == 0 &&
         p.bc / (32 * v) <= kSegVecs && p.cols % v == 0 && aligned(a.x, 16) &&
         (a.ld * elem) % 16 == 0 && aligned(a.values, static_cast<size_t>(v));
}

Plan plan(const QuantizeArgs& a) {
  Plan p;
  p.rows = a.transpose ? a.cols : a.rows;
  p.cols = a.transpose ? a.rows : a.cols;
  p.br = a.block_rows > 0 ? std::min(a.block_rows, p.rows) : p.rows;
  p.bc = a.block_cols > 0 ? std::min(a.block_cols, p.cols) : p.cols;
  p.nbr = ceil_div(p.rows, p.br);
  p.nbc = ceil_div(p.cols, p.bc);
  // A block side spanning a whole dimension that fits in the tile spans the tile: the padding
  // beyond the matrix is zero and changes no amax.
  const int64_t tbr = (p.br == p.rows && p.rows <= kTile) ? kTile : p.br;
  const int64_t tbc = (p.bc == p.cols && p.cols <= kTile) ? kTile : p.bc;
  if (is_pow2(tbr) && tbr <= kTile && is_pow2(tbc) && tbc >= 4 && tbc <= kTile) {
    p.path = Path::tile;
    p.tile_br = static_cast<int>(tbr);
    p.tile_bc = static_cast<int>(tbc);
  } else if (!a.transpose && p.br == 1 && p.bc == p.cols) {
    p.path = Path::rows;
  } else if (segments_take(a, p)) {
    p.path = Path::segments;
  } else if (columns_kernel_applies(a) && !a.tile_kernel) {
    p.path = Path::columns;
  } else {
    p.path = Path::general;
  }
  // The transposed copy: the rows kernel has no tile to transpose, and the tile kernel's copy
  // takes one inverse scale per 4 columns, i.e. blocks at least 4 rows tall in the tile.
  // Delayed scaling (a stale amax, or this step's to record) takes the general path, whose
  // quantizing pass saturates and reports.
  if (a.delayed || a.amax_seen != nullptr || a.history != nullptr) p.path = Path::general;
  // Stochastic rounding lives in the apply pass only (an ablation's path, not a tuned one).
  if (a.stochastic) p.path = Path::general;
  const bool copy = a.values_t != nullptr;
  if (copy && (p.path == Path::rows || p.path == Path::segments ||
               (p.path == Path::tile && p.tile_br < 4))) {
    p.path = Path::general;
  }
  p.block_tiles = p.path == Path::general && p.br == p.bc && block_tile_kernel_applies(a, p.br);
  return p;
}

// The shape checks; quantize() also checks the pointers.
void validate_shape(const QuantizeArgs& a) {
  LPBENCH_CUDA_REQUIRE(a.x_type == DType::bf16 || a.x_type == DType::fp32,
                       std::string("x must be bf16 or fp32, got ") + dtype_name(a.x_type));
  LPBENCH_CUDA_REQUIRE(a.rows > 0 && a.cols > 0, "rows and cols must be positive, got " +
                                                     std::to_string(a.rows) + "x" +
                                                     std::to_string(a.cols));
  LPBENCH_CUDA_REQUIRE(a.ld >= a.cols,
                       "ld " + std::to_string(a.ld) + " is below cols " + std::to_string(a.cols));
  LPBENCH_CUDA_REQUIRE(
      a.out_type == DType::int8 || a.out_type == DType::fp8_e4m3 || a.out_type == DType::fp8_e5m2,
      std::string("out_type must be int8, fp8_e4m3 or fp8_e5m2, got ") + dtype_name(a.out_type));
  LPBENCH_CUDA_REQUIRE(a.block_rows >= 0 && a.block_cols >= 0,
                       "block sides must be >= 0 (0: the whole dimension)");
  // Block indices are divided in 32 bits, and the tile grid has at most 65535 rows of tiles.
  LPBENCH_CUDA_REQUIRE(a.rows < (int64_t{1} << 31) && a.cols < (int64_t{1} << 31) &&
                           ceil_div(a.transpose ? a.cols : a.rows, kTile) <= 65535,
                       "the matrix is too large");
}

void validate(const QuantizeArgs& a) {
  validate_shape(a);
  LPBENCH_CUDA_REQUIRE(
      !(a.delayed || a.amax_seen != nullptr) || (a.block_rows == 0 && a.block_cols == 0),
      "delayed scaling is for tensorwise quantization only");
  LPBENCH_CUDA_REQUIRE(!a.delayed || a.amax != nullptr || a.history != nullptr,
                       "delayed scaling needs the history's amax, or the history");
  if (a.history != nullptr) {
    LPBENCH_CUDA_REQUIRE(a.block_rows == 0 && a.block_cols == 0 && !a.copy_rowwise,
                         "an amax history is for tensorwise quantization only");
    LPBENCH_CUDA_REQUIRE(a.amax == nullptr && a.amax_seen == nullptr,
                         "an amax history takes the place of amax and amax_seen");
    LPBENCH_CUDA_REQUIRE(!a.stochastic, "delayed scaling rounds to nearest");
    LPBENCH_CUDA_REQUIRE(
        a.history_slots >= 3 && a.history_current >= -1 && a.history_current < a.history_slots,
        "an amax history needs 3 slots or more, and its current slot among them (or -1)");
  }
  LPBENCH_CUDA_REQUIRE(!a.stochastic || a.out_type == DType::int8,
                       "stochastic rounding is for INT8 output only");
  LPBENCH_CUDA_REQUIRE(a.x != nullptr, "x is null");
  LPBENCH_CUDA_REQUIRE(a.values != nullptr && a.scales != nullptr, "values or scales is null");
  if (a.copy_rowwise) {
    LPBENCH_CUDA_REQUIRE(a.values_t != nullptr && a.scales_t != nullptr,
                         "copy_rowwise needs values_t and scales_t");
    LPBENCH_CUDA_REQUIRE(
        !a.transpose && a.block_rows == 1 && (a.block_cols == 0 || a.block_cols >= a.cols),
        "copy_rowwise needs X per row ({1,0}) and transpose off");
    LPBENCH_CUDA_REQUIRE(!a.delayed && a.amax == nullptr && a.amax_seen == nullptr,
                         "copy_rowwise takes no amax (it finds each row's and column's)");
    return;
  }
  LPBENCH_CUDA_REQUIRE(a.line_amax == nullptr,
                       "line_amax (each row's and column's amax) is for copy_rowwise only");
  if (a.values_t != nullptr || a.scales_t != nullptr) {
    LPBENCH_CUDA_REQUIRE(a.values_t != nullptr && a.scales_t != nullptr,
                         "the transposed copy needs both values_t and scales_t");
    LPBENCH_CUDA_REQUIRE(!a.transpose && quantize_writes_transpose_too(a.block_rows, a.block_cols),
                         "the transposed copy needs transpose off and square blocks, got {" +
                             std::to_string(a.block_rows) + "," + std::to_string(a.block_cols) +
                             "}");
  }
}

template <bool kFused>
void launch_tile(const TileParams& tp, DType x_type, int64_t rows, int64_t cols,
                 cudaStream_t stream) {
  const size_t smem = sizeof(float) * kTile * kTile +
                      (kFused ? sizeof(uint32_t) * (kTile / tp.br) * (kTile / tp.bc) : 0);
  const dim3 grid(static_cast<unsigned>(ceil_div(cols, kTile)),
                  static_cast<unsigned>(ceil_div(rows, kTile)));
  if (x_type == DType::bf16) {
    const auto kernel = quantize_tile_kernel<__nv_bfloat16, kFused>;
    LPBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(smem)));
    kernel<<<grid, kThreads, smem, stream>>>(tp);
  } else {
    const auto kernel = quantize_tile_kernel<float, kFused>;
    LPBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(smem)));
    kernel<<<grid, kThreads, smem, stream>>>(tp);
  }
  LPBENCH_CUDA_CHECK_LAUNCH();
}

// Where the one-pass kernel, which does it all itself, does not apply, a quantization with an
// amax history runs in three launches, `words` a workspace of two: this one-warp kernel puts the
// history's amax (the ring's largest slot but the current and the next one) into words[0] and
// zeroes words[1]; the path records X's amax into words[1] (off_the_ring); then
// commit_ring_kernel moves it into the current slot and the ring on (amax_history.h).
__global__ void history_amax_kernel(const uint32_t* history, int64_t slots, uint32_t* words) {
  const uint32_t m = ring_amax(history, slots, ring_turn(history, slots));
  if (threadIdx.x == 0) {
    words[0] = m;
    words[1] = 0;
  }
}

__global__ void commit_ring_kernel(uint32_t* history, int64_t slots, const uint32_t* seen) {
  const RingTurn t = ring_turn(history, slots);
  history[t.current] = *seen;
  history[t.next] = 0;
  history[slots] = static_cast<uint32_t>(t.next);
}

// What a quantization with an amax history runs as where the one-pass kernel does not apply:
// scaled by `words[0]` (history_amax_kernel's), or by its own amax for a history's first,
// recording into words[1].
QuantizeArgs off_the_ring(const QuantizeArgs& a, uint32_t* words) {
  QuantizeArgs given = a;
  given.history = nullptr;
  given.history_slots = 0;
  given.amax = a.delayed ? words : nullptr;
  given.amax_seen = words + 1;
  return given;
}

bool one_pass_takes(const QuantizeArgs& a) {
  return !a.tile_kernel && tensorwise_kernel_applies(a);
}

size_t path_workspace_bytes(const QuantizeArgs& args) {
  validate_shape(args);
  // Every row's and column's amax (the row-pair kernel), which also covers the general path's
  // one per column where each layout goes its own way.
  if (args.copy_rowwise) return row_pair_workspace_bytes(args);
  // One word for the amax, also where the general plan would take the tile path (128 × 128).
  if (!args.tile_kernel && tensorwise_kernel_applies(args)) return sizeof(uint32_t);
  const Plan p = plan(args);
  return p.path == Path::general ? static_cast<size_t>(p.nbr * p.nbc) * sizeof(uint32_t) : 0;
}

}  // namespace

size_t quantize_workspace_bytes(const QuantizeArgs& args) {
  // Off the one-pass kernel, a history's amax and record take the first two words, the path's
  // own after them.
  if (args.history != nullptr && !one_pass_takes(args)) {
    uint32_t words[2];  // the path's plan depends on where its amax comes from, not on its value
    return sizeof(words) + path_workspace_bytes(off_the_ring(args, words));
  }
  return path_workspace_bytes(args);
}

const char* quantize_kernel_name(const QuantizeArgs& args) {
  validate(args);
  if (args.copy_rowwise) {
    return !args.tile_kernel && row_pair_kernel_applies(args) ? "row pair" : "rows + general";
  }
  if (one_pass_takes(args)) return "tensorwise";
  const Plan p = plan(args);
  switch (p.path) {
    case Path::tile:
      return "tile";
    case Path::rows:
      return "rows";
    case Path::segments:
      return "segments";
    case Path::columns:
      return "columns";
    case Path::general:
      return p.block_tiles ? "block tiles" : "general";
  }
  return "?";
}

void quantize(const QuantizeArgs& args, cudaStream_t stream) {
  validate(args);
  NvtxRange range("lpbench::cuda::quantize");
  if (args.copy_rowwise) {
    if (!args.tile_kernel && row_pair_kernel_applies(args)) {
      quantize_row_pair(args, stream);
      return;
    }
    // Off the 128 grid (or asked to): each layout on its own path, X per row by the rows
    // kernel, Xᵀ per row by the general one.
    QuantizeArgs x_only = args;
    x_only.copy_rowwise = false;
    x_only.line_amax = nullptr;
    x_only.values_t = nullptr;
    x_only.scales_t = nullptr;
    quantize(x_only, stream);
    QuantizeArgs t_only = x_only;
    t_only.transpose = true;
    t_only.values = args.values_t;
    t_only.scales = args.scales_t;
    quantize(t_only, stream);
    return;
  }
  if (one_pass_takes(args)) {
    quantize_tensorwise(args, stream);
    return;
  }
  if (args.history != nullptr) {
    // The history's amax found first, then the path as with a given amax (or, for a history's
    // first quantization, its own amax pass), recording into a word that then goes to the ring.
    LPBENCH_CUDA_REQUIRE(args.workspace != nullptr,
                         "an amax history needs a workspace of quantize_workspace_bytes() bytes");
    auto* words = static_cast<uint32_t*>(args.workspace);
    history_amax_kernel<<<1, 32, 0, stream>>>(args.history, args.history_slots, words);
    LPBENCH_CUDA_CHECK_LAUNCH();
    QuantizeArgs given = off_the_ring(args, words);
    given.workspace = words + 2;
    quantize(given, stream);
    commit_ring_kernel<<<1, 1, 0, stream>>>(args.history, args.history_slots, words + 1);
    LPBENCH_CUDA_CHECK_LAUNCH();
    return;
  }
  const Plan p = plan(args);
  const size_t elem = args.x_type == DType::bf16 ? 2 : 4;
  const int64_t vec_elems = static_cast<int64_t>(16 / elem);
  const bool vec_in = aligned(args.x, 16) && (args.ld * static_cast<int64_t>(elem)) % 16 == 0;
  const float fmax = format_max(args.out_type);
  auto* values = static_cast<uint8_t*>(args.values);

  if (p.path == Path::rows) {
    const RowParams rp{
        args.x,        args.ld,
        p.cols,        vec_in && p.cols % vec_elems == 0 && aligned(values, 16 / elem),
        args.out_type, fmax,
        values,        args.scales};
    if (args.x_type == DType::bf16) {
      quantize_rows_kernel<__nv_bfloat16>
          <<<static_cast<unsigned>(p.rows), kThreads, 0, stream>>>(rp);
    } else {
      quantize_rows_kernel<float><<<static_cast<unsigned>(p.rows), kThreads, 0, stream>>>(rp);
    }
    LPBENCH_CUDA_CHECK_LAUNCH();
    return;
  }

  if (p.path == Path::segments) {
    const SegParams sp{args.x, args.ld,       p.rows, p.cols, p.bc,
                       p.nbc,  args.out_type, fmax,   values, args.scales};
    const int64_t warps = p.rows * p.nbc;
    const auto ctas = static_cast<unsigned>(ceil_div(warps, kThreads / 32));
    if (args.x_type == DType::bf16) {
      quantize_segments_kernel<__nv_bfloat16><<<ctas, kThreads, 0, stream>>>(sp);
    } else {
      quantize_segments_kernel<float><<<ctas, kThreads, 0, stream>>>(sp);
    }
    LPBENCH_CUDA_CHECK_LAUNCH();
    return;
  }

  if (p.path == Path::columns) {
    quantize_columns(args, stream);
    return;
  }

  TileParams tp{};
  tp.x = args.x;
  tp.ld = args.ld;
  tp.in_rows = args.rows;
  tp.in_cols = args.cols;
  tp.transpose = args.transpose;
  tp.vec_in = vec_in;
  tp.vec_out = aligned(values, 4) && p.cols % 4 == 0;
  tp.rows = p.rows;
  tp.cols = p.cols;
  tp.fmt = args.out_type;
  tp.fmax = fmax;
  tp.values = values;
  tp.scales = args.scales;
  tp.nbr = p.nbr;
  tp.nbc = p.nbc;
  tp.values_t = static_cast<uint8_t*>(args.values_t);
  tp.scales_t = args.scales_t;
  tp.vec_out_t = aligned(args.values_t, 4) && p.rows % 4 == 0;

  if (p.path == Path::tile) {
    tp.br = p.tile_br;
    tp.bc = p.tile_bc;
    tp.br_log2 = __builtin_ctz(static_cast<unsigned>(p.tile_br));
    tp.bc_log2 = __builtin_ctz(static_cast<unsigned>(p.tile_bc));
    launch_tile<true>(tp, args.x_type, p.rows, p.cols, stream);
    return;
  }

  LPBENCH_CUDA_REQUIRE(args.workspace != nullptr,
                       "this block shape needs a workspace of quantize_workspace_bytes() bytes");
  const int64_t blocks = p.nbr * p.nbc;
  auto* amax = static_cast<uint32_t*>(args.workspace);
  if (args.amax != nullptr) {
    // The producer's amax: no pass over X before the quantizing one.
    LPBENCH_CUDA_REQUIRE(blocks == 1, "a given amax is for tensorwise quantization only");
    LPBENCH_CUDA_CHECK(
        cudaMemcpyAsync(amax, args.amax, sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream));
  } else if (!args.workspace_zeroed) {
    LPBENCH_CUDA_CHECK(
        cudaMemsetAsync(amax, 0, static_cast<size_t>(blocks) * sizeof(uint32_t), stream));
  }

  AmaxParams ap{};
  ap.x = args.x;
  ap.ld = args.ld;
  ap.in_rows = args.rows;
  ap.in_cols = args.cols;
  ap.vec = vec_in;
  ap.ibr = args.transpose ? p.bc : p.br;
  ap.ibc = args.transpose ? p.br : p.bc;
  ap.transpose = args.transpose;
  ap.nbc = p.nbc;
  ap.strips = ceil_div(args.cols, 32 * vec_elems);
  ap.chunks = ceil_div(std::min(ap.ibr, args.rows), kAmaxRowsPerCta);
  ap.amax = amax;
  const int64_t ctas = ap.strips * ceil_div(args.rows, ap.ibr) * ap.chunks;
  LPBENCH_CUDA_REQUIRE(ctas <= 0x7fffffff, "too many blocks for the amax grid");
  if (args.amax == nullptr) {
    if (args.x_type == DType::bf16) {
      block_amax_kernel<__nv_bfloat16><<<static_cast<unsigned>(ctas), kThreads, 0, stream>>>(ap);
    } else {
      block_amax_kernel<float><<<static_cast<unsigned>(ctas), kThreads, 0, stream>>>(ap);
    }
    LPBENCH_CUDA_CHECK_LAUNCH();
  }

  const int64_t fin_ctas = std::min<int64_t>(ceil_div(blocks, kThreads), 4096);
  finalize_scales_kernel<<<static_cast<unsigned>(fin_ctas), kThreads, 0, stream>>>(
      amax, args.scales, args.scales_t, p.nbr, p.nbc, fmax);
  LPBENCH_CUDA_CHECK_LAUNCH();

  // The one-pass byte-tile kernel, one inverse a tile, in place of the FP32 tile kernel.
  if (p.block_tiles) {
    quantize_tiles_by_block(args, reinterpret_cast<const float*>(amax), stream);
    return;
  }

  tp.br = tp.bc = kTile;  // unused by the apply kernel, but keeps the tile's bookkeeping valid
  tp.br_log2 = tp.bc_log2 = 7;
  tp.inv = reinterpret_cast<const float*>(amax);
  tp.gbr = p.br;
  tp.gbc = p.bc;
  tp.one_scale = p.nbr == 1 && p.nbc == 1;
  tp.tile_scale = !tp.one_scale && !args.tile_kernel && p.br % kTile == 0 && p.bc % kTile == 0;
  tp.saturate = args.delayed || args.amax_seen != nullptr;
  tp.amax_seen = args.amax_seen;
  tp.stochastic = args.stochastic;
  tp.seed = args.seed;
  launch_tile<false>(tp, args.x_type, p.rows, p.cols, stream);
}

}  // namespace lpbench::cuda
