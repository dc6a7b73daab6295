// One-pass tensorwise quantization of BF16 X [rows, cols] (sides multiples of 128) into X's
// layout, Xᵀ's, or both, with the numerics of kernels/reference/quantize.cpp bit for bit. The
// same kernel applies kb × kb block scales (kb a multiple of 128: one scale a tile) found by the
// general path's amax pass: int8-block:k-block=<kb>'s weights, W and Wᵀ.
//
// Why a kernel of its own: the general tile kernel (quantize.cu) holds a 128×128 tile in FP32
// shared memory (64 KiB, three CTAs an SM), reads it back four values at a time for each layout
// and finds its scale through a separate scales kernel; it ran at 50–64 % of DRAM bandwidth,
// issue-bound (docs/perf-log.md §8). With one scale for the whole tensor a value's format byte
// is the same in both layouts, so this kernel quantizes each value once, in registers, as soon
// as it is loaded: X's layout is stored straight from registers, and only the format bytes go
// through shared memory (16 KiB a CTA) to be transposed four by four with byte permutes and
// written 128 contiguous bytes a warp instruction (quantize_byte_tile.cuh). The scale is computed
// from the amax in every CTA (one division), so there is no scales kernel and no copy of a
// producer's amax before it: one launch where there were three. Under delayed scaling it also
// takes the amax history's largest amax from the ring itself and records max |x| into it
// (kRecord): an eager delayed-scaling step launches its quantizations and nothing else; replayed
// from a CUDA graph, a one-thread launch after each moves the ring on (amax_ring.cuh).
//
// Where the scale is known before X is, the kernel can also compute X as it loads it: SwiGLU's
// output from the gate/up product under delayed scaling (quantize_swiglu_tensorwise), a norm's
// from h and the row's inverse RMS (quantize_rmsnorm_tensorwise) under delayed scaling or by the
// amax the norm found without writing its output, which is then never written in BF16 nor read
// back (docs/perf-log.md §59, §60, §61); and, in a kernel of its own, SwiGLU's gradient from
// gate/up and the gradient of SwiGLU's output under delayed scaling
// (quantize_swiglu_backward_tensorwise, §65); and RoPE's backward, from attention's dQ, dK and
// dV, likewise, its tile staged in shared memory (quantize_rope_backward_tensorwise, §66, §68,
// §69). A plain X of at most two tiles for each CTA of a resident wave is quantized as a walk of
// that wave instead, each CTA's next tile copied into shared memory while it quantizes the one
// before (quantize_tensorwise_walk_kernel, §70).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/amax_ring.cuh"
#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/quantize_byte_tile.cuh"
#include "kernels/cuda/quantize_math.cuh"
#include "kernels/cuda/quantize_tensorwise.cuh"
#include "kernels/cuda/resident_grid.cuh"
#include "kernels/cuda/rmsnorm_math.cuh"
#include "kernels/cuda/rope_backward_tile.h"
#include "kernels/cuda/rope_math.cuh"
#include "kernels/cuda/swiglu_math.cuh"

namespace lpbench::cuda {

namespace {

using namespace byte_tile;

// Where RoPE's backward reads the gradient of the fused QKV product from: part p (dQ, dK, dV) has
// its element (b, t, h, i) at in[p] + b · batch_stride[p] + t · token_stride[p] + h ·
// head_stride[p] + i; dQ's heads fill X's columns up to q_end, dK's up to k_end, dV's the rest,
// heads of head_dim elements (a divisor of kTile: a tile's columns are whole heads of one part).
struct RopeSource {
  const __nv_bfloat16* in[3];
  int64_t batch_stride[3], token_stride[3], head_stride[3];
  int64_t q_end, k_end, seq;
  int head_dim;
  const float* cos;  // [>= seq, head_dim / 2]
  const float* sin;
};

struct TensorwiseParams {
  const __nv_bfloat16* x;
  int64_t ld;
  int64_t rows, cols;  // of X
  // SwiGLU (quantize_swiglu_tensorwise): X[r, c] = silu(x[r, c]) · x[r, c + up_offset], rounded
  // to BF16 as SwiGLU's kernel stores it (x holds rows of [gate | up], ld elements apart).
  int64_t up_offset;
  // SwiGLU's backward (quantize_swiglu_backward_tensorwise): X is d gate_up [rows, 2·inner], its
  // columns c < inner d_gate and the rest d_up, computed from x (gate_up, as above, up_offset =
  // inner) and d_out [rows, inner] (the gradient of SwiGLU's output, inner elements a row).
  const __nv_bfloat16* d_out;
  // RMSNorm (quantize_rmsnorm_tensorwise): X[r, c] = x[r, c] · rstd[r] · norm_weight[c], rounded
  // to BF16 as the norm's kernel stores it (x holds h, the norm's input).
  const float* rstd;
  const float* norm_weight;
  // RoPE's backward (quantize_rope_backward_tensorwise): X is the gradient of the fused QKV
  // product [batch · seq, cols], computed from attention's dQ and dK (rotated back) and dV
  // (copied): `rope`.
  RopeSource rope;
  const uint32_t* amax;  // max |x| as FP32 bits, on the device
  DType fmt;
  float fmax;
  uint8_t* values;    // X's layout [rows, cols], or nullptr
  uint8_t* values_t;  // Xᵀ's layout [cols, rows], or nullptr
  float* scales;      // one scale each, written by the first CTA; either may be nullptr
  float* scales_t;
  // Square blocks instead (kb × kb, kb a multiple of the tile): the inverse scale of each block,
  // found and written with the scales by the general path's amax pass, at (r0 / kb) · inv_sr +
  // (c0 / kb) · inv_sc for the tile of X at (r0, c0). Null: tensorwise, from `amax`.
  const float* inv_blocks;
  int64_t kb, inv_sr, inv_sc;
  // Delayed scaling and a history's record (kRecord): values past the amax saturate and max |x|
  // is folded into *amax_seen (at most one atomic a CTA), or with `ring` (an amax history,
  // QuantizeArgs::history, of `ring_slots` slots) into its current slot: `ring_current`, whose
  // next slot the first CTA zeroes and makes the current one; or where it is -1 the one the
  // ring's index says, whose next slot the first CTA zeroes and advance_ring_kernel then makes
  // the current one (amax_ring.cuh). With `ring_amax`, the amax is the history's, in place of
  // `amax`.
  uint32_t* amax_seen;
  uint32_t* ring;
  int64_t ring_slots, ring_current;
  bool ring_amax;
};

// The ring moved on, after the quantizing kernel (amax_ring.cuh says why a launch of its own).
__global__ void advance_ring_kernel(uint32_t* ring, int64_t slots) {
  ring[slots] = static_cast<uint32_t>(ring_turn(ring, slots).next);
}

// The thread's eight loads of SwiGLU's output tile at (r0, c0), as `load` gives X's: the gate's
// and the up projection's sixteen loads in flight at once, then each value computed and rounded
// to BF16 in the registers X's loads fill.
__device__ __forceinline__ void load_swiglu(const TensorwiseParams& p, int64_t r0, int64_t c0,
                                            uint4 (&raw)[kLoads]) {
  uint4 up[kLoads];
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const __nv_bfloat16* gate = p.x + (r0 + load_row(i)) * p.ld + c0 + load_col();
    raw[i] = quant::load_vec(gate);
    up[i] = quant::load_vec(gate + p.up_offset);
  }
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const Bf16x8 g = unpack_bf16x8(raw[i]);
    const Bf16x8 u = unpack_bf16x8(up[i]);
    Bf16x8 out;
#pragma unroll
    for (int e = 0; e < kBf16PerVector; ++e)
      out.v[e] = swiglu_value(g.v[e], u.v[e]);
    raw[i] = pack_bf16x8(out);
  }
}

// The thread's eight loads of the norm's output tile at (r0, c0), as `load` gives X's: h's loads
// and the eight rows' inverse RMS in flight at once, then each value computed and rounded to
// BF16 in the registers X's loads fill. The thread's eight columns share their weights.
__device__ __forceinline__ void load_rmsnorm(const TensorwiseParams& p, int64_t r0, int64_t c0,
                                             uint4 (&raw)[kLoads]) {
  float rstd[kLoads];
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    raw[i] = quant::load_vec(p.x + (r0 + load_row(i)) * p.ld + c0 + load_col());
    rstd[i] = __ldg(p.rstd + r0 + load_row(i));
  }
  float w[kBf16PerVector];
  load_float8(p.norm_weight + c0 + load_col(), w);
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    const Bf16x8 h = unpack_bf16x8(raw[i]);
    Bf16x8 out;
#pragma unroll
    for (int e = 0; e < kBf16PerVector; ++e)
      out.v[e] = rmsnorm_value(h.v[e], rstd[i], w[e]);
    raw[i] = pack_bf16x8(out);
  }
}

// What a CTA of a tensorwise quantization finds first: the inverse of the scale, from the amax
// given or (kRecord, ring_amax) the history's, and the history's turn, if it records into one.
// The first CTA's first thread writes the scales and moves the ring on.
struct TileScale {
  float inv;
  RingTurn turn;
};

template <bool kRecord>
__device__ __forceinline__ TileScale tensor_scale(const TensorwiseParams& p, bool first_thread) {
  RingTurn turn{0, 0};
  if constexpr (kRecord) {
    if (p.ring != nullptr) {
      turn = p.ring_current >= 0 ? ring_turn_at(p.ring_current, p.ring_slots)
                                 : ring_turn(p.ring, p.ring_slots);
    }
  }
  uint32_t amax;
  if constexpr (kRecord) {
    // Every warp finds the history's amax itself (ring_amax), so no launch before this one does.
    amax = p.ring_amax ? ring_amax(p.ring, p.ring_slots, turn) : __ldg(p.amax);
  } else {
    amax = __ldg(p.amax);
  }
  float scale;
  float inv;
  quant::scale_of(amax, p.fmax, &scale, &inv);
  if (first_thread) {
    if (p.scales != nullptr) *p.scales = scale;
    if (p.scales_t != nullptr) *p.scales_t = scale;
  }
  if constexpr (kRecord) {
    if (first_thread && p.ring != nullptr) {
      p.ring[turn.next] = 0u;
      // Nothing in this launch reads the index where the host said which slot is current.
      if (p.ring_current >= 0) p.ring[p.ring_slots] = static_cast<uint32_t>(turn.next);
    }
  }
  return {inv, turn};
}

// Where the kernel's X comes from: read, or computed from its producer's inputs.
enum class Source { x, swiglu, rmsnorm };

// A tile of X in the thread's registers (its eight loads, `load`'s mapping) quantized: its format
// bytes stored in X's layout and stashed for Xᵀ's (the caller stores those after a barrier), and
// under a record its max |x| folded into `seen`. `nonfinite`: the inverse is NaN (a non-finite
// amax), and every value is 0, as the reference's.
template <bool kInt8, bool kWriteX, bool kWriteT, bool kRecord>
__device__ __forceinline__ void quantize_loads(const TensorwiseParams& p, uint32_t* tile,
                                               int64_t r0, int64_t c0, const uint4 (&raw)[kLoads],
                                               float inv, bool nonfinite, uint32_t& seen) {
  const int col = load_col();
  // Each load's format bytes from `quantize`, stored in X's layout and stashed for Xᵀ's.
  const auto write = [&](auto quantize) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int r = load_row(i);
      const uint2 q = quantize(raw[i]);
      if constexpr (kWriteX) {
        *reinterpret_cast<uint2*>(p.values + (r0 + r) * p.cols + c0 + col) = q;
      }
      if constexpr (kWriteT) stash(tile, r, col, q);
    }
  };
  if constexpr (kRecord) {
    // This thread's max |x| first, which also says whether a NaN is among its values; each case
    // its own loop, so that the common one tests no value. A non-finite amax (a NaN inverse)
    // makes every value 0, as the reference's.
    const uint32_t mine = loads_amax(raw);
    seen = max(seen, mine);
    if (nonfinite) {
      write([](const uint4&) { return make_uint2(0u, 0u); });
    } else if (mine <= quant::kInfBits) {
      write([&](const uint4& v) {
        return quantize8_saturating<kInt8, false>(v, inv, p.fmax, p.fmt);
      });
    } else {
      write(
          [&](const uint4& v) { return quantize8_saturating<kInt8, true>(v, inv, p.fmax, p.fmt); });
    }
  } else {
    (void)nonfinite;  // the caller zeroed the values and the inverse
    write([&](const uint4& v) { return quantize8<kInt8>(v, inv, p.fmt); });
  }
}

// The 128×128 tile of X at (r0, c0) quantized by a CTA (quantize_byte_tile.cuh), X as kSource
// gives it; `first_thread` writes the scales (and moves a ring on).
template <bool kInt8, bool kWriteX, bool kWriteT, bool kRecord, Source kSource>
__device__ __forceinline__ void quantize_tile(const TensorwiseParams& p, uint32_t* tile, int64_t r0,
                                              int64_t c0, bool first_thread) {
  // A plain X's loads go out first, and the scale (under a history: the ring's slots and their
  // maximum) is found while they are in flight: found first, its round trips held every CTA's
  // loads back, and X_down, dY_qkv and dY_gate_up ran 0.3–3.5 % slower. A norm's X from h ran
  // 1–2 % slower with its loads first (64 registers against 48 under a record, four CTAs an SM
  // against five), so it finds its scale first as before (docs/perf-log.md §71).
  uint4 raw[kLoads];
  if constexpr (kSource == Source::x) load(p.x, p.ld, r0, c0, raw);
  const TileScale ts =
      p.inv_blocks != nullptr
          ? TileScale{__ldg(p.inv_blocks + (r0 / p.kb) * p.inv_sr + (c0 / p.kb) * p.inv_sc), {}}
          : tensor_scale<kRecord>(p, first_thread);
  const RingTurn turn = ts.turn;
  float inv = ts.inv;
  // A NaN or Inf in X (a non-finite amax, a NaN inverse) makes every value 0 (0 · 0 rounds to
  // +0 in every format, as the reference's do): a producer's inputs are then not read, a plain
  // X's loads are dropped; a record keeps X's values, to fold their max. (For the producers the
  // record's test stays a run-time branch though it never skips there: with no branch before
  // them, ptxas spread the loads among the first values' arithmetic, three in flight where the
  // dynamic kernel keeps eight; perf-log §54.)
  const bool nonfinite = inv != inv;
  if (kRecord ? nonfinite && p.amax_seen == nullptr && p.ring == nullptr : nonfinite) {
    if constexpr (!kRecord) inv = 0.0f;
#pragma unroll
    for (int i = 0; i < kLoads; ++i)
      raw[i] = make_uint4(0, 0, 0, 0);
  } else if constexpr (kSource == Source::swiglu) {
    load_swiglu(p, r0, c0, raw);
  } else if constexpr (kSource == Source::rmsnorm) {
    load_rmsnorm(p, r0, c0, raw);
  }
  uint32_t seen = 0;
  quantize_loads<kInt8, kWriteX, kWriteT, kRecord>(p, tile, r0, c0, raw, inv, nonfinite, seen);
  if constexpr (kWriteT) {
    __syncthreads();
    store_transposed(tile, p.values_t, p.rows, r0, c0);
  }
  if constexpr (kRecord) {
    report_amax_if_above(p.ring != nullptr ? p.ring + turn.current : p.amax_seen, seen);
  }
}

// One tile of X per CTA, X as kSource gives it.
template <bool kInt8, bool kWriteX, bool kWriteT, bool kRecord, Source kSource = Source::x>
__global__ void __launch_bounds__(kThreads) quantize_tensorwise_kernel(const TensorwiseParams p) {
  __shared__ __align__(16) uint32_t tile[kWords];
  // The tiles are taken from X's end to its start. The kernel that wrote X (a norm, SwiGLU,
  // RoPE's backward) walked it from start to end, so its last rows are what L2 still holds when
  // this launch begins: the CTAs that start first read them there rather than from DRAM before
  // the rest of X (and this launch's own writes) evict them.
  const int64_t r0 = static_cast<int64_t>(gridDim.y - 1 - blockIdx.y) * kTile;
  const int64_t c0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kTile;
  const bool first_thread = blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0;
  quantize_tile<kInt8, kWriteX, kWriteT, kRecord, kSource>(p, tile, r0, c0, first_thread);
}

// Several plain tensors, each by a given amax of its own, in one launch (the batch of
// quantize_tensorwise_batch): tensor i's tiles are blocks first_tile[i] to first_tile[i + 1] - 1,
// in the order quantize_tensorwise_kernel takes them.
constexpr int kBatchMax = 8;
struct TensorwiseBatch {
  TensorwiseParams t[kBatchMax];
  int64_t first_tile[kBatchMax + 1];
  int count;
};
// Within the 4 KiB of parameters a kernel may take on every CUDA 12 driver.
static_assert(sizeof(TensorwiseBatch) <= 4096);

// (INT8 at five CTAs an SM, as the single kernel runs; FP8 at three: with no bound ptxas held its
// sm_80 instance, whose conversions are emulated, to 64 registers and spilled.)
template <bool kInt8, bool kWriteX, bool kWriteT>
__global__ void __launch_bounds__(kThreads, kInt8 ? 5 : 3)
    quantize_tensorwise_batch_kernel(const __grid_constant__ TensorwiseBatch b) {
  __shared__ __align__(16) uint32_t tile[kWords];
  const auto block = static_cast<int64_t>(blockIdx.x);
  int i = 0;
  while (i + 1 < b.count && b.first_tile[i + 1] <= block)
    ++i;
  const TensorwiseParams& p = b.t[i];
  // 32-bit: a launch has fewer than 2³¹ tiles (and a 64-bit division is a call that spills).
  const auto k = static_cast<uint32_t>(block - b.first_tile[i]);
  const auto tiles_x = static_cast<uint32_t>(p.cols / kTile);
  const uint32_t ty = k / tiles_x;
  const int64_t r0 = (p.rows / kTile - 1 - ty) * kTile;
  const int64_t c0 = static_cast<int64_t>(tiles_x - 1 - (k - ty * tiles_x)) * kTile;
  quantize_tile<kInt8, kWriteX, kWriteT, false, Source::x>(p, tile, r0, c0,
                                                           k == 0 && threadIdx.x == 0);
}

// The same quantization of a plain X by one scale for the whole tensor, as a walk: a resident
// wave of CTAs (four an SM), each taking tiles blockIdx.x, + gridDim.x, ... from X's end, whose
// threads copy the next tile's vectors into shared memory (cp.async, a thread its own eight, so
// that no barrier is needed before it reads them back) while they quantize the one before. The
// scale, and under a history its ring, are read once a CTA, under the first tile's copies.
// Why: a CTA a tile ran a 4096 × 4096 X as one full wave of five CTAs an SM and a partial one of
// 364 CTAs, at 62–67 % of the HBM peak where a copy of its bytes reaches 74 %; ncu put half of
// its warps' stalls on the loads and its achieved occupancy at 52 %. The walk took it to 67–69 %;
// it is launched only where it was faster (launch_walk; docs/perf-log.md §70).
constexpr int kWalkCtasPerSm = 4;
constexpr int kWalkStagedBytes = kLoads * kThreads * 16;  // a tile of BF16: 32 KiB

template <bool kInt8, bool kWriteX, bool kWriteT, bool kRecord>
__global__ void __launch_bounds__(kThreads, kWalkCtasPerSm)
    quantize_tensorwise_walk_kernel(const TensorwiseParams p) {
  extern __shared__ __align__(16) uint4 staged[];  // [kLoads][kThreads]
  __shared__ __align__(16) uint32_t tile[kWords];
  const int64_t tiles_x = p.cols / kTile;
  const int64_t tiles = tiles_x * (p.rows / kTile);
  const int tid = static_cast<int>(threadIdx.x);
  // Tile k of the walk, counted from X's end as the CTA-a-tile kernel takes them (its comment
  // says why).
  const auto origin = [&](int64_t k, int64_t& r0, int64_t& c0) {
    const int64_t back = tiles - 1 - k;
    r0 = back / tiles_x * kTile;
    c0 = back % tiles_x * kTile;
  };
  const auto copy = [&](int64_t k) {
    int64_t r0, c0;
    origin(k, r0, c0);
#pragma unroll
    for (int i = 0; i < kLoads; ++i)
      cp_async16(smem_addr(&staged[i * kThreads + tid]),
                 p.x + (r0 + load_row(i)) * p.ld + c0 + load_col());
    cp_async_commit();
  };
  int64_t k = blockIdx.x;
  copy(k);
  const TileScale ts = tensor_scale<kRecord>(p, blockIdx.x == 0 && tid == 0);
  const float inv_given = ts.inv;
  const bool nonfinite = inv_given != inv_given;
  // As the CTA-a-tile kernel: without a record, a non-finite amax makes every value 0 · 0.
  const bool zero = kRecord ? nonfinite && p.amax_seen == nullptr && p.ring == nullptr : nonfinite;
  const float inv = !kRecord && nonfinite ? 0.0f : inv_given;
  uint32_t seen = 0;
  for (; k < tiles; k += gridDim.x) {
    cp_async_wait<0>();
    uint4 raw[kLoads];
#pragma unroll
    for (int i = 0; i < kLoads; ++i)
      raw[i] = zero ? make_uint4(0, 0, 0, 0) : staged[i * kThreads + tid];
    int64_t r0, c0;
    origin(k, r0, c0);
    quantize_loads<kInt8, kWriteX, kWriteT, kRecord>(p, tile, r0, c0, raw, inv, nonfinite, seen);
    // The next tile's copies go into the slots this thread read, once the values read from them
    // have been used: a later cp.async is not ordered after an earlier load of its slot, and
    // nothing else makes the load complete first.
    if (k + gridDim.x < tiles) copy(k + gridDim.x);
    if constexpr (kWriteT) {
      __syncthreads();
      store_transposed(tile, p.values_t, p.rows, r0, c0);
      __syncthreads();  // the stash is read before the next tile's bytes go into it
    }
  }
  if constexpr (kRecord) {
    report_amax_if_above(p.ring != nullptr ? p.ring + ts.turn.current : p.amax_seen, seen);
  }
}

// SwiGLU's gradient d gate_up [rows, 2·inner] under delayed scaling, a CTA a pair of 128 × 128
// tiles: d_gate's at columns c0.. and d_up's at c0 + inner.., both computed from one read of the
// tile of gate, up and d_out at c0 (a kernel a tile, the d_up tile read gate and d_out again, and
// the kernel ran at 42–47 % of the HBM peak: docs/perf-log.md §65). The thread's loads go in two
// halves of four, so that a half's twelve inputs and eight outputs fit in registers beside each
// other; each output's X layout is stored from registers and its bytes stashed in its own tile
// for Xᵀ's. Numerics and record as quantize_tensorwise_kernel's under a history, values as
// swiglu.cu's backward stores them.
template <bool kInt8>
__global__ void __launch_bounds__(kThreads)
    quantize_swiglu_backward_kernel(const TensorwiseParams p) {
  __shared__ __align__(16) uint32_t tiles[2][kWords];
  const int64_t inner = p.up_offset;
  const int64_t r0 = static_cast<int64_t>(gridDim.y - 1 - blockIdx.y) * kTile;
  const int64_t c0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kTile;
  const bool first_thread = blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0;
  const TileScale ts = tensor_scale<true>(p, first_thread);
  // A NaN or Inf amax makes every value 0, as the reference's; the record reads them all the same.
  const bool nonfinite = ts.inv != ts.inv;
  const int col = load_col();
  constexpr int kHalf = kLoads / 2;
  uint32_t seen = 0;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    uint4 gate[kHalf];
    uint4 up[kHalf];
    uint4 d[kHalf];
#pragma unroll
    for (int i = 0; i < kHalf; ++i) {
      const int64_t r = r0 + load_row(h * kHalf + i);
      gate[i] = quant::load_vec(p.x + r * p.ld + c0 + col);
      up[i] = quant::load_vec(p.x + r * p.ld + inner + c0 + col);
      d[i] = quant::load_vec(p.d_out + r * inner + c0 + col);
    }
    uint4 out[2][kHalf];  // d_gate's, d_up's
#pragma unroll
    for (int i = 0; i < kHalf; ++i) {
      const Bf16x8 g = unpack_bf16x8(gate[i]);
      const Bf16x8 u = unpack_bf16x8(up[i]);
      const Bf16x8 dv = unpack_bf16x8(d[i]);
      Bf16x8 dg;
      Bf16x8 du;
#pragma unroll
      for (int e = 0; e < kBf16PerVector; ++e) {
        dg.v[e] = swiglu_d_gate(g.v[e], u.v[e], dv.v[e]);
        du.v[e] = swiglu_d_up(g.v[e], dv.v[e]);
      }
      out[0][i] = pack_bf16x8(dg);
      out[1][i] = pack_bf16x8(du);
    }
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      // These values' max |x|, which also says whether a NaN is among them (quantize8_saturating).
      const uint32_t mine = loads_amax(out[t]);
      seen = max(seen, mine);
#pragma unroll
      for (int i = 0; i < kHalf; ++i) {
        const int r = load_row(h * kHalf + i);
        const uint2 q = nonfinite ? make_uint2(0u, 0u)
                        : mine <= quant::kInfBits
                            ? quantize8_saturating<kInt8, false>(out[t][i], ts.inv, p.fmax, p.fmt)
                            : quantize8_saturating<kInt8, true>(out[t][i], ts.inv, p.fmax, p.fmt);
        *reinterpret_cast<uint2*>(p.values + (r0 + r) * p.cols + t * inner + c0 + col) = q;
        stash(tiles[t], r, col, q);
      }
    }
  }
  __syncthreads();
  store_transposed(tiles[0], p.values_t, p.rows, r0, c0);
  store_transposed(tiles[1], p.values_t, p.rows, r0, inner + c0);
  report_amax_if_above(p.ring != nullptr ? p.ring + ts.turn.current : p.amax_seen, seen);
}

// The tile of RoPE's backward quantization: 128 / kM tokens of one sequence × 128 · kM columns of
// one part (whole heads of dQ, dK or dV), 16 K values as the one-pass kernel's 128 × 128, so that
// its 32 KiB of BF16 fit the same shared memory. A thread's four passes take the four 128-column
// slices of one token where kM is 4 (where every part's heads fill 512 columns: llama2-7b's,
// Llama3.1-8B's), so that it reads its token's cos and sin, the same for every head, once; where
// kM is 1, one slice of four tokens, reading them four times. (Two slices of two tokens spilled
// 20 bytes on sm_80 under four CTAs an SM, and no seed model needs them.)
template <int kM>
struct RopeTile {
  static_assert(kM == 1 || kM == 4, "four passes of 128 columns: 1 or 4 slices");
  static constexpr int kRows = kTile / kM;
  static constexpr int kCols = kTile * kM;
  static constexpr int kVectorsPerRow = kCols / kBf16PerVector;
  static constexpr int kWordsPerRow = kCols / 4;  // of the byte tile
  static constexpr int kQuads = kRows / 4;        // row quads: the lanes of a transposing read
  static constexpr int kLaneCols = 32 / kQuads;   // word columns a transposing read: kM
  static constexpr int kPasses = 4;
  static_assert(kTile * 8 / kThreads == kPasses, "eight threads a 128-column row slice");

  // Pass k's slice and row for the thread of row group rp (threadIdx.x / 8).
  __device__ static int slice(int k) { return k % kM; }
  __device__ static int row(int rp, int k) { return rp + 32 * (k / kM); }

  // Where the format byte word jw of row r sits: jw XOR-ed with the row's quad, placed above the
  // word columns a transposing read's lanes share (kLaneCols), so that its lanes (kQuads row quads
  // × kLaneCols word columns) touch 32 banks; and with the row's low bit in bank bit 4, so that
  // a warp's stash of four rows (16 words each, pairs of eight columns) takes two wavefronts.
  __device__ static int swizzle(int r) {
    return (((r >> 2) & (kQuads - 1)) * kLaneCols) ^ ((r & 1) << 4);
  }
  // The eight bytes of row r, columns col..col+7 (col a multiple of 8): word col / 4 at
  // (col / 4) ^ swizzle(r), and its pair's other word beside it, swapped where the swizzle's low
  // bit says, so that the pair stays one aligned 8-byte store.
  __device__ static void stash(uint32_t* tile, int r, int col, uint2 q) {
    const int s = swizzle(r);
    *reinterpret_cast<uint2*>(&tile[r * kWordsPerRow + ((col / 4) ^ (s & ~1))]) =
        (s & 1) ? make_uint2(q.y, q.x) : q;
  }
  // Writes the stashed tile (after a __syncthreads) as rows c0..c0+kCols-1, columns
  // r0..r0+kRows-1 of Xᵀ (`rows` bytes a row): each warp instruction kLaneCols · 4 rows of Xᵀ,
  // kRows contiguous bytes each.
  __device__ static void store_transposed(const uint32_t* tile, uint8_t* values_t, int64_t rows,
                                          int64_t r0, int64_t c0) {
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int warp = static_cast<int>(threadIdx.x) >> 5;
    const int quad = lane % kQuads;
#pragma unroll
    for (int k = 0; k < kWordsPerRow / (kWarps * kLaneCols); ++k) {
      const int jw = (warp + kWarps * k) * kLaneCols + lane / kQuads;
      uint32_t w[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int r = 4 * quad + q;
        w[q] = tile[r * kWordsPerRow + (jw ^ swizzle(r))];
      }
      uint32_t cols[4];
      transpose_bytes(w[0], w[1], w[2], w[3], cols);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        *reinterpret_cast<uint32_t*>(values_t + (c0 + 4 * jw + e) * rows + r0 + 4 * quad) = cols[e];
      }
    }
  }
};

// RoPE's backward under a history (quantize_rope_backward_tensorwise), a tile a CTA
// (RopeTile<kM>): the tile of dQ, dK or dV, read through SDPA's strides, copied into shared
// memory with cp.async, the history's scale and the thread's first cos and sin found while those
// copies are in flight, then each thread rotating pairs back from there: eight columns of the
// first half of a head and the eight half a head away, which share the token's cos and sin, in
// each of four passes (dV's tiles are copied). The copies hold no registers, so the kernel fits
// four CTAs an SM. Its first form loaded a 128 × 128 tile into registers and met each value's
// partner by shuffles (75 registers, three CTAs an SM, 53 % of the HBM peak at llama2-7b); staged
// on 128 tokens of one head, reading a token's tables in each pass, 64 %; on 32 tokens of four
// heads, reading them once, 67 % (docs/perf-log.md §66–§69). Values, scales and record as
// quantize_tensorwise_kernel's under a history.
template <bool kInt8, int kM>
__global__ void __launch_bounds__(kThreads, 4)
    quantize_rope_backward_kernel(const TensorwiseParams p) {
  using T = RopeTile<kM>;
  // 32 KiB of BF16, dynamic: with the byte tile and block_max's words the CTA holds 128 bytes
  // more than a kernel's static 48 KiB.
  extern __shared__ __align__(16) uint4 staged[];  // [T::kRows][T::kVectorsPerRow]
  __shared__ __align__(16) uint32_t tile[kWords];
  const int64_t r0 = static_cast<int64_t>(gridDim.y - 1 - blockIdx.y) * T::kRows;
  const int64_t c0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * T::kCols;
  const bool first_thread = blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0;
  const RopeSource& s = p.rope;
  // Each part's arguments selected by a branch on a constant index, so that they stay in the
  // parameter bank (rope.cu says why).
  const int part = c0 < s.q_end ? 0 : c0 < s.k_end ? 1 : 2;
  // This thread's pair of column groups: group g of a slice's eight in first halves of heads.
  const int half = s.head_dim / 2;
  const int g = static_cast<int>(threadIdx.x) % 8;
  const int groups_per_half = half / kBf16PerVector;
  const int within = (g % groups_per_half) * kBf16PerVector;  // in the head's first half
  const int a = (g / groups_per_half) * s.head_dim + within;  // the first group's slice column
  const int rp = static_cast<int>(threadIdx.x) / 8;
  {
    const int64_t first_col = part == 0 ? 0 : part == 1 ? s.q_end : s.k_end;
    const __nv_bfloat16* in = part == 0 ? s.in[0] : part == 1 ? s.in[1] : s.in[2];
    const int64_t bs = part == 0   ? s.batch_stride[0]
                       : part == 1 ? s.batch_stride[1]
                                   : s.batch_stride[2];
    const int64_t ts = part == 0   ? s.token_stride[0]
                       : part == 1 ? s.token_stride[1]
                                   : s.token_stride[2];
    const int64_t hs = part == 0   ? s.head_stride[0]
                       : part == 1 ? s.head_stride[1]
                                   : s.head_stride[2];
    const int64_t b = r0 / s.seq;
    const __nv_bfloat16* tile_rows = in + b * bs + (r0 - b * s.seq) * ts;
    const int head_shift = __ffs(s.head_dim) - 1;  // heads of 16, 32, 64 or 128 elements
    // The 16 bytes at row r, column col of the tile, in the part's head.
    const auto source = [&](int r, int col) {
      const int64_t pc = c0 - first_col + col;
      return tile_rows + (pc >> head_shift) * hs + (pc & (s.head_dim - 1)) + r * ts;
    };
    // Each thread copies the values it rotates, pass k's two vectors a commit group, and waits
    // for its own copies alone: no barrier of the CTA before the passes. (That measured the same
    // as the tile copied a half-warp a row behind a barrier, docs/perf-log.md §69.)
#pragma unroll
    for (int k = 0; k < T::kPasses; ++k) {
      const int r = T::row(rp, k);
      const int col = T::slice(k) * kTile + a;
      uint4* row = staged + r * T::kVectorsPerRow;
      cp_async16(smem_addr(&row[col / kBf16PerVector]), source(r, col));
      cp_async16(smem_addr(&row[(col + half) / kBf16PerVector]), source(r, col + half));
      cp_async_commit();
    }
  }
  const TileScale scale = tensor_scale<true>(p, first_thread);
  // A NaN or Inf amax makes every value 0, as the reference's; the record reads them all the same.
  const bool nonfinite = scale.inv != scale.inv;
  const auto table = [&](int k) { return (r0 % s.seq + T::row(rp, k)) * half + within; };
  float c[kBf16PerVector];
  float sn[kBf16PerVector];
  if (part != 2) {
    // The first token's cos and sin asked for while the tile's copies are in flight.
    load_float8(s.cos + table(0), c);
    load_float8(s.sin + table(0), sn);
  }
  uint32_t seen = 0;
#pragma unroll
  for (int k = 0; k < T::kPasses; ++k) {
    static_assert(T::kPasses == 4, "a wait for each pass's commit group");
    if (k == 0) cp_async_wait<3>();
    if (k == 1) cp_async_wait<2>();
    if (k == 2) cp_async_wait<1>();
    if (k == 3) cp_async_wait<0>();
    const int r = T::row(rp, k);
    const int slice_col = T::slice(k) * kTile;
    const uint4* row = staged + r * T::kVectorsPerRow + slice_col / kBf16PerVector;
    uint4 v[2] = {row[a / kBf16PerVector], row[(a + half) / kBf16PerVector]};
    if (part != 2) {
      if (k > 0 && T::slice(k) == 0) {  // the next token's
        load_float8(s.cos + table(k), c);
        load_float8(s.sin + table(k), sn);
      }
      const Bf16x8 x1 = unpack_bf16x8(v[0]);
      const Bf16x8 x2 = unpack_bf16x8(v[1]);
      Bf16x8 y1;
      Bf16x8 y2;
#pragma unroll
      for (int e = 0; e < kBf16PerVector; ++e) {
        y1.v[e] = rope_first(x1.v[e], x2.v[e], c[e], sn[e], /*inverse=*/true);
        y2.v[e] = rope_second(x1.v[e], x2.v[e], c[e], sn[e], /*inverse=*/true);
      }
      v[0] = pack_bf16x8(y1);
      v[1] = pack_bf16x8(y2);
    }
    // These values' max |x|, which also says whether a NaN is among them (quantize8_saturating).
    const uint32_t mine = loads_amax(v);
    seen = max(seen, mine);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int col = slice_col + a + j * half;
      const uint2 q = nonfinite ? make_uint2(0u, 0u)
                      : mine <= quant::kInfBits
                          ? quantize8_saturating<kInt8, false>(v[j], scale.inv, p.fmax, p.fmt)
                          : quantize8_saturating<kInt8, true>(v[j], scale.inv, p.fmax, p.fmt);
      *reinterpret_cast<uint2*>(p.values + (r0 + r) * p.cols + c0 + col) = q;
      T::stash(tile, r, col, q);
    }
  }
  __syncthreads();
  T::store_transposed(tile, p.values_t, p.rows, r0, c0);
  report_amax_if_above(p.ring + scale.turn.current, seen);
}

// max |x| of X into *amax (zeroed), as FP32 bits: thread t of a CTA owns one 16-byte column
// vector of its strip and walks the CTA's rows, four loads in flight; one atomic a CTA.
__global__ void __launch_bounds__(kThreads)
    tensor_amax_kernel(const __nv_bfloat16* x, int64_t ld, int64_t rows, int64_t cols,
                       uint32_t* amax) {
  const int64_t j = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) * 8;
  const int64_t step = gridDim.y;
  uint32_t m = 0;
  if (j < cols) {
    int64_t r = blockIdx.y;
    for (; r + 3 * step < rows; r += 4 * step) {
      uint4 raw[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        raw[u] = quant::load_vec(x + (r + u * step) * ld + j);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        float f[8];
        quant::Vec<__nv_bfloat16>::unpack(raw[u], f);
#pragma unroll
        for (int e = 0; e < 8; ++e)
          m = max(m, quant::abs_bits(f[e]));
      }
    }
    for (; r < rows; r += step) {
      float f[8];
      quant::Vec<__nv_bfloat16>::unpack(quant::load_vec(x + r * ld + j), f);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        m = max(m, quant::abs_bits(f[e]));
    }
  }
  report_amax(amax, m);
}

// The walk (quantize_tensorwise_walk_kernel) where X has at most two tiles for each CTA of its
// resident wave (a 4096 × 4096 X: 1024 tiles, 528 CTAs). There it ran 3 % faster than a CTA a
// tile by a given amax and 8 % faster under a history; on larger X (2.9 to 14 tiles a CTA) it ran
// up to 11 % slower, one tile in flight a CTA moving less than a CTA a tile does at five an SM
// (docs/perf-log.md §70). Returns whether it launched.
template <bool kInt8, bool kRecord>
bool launch_walk(const TensorwiseParams& tp, cudaStream_t stream) {
  using Kernel = void (*)(TensorwiseParams);
  const Kernel both = quantize_tensorwise_walk_kernel<kInt8, true, true, kRecord>;
  const Kernel x_only = quantize_tensorwise_walk_kernel<kInt8, true, false, kRecord>;
  const Kernel t_only = quantize_tensorwise_walk_kernel<kInt8, false, true, kRecord>;
  // Four CTAs of 48 KiB and more (a record's block maximum takes the static part past 16 KiB, and
  // the whole past the 48 KiB a launch may have without asking) fit an SM only with shared memory's
  // largest carveout, which the occupancy then counts.
  static const bool asked = [&] {
    for (const Kernel k : {both, x_only, t_only}) {
      const auto* f = reinterpret_cast<const void*>(k);
      LPBENCH_CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout,
                                              cudaSharedmemCarveoutMaxShared));
      allow_dynamic_shared_memory(f, kWalkStagedBytes);
    }
    return true;
  }();
  (void)asked;
  const Kernel kernel = tp.values == nullptr ? t_only : tp.values_t == nullptr ? x_only : both;
  const int64_t tiles = tp.rows / kTile * (tp.cols / kTile);
  const int64_t resident =
      resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, kWalkStagedBytes, tiles);
  if (tiles > 2 * resident) return false;
  kernel<<<static_cast<unsigned>(resident), kThreads, kWalkStagedBytes, stream>>>(tp);
  return true;
}

template <bool kInt8, bool kRecord, Source kSource = Source::x>
void launch(const TensorwiseParams& tp, dim3 grid, cudaStream_t stream) {
  if constexpr (kSource == Source::x) {
    if (tp.inv_blocks == nullptr && launch_walk<kInt8, kRecord>(tp, stream)) return;
  }
  if (tp.values != nullptr && tp.values_t != nullptr) {
    quantize_tensorwise_kernel<kInt8, true, true, kRecord, kSource>
        <<<grid, kThreads, 0, stream>>>(tp);
  } else if (tp.values != nullptr) {
    quantize_tensorwise_kernel<kInt8, true, false, kRecord, kSource>
        <<<grid, kThreads, 0, stream>>>(tp);
  } else {
    quantize_tensorwise_kernel<kInt8, false, true, kRecord, kSource>
        <<<grid, kThreads, 0, stream>>>(tp);
  }
}

// What the kernel needs of any call, tensorwise or by blocks: BF16 on the 128 grid, 16-byte
// aligned input rows, the layout written from registers aligned for 8-byte stores and the
// transposed one for 4-byte stores, and none of the general path's options.
bool takes_call(const QuantizeArgs& a) {
  void* const x_layout = a.transpose ? nullptr : a.values;
  void* const t_layout = a.transpose ? a.values : a.values_t;
  return a.x_type == DType::bf16 && !a.stochastic && a.rows % kTile == 0 && a.cols % kTile == 0 &&
         a.rows / kTile <= 65535 && quant::aligned(a.x, 16) && a.ld % 8 == 0 &&
         (x_layout == nullptr || quant::aligned(x_layout, 8)) &&
         (t_layout == nullptr || quant::aligned(t_layout, 4));
}

TensorwiseParams params_of(const QuantizeArgs& a) {
  TensorwiseParams tp{};
  tp.x = static_cast<const __nv_bfloat16*>(a.x);
  tp.ld = a.ld;
  tp.rows = a.rows;
  tp.cols = a.cols;
  tp.fmt = a.out_type;
  tp.fmax = format_max(a.out_type);
  tp.values = static_cast<uint8_t*>(a.transpose ? nullptr : a.values);
  tp.values_t = static_cast<uint8_t*>(a.transpose ? a.values : a.values_t);
  return tp;
}

// Whether RoPE's backward takes the tile of four slices (RopeTile<4>): every part's heads fill
// them, and the grid's rows fit.
bool rope_tile_is_wide(const RopeSource& s, int64_t rows, int64_t cols) {
  constexpr int64_t kWide = kTile * 4;
  return s.q_end % kWide == 0 && (s.k_end - s.q_end) % kWide == 0 &&
         (cols - s.k_end) % kWide == 0 && rows / (kTile / 4) <= 65535;
}

template <int kM>
void launch_rope_backward(const TensorwiseParams& tp, cudaStream_t stream) {
  constexpr int kStaged = kTile * kTile * 2;  // the tile in BF16
  // Past 48 KiB a CTA only by asking; the carveout asked as shared memory's largest, so that
  // four CTAs (50 KiB each with the driver's 1 KiB) fit an SM.
  static const bool asked = [] {
    for (const void* k :
         {reinterpret_cast<const void*>(quantize_rope_backward_kernel<true, kM>),
          reinterpret_cast<const void*>(quantize_rope_backward_kernel<false, kM>)}) {
      LPBENCH_CUDA_CHECK(
          cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kStaged));
      LPBENCH_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
                                              cudaSharedmemCarveoutMaxShared));
    }
    return true;
  }();
  (void)asked;
  const dim3 grid(static_cast<unsigned>(tp.cols / RopeTile<kM>::kCols),
                  static_cast<unsigned>(tp.rows / RopeTile<kM>::kRows));
  tp.fmt == DType::int8
      ? quantize_rope_backward_kernel<true, kM><<<grid, kThreads, kStaged, stream>>>(tp)
      : quantize_rope_backward_kernel<false, kM><<<grid, kThreads, kStaged, stream>>>(tp);
}

void launch_rope_backward(const TensorwiseParams& tp, cudaStream_t stream) {
  if (rope_tile_is_wide(tp.rope, tp.rows, tp.cols)) {
    launch_rope_backward<4>(tp, stream);
  } else {
    launch_rope_backward<1>(tp, stream);
  }
}

void launch_tiles(const TensorwiseParams& tp, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(tp.cols / kTile), static_cast<unsigned>(tp.rows / kTile));
  const bool record = tp.amax_seen != nullptr || tp.ring != nullptr;
  // SwiGLU's output and gradient and RoPE's backward are quantized under delayed scaling only; a
  // norm's also by its own amax, which the norm found (quantize_rmsnorm_tensorwise), recording
  // nothing.
  if (tp.d_out != nullptr) {
    // SwiGLU's gradient: a CTA a pair of tiles, both layouts.
    const dim3 pairs(grid.x / 2, grid.y);
    tp.fmt == DType::int8
        ? quantize_swiglu_backward_kernel<true><<<pairs, kThreads, 0, stream>>>(tp)
        : quantize_swiglu_backward_kernel<false><<<pairs, kThreads, 0, stream>>>(tp);
  } else if (tp.up_offset > 0) {
    tp.fmt == DType::int8 ? launch<true, true, Source::swiglu>(tp, grid, stream)
                          : launch<false, true, Source::swiglu>(tp, grid, stream);
  } else if (tp.rope.in[0] != nullptr) {
    // RoPE's backward: both layouts (quantize_rope_backward_tensorwise checks).
    launch_rope_backward(tp, stream);
  } else if (tp.rstd != nullptr && record) {
    tp.fmt == DType::int8 ? launch<true, true, Source::rmsnorm>(tp, grid, stream)
                          : launch<false, true, Source::rmsnorm>(tp, grid, stream);
  } else if (tp.rstd != nullptr) {
    tp.fmt == DType::int8 ? launch<true, false, Source::rmsnorm>(tp, grid, stream)
                          : launch<false, false, Source::rmsnorm>(tp, grid, stream);
  } else if (tp.fmt == DType::int8) {
    record ? launch<true, true>(tp, grid, stream) : launch<true, false>(tp, grid, stream);
  } else {
    record ? launch<false, true>(tp, grid, stream) : launch<false, false>(tp, grid, stream);
  }
  LPBENCH_CUDA_CHECK_LAUNCH();
}

// The kernel's parameters for a tensorwise call: its scales and its record (amax_seen, or the
// history's ring).
TensorwiseParams tensorwise_params_of(const QuantizeArgs& a) {
  TensorwiseParams tp = params_of(a);
  tp.scales = a.scales;
  tp.scales_t = a.transpose ? nullptr : a.scales_t;
  tp.amax_seen = a.amax_seen;
  tp.ring = a.history;
  tp.ring_slots = a.history_slots;
  tp.ring_current = a.history_current;
  return tp;
}

// After the kernel, where only the ring's index says which slot is current: the ring moved on.
void advance_ring(const TensorwiseParams& tp, cudaStream_t stream) {
  if (tp.ring != nullptr && tp.ring_current < 0) {
    advance_ring_kernel<<<1, 1, 0, stream>>>(tp.ring, tp.ring_slots);
    LPBENCH_CUDA_CHECK_LAUNCH();
  }
}

// A producer's output quantized by the history's amax: the parameters as `source` sets them.
template <typename SetSource>
void quantize_from_producer(const QuantizeArgs& a, const char* who, SetSource source,
                            cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(a.history != nullptr && a.delayed,
                       std::string(who) + ": delayed scaling from a history only");
  TensorwiseParams tp = tensorwise_params_of(a);
  source(tp);
  tp.ring_amax = true;
  NvtxRange range(who);
  launch_tiles(tp, stream);
  advance_ring(tp, stream);
}

}  // namespace

bool tensorwise_kernel_applies(const QuantizeArgs& a) {
  const int64_t out_rows = a.transpose ? a.cols : a.rows;
  const int64_t out_cols = a.transpose ? a.rows : a.cols;
  const bool one_block = (a.block_rows == 0 || a.block_rows >= out_rows) &&
                         (a.block_cols == 0 || a.block_cols >= out_cols);
  return one_block && takes_call(a);
}

bool block_tile_kernel_applies(const QuantizeArgs& a, int64_t kb) {
  return a.block_rows == kb && a.block_cols == kb && kb % kTile == 0 && !a.tile_kernel &&
         takes_call(a);
}

void quantize_tiles_by_block(const QuantizeArgs& a, const float* inv_blocks, cudaStream_t stream) {
  const int64_t kb = a.block_rows;
  LPBENCH_CUDA_REQUIRE(block_tile_kernel_applies(a, kb), "the block tile kernel does not apply");
  TensorwiseParams tp = params_of(a);
  tp.inv_blocks = inv_blocks;
  tp.kb = kb;
  // The inverses are laid out by output blocks: X's, or Xᵀ's when X is read transposed.
  const int64_t blocks_per_row = (a.cols + kb - 1) / kb;
  const int64_t blocks_per_col = (a.rows + kb - 1) / kb;
  tp.inv_sr = a.transpose ? 1 : blocks_per_row;
  tp.inv_sc = a.transpose ? blocks_per_col : 1;
  launch_tiles(tp, stream);
}

void quantize_tensorwise(const QuantizeArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(tensorwise_kernel_applies(a), "the tensorwise kernel does not apply");
  TensorwiseParams tp = tensorwise_params_of(a);
  if (a.history != nullptr && a.delayed) {
    tp.ring_amax = true;  // the kernel finds the history's amax
  } else if (a.amax != nullptr) {
    tp.amax = a.amax;
  } else {
    LPBENCH_CUDA_REQUIRE(a.workspace != nullptr,
                         "tensorwise quantization needs a workspace of quantize_workspace_bytes()");
    auto* amax = static_cast<uint32_t*>(a.workspace);
    if (!a.workspace_zeroed) LPBENCH_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof(uint32_t), stream));
    // Enough CTAs to keep every SM's loads in flight, few enough that the atomics stay cheap.
    const int64_t strips = (a.cols / 8 + kThreads - 1) / kThreads;
    const int64_t row_groups =
        std::min<int64_t>(a.rows, std::max<int64_t>(1, kAmaxGridCap / strips));
    tensor_amax_kernel<<<dim3(static_cast<unsigned>(strips), static_cast<unsigned>(row_groups)),
                         kThreads, 0, stream>>>(tp.x, a.ld, a.rows, a.cols, amax);
    LPBENCH_CUDA_CHECK_LAUNCH();
    tp.amax = amax;
  }
  launch_tiles(tp, stream);
  advance_ring(tp, stream);
}

bool tensorwise_batch_takes(const QuantizeArgs& a) {
  return tensorwise_kernel_applies(a) && a.amax != nullptr && !a.delayed && a.history == nullptr &&
         a.amax_seen == nullptr && !a.tile_kernel;
}

void quantize_tensorwise_batch(const std::vector<QuantizeArgs>& calls, cudaStream_t stream) {
  for (const QuantizeArgs& a : calls) {
    LPBENCH_CUDA_REQUIRE(tensorwise_batch_takes(a),
                         "quantize_tensorwise_batch: a call the one-pass kernel does not take by "
                         "a given amax (BF16, sides multiples of 128, no history)");
  }
  const NvtxRange range("lpbench::cuda::quantize_tensorwise_batch");
  // One launch for each run of up to kBatchMax calls of one format and the same layouts, which
  // are one instance of the kernel.
  std::vector<bool> taken(calls.size(), false);
  for (size_t i = 0; i < calls.size(); ++i) {
    if (taken[i]) continue;
    const TensorwiseParams lead = tensorwise_params_of(calls[i]);
    const auto alike = [&](const TensorwiseParams& tp) {
      return tp.fmt == lead.fmt && (tp.values == nullptr) == (lead.values == nullptr) &&
             (tp.values_t == nullptr) == (lead.values_t == nullptr);
    };
    TensorwiseBatch b{};
    int64_t tiles = 0;
    for (size_t j = i; j < calls.size() && b.count < kBatchMax; ++j) {
      TensorwiseParams tp = tensorwise_params_of(calls[j]);
      if (taken[j] || !alike(tp)) continue;
      tp.amax = calls[j].amax;
      b.t[b.count] = tp;
      b.first_tile[b.count] = tiles;
      tiles += tp.rows / kTile * (tp.cols / kTile);
      ++b.count;
      taken[j] = true;
    }
    b.first_tile[b.count] = tiles;
    LPBENCH_CUDA_REQUIRE(tiles < (int64_t{1} << 31), "quantize_tensorwise_batch: too many tiles");
    const auto grid = static_cast<unsigned>(tiles);
    const bool int8 = lead.fmt == DType::int8;
    if (lead.values != nullptr && lead.values_t != nullptr) {
      int8 ? quantize_tensorwise_batch_kernel<true, true, true><<<grid, kThreads, 0, stream>>>(b)
           : quantize_tensorwise_batch_kernel<false, true, true><<<grid, kThreads, 0, stream>>>(b);
    } else if (lead.values != nullptr) {
      int8 ? quantize_tensorwise_batch_kernel<true, true, false><<<grid, kThreads, 0, stream>>>(b)
           : quantize_tensorwise_batch_kernel<false, true, false><<<grid, kThreads, 0, stream>>>(b);
    } else {
      int8 ? quantize_tensorwise_batch_kernel<true, false, true><<<grid, kThreads, 0, stream>>>(b)
           : quantize_tensorwise_batch_kernel<false, false, true><<<grid, kThreads, 0, stream>>>(b);
    }
    LPBENCH_CUDA_CHECK_LAUNCH();
  }
}

bool swiglu_tensorwise_applies(const QuantizeArgs& a) {
  return !a.transpose && a.ld >= 2 * a.cols && tensorwise_kernel_applies(a);
}

void quantize_swiglu_tensorwise(const QuantizeArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(swiglu_tensorwise_applies(a),
                       "quantize_swiglu_tensorwise: the one-pass kernel does not apply (BF16 "
                       "gate/up rows, X's sides multiples of 128)");
  quantize_from_producer(
      a, "lpbench::cuda::quantize_swiglu_tensorwise",
      [&](TensorwiseParams& tp) { tp.up_offset = a.cols; }, stream);
}

bool swiglu_backward_tensorwise_applies(const QuantizeArgs& a) {
  return !a.transpose && a.cols % (2 * kTile) == 0 && a.ld == a.cols &&
         tensorwise_kernel_applies(a);
}

void quantize_swiglu_backward_tensorwise(const QuantizeArgs& a, const void* d_out,
                                         cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(
      swiglu_backward_tensorwise_applies(a) && d_out != nullptr && quant::aligned(d_out, 16),
      "quantize_swiglu_backward_tensorwise: the one-pass kernel does not apply "
      "(BF16 gate/up rows, inner a multiple of 128, rows a multiple of 128, "
      "d_out 16-byte aligned)");
  LPBENCH_CUDA_REQUIRE(a.values != nullptr && a.values_t != nullptr,
                       "quantize_swiglu_backward_tensorwise writes both layouts");
  quantize_from_producer(
      a, "lpbench::cuda::quantize_swiglu_backward_tensorwise",
      [&](TensorwiseParams& tp) {
        tp.up_offset = a.cols / 2;
        tp.d_out = static_cast<const __nv_bfloat16*>(d_out);
      },
      stream);
}

bool rmsnorm_tensorwise_applies(const QuantizeArgs& a, const float* weight) {
  return !a.transpose && quant::aligned(weight, 16) && tensorwise_kernel_applies(a);
}

void quantize_rmsnorm_tensorwise(const QuantizeArgs& a, const float* rstd, const float* weight,
                                 cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(rstd != nullptr, "quantize_rmsnorm_tensorwise: the rows' rstd is needed");
  LPBENCH_CUDA_REQUIRE(rmsnorm_tensorwise_applies(a, weight),
                       "quantize_rmsnorm_tensorwise: the one-pass kernel does not apply (BF16 h, "
                       "its sides multiples of 128, a 16-byte aligned weight)");
  const auto set_source = [&](TensorwiseParams& tp) {
    tp.rstd = rstd;
    tp.norm_weight = weight;
  };
  if (a.history != nullptr) {
    quantize_from_producer(a, "lpbench::cuda::quantize_rmsnorm_tensorwise", set_source, stream);
    return;
  }
  // Current scaling: y's amax, which the norm found without writing y (RmsNormArgs::y_amax).
  LPBENCH_CUDA_REQUIRE(a.amax != nullptr,
                       "quantize_rmsnorm_tensorwise: y's amax or an amax history is needed");
  TensorwiseParams tp = tensorwise_params_of(a);
  set_source(tp);
  tp.amax = a.amax;
  const NvtxRange range("lpbench::cuda::quantize_rmsnorm_tensorwise");
  launch_tiles(tp, stream);
}

namespace {

// The tile kernel's source for RoPE's backward from the three parts as rope_parts takes them, or
// why it cannot take them.
std::string rope_source_of(const QuantizeArgs& a, const RopeArgs (&parts)[3], RopeSource& s) {
  const RopeArgs& q = parts[0];
  if (!q.rotate || !q.inverse || !parts[1].rotate || !parts[1].inverse || parts[2].rotate) {
    return "dQ and dK rotated back, dV copied";
  }
  const bool alike = [&] {
    for (const RopeArgs& r : parts) {
      if (r.head_dim != q.head_dim || r.batch != q.batch || r.seq != q.seq) return false;
    }
    return true;
  }();
  if (!alike ||
      !rope_backward_tile_takes(q.head_dim, q.heads, parts[1].heads, parts[2].heads, q.seq)) {
    return "heads of 16, 32, 64 or 128 elements, each part's a multiple of 128 columns, "
           "sequences a multiple of 128 tokens, one batch and sequence";
  }
  int64_t col = 0;
  for (int p = 0; p < 3; ++p) {
    const RopeArgs& r = parts[p];
    if (r.in == nullptr || !quant::aligned(r.in, 16) || r.in_batch_stride % 8 != 0 ||
        r.in_token_stride % 8 != 0 || r.in_head_stride % 8 != 0) {
      return "16-byte aligned parts, strides multiples of 8";
    }
    s.in[p] = static_cast<const __nv_bfloat16*>(r.in);
    s.batch_stride[p] = r.in_batch_stride;
    s.token_stride[p] = r.in_token_stride;
    s.head_stride[p] = r.in_head_stride;
    col += r.heads * r.head_dim;
    if (p == 0) s.q_end = col;
    if (p == 1) s.k_end = col;
  }
  if (a.rows != q.batch * q.seq || a.cols != col || a.ld != a.cols) {
    return "X [batch · seq, the parts' columns]";
  }
  if (q.cos == nullptr || q.sin == nullptr || !quant::aligned(q.cos, 16) ||
      !quant::aligned(q.sin, 16) || parts[1].cos != q.cos || parts[1].sin != q.sin) {
    return "one 16-byte aligned cos and sin table";
  }
  s.seq = q.seq;
  s.head_dim = static_cast<int>(q.head_dim);
  s.cos = q.cos;
  s.sin = q.sin;
  return "";
}

}  // namespace

bool rope_backward_tensorwise_applies(const QuantizeArgs& a, const RopeArgs (&parts)[3]) {
  RopeSource s{};
  return !a.transpose && tensorwise_kernel_applies(a) && rope_source_of(a, parts, s).empty();
}

void quantize_rope_backward_tensorwise(const QuantizeArgs& a, const RopeArgs (&parts)[3],
                                       cudaStream_t stream) {
  RopeSource source{};
  const std::string why = rope_source_of(a, parts, source);
  LPBENCH_CUDA_REQUIRE(why.empty() && !a.transpose && tensorwise_kernel_applies(a),
                       "quantize_rope_backward_tensorwise: the one-pass kernel does not apply (" +
                           (why.empty() ? std::string("X's sides multiples of 128") : why) + ")");
  LPBENCH_CUDA_REQUIRE(a.values != nullptr && a.values_t != nullptr,
                       "quantize_rope_backward_tensorwise writes both layouts");
  quantize_from_producer(
      a, "lpbench::cuda::quantize_rope_backward_tensorwise",
      [&](TensorwiseParams& tp) { tp.rope = source; }, stream);
}

}  // namespace lpbench::cuda
