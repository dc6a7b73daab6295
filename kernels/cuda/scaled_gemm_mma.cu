// INT8 tensor-core GEMM with a fused scaling epilogue (mma.sync, sm_80+), and the dequantizing
// epilogue for cuBLASLt's INT32 products; numerics of kernels/reference/scaled_gemm.cpp, bit for
// bit.
//
// scaled_gemm_mma: a CTA computes a 128×128 tile of C (128×64 in block mode; warps: see
// WarpLayout); K advances in tiles of 128 (one to eight per block-scaling K block), staged by
// cp.async (16 bytes, zero-filled past the edges) into a 3-stage shared-memory ring, rows of 128
// bytes whose 16-byte chunks are XOR-swizzled by row % 8 so that both the cp.async stores and the
// ldmatrix reads are free of bank conflicts. Block mode (scales vary along K) turns the INT32
// partial of each K block into FP32 after its last tile: for blocks of 128 and 256 the accumulators
// start at 1.5·2²³ (0x4B400000), so that their bits read as a float are exactly 1.5·2²³ + partial
// (|partial| ≤ 256·128² = 2²², reached only by −128·−128 products; the bits of 1.5·2²³ ± 2²²
// still read exactly as 2²⁴ and 2²³), and one subtraction converts them, no I2F; longer blocks
// start at 0 and convert by I2F (exact: |partial| ≤ 1024·128² = 2²⁴). Tensor and row modes keep
// INT32 over all of K (exact for K ≤ 133143) and scale once.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/scaled_gemm.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kBK = 128;  // bytes of K per tile; also the K block of block scaling
constexpr int kStages = 3;
constexpr int kThreads = 256;                 // dequantize_int32
constexpr int kGroupM = 8;                    // tile rows walked together, for L2 reuse of B
constexpr int kMaxKNoBlocks = 133143;         // K·127² < 2³¹ (kernels/reference/int8_gemm.h)
constexpr uint32_t kMagicBits = 0x4B400000u;  // 1.5·2²³
constexpr float kMagic = 12582912.0f;

struct GemmParams {
  const int8_t* a;
  const int8_t* b;
  int m, n, k;
  const float* a_scales;
  int a_block_rows;  // 0: one scale for all rows
  const float* b_scales;
  int b_block_rows;
  int kext;  // scale columns: ceil(K / kblock) in block mode, else 1
  int kbt;   // block mode: K tiles per K block (kblock / 128)
  const float* bias;
  void* c;
  bool vec_c;  // paired stores: c aligned, N even
  int tiles_m, tiles_n;
};

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void mma_s8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                       uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d = a·b + c for a C of four equal registers (block mode restarts each K block at the magic
// value this way, with no instruction to reset the accumulators).
__device__ __forceinline__ void mma_s8_from(int (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                            uint32_t b1, uint32_t c) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %10, %10, %10};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(c));
}

template <typename OutT>
__device__ __forceinline__ void store_pair(OutT* c, int n, int row, int col, float v0, float v1,
                                           bool vec) {
  OutT* p = c + static_cast<int64_t>(row) * n + col;
  if constexpr (sizeof(OutT) == 2) {
    if (vec && col + 1 < n) {
      *reinterpret_cast<__nv_bfloat162*>(p) =
          __halves2bfloat162(__float2bfloat16_rn(v0), __float2bfloat16_rn(v1));
      return;
    }
    if (col < n) p[0] = __float2bfloat16_rn(v0);
    if (col + 1 < n) p[1] = __float2bfloat16_rn(v1);
  } else {
    if (vec && col + 1 < n) {
      *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
      return;
    }
    if (col < n) p[0] = v0;
    if (col + 1 < n) p[1] = v1;
  }
}

// The CTA tile: kWarpsM × kWarpsN warps, each kMT m16 tiles × kNT n8 tiles.
// Tensor and row modes: 128×128, 8 warps of 64×32 (64 INT32 accumulators a thread, 128
// registers), two CTAs an SM. Block mode holds as many FP32 accumulators besides and flushes
// them after every K tile: 128×64, 8 warps of 32×32, two CTAs an SM within 128 registers, so
// that one CTA's flush can run beside the other's MMAs. Measured on H100 (16384×4096×4096,
// bf16 out): block mode ~400 TOP/s against ~730 in tensor mode; 128×128 tiles with one CTA an
// SM (8 warps of 64×32 at 245 registers, or 16 warps of 32×32) ran no faster, and this layout
// without the flush ran at ~470, so the flush and the smaller warp tiles share the cost.
template <int WarpsM, int WarpsN, int MT, int NT>
struct WarpLayout {
  static constexpr int kWarpsN = WarpsN, kMT = MT, kNT = NT;
  static constexpr int kThreads = WarpsM * WarpsN * 32;
  static constexpr int kBM = WarpsM * MT * 16;
  static constexpr int kBN = WarpsN * NT * 8;
  static constexpr int kTileBytes = (kBM + kBN) * kBK;  // one pipeline stage of A and B
  static_assert(NT % 2 == 0 && kBM + kBN <= 2 * kThreads && kBM <= kThreads);
};
using RowLayout = WarpLayout<2, 4, 4, 4>;
using BlockLayout = WarpLayout<4, 2, 2, 4>;

// kBlocked: scales vary along K in blocks of 128 (= kBK). kBUniform (block mode only): B's
// scale is one for every 32 aligned columns (b_block_rows 0 or a multiple of 32), so a warp
// multiplies sa · sb once per row instead of once per element.
template <typename L, bool kBlocked, bool kBUniform, typename OutT>
__global__ void __launch_bounds__(L::kThreads, 2) scaled_gemm_kernel(const GemmParams p) {
  constexpr int kMT = L::kMT;
  constexpr int kNT = L::kNT;
  constexpr int kBM = L::kBM;
  constexpr int kBN = L::kBN;
  constexpr int kTileBytes = L::kTileBytes;
  constexpr int kLoadRowStep = L::kThreads / (kBK / 16);
  constexpr int kLoadsA = kBM / kLoadRowStep;  // 16-byte copies per thread and K tile
  constexpr int kLoadsB = kBN / kLoadRowStep;
  extern __shared__ __align__(128) uint8_t smem[];
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int wm = warp / L::kWarpsN;
  const int wn = warp % L::kWarpsN;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int warp_row = wm * kMT * 16;
  const int warp_col = wn * kNT * 8;

  // Grouped raster: kGroupM tile rows share each tile column's B while it is in L2.
  const int pid = static_cast<int>(blockIdx.x);
  const int per_group = kGroupM * p.tiles_n;
  const int first_m = (pid / per_group) * kGroupM;
  const int group_rows = min(p.tiles_m - first_m, kGroupM);
  const int tm = first_m + (pid % per_group) % group_rows;
  const int tn = (pid % per_group) / group_rows;
  const int m0 = tm * kBM;
  const int n0 = tn * kBN;
  const int ktiles = (p.k + kBK - 1) / kBK;

  // Loader: this thread copies chunk (tid % 8) of rows tid / 8 + kLoadRowStep·i of A and of B.
  static_assert(kLoadsA <= 32 && kLoadsB <= kLoadsA);
  const int ld_row = tid >> 3;
  const int ld_chunk = tid & 7;
  const uint32_t ld_dst = ld_row * kBK + ((ld_chunk ^ (ld_row & 7)) << 4);
  const int8_t* a_src = p.a + static_cast<int64_t>(m0 + ld_row) * p.k + ld_chunk * 16;
  const int8_t* b_src = p.b + static_cast<int64_t>(n0 + ld_row) * p.k + ld_chunk * 16;
  const int64_t ld_step = static_cast<int64_t>(kLoadRowStep) * p.k;
  uint32_t a_rows_ok = 0;
  uint32_t b_rows_ok = 0;
#pragma unroll
  for (int i = 0; i < kLoadsA; ++i) {
    a_rows_ok |= (m0 + ld_row + kLoadRowStep * i < p.m ? 1u : 0u) << i;
    b_rows_ok |= (i < kLoadsB && n0 + ld_row + kLoadRowStep * i < p.n ? 1u : 0u) << i;
  }
  const uint32_t smem_base = smem_addr(smem);
  // Block mode: threads 0..kBM-1 stage the A scale of tile row tid, the next kBN threads the B
  // scale of tile column tid - kBM, one per K tile, beside the operands.
  const float* scale_src = nullptr;
  if constexpr (kBlocked) {
    if (tid < kBM) {
      const int row = min(m0 + tid, p.m - 1);
      scale_src =
          p.a_scales + static_cast<int64_t>(p.a_block_rows ? row / p.a_block_rows : 0) * p.kext;
    } else if (tid < kBM + kBN) {
      const int col = min(n0 + tid - kBM, p.n - 1);
      scale_src =
          p.b_scales + static_cast<int64_t>(p.b_block_rows ? col / p.b_block_rows : 0) * p.kext;
    }
  }
  const uint32_t scale_smem = smem_base + kStages * kTileBytes;

  auto load_tile = [&](int stage, int kt) {
    const int k0 = kt * kBK;
    const bool k_ok = k0 + ld_chunk * 16 < p.k;
    const uint32_t a_dst = smem_base + stage * kTileBytes + ld_dst;
    const uint32_t b_dst = a_dst + kBM * kBK;
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      const bool a_ok = k_ok && ((a_rows_ok >> i) & 1u);
      // A zero-filled copy still needs a valid address: the operand's base.
      cp_async16(a_dst + i * kLoadRowStep * kBK, a_ok ? a_src + i * ld_step + k0 : p.a, a_ok);
      if (i < kLoadsB) {
        const bool b_ok = k_ok && ((b_rows_ok >> i) & 1u);
        cp_async16(b_dst + i * kLoadRowStep * kBK, b_ok ? b_src + i * ld_step + k0 : p.b, b_ok);
      }
    }
    if constexpr (kBlocked) {
      if (tid < kBM + kBN) {
        cp_async4(scale_smem + (stage * (kBM + kBN) + tid) * 4, scale_src + kt / p.kbt);
      }
    }
  };

  int acc[kMT][kNT][4];
  float accf[kMT][kNT][4];  // block mode only
#pragma unroll
  for (int mi = 0; mi < kMT; ++mi) {
#pragma unroll
    for (int ni = 0; ni < kNT; ++ni) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        acc[mi][ni][r] = 0;
        // -0 is the identity of IEEE addition (-0 + x == x, also for x == +0), so the first
        // K block's term comes out unchanged, as the reference's sum starts with it.
        if constexpr (kBlocked) accf[mi][ni][r] = -0.0f;
      }
    }
  }

  // ldmatrix addresses: A rows warp_row + mi·16 + lane % 16, chunk 2·ks + lane / 16; B rows
  // warp_col + nj·16 + lane % 8 + 8·(lane / 16), chunk 2·ks + (lane / 8) % 2. Every row ≡ lane
  // (mod 8), so the swizzle XORs the chunk with lane % 8.
  const uint32_t a_frag_row = (warp_row + (lane & 15)) * kBK;
  const uint32_t b_frag_row = (warp_col + (lane & 7) + ((lane >> 4) << 3)) * kBK;
  const int a_hi = lane >> 4;
  const int b_hi = (lane >> 3) & 1;
  const int swz = lane & 7;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < ktiles) load_tile(s, s);
    cp_async_commit();
  }

  // Block mode's partials restart at the magic value where it holds them (|partial| ≤ 2²²: K
  // blocks of 128 and 256), else at 0 and are converted by I2F.
  const bool magic_restart = p.kbt <= 2;
  const uint32_t restart_bits = magic_restart ? kMagicBits : 0u;
#pragma unroll 1
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    // The stage refilled here was read in iteration kt - 1, which every thread has finished.
    if (kt + kStages - 1 < ktiles) load_tile((kt + kStages - 1) % kStages, kt + kStages - 1);
    cp_async_commit();

    const int stage = kt % kStages;
    // Block mode: whether this K tile starts a K block (the partial restarts) and ends one (the
    // partial is folded).
    const bool block_start = kt % p.kbt == 0;
    const bool block_end = (kt + 1) % p.kbt == 0 || kt + 1 == ktiles;
    const uint32_t a_base = smem_base + stage * kTileBytes + a_frag_row;
    const uint32_t b_base = smem_base + stage * kTileBytes + kBM * kBK + b_frag_row;
    // Fragments double-buffered across k-steps; block mode, at the 128-register cap with its FP32
    // accumulators, loads each k-step's just before use (its 4 warps a scheduler hide that).
    constexpr int kBufs = kBlocked ? 1 : 2;
    uint32_t af[kBufs][kMT][4];
    uint32_t bf[kBufs][kNT][2];
    const auto load_frags = [&](int buf, int ks) {
#pragma unroll
      for (int mi = 0; mi < kMT; ++mi) {
        ldmatrix_x4(a_base + mi * 16 * kBK + (((2 * ks + a_hi) ^ swz) << 4), af[buf][mi]);
      }
#pragma unroll
      for (int nj = 0; nj < kNT / 2; ++nj) {
        uint32_t x[4];
        ldmatrix_x4(b_base + nj * 16 * kBK + (((2 * ks + b_hi) ^ swz) << 4), x);
        bf[buf][2 * nj][0] = x[0];
        bf[buf][2 * nj][1] = x[1];
        bf[buf][2 * nj + 1][0] = x[2];
        bf[buf][2 * nj + 1][1] = x[3];
      }
    };
    if (kBufs == 2) load_frags(0, 0);
#pragma unroll
    for (int ks = 0; ks < kBK / 32; ++ks) {
      if (kBufs == 1) {
        load_frags(0, ks);
      } else if (ks + 1 < kBK / 32) {
        load_frags((ks + 1) % kBufs, ks + 1);
      }
#pragma unroll
      for (int mi = 0; mi < kMT; ++mi) {
#pragma unroll
        for (int ni = 0; ni < kNT; ++ni) {
          const uint32_t(&a)[4] = af[ks % kBufs][mi];
          const uint32_t(&b)[2] = bf[ks % kBufs][ni];
          if (kBlocked && ks == 0 && block_start) {
            // Each K block starts from the magic value (0 for blocks past 256, which the magic
            // value's range does not hold): no instructions to reset.
            mma_s8_from(acc[mi][ni], a, b[0], b[1], restart_bits);
          } else {
            mma_s8(acc[mi][ni], a, b[0], b[1]);
          }
        }
      }
    }

    // FP32 accumulation of a finished K block: acc_f += float(partial) · (sa · sb), each
    // rounded; the partial read through the magic value, or by I2F (i2f true).
    const auto fold = [&](auto i2f) {
      const float* sa =
          reinterpret_cast<const float*>(smem + kStages * kTileBytes) + stage * (kBM + kBN);
      const float* sb = sa + kBM;
      const float sb_warp = sb[warp_col];  // kBUniform: the warp's one B scale
      float sbv[kNT][2];
#pragma unroll
      for (int ni = 0; ni < kNT; ++ni) {
#pragma unroll
        for (int j = 0; j < 2; ++j)
          sbv[ni][j] = kBUniform ? 0.0f : sb[warp_col + ni * 8 + 2 * t + j];
      }
#pragma unroll
      for (int mi = 0; mi < kMT; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float sav = sa[warp_row + mi * 16 + g + 8 * h];
          const float row_scale = kBUniform ? __fmul_rn(sav, sb_warp) : sav;
#pragma unroll
          for (int ni = 0; ni < kNT; ++ni) {
#pragma unroll
            for (int j = 0; j < 2; ++j) {
              const int v = acc[mi][ni][2 * h + j];
              const float partial =
                  decltype(i2f)::value ? __int2float_rn(v) : __fsub_rn(__int_as_float(v), kMagic);
              const float scale = kBUniform ? row_scale : __fmul_rn(sav, sbv[ni][j]);
              float& f = accf[mi][ni][2 * h + j];
              f = __fadd_rn(f, __fmul_rn(partial, scale));
            }
          }
        }
      }
    };
    if (kBlocked && block_end) {
      if (magic_restart) {
        fold(std::false_type{});
      } else {
        fold(std::true_type{});
      }
    }
  }

  // Epilogue: scale (tensor/row modes), bias, one rounding to OutT.
  float bias[kNT][2];
  float sbv[kNT][2];
#pragma unroll
  for (int ni = 0; ni < kNT; ++ni) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int col = min(n0 + warp_col + ni * 8 + 2 * t + j, p.n - 1);
      bias[ni][j] = p.bias != nullptr ? __ldg(p.bias + col) : 0.0f;
      if constexpr (!kBlocked) {
        sbv[ni][j] = __ldg(p.b_scales + (p.b_block_rows ? col / p.b_block_rows : 0));
      }
    }
  }
  OutT* c = static_cast<OutT*>(p.c);
#pragma unroll
  for (int mi = 0; mi < kMT; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + warp_row + mi * 16 + g + 8 * h;
      if (row >= p.m) continue;
      float sav = 0.0f;
      if constexpr (!kBlocked)
        sav = __ldg(p.a_scales + (p.a_block_rows ? row / p.a_block_rows : 0));
#pragma unroll
      for (int ni = 0; ni < kNT; ++ni) {
        float v[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          if constexpr (kBlocked) {
            v[j] = accf[mi][ni][2 * h + j];
          } else {
            v[j] = __fmul_rn(__int2float_rn(acc[mi][ni][2 * h + j]), __fmul_rn(sav, sbv[ni][j]));
          }
          if (p.bias != nullptr) v[j] = __fadd_rn(v[j], bias[ni][j]);
        }
        store_pair(c, p.n, row, n0 + warp_col + ni * 8 + 2 * t, v[0], v[1], p.vec_c);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// dequantize_int32: c = float(acc) · (sa · sb) (+ bias), 4 elements a thread
// ---------------------------------------------------------------------------------------------

struct DequantParams {
  const int32_t* acc;
  int64_t m, n;
  const float* a_scales;
  int64_t a_block_rows;
  const float* b_scales;
  int64_t b_block_rows;
  const float* bias;
  void* c;
  bool vec;  // 16-byte loads of acc, 4-element stores: aligned, N % 4 == 0
};

// The scale row of `row` for block_rows (0: all rows); the common 0 and 1 skip the division.
__device__ __forceinline__ int64_t scale_row(int64_t row, int64_t block_rows) {
  return block_rows == 0 ? 0 : (block_rows == 1 ? row : row / block_rows);
}

__device__ __forceinline__ float dequant_one(const DequantParams& p, int32_t v, float sa,
                                             int64_t col) {
  const float sb = __ldg(p.b_scales + scale_row(col, p.b_block_rows));
  float r = __fmul_rn(__int2float_rn(v), __fmul_rn(sa, sb));
  if (p.bias != nullptr) r = __fadd_rn(r, __ldg(p.bias + col));
  return r;
}

template <typename OutT>
__global__ void __launch_bounds__(kThreads) dequantize_int32_kernel(const DequantParams p) {
  OutT* c = static_cast<OutT*>(p.c);
  for (int64_t row = blockIdx.y; row < p.m; row += gridDim.y) {
    const float sa = __ldg(p.a_scales + scale_row(row, p.a_block_rows));
    const int32_t* acc = p.acc + row * p.n;
    OutT* out = c + row * p.n;
    for (int64_t col = 4 * (blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x); col < p.n;
         col += 4 * static_cast<int64_t>(gridDim.x) * kThreads) {
      if (p.vec) {
        const int4 v = __ldcs(reinterpret_cast<const int4*>(acc + col));
        const float r0 = dequant_one(p, v.x, sa, col);
        const float r1 = dequant_one(p, v.y, sa, col + 1);
        const float r2 = dequant_one(p, v.z, sa, col + 2);
        const float r3 = dequant_one(p, v.w, sa, col + 3);
        if constexpr (sizeof(OutT) == 2) {
          const __nv_bfloat162 lo =
              __halves2bfloat162(__float2bfloat16_rn(r0), __float2bfloat16_rn(r1));
          const __nv_bfloat162 hi =
              __halves2bfloat162(__float2bfloat16_rn(r2), __float2bfloat16_rn(r3));
          uint2 packed;
          packed.x = *reinterpret_cast<const uint32_t*>(&lo);
          packed.y = *reinterpret_cast<const uint32_t*>(&hi);
          *reinterpret_cast<uint2*>(out + col) = packed;
        } else {
          *reinterpret_cast<float4*>(out + col) = make_float4(r0, r1, r2, r3);
        }
      } else {
        for (int64_t j = col; j < min(col + 4, p.n); ++j) {
          const float r = dequant_one(p, acc[j], sa, j);
          if constexpr (sizeof(OutT) == 2) {
            out[j] = __float2bfloat16_rn(r);
          } else {
            out[j] = r;
          }
        }
      }
    }
  }
}

bool aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

void validate_common(const ScaledGemmArgs& a) {
  LPBENCH_CUDA_REQUIRE(a.m > 0 && a.n > 0 && a.k > 0,
                       "M, N and K must be positive, got " + std::to_string(a.m) + "x" +
                           std::to_string(a.n) + "x" + std::to_string(a.k));
  LPBENCH_CUDA_REQUIRE(a.a_scales != nullptr && a.b_scales != nullptr, "a scale pointer is null");
  LPBENCH_CUDA_REQUIRE(a.a_block_rows >= 0 && a.b_block_rows >= 0,
                       "block_rows must be >= 0 (0: one scale for all rows)");
  LPBENCH_CUDA_REQUIRE(a.c != nullptr, "c is null");
  LPBENCH_CUDA_REQUIRE(a.c_type == DType::bf16 || a.c_type == DType::fp32,
                       std::string("c_type must be bf16 or fp32, got ") + dtype_name(a.c_type));
  LPBENCH_CUDA_REQUIRE(!a.accumulate, "accumulate is the wgmma kernel's alone");
}

}  // namespace

void scaled_gemm_mma(const ScaledGemmArgs& args, cudaStream_t stream) {
  validate_common(args);
  LPBENCH_CUDA_REQUIRE(args.ab_type == DType::int8,
                       std::string("only int8 operands, got ") + dtype_name(args.ab_type));
  LPBENCH_CUDA_REQUIRE(args.a != nullptr && args.b != nullptr, "an operand pointer is null");
  LPBENCH_CUDA_REQUIRE(args.k % 16 == 0,
                       "K must be a multiple of 16, got " + std::to_string(args.k));
  LPBENCH_CUDA_REQUIRE(aligned(args.a, 16) && aligned(args.b, 16),
                       "the operands must be 16-byte aligned");
  LPBENCH_CUDA_REQUIRE(
      kblock_supported(args.kblock),
      "kblock must be 0, 128, 256, 512 or 1024, got " + std::to_string(args.kblock));
  LPBENCH_CUDA_REQUIRE(args.kblock != 0 || args.k <= kMaxKNoBlocks,
                       "K=" + std::to_string(args.k) +
                           " could overflow INT32 over all of K (at most " +
                           std::to_string(kMaxKNoBlocks) + " without K blocks)");
  LPBENCH_CUDA_REQUIRE(args.m < (int64_t{1} << 31) && args.n < (int64_t{1} << 31) &&
                           args.k < (int64_t{1} << 31) && args.a_block_rows < (int64_t{1} << 31) &&
                           args.b_block_rows < (int64_t{1} << 31),
                       "sizes must fit in 32 bits");
  const bool blocked = args.kblock != 0;
  const int64_t bm = blocked ? BlockLayout::kBM : RowLayout::kBM;
  const int64_t bn = blocked ? BlockLayout::kBN : RowLayout::kBN;
  const int64_t tiles_m = (args.m + bm - 1) / bm;
  const int64_t tiles_n = (args.n + bn - 1) / bn;
  LPBENCH_CUDA_REQUIRE(tiles_m * tiles_n <= 0x7fffffff && kGroupM * tiles_n <= 0x7fffffff,
                       "too many tiles");
  NvtxRange range("lpbench::cuda::scaled_gemm_mma");

  GemmParams p{};
  p.a = static_cast<const int8_t*>(args.a);
  p.b = static_cast<const int8_t*>(args.b);
  p.m = static_cast<int>(args.m);
  p.n = static_cast<int>(args.n);
  p.k = static_cast<int>(args.k);
  p.a_scales = args.a_scales;
  p.a_block_rows = static_cast<int>(args.a_block_rows);
  p.b_scales = args.b_scales;
  p.b_block_rows = static_cast<int>(args.b_block_rows);
  p.kext = blocked ? static_cast<int>((args.k + args.kblock - 1) / args.kblock) : 1;
  p.kbt = blocked ? static_cast<int>(args.kblock / kBK) : 1;
  p.bias = args.bias;
  p.c = args.c;
  p.vec_c = args.n % 2 == 0 && aligned(args.c, args.c_type == DType::bf16 ? 4 : 8);
  p.tiles_m = static_cast<int>(tiles_m);
  p.tiles_n = static_cast<int>(tiles_n);

  const size_t smem =
      blocked
          ? static_cast<size_t>(kStages) *
                (BlockLayout::kTileBytes + (BlockLayout::kBM + BlockLayout::kBN) * sizeof(float))
          : static_cast<size_t>(kStages) * RowLayout::kTileBytes;
  const auto launch = [&](auto kernel, int threads) {
    LPBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(smem)));
    kernel<<<static_cast<unsigned>(tiles_m * tiles_n), threads, smem, stream>>>(p);
    LPBENCH_CUDA_CHECK_LAUNCH();
  };
  const bool bf16 = args.c_type == DType::bf16;
  const bool b_uniform = args.b_block_rows % 32 == 0;  // 0 included
  constexpr int kRowThreads = RowLayout::kThreads;
  constexpr int kBlockThreads = BlockLayout::kThreads;
  if (!blocked) {
    bf16 ? launch(scaled_gemm_kernel<RowLayout, false, false, __nv_bfloat16>, kRowThreads)
         : launch(scaled_gemm_kernel<RowLayout, false, false, float>, kRowThreads);
  } else if (b_uniform) {
    bf16 ? launch(scaled_gemm_kernel<BlockLayout, true, true, __nv_bfloat16>, kBlockThreads)
         : launch(scaled_gemm_kernel<BlockLayout, true, true, float>, kBlockThreads);
  } else {
    bf16 ? launch(scaled_gemm_kernel<BlockLayout, true, false, __nv_bfloat16>, kBlockThreads)
         : launch(scaled_gemm_kernel<BlockLayout, true, false, float>, kBlockThreads);
  }
}

void dequantize_int32(const int32_t* acc, const ScaledGemmArgs& args, cudaStream_t stream) {
  validate_common(args);
  LPBENCH_CUDA_REQUIRE(acc != nullptr, "acc is null");
  LPBENCH_CUDA_REQUIRE(args.kblock == 0,
                       "an INT32 product over all of K takes tensor or row scales (kblock 0)");
  NvtxRange range("lpbench::cuda::dequantize_int32");
  DequantParams p{};
  p.acc = acc;
  p.m = args.m;
  p.n = args.n;
  p.a_scales = args.a_scales;
  p.a_block_rows = args.a_block_rows;
  p.b_scales = args.b_scales;
  p.b_block_rows = args.b_block_rows;
  p.bias = args.bias;
  p.c = args.c;
  p.vec =
      args.n % 4 == 0 && aligned(acc, 16) && aligned(args.c, args.c_type == DType::bf16 ? 8 : 16);
  const int64_t col_ctas = (args.n + 4 * kThreads - 1) / (4 * kThreads);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(col_ctas, 1 << 16)),
                  static_cast<unsigned>(std::min<int64_t>(args.m, 65535)));
  if (args.c_type == DType::bf16) {
    dequantize_int32_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(p);
  } else {
    dequantize_int32_kernel<float><<<grid, kThreads, 0, stream>>>(p);
  }
  LPBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace lpbench::cuda
