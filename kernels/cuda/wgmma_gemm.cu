// lpbench's Hopper INT8 GEMM (sm_90a): wgmma s8·s8 → s32 with TMA loads, warp specialisation and
// fused scaling; numerics of kernels/reference/scaled_gemm.cpp, bit for bit (as scaled_gemm_mma).
//
// A CTA of 384 threads: warpgroup 0 is the producer (one thread issues the TMA loads), warpgroups
// 1 and 2 are consumers, each computing 64 rows of a 128 × tile_n output tile with wgmma
// m64n{tile_n}k32, or, in the ping-pong config, each computing whole 128 × 128 tiles (two
// m64n128k32 halves), the two taking the CTA's tiles in turn so that one stores while the other
// multiplies. K advances 128 bytes (one 128-byte swizzle row, and the K block of block
// scaling) per pipeline stage. Each stage has a "full" barrier (the TMA bytes) and an "empty"
// barrier (one arrival per consumer warp after its wgmmas that read the stage have completed). The
// grid is persistent: CTA i takes tiles i, i + grid, ... in a grouped order (8 tile rows share each
// B tile column in L2), and the producer runs ahead into the next tile while the consumers store
// the previous one. With cluster_m 2, CTA pairs take vertically adjacent tiles, each loading its
// own A and half of the shared B tile by TMA multicast into both; a stage is then free when the
// consumers of both CTAs have arrived on its empty barrier.
//
// Tensor and row modes keep INT32 accumulators over all of K (exact up to K = 133143), one wgmma
// group in flight, and scale once in the epilogue. Block mode computes each K block (128 to 1024
// deep: one to eight stages) into a fresh INT32 partial, waits for it and folds it into FP32
// accumulators (I2F, exact: |partial| ≤ 1024·127² < 2²⁴; then partial · (sa·sb) added with
// separate roundings, in K-block order, as the reference does). Each consumer thread reads its
// own A scales and the tile's B scale from global memory a K block ahead; where B's scales vary
// by column (wgrad's activations, 1 × kblock), the launcher copies them K-block-major and the
// producer brings each stage's 128 in with its operands.
// docs/perf-log.md §6 has the versions tried and what each measured.
#include <cuda.h>  // CUtensorMap and the encode function's types only: the driver function is
                   // reached through the runtime's entry-point query, so no -lcuda
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/wgmma_gemm.cuh"
#include "kernels/cuda/wgmma_ptx.cuh"

// Timing experiments only (docs/perf-log.md §6c; scripts/gpu-fold-diag sets them through the
// LPBENCH_WGMMA_DIAG CMake variable). Any value but the default gives block mode other results.
//   FOLD_REPEAT=R  the fold's arithmetic R times, to time it by difference (0: one element of
//                  it, not none: with no use of the partials ptxas drops the wgmmas too, which
//                  the 0 of §6b–§30 did; docs/perf-log.md §32)
//   FOLD_FFMA=1    one FFMA per partial instead of FMUL then FADD (another rounding)
//   NO_TRAP=1      mbar_wait's deadlock timeout returns instead of trapping (wgmma_ptx.cuh):
//                  the same results unless a wait times out; the register limit it lifts, §33
//   BLOCK_BN=192   block mode on 128 × 192 tiles (every column its own B scale, 5 stages): the
//                  same results; its 96 + 96 accumulators a thread need NO_TRAP=1 too (§33).
//                  256 builds only with FOLD_REPEAT=0 (128 + 128 would spill)
#ifndef LPBENCH_WGMMA_BLOCK_BN
#define LPBENCH_WGMMA_BLOCK_BN 128
#endif
#ifndef LPBENCH_WGMMA_FOLD_REPEAT
#define LPBENCH_WGMMA_FOLD_REPEAT 1
#endif
#ifndef LPBENCH_WGMMA_FOLD_FFMA
#define LPBENCH_WGMMA_FOLD_FFMA 0
#endif
//   NO_STORE=1     the epilogue computes its values but stores none (what the stores cost)
//   GENERAL_EPILOGUE=1  every tile takes the epilogue with per-pair checks (as before §24)
//   FULL_DESC=1    each wgmma's descriptors built afresh from the address (as before §24)
//   PAIR_STORES=M  interior tiles store each thread's pairs as they lie instead of four
//                  columns traded in a lane pair (§38): M = 1 BF16 C, 2 FP32 C, 3 both
// (wgmma_config.cpp holds the heuristic's: PINGPONG=0, PP_STAGES=S.)
#ifndef LPBENCH_WGMMA_NO_STORE
#define LPBENCH_WGMMA_NO_STORE 0
#endif
#ifndef LPBENCH_WGMMA_GENERAL_EPILOGUE
#define LPBENCH_WGMMA_GENERAL_EPILOGUE 0
#endif
#ifndef LPBENCH_WGMMA_FULL_DESC
#define LPBENCH_WGMMA_FULL_DESC 0
#endif
#ifndef LPBENCH_WGMMA_PAIR_STORES
#define LPBENCH_WGMMA_PAIR_STORES 0
#endif

namespace lpbench::cuda {

namespace {

constexpr int kBM = 128;
constexpr int kBK = 128;
constexpr int kThreads = 384;
constexpr int kConsumerWarps = 8;
constexpr int kGroupM = 8;
constexpr int kMaxKNoBlocks = 133143;   // K·128² < 2³¹ (kernels/reference/int8_gemm.h)
constexpr int kSmemLimit = 227 * 1024;  // H100/H200 opt-in dynamic shared memory per CTA
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;  // 40·128 + 232·256 ≤ 65536

struct Params {
  int m, n, k;
  int ktiles, tiles_m, tiles_n, stages;
  int cluster_m;  // 1, or 2: CTA pairs on vertically adjacent tiles, each loading half of the
                  // shared B tile and multicasting it to both
  const float* a_scales;
  int a_block_rows;  // 0: one scale for all rows
  const float* b_scales;
  int b_block_rows;
  int kext;  // scale columns: ceil(K / kblock) in block mode, else 1
  int kbt;   // block mode: K tiles (stages) per K block, kblock / 128
  // Block mode with per-column B scales (kColumnB): B's scales K-block-major, [kext, n_pad] with
  // n_pad = tiles_n · 128, column c holding the scale of column min(c, N - 1), so that a tile's
  // 128 scales for one K block are 512 contiguous bytes (one bulk copy into a stage, or one load
  // a consumer thread into a buffer: column_in_stages).
  const float* b_col_scales;
  int n_pad;
  // kColumnB: where a K block's column scales reach the fold. True: the producer brings them into
  // every stage with the operands and the fold reads the block's last stage, held until it is
  // done; false: consumer threads load them a block ahead into two shared buffers (§29).
  bool column_in_stages;
  const float* bias;
  void* c;
  bool vec_c;   // paired stores: c aligned, N even
  bool quad_c;  // C stored four columns a lane: c aligned for four, N a multiple of 4
};

// Shared memory, from the dynamic block's base, which `__align__(1024)` puts on the 128-byte
// swizzle's 1024-byte atom (the kernel checks; a 1 KiB pad for it would leave 112 bytes too few
// for a seventh stage of 128-wide tiles): `stages` × [A tile 128×128 | B tile tile_n×128], then
// the full and empty barriers, then (kColumnB) `stages` × the tile's tile_n column scales of B
// for the stage's K block and two buffers of them, one K block's each (the consumers fill one
// while they fold from the other; Params::column_in_stages picks which the kernel uses), then
// the epilogue's scales.
template <int BN, bool kColumnB = false>
struct Layout {
  static constexpr int kABytes = kBM * kBK;
  static constexpr int kOperandBytes = kABytes + BN * kBK;
  static constexpr int kColumnScaleBytes = kColumnB ? BN * 4 : 0;
  static constexpr int kColumnBufferBytes = 2 * kColumnScaleBytes;
  static constexpr int kAccs = BN / 2;  // INT32 accumulators per consumer thread
  // The epilogue's scales of a tile (BN of B, kBM of A), two tiles' worth: a tile's are written
  // while the one before may still be read.
  static constexpr int kEpilogueScaleBytes = 2 * (BN + kBM) * 4;
  static size_t smem_bytes(int stages) {
    return kEpilogueScaleBytes + kColumnBufferBytes +
           static_cast<size_t>(stages) * (kOperandBytes + 16 + kColumnScaleBytes);
  }
};

__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = kGroupM * tiles_n;
  const int first_m = (tile / per_group) * kGroupM;
  const int rows = min(tiles_m - first_m, kGroupM);
  tm = first_m + (tile % per_group) % rows;
  tn = (tile % per_group) / rows;
}

__device__ __forceinline__ int scale_row(int row, int block_rows) {
  return block_rows == 0 ? 0 : (block_rows == 1 ? row : row / block_rows);
}

template <int BN>
__device__ __forceinline__ void wgmma_tile(int (&acc)[BN / 2], uint64_t da, uint64_t db,
                                           int acc_in);

template <>
__device__ __forceinline__ void wgmma_tile<128>(int (&acc)[64], uint64_t da, uint64_t db,
                                                int acc_in) {
  sm90::wgmma_m64n128k32(acc, da, db, acc_in);
}

#if LPBENCH_WGMMA_BLOCK_BN == 192
template <>
__device__ __forceinline__ void wgmma_tile<192>(int (&acc)[96], uint64_t da, uint64_t db,
                                                int acc_in) {
  sm90::wgmma_m64n192k32(acc, da, db, acc_in);
}
#endif

template <>
__device__ __forceinline__ void wgmma_tile<256>(int (&acc)[128], uint64_t da, uint64_t db,
                                                int acc_in) {
  sm90::wgmma_m64n256k32(acc, da, db, acc_in);
}

template <typename OutT>
__device__ __forceinline__ void store_pair(OutT* c, int n, int row, int col, OutT v0, OutT v1,
                                           bool vec) {
  OutT* p = c + static_cast<int64_t>(row) * n + col;
  if (vec && col + 1 < n) {
    if constexpr (sizeof(OutT) == 2) {
      *reinterpret_cast<__nv_bfloat162*>(p) = __halves2bfloat162(v0, v1);
    } else if constexpr (sizeof(OutT) == 4) {
      OutT pair[2] = {v0, v1};
      *reinterpret_cast<uint2*>(p) = *reinterpret_cast<const uint2*>(pair);
    }
    return;
  }
  if (col < n) p[0] = v0;
  if (col + 1 < n) p[1] = v1;
}

// Both values of a pair at p, which is aligned for the pair (C aligned, N even, col even).
template <typename OutT>
__device__ __forceinline__ void store_pair_aligned(OutT* p, OutT v0, OutT v1) {
  if constexpr (sizeof(OutT) == 2) {
    *reinterpret_cast<__nv_bfloat162*>(p) = __halves2bfloat162(v0, v1);
  } else {
    OutT pair[2] = {v0, v1};
    *reinterpret_cast<uint2*>(p) = *reinterpret_cast<const uint2*>(pair);
  }
}

// The pair (v0, v1) at (row, col) of FP32 C plus what C holds there (within N), each one add.
__device__ __forceinline__ void add_existing(const float* c, int n, int row, int col,
                                             float (&v)[2]) {
  const float* p = c + static_cast<int64_t>(row) * n + col;
  if (col < n) v[0] = __fadd_rn(p[0], v[0]);
  if (col + 1 < n) v[1] = __fadd_rn(p[1], v[1]);
}

template <typename OutT>
__device__ __forceinline__ OutT to_out(float v) {
  if constexpr (sizeof(OutT) == 2) {
    return __float2bfloat16_rn(v);
  } else {
    return v;
  }
}

// Named barriers (id ≥ 1; 0 is __syncthreads') of kCount consumer threads: wait for all of
// them, or count this thread's arrival and go on.
template <int kCount>
__device__ __forceinline__ void consumer_barrier(int id) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(kCount) : "memory");
}
template <int kCount>
__device__ __forceinline__ void consumer_arrive(int id) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(kCount) : "memory");
}

// OutT: __nv_bfloat16 or float (scaled), int32_t (raw INT32 products; kBlocked false, no scales).
// kColumnB (block mode): B's scale blocks do not span whole tiles, so each column reads its own.
// kPingpong (tensor, row and raw modes, BN 128): each consumer warpgroup computes whole 128 × 128
// tiles, the two taking the CTA's tiles in turn, so that one's epilogue runs under the other's
// MMAs; without it the two split each tile's rows and store together while the tensor cores wait.
// kAccumulate (float OutT): C += the product (ScaledGemmArgs::accumulate); its own instantiation,
// since a second copy of the interior epilogue in every FP32 kernel made ptxas spill.
template <int BN, bool kBlocked, typename OutT, bool kColumnB, bool kPingpong, bool kAccumulate>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap tma_a,
                      const __grid_constant__ CUtensorMap tma_b, const Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = Layout<BN, kColumnB>;
  constexpr bool kRaw = std::is_same_v<OutT, int32_t>;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t raw = sm90::smem_addr(smem_raw);
  // `__align__` makes base == raw, which the launch's size counts on (no pad); rounded up all the
  // same, since ptxas spilled on the ping-pong epilogue with base = raw (or raw masked).
  const uint32_t base = (raw + 1023u) & ~1023u;
  if (base != raw) __trap();  // the ring would run past the allocation
  const uint32_t bars = base + p.stages * L::kOperandBytes;
  const auto full = [&](int s) { return bars + 8u * s; };
  const auto empty = [&](int s) { return bars + 8u * (p.stages + s); };
  // kColumnB: stage s's slot of its K block's column scales, and buffer b (0 or 1) of them.
  const auto column_scales = [&](int s) {
    return bars + 16u * p.stages + L::kColumnScaleBytes * s;
  };
  const auto column_buffer = [&](int b) {
    return column_scales(p.stages) + L::kColumnScaleBytes * b;
  };
  const bool column_in_stages = kColumnB && p.column_in_stages;

  const int tid = static_cast<int>(threadIdx.x);
  // In a cluster of two, a stage is free only when both CTAs' consumers are done with it (the
  // peer's producer writes half of it), and no CTA leaves while its peer may still write into its
  // shared memory or arrive on its barriers.
  const int cluster = p.cluster_m;
  const uint32_t rank = cluster > 1 ? sm90::cluster_ctarank() : 0u;
  if (tid == 0) {
    for (int s = 0; s < p.stages; ++s) {
      sm90::mbar_init(full(s), 1);
      sm90::mbar_init(empty(s), (kPingpong ? kConsumerWarps / 2 : kConsumerWarps) * cluster);
    }
    sm90::mbar_init_fence();
  }
  if (cluster > 1) {
    sm90::cluster_sync();
  } else {
    __syncthreads();
  }
  const auto finish = [&] {
    if (cluster > 1) sm90::cluster_sync();
  };

  // Tiles go to clusters: unit u covers tile rows cluster·um .. + cluster - 1 of tile column un,
  // this CTA taking row cluster·um + rank. A row past the last (odd tiles_m) still loads (its A
  // rows clamped) and computes, so that its peer gets its half of B; its stores are all skipped.
  const int tiles_m_c = (p.tiles_m + cluster - 1) / cluster;
  const int num_units = tiles_m_c * p.tiles_n;
  const int first_unit = static_cast<int>(blockIdx.x) / cluster;
  const int unit_step = static_cast<int>(gridDim.x) / cluster;
  const auto unit_coords = [&](int u, int& tm, int& tn) {
    tile_coords(u, tiles_m_c, p.tiles_n, tm, tn);
    tm = tm * cluster + static_cast<int>(rank);
  };
  if (tid < 128) {
    // ---- producer warpgroup ----
    sm90::setmaxnreg_dec<kProducerRegs>();
    // One thread issues the TMA loads; the rest of the warpgroup waits at the end.
    if (tid != 0) {
      finish();
      return;
    }
    int stage = 0;
    uint32_t phase = 0;
    for (int u = first_unit; u < num_units; u += unit_step) {
      int tm, tn;
      unit_coords(u, tm, tn);
      const int m0 = min(tm, p.tiles_m - 1) * kBM;
      const int n0 = tn * BN;
      // This CTA's half of B in a cluster (rows past N clamped: their columns are never stored).
      const int b_row = cluster > 1 ? min(n0 + static_cast<int>(rank) * (BN / 2), p.n - 1) : n0;
      const uint32_t b_off = L::kABytes + rank * (BN / 2) * kBK;
      for (int kt = 0; kt < p.ktiles; ++kt) {
        sm90::mbar_wait(empty(stage), phase ^ 1u);
        const uint32_t dst = base + stage * L::kOperandBytes;
        sm90::mbar_arrive_expect_tx(
            full(stage), L::kOperandBytes + (column_in_stages ? L::kColumnScaleBytes : 0));
        sm90::tma_load_2d(dst, &tma_a, kt * kBK, m0, full(stage));
        if (cluster > 1) {
          sm90::tma_load_2d_multicast(dst + b_off, &tma_b, kt * kBK, b_row, full(stage), 0x3);
        } else {
          sm90::tma_load_2d(dst + L::kABytes, &tma_b, kt * kBK, n0, full(stage));
        }
        if (column_in_stages) {
          sm90::bulk_load(column_scales(stage),
                          p.b_col_scales + static_cast<int64_t>(kt / p.kbt) * p.n_pad + n0,
                          L::kColumnScaleBytes, full(stage));
        }
        if (++stage == p.stages) {
          stage = 0;
          phase ^= 1u;
        }
      }
    }
    finish();
    return;
  }

  // ---- consumer warpgroups ----
  sm90::setmaxnreg_inc<kConsumerRegs>();
  const int ctid = tid - 128;
  const int cwg = ctid / 128;          // rows 64·cwg of the tile; ping-pong: every other tile
  const int warp = (ctid % 128) / 32;  // rows 16·warp of the warpgroup's 64
  const int lane = tid % 32;
  const int g = lane / 4;
  const int t = lane % 4;
  // The m64 row halves a warpgroup computes: both of a ping-pong tile's, else its own.
  constexpr int kHalves = kPingpong ? 2 : 1;
  int acc[kHalves][L::kAccs];
  float accf[kBlocked ? L::kAccs : 1];  // block mode's FP32 sums
  int stage = 0;
  uint32_t phase = 0;
  // The consumer warp's arrival on a stage's empty barrier, in both CTAs of a cluster.
  const auto release = [&](int s) {
    if (lane != 0) return;
    sm90::mbar_arrive(empty(s));
    if (cluster > 1) sm90::mbar_arrive_cluster(empty(s), rank ^ 1u);
  };

  // Waits for the stage's operands and issues its K block's wgmmas into acc as one group, the
  // first of them overwriting acc where `restart` (each K block in block mode; the tile's first
  // in the others, which accumulate all of K). Returns the stage it used and moves to the next.
  const auto issue = [&](bool restart) {
    sm90::mbar_wait(full(stage), phase);
    const uint32_t a_tile = base + stage * L::kOperandBytes + (kPingpong ? 0 : cwg * 64 * kBK);
    const uint32_t b_tile = base + stage * L::kOperandBytes + L::kABytes;
    const uint64_t a_desc = sm90::make_smem_desc(a_tile), b_desc = sm90::make_smem_desc(b_tile);
#pragma unroll
    for (int h = 0; h < kHalves; ++h)
      sm90::fence_registers(acc[h]);
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kBK / 32; ++ks) {
      const int accumulate = !restart || ks > 0;
#pragma unroll
      for (int h = 0; h < kHalves; ++h) {
#if LPBENCH_WGMMA_FULL_DESC
        (void)a_desc;
        (void)b_desc;
        wgmma_tile<BN>(acc[h], sm90::make_smem_desc(a_tile + h * 64 * kBK + 32 * ks),
                       sm90::make_smem_desc(b_tile + 32 * ks), accumulate);
#else
        wgmma_tile<BN>(acc[h], sm90::advance_smem_desc(a_desc, h * 64 * kBK + 32 * ks),
                       sm90::advance_smem_desc(b_desc, 32 * ks), accumulate);
#endif
      }
    }
    sm90::wgmma_commit();
    const int used = stage;
    if (++stage == p.stages) {
      stage = 0;
      phase ^= 1u;
    }
    return used;
  };

  // Block mode's scales for one K block: this thread's two rows of A (g and g + 8 of its warp's
  // 16) and, where B's blocks span whole tiles (kColumnB false), the tile's B scale.
  struct Scales {
    float sa0, sa1, sb;
  };
  // Adds a finished K block's partial · (sa·sb) into accf, as the reference rounds: I2F (exact),
  // FMUL, FADD. Accumulator j·4 + r holds row g (+8 for r ≥ 2), column 8·j + 2·t + r % 2.
  // Where each column has its own B scale (kColumnB), the shared address `columns` holds them (a
  // stage's slot or a buffer): column 8·j + 2·t + e's at 4·(8·j + 2·t + e) bytes into it.
  const auto fold = [&](const Scales& sc, uint32_t columns) {
    const float sc0 = __fmul_rn(sc.sa0, sc.sb);
    const float sc1 = __fmul_rn(sc.sa1, sc.sb);
    for (int rep = 0; rep < LPBENCH_WGMMA_FOLD_REPEAT; ++rep) {
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        float f[4] = {sc0, sc0, sc1, sc1};
        if constexpr (kColumnB) {
          const float2 sb = sm90::lds_f2(columns + 4u * (8 * j + 2 * t));
          f[0] = __fmul_rn(sc.sa0, sb.x);
          f[1] = __fmul_rn(sc.sa0, sb.y);
          f[2] = __fmul_rn(sc.sa1, sb.x);
          f[3] = __fmul_rn(sc.sa1, sb.y);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const float x = __int2float_rn(acc[0][4 * j + r] + rep);
#if LPBENCH_WGMMA_FOLD_FFMA
          accf[4 * j + r] = __fmaf_rn(x, f[r], accf[4 * j + r]);
#else
          accf[4 * j + r] = __fadd_rn(accf[4 * j + r], __fmul_rn(x, f[r]));
#endif
        }
      }
    }
    if constexpr (LPBENCH_WGMMA_FOLD_REPEAT == 0) {
      accf[0] = __fadd_rn(accf[0], __int2float_rn(acc[0][0]));  // keeps the wgmmas alive
    }
  };

  // The epilogue's per-row and per-column scales (tensor and row modes), staged in shared memory
  // by the consumers at the start of each tile, under its mainloop, and read after a barrier of
  // the two consumer warpgroups. Read from global memory in the epilogue, a few at a time as it
  // went, they stalled it: the row mode, whose 384 scales a tile are distinct, ran the llama2-7b
  // shapes about 30 % slower than the tensor mode, whose one scale every thread shares
  // (docs/perf-log.md §20).
  float* const epilogue_scales = reinterpret_cast<float*>(smem_raw + (column_buffer(2) - raw));
  // kColumnB: the K blocks this thread has folded, over all its tiles: block c folds from column
  // buffer c % 2, so a buffer is refilled only after the barrier before the next block's fold,
  // which every consumer reaches after its fold of the block before (tiles included).
  int folded = 0;
  // Ping-pong: the ring holds the CTA's tiles in order, ktiles stages each, so this warpgroup's
  // tile j (its j-th of the CTA's) starts at K block j·ktiles, whatever the other took between.
  constexpr int kTileStep = kPingpong ? 2 : 1;
  int parity = 0;
  int j_tile = kPingpong ? cwg : 0;
  for (int u = first_unit + j_tile * unit_step; u < num_units;
       u += kTileStep * unit_step, j_tile += kTileStep, parity ^= 1) {
    if constexpr (kPingpong) {
      const int64_t first = static_cast<int64_t>(j_tile) * p.ktiles;
      stage = static_cast<int>(first % p.stages);
      phase = static_cast<uint32_t>((first / p.stages) & 1);
    }
    int tm, tn;
    unit_coords(u, tm, tn);
    const int m0 = tm * kBM;
    const int n0 = tn * BN;
    // Cooperative: both warpgroups stage one tile's scales, in the buffer of the tile's parity.
    // Ping-pong: each warpgroup its own tile's, in its own buffer, once its threads have read the
    // last tile's (the barrier), since the next is staged before the last is stored.
    float* const tile_sb = epilogue_scales + (kPingpong ? cwg * (BN + kBM) : parity * BN);
    float* const tile_sa = kPingpong ? tile_sb + BN : epilogue_scales + 2 * BN + parity * kBM;
    const int stager = kPingpong ? ctid % 128 : ctid;
    if constexpr (!kBlocked && !kRaw) {
      if constexpr (kPingpong) consumer_barrier<128>(1 + cwg);
      if (stager < BN) {
        tile_sb[stager] = __ldg(p.b_scales + scale_row(min(n0 + stager, p.n - 1), p.b_block_rows));
      }
      if (stager < kBM) {
        tile_sa[stager] = __ldg(p.a_scales + scale_row(min(m0 + stager, p.m - 1), p.a_block_rows));
      }
    }
    if constexpr (kAccumulate) {
      // The tile of C that the epilogue adds into, asked into L2 now, under the mainloop: the
      // epilogue's loads then wait on L2, not on HBM. Each thread takes 128-byte lines of the
      // rows this warpgroup (ping-pong) or the pair (cooperative) stores.
      constexpr int kLines = BN * 4 / 128;  // a row's lines
      constexpr int kThreadsHere = kPingpong ? 128 : 256;
#pragma unroll 1
      for (int i = stager; i < kBM * kLines; i += kThreadsHere) {
        const int row = m0 + i / kLines;
        const int col = n0 + (i % kLines) * 32;
        if (row < p.m && col < p.n) {
          sm90::prefetch_l2(static_cast<const float*>(p.c) + static_cast<int64_t>(row) * p.n + col);
        }
      }
    }
    if constexpr (kBlocked) {
#pragma unroll
      for (int i = 0; i < L::kAccs; ++i)
        accf[i] = -0.0f;  // the identity of IEEE addition: the first block's term is kept as is
      const int r0 = m0 + cwg * 64 + warp * 16 + g;
      const float* sa_row0 =
          p.a_scales + static_cast<int64_t>(scale_row(min(r0, p.m - 1), p.a_block_rows)) * p.kext;
      const float* sa_row1 =
          p.a_scales +
          static_cast<int64_t>(scale_row(min(r0 + 8, p.m - 1), p.a_block_rows)) * p.kext;
      const float* sb_tile =
          p.b_scales + static_cast<int64_t>(scale_row(n0, p.b_block_rows)) * p.kext;
      const auto load_scales = [&](int kt) {
        return Scales{__ldg(sa_row0 + kt), __ldg(sa_row1 + kt),
                      kColumnB ? 1.0f : __ldg(sb_tile + kt)};
      };
      // kColumnB in buffers: consumer thread c < BN keeps column n0 + c's scale of the next K
      // block in a register, loaded a block ahead, and stores it into that block's column buffer
      // under the block's MMAs; the consumers' barrier before the fold makes the buffer whole.
      const bool column_loader = kColumnB && !column_in_stages && ctid < BN;
      const float* sb_column = column_loader ? p.b_col_scales + n0 + ctid : nullptr;
      const auto load_column = [&](int kb) {
        return column_loader ? __ldg(sb_column + static_cast<int64_t>(kb) * p.n_pad) : 0.0f;
      };
      // Each K block: its stages' wgmmas into one partial (one group in flight, each stage freed
      // once the next one's wgmmas are issued, as the unblocked loop does), the wait for the
      // last, its stage freed (held through the fold where it holds the column scales), the fold.
      // The next block's A and tile B scales (and column B scales) are loaded first, so their
      // latency hides under this block's MMAs. (Staging those in shared memory by the producer's
      // own loads made every stage wait for them and halved the kernel's speed; folding one
      // block while the next one's wgmmas run did not help: §6c. At K blocks of 1024, column scales
      // in the stages ran the wgrad products 20–30 % slower than one B scale a tile, in buffers
      // 4–15 %: §29.) A K block of 256 or more folds once per 2–8 stages, so the fold's cost
      // falls by that factor (§27); at 1024 the folds take 0–13 % of the kernel's time, at 256
      // 19–33 % (§32). A fold overlapped with the next block's MMAs needs a second INT32 partial,
      // which ptxas would not fit in this kernel's registers without spilling (§30, §32); the
      // two warpgroups offset by a few stages, so that one folds under the other's MMAs, ran
      // no faster, nor did loading each tile's first scales under the tile before (§32). What
      // the kernel waits on most is its operands' arrival (§32).
      Scales cur = load_scales(0);
      float column_cur = load_column(0);
      for (int kb = 0; kb < p.kext; ++kb) {
        const Scales next = load_scales(min(kb + 1, p.kext - 1));
        const float column_next = load_column(min(kb + 1, p.kext - 1));
        int used = issue(true);
#pragma unroll 1
        for (int kt = kb * p.kbt + 1; kt < min((kb + 1) * p.kbt, p.ktiles); ++kt) {
          const int now = issue(false);
          sm90::wgmma_wait<1>();
          sm90::fence_registers(acc[0]);
          release(used);
          used = now;
        }
        // Under the block's MMAs (a tile's first block waits here for its load). The buffer was
        // last read by the fold two blocks back, which every consumer finished before the
        // barrier of the block before.
        if (column_loader) {
          reinterpret_cast<float*>(smem_raw + (column_buffer(folded & 1) - raw))[ctid] = column_cur;
        }
        sm90::wgmma_wait<0>();
        sm90::fence_registers(acc[0]);
        __syncwarp();
        if (!column_in_stages) release(used);
        if (kColumnB && !column_in_stages) consumer_barrier<256>(2);
        fold(cur, column_in_stages ? column_scales(used) : column_buffer(folded & 1));
        if (column_in_stages) {
          __syncwarp();
          release(used);
        }
        cur = next;
        column_cur = column_next;
        ++folded;
      }
    } else {
      // Ping-pong: this warpgroup's waits on a stage's full barrier go by phase parity, so they
      // must not run ahead of the stage's previous use, which may be the other warpgroup's last
      // tile; each warpgroup starts its tile's mainloop once the other has waited for all of its
      // own (barrier 3 + the signalling warpgroup). This also takes the MMAs in turn, which
      // staggers the two epilogues.
      if constexpr (kPingpong) {
        if (j_tile > 0) consumer_barrier<256>(3 + (cwg ^ 1));
      }
      // One group in flight: after issuing K tile kt, the wgmmas of kt - 1 are done and free
      // their stage.
      int prev_stage = -1;
      for (int kt = 0; kt < p.ktiles; ++kt) {
        const int used = issue(kt == 0);
        sm90::wgmma_wait<1>();
#pragma unroll
        for (int h = 0; h < kHalves; ++h)
          sm90::fence_registers(acc[h]);
        if (prev_stage >= 0) release(prev_stage);
        prev_stage = used;
      }
      if constexpr (kPingpong) {
        if (u + unit_step < num_units) consumer_arrive<256>(3 + cwg);
      }
      sm90::wgmma_wait<0>();
#pragma unroll
      for (int h = 0; h < kHalves; ++h)
        sm90::fence_registers(acc[h]);
      release(prev_stage);
    }

    // Epilogue: accumulator j·4 + r of a half holds row g (+8 for r ≥ 2), column 8·j + 2·t + r % 2.
    OutT* c = static_cast<OutT*>(p.c);
    if constexpr (!kBlocked && !kRaw) {
      // Every thread that stages this tile's scales has staged them (cooperative: and finished
      // the previous tile's epilogue, so the other buffer is free for the next tile).
      if constexpr (kPingpong) {
        consumer_barrier<128>(1 + cwg);
      } else {
        consumer_barrier<256>(1);
      }
    }
    // Each column's B scale and bias serve both halves' rows: the halves go innermost, so that
    // nothing is held from one half to the other.
    int row0[kHalves];
    float sa[kHalves][2] = {};
#pragma unroll
    for (int half = 0; half < kHalves; ++half) {
      row0[half] = m0 + (kPingpong ? 64 * half : cwg * 64) + warp * 16 + g;
      if constexpr (!kBlocked && !kRaw) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
          sa[half][h] = tile_sa[row0[half] + 8 * h - m0];
      }
    }
    // Accumulator 4·j + 2·h + e of a half, dequantized as the reference rounds (I2F, then times
    // sa·sb), or block mode's FP32 sum; bias is added after.
    const auto dequantized = [&](int half, int j, int h, int e, float sb_e) {
      if constexpr (kBlocked) {
        return accf[4 * j + 2 * h + e];
      } else {
        return __fmul_rn(__int2float_rn(acc[half][4 * j + 2 * h + e]),
                         __fmul_rn(sa[half][h], sb_e));
      }
    };
    // A tile wholly inside C, with paired stores and no bias (most tiles of a training GEMM),
    // stores with no per-pair checks: straight-line code where the general path below branches
    // around every pair (ptxas emitted ~3 branches a pair there).
    // (N under 2^24 keeps a tile's row offsets, up to 72·N, in 32 bits.)
    const bool interior = !LPBENCH_WGMMA_GENERAL_EPILOGUE && p.vec_c && p.bias == nullptr &&
                          m0 + kBM <= p.m && n0 + BN <= p.n && p.n < (1 << 24);
    // Whole tiles of BF16 or FP32 C (not added into) are stored four columns a lane where C is
    // aligned for it; the rest by pairs. (Unaligned C takes the general path: a third copy of
    // the epilogue in a kernel made ptxas spill.)
    constexpr bool kQuadStores =
        !kRaw && !kAccumulate && (LPBENCH_WGMMA_PAIR_STORES & (sizeof(OutT) == 2 ? 1 : 2)) == 0;
    if constexpr (kQuadStores) {
      if (interior && p.quad_c) {
        // A warp's pair stores write half of a row's 32-byte sector per instruction (BF16), or
        // one sector (FP32), and the next column group the rest. Each lane pair (t, t ^ 1)
        // trades one pair of every two column groups, so that a lane stores four adjacent
        // columns at once: half the store instructions, and no BF16 sector written in halves.
        // Lane t even ends with columns 8j + 2t .. + 3, odd with 8j + 2t + 6 .. + 9.
        using Pair = std::conditional_t<sizeof(OutT) == 2, uint32_t, uint2>;
        const bool odd = (t & 1) != 0;
        OutT* const tile_c = c + static_cast<int64_t>(row0[0]) * p.n + n0 + 2 * t + (odd ? 6 : 0);
#pragma unroll
        for (int j = 0; j < BN / 8; j += 2) {
          float sb[2][2] = {};
          if constexpr (!kBlocked) {
#pragma unroll
            for (int q = 0; q < 2; ++q) {
              sb[q][0] = tile_sb[8 * (j + q) + 2 * t];
              sb[q][1] = tile_sb[8 * (j + q) + 2 * t + 1];
            }
          }
#pragma unroll
          for (int half = 0; half < kHalves; ++half) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              // The pair of column group j + q as stored: packed BF16, or two FP32 words.
              const auto pair = [&](int q) -> Pair {
                const float v0 = dequantized(half, j + q, h, 0, sb[q][0]);
                const float v1 = dequantized(half, j + q, h, 1, sb[q][1]);
                if constexpr (sizeof(OutT) == 2) {
                  const __nv_bfloat162 b = __floats2bfloat162_rn(v0, v1);
                  return *reinterpret_cast<const uint32_t*>(&b);
                } else {
                  return make_uint2(__float_as_uint(v0), __float_as_uint(v1));
                }
              };
              // The pair this lane sends (its partner's columns), then the pair it keeps.
              const Pair sent = odd ? pair(0) : pair(1);
              Pair got;
              if constexpr (sizeof(OutT) == 2) {
                got = __shfl_xor_sync(0xffffffffu, sent, 1);
              } else {
                got.x = __shfl_xor_sync(0xffffffffu, sent.x, 1);
                got.y = __shfl_xor_sync(0xffffffffu, sent.y, 1);
              }
              const Pair kept = odd ? pair(1) : pair(0);
              const Pair lo = odd ? got : kept;
              const Pair hi = odd ? kept : got;
              OutT* const dst = tile_c + (row0[half] - row0[0] + 8 * h) * p.n + 8 * j;
              if constexpr (sizeof(OutT) == 2) {
                if (LPBENCH_WGMMA_NO_STORE && lo != 0x12345678u) continue;
                *reinterpret_cast<uint2*>(dst) = make_uint2(lo, hi);
              } else {
                if (LPBENCH_WGMMA_NO_STORE && lo.x != 0x12345678u) continue;
                *reinterpret_cast<uint4*>(dst) = make_uint4(lo.x, lo.y, hi.x, hi.y);
              }
            }
          }
        }
        continue;
      }
    }
    if (!kQuadStores && interior) {
      OutT* const tile_c = c + static_cast<int64_t>(row0[0]) * p.n + n0 + 2 * t;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        float sb[2] = {0.0f, 0.0f};
        if constexpr (!kRaw && !kBlocked) {
          sb[0] = tile_sb[8 * j + 2 * t];
          sb[1] = tile_sb[8 * j + 2 * t + 1];
        }
#pragma unroll
        for (int half = 0; half < kHalves; ++half) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            OutT* const dst = tile_c + (row0[half] - row0[0] + 8 * h) * p.n + 8 * j;
            if constexpr (kRaw) {
              store_pair_aligned<OutT>(dst, acc[half][4 * j + 2 * h], acc[half][4 * j + 2 * h + 1]);
            } else {
              float v[2] = {dequantized(half, j, h, 0, sb[0]), dequantized(half, j, h, 1, sb[1])};
              if constexpr (kAccumulate) {
                // Each pair's load waits for the store before it (the compiler cannot tell that
                // they are different elements); loading pairs ahead made ptxas spill. The tile
                // of C is in L2 by now (the prefetch above), so the wait is on L2, not HBM.
                const float2 old = *reinterpret_cast<const float2*>(dst);
                v[0] = __fadd_rn(old.x, v[0]);
                v[1] = __fadd_rn(old.y, v[1]);
              }
              if (LPBENCH_WGMMA_NO_STORE && v[0] != 1.2345e-30f) continue;
              store_pair_aligned<OutT>(dst, to_out<OutT>(v[0]), to_out<OutT>(v[1]));
            }
          }
        }
      }
      continue;
    }
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int col = n0 + 8 * j + 2 * t;
      float sb[2] = {0.0f, 0.0f};
      float bias[2] = {0.0f, 0.0f};
      if constexpr (!kRaw) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int cc = min(col + e, p.n - 1);
          if constexpr (!kBlocked) sb[e] = tile_sb[col + e - n0];
          if (p.bias != nullptr) bias[e] = __ldg(p.bias + cc);
        }
      }
#pragma unroll
      for (int half = 0; half < kHalves; ++half) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row0[half] + 8 * h;
          if (row >= p.m) continue;
          if constexpr (kRaw) {
            store_pair<OutT>(c, p.n, row, col, acc[half][4 * j + 2 * h],
                             acc[half][4 * j + 2 * h + 1], p.vec_c);
          } else {
            float v[2];
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              v[e] = dequantized(half, j, h, e, sb[e]);
              if (p.bias != nullptr) v[e] = __fadd_rn(v[e], bias[e]);
            }
            if constexpr (kAccumulate) add_existing(c, p.n, row, col, v);
            if (LPBENCH_WGMMA_NO_STORE && v[0] != 1.2345e-30f) continue;
            store_pair<OutT>(c, p.n, row, col, to_out<OutT>(v[0]), to_out<OutT>(v[1]), p.vec_c);
          }
        }
      }
    }
  }
  finish();
#else
  // Built for sm_90a only; the launcher refuses other devices before launching.
  (void)tma_a;
  (void)tma_b;
  (void)p;
  __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled from the driver the runtime already loaded (its CUDA 12.0 ABI).
EncodeTiled encode_tiled() {
  static const EncodeTiled fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    LPBENCH_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                                        cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || f == nullptr) {
      throw CudaError("cuTensorMapEncodeTiled is not in this CUDA driver (needs 12.0 or later)");
    }
    return reinterpret_cast<EncodeTiled>(f);
  }();
  return fn;
}

// A [rows, k] INT8 row-major operand as TMA boxes of box_rows × 128 bytes, 128-byte swizzled.
CUtensorMap operand_map(const void* ptr, int64_t rows, int64_t k, int box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k)};  // bytes from row to row
  const cuuint32_t box[2] = {kBK, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = encode_tiled()(
      &map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(ptr), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw CudaError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(r) + ") for a [" +
                    std::to_string(rows) + ", " + std::to_string(k) + "] operand, box " +
                    std::to_string(box_rows) + "x128");
  }
  return map;
}

struct DeviceInfo {
  int major = 0, minor = 0, sms = 0;
};

DeviceInfo device_info() {
  static std::array<std::atomic<int>, 64> cache{};  // major·1e6 + minor·1e4 + SMs, 0: unknown
  int device = 0;
  LPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  const int slot = device < 64 ? device : 63;
  int packed = device < 64 ? cache[slot].load() : 0;
  if (packed == 0) {
    int major = 0, minor = 0, sms = 0;
    LPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    LPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    LPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    packed = major * 1000000 + minor * 10000 + sms;
    if (device < 64) cache[slot].store(packed);
  }
  return {packed / 1000000, (packed / 10000) % 100, packed % 10000};
}

// Where block mode's per-column B scales reach the fold (Params::column_in_stages): in the
// stages for K blocks of 128, where a block is one stage and the buffers' barrier would come
// every stage; in the consumers' buffers for longer blocks, where they measured 13–27 % faster
// on the wgrad products at 1024 (docs/perf-log.md §29). LPBENCH_WGMMA_COLUMN_SCALES=stages|buffers
// forces one (measurement only).
bool column_scales_in_stages(int kbt) {
  static const int forced = [] {
    const char* v = std::getenv("LPBENCH_WGMMA_COLUMN_SCALES");
    if (v == nullptr) return 0;
    return std::string(v) == "stages" ? 1 : std::string(v) == "buffers" ? 2 : 0;
  }();
  if (forced != 0) return forced == 1;
  return kbt == 1;
}

bool aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

void require_sm90() {
  const DeviceInfo d = device_info();
  LPBENCH_CUDA_REQUIRE(d.major == 9 && d.minor == 0,
                       "the wgmma GEMM runs on sm_90 (H100/H200) only; this device is sm_" +
                           std::to_string(d.major) + std::to_string(d.minor) +
                           " (use the cublaslt or lpbench INT8 GEMM there)");
}

// The deepest ring that fits every mode of this tile width (block mode's per-column B scales
// take 1 KiB beside the ring on 128-wide tiles: 6 stages), or ping-pong's (no block scales: 7).
template <int BN, bool kColumnB>
int stages_that_fit() {
  // (Also names kAccs in a layout no kernel instantiates, which a diagnostic build may leave so.)
  static_assert(Layout<BN, kColumnB>::kAccs * 2 == BN);
  const size_t fixed = Layout<BN, kColumnB>::smem_bytes(0);
  const size_t stage = Layout<BN, kColumnB>::smem_bytes(1) - fixed;
  return static_cast<int>((kSmemLimit - fixed) / stage);
}

int max_stages(int tile_n, bool pingpong) {
  if (pingpong) return stages_that_fit<128, false>();
  return tile_n == 256 ? stages_that_fit<256, false>() : stages_that_fit<128, true>();
}

// out[kt · n_pad + c] = scales[scale_row(min(c, n - 1)) · kext + kt]: per-column B scales
// K-block-major, through a shared-memory tile so both sides are coalesced.
__global__ void column_scales_kmajor(const float* scales, int block_rows, int n, int kext,
                                     int n_pad, float* out) {
  __shared__ float tile[32][33];
  const int c0 = blockIdx.x * 32, k0 = blockIdx.y * 32;
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int c = min(c0 + i, n - 1), kt = k0 + threadIdx.x;
    if (kt < kext)
      tile[i][threadIdx.x] = scales[static_cast<int64_t>(scale_row(c, block_rows)) * kext + kt];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int kt = k0 + i, c = c0 + threadIdx.x;
    if (kt < kext && c < n_pad) out[static_cast<int64_t>(kt) * n_pad + c] = tile[threadIdx.x][i];
  }
}

template <int BN, bool kBlocked, typename OutT, bool kColumnB = false, bool kPingpong = false,
          bool kAccumulate = false>
void launch(const Params& p, const CUtensorMap& ma, const CUtensorMap& mb, int sms,
            cudaStream_t stream) {
  const size_t smem = Layout<BN, kColumnB>::smem_bytes(p.stages);
  auto kernel = wgmma_gemm_kernel<BN, kBlocked, OutT, kColumnB, kPingpong, kAccumulate>;
  LPBENCH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem)));
  if (p.cluster_m == 1) {
    const int tiles = p.tiles_m * p.tiles_n;
    kernel<<<static_cast<unsigned>(std::min(tiles, sms)), kThreads, smem, stream>>>(ma, mb, p);
    LPBENCH_CUDA_CHECK_LAUNCH();
    return;
  }
  // Pairs of CTAs: as many as can be resident at once (a pair needs two free SMs of one GPC),
  // never more than there are pairs of tile rows' units.
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(p.cluster_m);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  config.gridDim = dim3(static_cast<unsigned>(sms / p.cluster_m * p.cluster_m));
  int resident = 0;
  LPBENCH_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&resident, kernel, &config));
  LPBENCH_CUDA_REQUIRE(resident > 0, "no cluster of " + std::to_string(p.cluster_m) +
                                         " CTAs fits on this device with " + std::to_string(smem) +
                                         " bytes of shared memory each");
  const int units = (p.tiles_m + p.cluster_m - 1) / p.cluster_m * p.tiles_n;
  config.gridDim = dim3(static_cast<unsigned>(std::min(units, resident) * p.cluster_m));
  LPBENCH_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, ma, mb, p));
}

// The common path of both entry points, after their own argument checks.
void run(const WgmmaProblem& problem, const void* a, const void* b, Params p,
         const WgmmaConfig* requested, cudaStream_t stream, bool accumulate = false) {
  LPBENCH_CUDA_REQUIRE(a != nullptr && b != nullptr && p.c != nullptr, "a pointer is null");
  LPBENCH_CUDA_REQUIRE(problem.m > 0 && problem.n > 0 && problem.k > 0,
                       "M, N and K must be positive, got " + to_string(problem));
  LPBENCH_CUDA_REQUIRE(problem.k % 16 == 0,
                       "K must be a multiple of 16 (the TMA row pitch), got K=" +
                           std::to_string(problem.k) + "; pad K with zeros");
  LPBENCH_CUDA_REQUIRE(aligned(a, 16) && aligned(b, 16), "A and B must be 16-byte aligned");
  LPBENCH_CUDA_REQUIRE(problem.m < (int64_t{1} << 31) && problem.n < (int64_t{1} << 31) &&
                           problem.k < (int64_t{1} << 31),
                       "sizes must fit in 32 bits");
  LPBENCH_CUDA_REQUIRE(problem.scaling == WgmmaScaling::block || problem.k <= kMaxKNoBlocks,
                       "K=" + std::to_string(problem.k) +
                           " could overflow INT32 over all of K (at most " +
                           std::to_string(kMaxKNoBlocks) + " without K blocks)");
  if (requested != nullptr) {
    const std::string why = wgmma_config_error(problem, *requested);
    LPBENCH_CUDA_REQUIRE(why.empty(), why);
  }
  require_sm90();
  const DeviceInfo d = device_info();
  WgmmaConfig config = requested ? *requested : select_wgmma_config(problem, d.sms);
  if constexpr (LPBENCH_WGMMA_BLOCK_BN != 128) {
    if (problem.scaling == WgmmaScaling::block) {  // the timing experiment (top of the file)
      config.tile_n = LPBENCH_WGMMA_BLOCK_BN;
      config.stages = std::min(5, stages_that_fit<LPBENCH_WGMMA_BLOCK_BN, true>());
      config.cluster_m = 1;
    }
  }
  const int64_t tiles_m = (problem.m + kBM - 1) / kBM;
  const int64_t tiles_n = (problem.n + config.tile_n - 1) / config.tile_n;
  LPBENCH_CUDA_REQUIRE(tiles_m * tiles_n <= 0x7fffffff && kGroupM * tiles_n <= 0x7fffffff,
                       "too many tiles");
  p.m = static_cast<int>(problem.m);
  p.n = static_cast<int>(problem.n);
  p.k = static_cast<int>(problem.k);
  p.ktiles = static_cast<int>((problem.k + kBK - 1) / kBK);
  p.tiles_m = static_cast<int>(tiles_m);
  p.tiles_n = static_cast<int>(tiles_n);
  p.stages = config.stages;
  p.cluster_m = config.cluster_m;
  const CUtensorMap ma = operand_map(a, problem.m, problem.k, kBM);
  // In a cluster each CTA loads its share of B's tile rows.
  const CUtensorMap mb = operand_map(b, problem.n, problem.k, config.tile_n / config.cluster_m);
  NvtxRange range("lpbench::cuda::wgmma_gemm");
  // Unblocked modes: 128 × 256 tiles split by the two warpgroups, 128 × 128 tiles split, or
  // 128 × 128 tiles each warpgroup's own (ping-pong).
  const auto unblocked = [&](auto out, auto add) {
    using OutT = decltype(out);
    constexpr bool kAdd = decltype(add)::value;
    if (config.pingpong) {
      launch<128, false, OutT, false, true, kAdd>(p, ma, mb, d.sms, stream);
    } else if (config.tile_n == 256) {
      launch<256, false, OutT, false, false, kAdd>(p, ma, mb, d.sms, stream);
    } else {
      launch<128, false, OutT, false, false, kAdd>(p, ma, mb, d.sms, stream);
    }
  };
  switch (problem.scaling) {
    case WgmmaScaling::none:
      unblocked(int32_t{}, std::false_type{});
      break;
    case WgmmaScaling::tensor:
    case WgmmaScaling::row:
      if (problem.out == DType::bf16) {
        unblocked(__nv_bfloat16{}, std::false_type{});
      } else if (accumulate) {
        unblocked(float{}, std::true_type{});
      } else {
        unblocked(float{}, std::false_type{});
      }
      break;
    case WgmmaScaling::block: {
      // Block mode's tiles are 128 columns wide and start at multiples of 128: where B's scale
      // blocks are multiples of 128 rows, one B scale serves a tile and K block.
      constexpr int kBlockBN = LPBENCH_WGMMA_BLOCK_BN;
      const bool column_b = kBlockBN != 128 || p.b_block_rows % kBK != 0;
      if (!column_b) {
        if (problem.out == DType::bf16) {
          launch<128, true, __nv_bfloat16>(p, ma, mb, d.sms, stream);
        } else if (accumulate) {
          launch<128, true, float, false, false, true>(p, ma, mb, d.sms, stream);
        } else {
          launch<128, true, float>(p, ma, mb, d.sms, stream);
        }
        break;
      }
      // Each column its own B scale (wgrad's activations): a K-block-major copy of B's scales,
      // kext · n_pad floats (5.6 MB for K = 16384, N = 11008), made on the stream and freed
      // after the GEMM, so that a tile's 128 for one K block are contiguous.
      p.n_pad = p.tiles_n * kBlockBN;
      float* kmajor = nullptr;
      LPBENCH_CUDA_CHECK(
          cudaMallocAsync(&kmajor, sizeof(float) * static_cast<size_t>(p.kext) * p.n_pad, stream));
      const dim3 grid(static_cast<unsigned>(p.n_pad / 32),
                      static_cast<unsigned>((p.kext + 31) / 32));
      column_scales_kmajor<<<grid, dim3(32, 8), 0, stream>>>(p.b_scales, p.b_block_rows, p.n,
                                                             p.kext, p.n_pad, kmajor);
      LPBENCH_CUDA_CHECK_LAUNCH();
      struct FreeOnExit {  // stream-ordered, also when a launch below throws
        float* ptr;
        cudaStream_t stream;
        ~FreeOnExit() { (void)cudaFreeAsync(ptr, stream); }
      } free_on_exit{kmajor, stream};
      p.b_col_scales = kmajor;
      p.column_in_stages = column_scales_in_stages(p.kbt);
      if (problem.out == DType::bf16) {
        launch<kBlockBN, true, __nv_bfloat16, true>(p, ma, mb, d.sms, stream);
      } else if (accumulate) {
        launch<kBlockBN, true, float, true, false, true>(p, ma, mb, d.sms, stream);
      } else {
        launch<kBlockBN, true, float, true>(p, ma, mb, d.sms, stream);
      }
      break;
    }
  }
}

}  // namespace

int wgmma_max_stages(int tile_n, bool pingpong) {
  return max_stages(tile_n, pingpong);
}

bool wgmma_supported() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return false;
  }
  const DeviceInfo d = device_info();
  return d.major == 9 && d.minor == 0;
}

WgmmaConfig wgmma_config_for(const WgmmaProblem& problem) {
  return select_wgmma_config(problem, device_info().sms);
}

void wgmma_scaled_gemm(const ScaledGemmArgs& args, cudaStream_t stream, const WgmmaConfig* config) {
  LPBENCH_CUDA_REQUIRE(args.ab_type == DType::int8,
                       std::string("only int8 operands, got ") + dtype_name(args.ab_type));
  LPBENCH_CUDA_REQUIRE(args.a_scales != nullptr && args.b_scales != nullptr,
                       "a scale pointer is null");
  LPBENCH_CUDA_REQUIRE(args.a_block_rows >= 0 && args.b_block_rows >= 0 &&
                           args.a_block_rows < (int64_t{1} << 31) &&
                           args.b_block_rows < (int64_t{1} << 31),
                       "block_rows must be in [0, 2³¹) (0: one scale for all rows)");
  LPBENCH_CUDA_REQUIRE(
      kblock_supported(args.kblock),
      "kblock must be 0, 128, 256, 512 or 1024, got " + std::to_string(args.kblock));
  LPBENCH_CUDA_REQUIRE(args.c_type == DType::bf16 || args.c_type == DType::fp32,
                       std::string("c_type must be bf16 or fp32, got ") + dtype_name(args.c_type));
  const WgmmaProblem problem = wgmma_problem(args);
  Params p{};
  p.a_scales = args.a_scales;
  p.a_block_rows = static_cast<int>(args.a_block_rows);
  p.b_scales = args.b_scales;
  p.b_block_rows = static_cast<int>(args.b_block_rows);
  p.kext = args.kblock != 0 ? static_cast<int>((args.k + args.kblock - 1) / args.kblock) : 1;
  p.kbt = args.kblock != 0 ? static_cast<int>(args.kblock / kBK) : 1;
  p.bias = args.bias;
  p.c = args.c;
  p.vec_c = args.n % 2 == 0 && aligned(args.c, args.c_type == DType::bf16 ? 4 : 8);
  p.quad_c = args.n % 4 == 0 && aligned(args.c, args.c_type == DType::bf16 ? 8 : 16);
  LPBENCH_CUDA_REQUIRE(!args.accumulate || args.c_type == DType::fp32,
                       "accumulate takes an FP32 C");
  run(problem, args.a, args.b, p, config, stream, args.accumulate);
}

void wgmma_int8_gemm(const int8_t* a, const int8_t* b, int32_t* c, int64_t m, int64_t n, int64_t k,
                     cudaStream_t stream, const WgmmaConfig* config) {
  WgmmaProblem problem;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  problem.scaling = WgmmaScaling::none;
  problem.out = DType::int32;
  Params p{};
  p.kext = 1;
  p.kbt = 1;
  p.c = c;
  p.vec_c = n % 2 == 0 && aligned(c, 8);
  run(problem, a, b, p, config, stream);
}

}  // namespace lpbench::cuda
