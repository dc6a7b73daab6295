// Qwen3's per-head norm of q and k and RoPE in one pass each way (qk_norm_rope.cuh). A head
// vector of head_dim elements is held by head_dim / 16 consecutive lanes, each with RoPE's pairs
// of eight columns (one 8-element vector of each half), and its sums go in the order of
// rmsnorm.cu's kernel for rows that short (part_sum). A row's
// (batch, token, head) come from multiply-high divisions (fast_divmod.cuh): three 64-bit ones a
// lane held the kernels to a third of the HBM rate (docs/perf-log.md §36).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cp_async.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/fast_divmod.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/partial_sums.cuh"
#include "kernels/cuda/qk_norm_rope.cuh"
#include "kernels/cuda/resident_grid.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;

struct RowCoords {
  int64_t b, t, h;
};

// Rows (b, t, h) in order: heads a token, tokens a sequence. rows < 2^31 (the launchers check).
struct RowIndex {
  uint32_t rows = 0;
  FastDivmod heads, seq;
};

__device__ __forceinline__ RowCoords coords_of(uint32_t row, const RowIndex& ix) {
  uint32_t token_row = 0, b = 0;
  const uint32_t h = ix.heads.divmod(row, token_row);
  const uint32_t t = ix.seq.divmod(token_row, b);
  return {b, t, h};
}

RowIndex row_index(int64_t batch, int64_t seq, int64_t heads, const char* who) {
  const int64_t rows = batch * seq * heads;
  LPBENCH_CUDA_REQUIRE(rows < kFastDivmodLimit, std::string(who) +
                                                    ": at most 2^31 heads a call, got " +
                                                    std::to_string(rows) + " (split the batch)");
  RowIndex ix;
  ix.rows = static_cast<uint32_t>(rows);
  ix.heads = FastDivmod(static_cast<uint32_t>(heads));
  ix.seq = FastDivmod(static_cast<uint32_t>(seq));
  return ix;
}

__device__ __forceinline__ int64_t at(const RowCoords& c, const QkNormRopeStrides& s) {
  return c.b * s.batch + c.t * s.token + c.h * s.head;
}

// The sum of v over the tpr lanes of a row (tpr ≤ 32): rmsnorm.cu's row_sum for short rows.
__device__ __forceinline__ float lanes_sum(float v, int tpr) {
  for (int offset = tpr / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset, tpr);
  return v;
}

// A lane's part of a head: its eight columns c.. in the first half (lo) and the eight half a
// head on (hi), RoPE's pairs, so the rotation stays in the lane's registers.
struct HeadPart {
  Bf16x8 lo, hi;
};

// RoPE of a lane's pairs (rope.cu's arithmetic: products and sums rounded one by one), given its
// columns' cos and sin: x1 the first half's values, x2 the second's.
__device__ __forceinline__ HeadPart rotate(const HeadPart& x, const float (&c)[kBf16PerVector],
                                           const float (&s)[kBf16PerVector], bool inverse) {
  HeadPart out;
#pragma unroll
  for (int e = 0; e < kBf16PerVector; ++e) {
    const float x1 = x.lo.v[e];
    const float x2 = x.hi.v[e];
    const float a1c = __fmul_rn(x1, c[e]);
    const float a2s = __fmul_rn(x2, s[e]);
    const float a2c = __fmul_rn(x2, c[e]);
    const float a1s = __fmul_rn(x1, s[e]);
    out.lo.v[e] = inverse ? __fadd_rn(a1c, a2s) : __fsub_rn(a1c, a2s);
    out.hi.v[e] = inverse ? __fsub_rn(a2c, a1s) : __fadd_rn(a2c, a1s);
  }
  return out;
}

// The sum over a lane's sixteen values of f(h, e) (h 0 for its first-half vector, 1 for the
// other), each half's eight in order and then the two added. rmsnorm.cu lays a row this short
// out one vector a lane, 2 · tpr lanes, and the first step of its shuffle tree adds lane l's sum
// and lane l + tpr's: these two. lanes_sum over the tpr lanes then does the rest of the tree, so
// the sums are that kernel's bit for bit (§42).
template <typename F>
__device__ __forceinline__ float part_sum(F&& f) {
  float lo = 0.0F, hi = 0.0F;
#pragma unroll
  for (int e = 0; e < kBf16PerVector; ++e) {
    lo += f(0, e);
    hi += f(1, e);
  }
  return lo + hi;
}

// kTpr, the lanes of a head (head_dim / 16), is a template argument: as a run-time value, the
// divisions by it that place a thread, its shuffle loops and the head's constants took 8 % of
// both kernels' time (docs/perf-log.md §41). A lane holds RoPE's pairs itself: with one vector
// a lane, the pair's other half came from a partner lane through four shuffles, and every
// per-row cost (coordinates, addresses, reductions) was paid for 8 elements a lane instead of
// 16. On the qwen3-8b layer's q heads the backward issued 12.9 M instructions, against 21.3 M
// for the partner layout with two rows a step (§42).
//
// The forward walks the rows grid-strided, one row a lane group a step, and fetches x's vectors
// of the rows kForwardStages - 1 strides on into a shared-memory ring (cp.async) while it
// normalizes the current one, asking their RoPE tables into L1 at the same time, as the
// backward and the plain norm forward do. Before, a grid of one block per 32 rows had each lane
// group load two rows at once and wait for them: 61-62 % of the HBM peak (docs/perf-log.md
// §44-§45). The weight is read once a thread. Five stages keep four rows of 32 bytes a thread in
// flight, the bytes the backward's three stages keep of its two operands; one block an SM as the
// bound lets ptxas take 72 registers (at its default 64 the 32-wide heads' kernel spilled).
constexpr int kForwardStages = 5;

// x's two vectors a thread: [stage][lo, hi][thread].
constexpr size_t kForwardRingBytes = size_t{kForwardStages} * 2 * kThreads * sizeof(uint4);

// One head set's rows (the q heads or the k heads), walked by `blocks` blocks of which this is
// `block`.
template <int kTpr>
__device__ __forceinline__ void forward_rows(const QkNormRopeArgs& a, const RowIndex& ix,
                                             uint32_t block, uint32_t blocks) {
  constexpr int tpr = kTpr;
  extern __shared__ uint4 ring[];
  constexpr int groups = kThreads / tpr;  // lane groups a block
  constexpr int half = tpr * kBf16PerVector;
  constexpr float head_dim = 2 * half;
  const int sub = static_cast<int>(threadIdx.x) / tpr;
  const int lane = static_cast<int>(threadIdx.x) % tpr;
  const int col = lane * kBf16PerVector;  // in the first half; col + half in the second
  const auto* x = static_cast<const __nv_bfloat16*>(a.x);
  auto slot = [&](int stage, int h) -> uint4& {
    return ring[(stage * 2 + h) * kThreads + threadIdx.x];
  };
  const uint32_t stride = blocks * groups;
  auto fetch = [&](uint32_t row, int stage) {
    if (row < ix.rows) {
      const RowCoords rc = coords_of(row, ix);
      const __nv_bfloat16* p = x + at(rc, a.x_strides) + col;
      cp_async16(smem_addr(&slot(stage, 0)), p);
      cp_async16(smem_addr(&slot(stage, 1)), p + half);
      const int64_t table = rc.t * half + col;
      prefetch_l1(a.cos + table);
      prefetch_l1(a.sin + table);
    }
    cp_async_commit();
  };
  const uint32_t start = block * groups;
#pragma unroll
  for (int stage = 0; stage < kForwardStages - 1; ++stage)
    fetch(start + sub + stage * stride, stage);
  float w[2][kBf16PerVector];
  load_float8(a.weight + col, w[0]);
  load_float8(a.weight + col + half, w[1]);
  int stage = 0;
  // No early return for rows past the end: their lanes still take part in the shuffles.
  for (uint32_t base = start; base < ix.rows; base += stride) {
    const uint32_t row = base + sub;
    fetch(row + (kForwardStages - 1) * stride, (stage + kForwardStages - 1) % kForwardStages);
    cp_async_wait<kForwardStages - 1>();  // this row's group has landed
    const bool live = row < ix.rows;
    const RowCoords rc = coords_of(live ? row : 0, ix);
    HeadPart v = {};
    if (live) v = {unpack_bf16x8(slot(stage, 0)), unpack_bf16x8(slot(stage, 1))};
    float squares = part_sum([&](int h, int e) {
      const float xv = h == 0 ? v.lo.v[e] : v.hi.v[e];
      return xv * xv;
    });
    squares = lanes_sum(squares, tpr);
    const float rstd = 1.0F / sqrtf(squares / head_dim + a.eps);
    HeadPart n;  // the norm's output, as its kernel stores it
#pragma unroll
    for (int e = 0; e < kBf16PerVector; ++e) {
      n.lo.v[e] = round_bf16(v.lo.v[e] * rstd * w[0][e]);
      n.hi.v[e] = round_bf16(v.hi.v[e] * rstd * w[1][e]);
    }
    float c[kBf16PerVector], sn[kBf16PerVector];
    const int64_t table = rc.t * half + col;
    load_float8(a.cos + table, c);
    load_float8(a.sin + table, sn);
    const HeadPart y = rotate(n, c, sn, /*inverse=*/false);
    if (live) {
      if (lane == 0) a.rstd[row] = rstd;
      auto* out = static_cast<__nv_bfloat16*>(a.y) + at(rc, a.y_strides) + col;
      store_bf16x8(out, y.lo);
      store_bf16x8(out + half, y.hi);
    }
    stage = (stage + 1) % kForwardStages;
  }
  cp_async_wait<0>();  // the groups fetched past the last row carry nothing; none is left open
}

// Two head sets in one launch: the first `blocks0` blocks walk a0's rows, the rest a1's (a launch
// of one set passes it twice, with every block on a0). Each branch names its set's parameters, so
// they stay in the parameter bank. The k heads alone were a launch of a quarter of the q heads'
// rows, with a ramp and a drain of its own (docs/perf-log.md §43).
template <int kTpr>
__global__ void __launch_bounds__(kThreads, 1)
    forward_kernel(const QkNormRopeArgs a0, const RowIndex ix0, const QkNormRopeArgs a1,
                   const RowIndex ix1, const uint32_t blocks0) {
  if (blockIdx.x < blocks0) {
    forward_rows<kTpr>(a0, ix0, blockIdx.x, blocks0);
  } else {
    forward_rows<kTpr>(a1, ix1, blockIdx.x - blocks0, gridDim.x - blocks0);
  }
}

// The backward walks the rows grid-strided and fetches the rows ahead into a shared-memory ring
// (cp.async) while it reduces the current ones: each thread copies its own 16-byte words of dy
// and x and the row's rstd, and reads back only those, so the ring needs no barrier. Without the
// ring it moved 35 % of the HBM rate, with it 42 % (docs/perf-log.md §36).
constexpr int kStages = 3;

// dy and x, lo and hi: [stage][operand][half][thread], then rstd [stage][thread].
constexpr size_t kRingBytes = size_t{kStages} * kThreads * (4 * sizeof(uint4) + sizeof(float));

// One head set's rows, walked by `blocks` blocks of which this is `block`; each leaves its partial
// row of the weight's gradient at partial[block].
template <int kTpr>
__device__ __forceinline__ void backward_rows(const QkNormRopeBackwardArgs& a, const RowIndex& ix,
                                              float* partial, uint32_t block, uint32_t blocks) {
  constexpr int tpr = kTpr;
  extern __shared__ uint4 ring[];
  float* ring_rstd = reinterpret_cast<float*>(ring + kStages * 4 * kThreads);
  constexpr int groups = kThreads / tpr;  // lane groups a block
  constexpr int half = tpr * kBf16PerVector;
  constexpr int head_dim = 2 * half;
  const int sub = static_cast<int>(threadIdx.x) / tpr;
  const int lane = static_cast<int>(threadIdx.x) % tpr;
  const int col = lane * kBf16PerVector;
  const auto* dy = static_cast<const __nv_bfloat16*>(a.dy);
  const auto* x = static_cast<const __nv_bfloat16*>(a.x);
  auto* dx = static_cast<__nv_bfloat16*>(a.dx);
  float w[2][kBf16PerVector];
  load_float8(a.weight + col, w[0]);
  load_float8(a.weight + col + half, w[1]);
  float dw[2][kBf16PerVector] = {};
  uint32_t amax = 0;
  // Operand 0 dy, 1 x; h 0 lo, 1 hi.
  auto slot = [&](int stage, int operand, int h) -> uint4& {
    return ring[((stage * 2 + operand) * 2 + h) * kThreads + threadIdx.x];
  };
  const uint32_t stride = blocks * groups;
  auto fetch = [&](uint32_t row, int stage) {
    if (row < ix.rows) {
      const RowCoords rc = coords_of(row, ix);
      const __nv_bfloat16* pd = dy + at(rc, a.dy_strides) + col;
      const __nv_bfloat16* px = x + at(rc, a.x_strides) + col;
      cp_async16(smem_addr(&slot(stage, 0, 0)), pd);
      cp_async16(smem_addr(&slot(stage, 0, 1)), pd + half);
      cp_async16(smem_addr(&slot(stage, 1, 0)), px);
      cp_async16(smem_addr(&slot(stage, 1, 1)), px + half);
      cp_async4(smem_addr(&ring_rstd[stage * kThreads + threadIdx.x]), a.rstd + row);
    }
    cp_async_commit();
  };
  const uint32_t start = block * groups;
#pragma unroll
  for (int stage = 0; stage < kStages - 1; ++stage)
    fetch(start + sub + stage * stride, stage);
  int stage = 0;
  for (uint32_t base = start; base < ix.rows; base += stride) {
    const uint32_t row = base + sub;
    fetch(row + (kStages - 1) * stride, (stage + kStages - 1) % kStages);
    cp_async_wait<kStages - 1>();
    const bool live = row < ix.rows;
    const RowCoords rc = coords_of(live ? row : 0, ix);
    HeadPart d = {};
    HeadPart xhat = {};
    float rstd = 0.0F;
    if (live) {
      d = {unpack_bf16x8(slot(stage, 0, 0)), unpack_bf16x8(slot(stage, 0, 1))};
      xhat = {unpack_bf16x8(slot(stage, 1, 0)), unpack_bf16x8(slot(stage, 1, 1))};
      rstd = ring_rstd[stage * kThreads + threadIdx.x];
    }
    float c[kBf16PerVector], sn[kBf16PerVector];
    const int64_t table = rc.t * half + col;
    load_float8(a.cos + table, c);
    load_float8(a.sin + table, sn);
    HeadPart g = rotate(d, c, sn, /*inverse=*/true);
    // rmsnorm.cu's backward, step for step, on RoPE's backward output as its kernel stores it.
#pragma unroll
    for (int e = 0; e < kBf16PerVector; ++e) {
      g.lo.v[e] = round_bf16(g.lo.v[e]);
      g.hi.v[e] = round_bf16(g.hi.v[e]);
      xhat.lo.v[e] *= rstd;
      xhat.hi.v[e] *= rstd;
      dw[0][e] += g.lo.v[e] * xhat.lo.v[e];
      dw[1][e] += g.hi.v[e] * xhat.hi.v[e];
      g.lo.v[e] *= w[0][e];
      g.hi.v[e] *= w[1][e];
    }
    float dot = part_sum(
        [&](int h, int e) { return h == 0 ? g.lo.v[e] * xhat.lo.v[e] : g.hi.v[e] * xhat.hi.v[e]; });
    dot = lanes_sum(dot, tpr);
    const float mean = dot / static_cast<float>(head_dim);
    if (live) {
      HeadPart out;
#pragma unroll
      for (int e = 0; e < kBf16PerVector; ++e) {
        out.lo.v[e] = rstd * (g.lo.v[e] - xhat.lo.v[e] * mean);
        out.hi.v[e] = rstd * (g.hi.v[e] - xhat.hi.v[e] * mean);
      }
      auto* to = dx + at(rc, a.dx_strides) + col;
      store_bf16x8(to, out.lo, amax);
      store_bf16x8(to + half, out.hi, amax);
    }
    stage = (stage + 1) % kStages;
  }
  cp_async_wait<0>();
  report_amax(a.dx_amax, amax_of_pairs(amax));
  // The block's lane groups' sums added in shared memory, in lane-group order, into one partial
  // row a block: one a lane group gave sum_partial_rows 16 times the rows to add (the qwen3-8b
  // layer's four calls took 0.18 ms of its step; docs/perf-log.md §35).
  __shared__ float sums[kThreads * 2 * kBf16PerVector];  // [groups][head_dim]
#pragma unroll
  for (int e = 0; e < kBf16PerVector; ++e) {
    sums[sub * head_dim + col + e] = dw[0][e];
    sums[sub * head_dim + half + col + e] = dw[1][e];
  }
  __syncthreads();
  for (int c = static_cast<int>(threadIdx.x); c < head_dim; c += kThreads) {
    float total = 0.0F;
    for (int r = 0; r < groups; ++r)
      total += sums[r * head_dim + c];
    partial[static_cast<int64_t>(block) * head_dim + c] = total;
  }
}

// Two head sets in one launch, as the forward: the first `blocks0` blocks walk a0's rows and
// leave their partial rows first, the rest a1's after them.
template <int kTpr>
__global__ void __launch_bounds__(kThreads)
    backward_kernel(const QkNormRopeBackwardArgs a0, const RowIndex ix0,
                    const QkNormRopeBackwardArgs a1, const RowIndex ix1, const uint32_t blocks0,
                    float* partial) {
  let_dependents_launch();  // the sums' launch (finish, below) waits for this one to end
  if (blockIdx.x < blocks0) {
    backward_rows<kTpr>(a0, ix0, partial, blockIdx.x, blocks0);
  } else {
    backward_rows<kTpr>(a1, ix1, partial + int64_t{blocks0} * 2 * kTpr * kBf16PerVector,
                        blockIdx.x - blocks0, gridDim.x - blocks0);
  }
}

// The heads copied by the sums' launch (QkNormRopeCopyArgs): rows (b, t, h) of head_dim / 8
// vectors, vector v of the walk in row v >> shift.
struct CopyWork {
  QkNormRopeCopyArgs a;
  RowIndex ix;
  uint32_t vectors = 0;
  uint32_t shift = 0;
};

// Block `block` of `blocks` copies its share of the vectors as they are (16 bytes at a time, the
// bits unchanged) and folds their magnitudes into the amax.
__device__ __forceinline__ void copy_heads(const CopyWork& w, uint32_t block, uint32_t blocks) {
  const auto* src = static_cast<const __nv_bfloat16*>(w.a.src);
  auto* dst = static_cast<__nv_bfloat16*>(w.a.dst);
  const uint32_t in_row = (1u << w.shift) - 1;
  uint32_t amax2 = 0;
  for (uint32_t v = block * blockDim.x + threadIdx.x; v < w.vectors; v += blocks * blockDim.x) {
    const RowCoords rc = coords_of(v >> w.shift, w.ix);
    const int64_t col = static_cast<int64_t>(v & in_row) * kBf16PerVector;
    const uint4 raw = load_global_16(src + at(rc, w.a.src_strides) + col);
    store_global_16(dst + at(rc, w.a.dst_strides) + col, raw);
    for (const uint32_t word : {raw.x, raw.y, raw.z, raw.w})
      amax2 = __vmaxu2(amax2, word & 0x7fff7fffu);
  }
  report_amax(w.a.amax, amax_of_pairs(amax2));
}

// The backward's second launch with a copy: its first `copy_blocks` blocks copy the heads, the
// rest add up the partial rows. Launched as the backward's dependent, the copying blocks do not
// wait for it (they read attention's dV, finished before the backward began, and write slots it
// does not), so they run on the SMs its blocks leave while the summing blocks wait; the grid ends
// after the backward, as the sums' alone did. As a launch of its own after the sums, the copy
// paid a launch gap and a ramp (docs/perf-log.md §45).
__global__ void __launch_bounds__(kSumThreads)
    finish_kernel(const PartialSets sets, int64_t cols, uint32_t chunks, const CopyWork copy,
                  uint32_t copy_blocks) {
  if (blockIdx.x < copy_blocks) {
    copy_heads(copy, blockIdx.x, copy_blocks);
    return;
  }
  wait_for_producer();
  sum_partial_chunk(sets, cols, chunks, blockIdx.x - copy_blocks, static_cast<int>(threadIdx.x));
}

// The lanes of a head: each holds 8 columns of its first half and the 8 paired with them.
int lanes_per_row(int64_t head_dim) {
  return static_cast<int>(head_dim / (2 * kBf16PerVector));
}

// Calls fn with the lanes of a head as a compile-time constant (head_dim 16 to 256: 1 to 16).
template <typename Fn>
void with_lanes(int tpr, Fn&& fn) {
  switch (tpr) {
    case 1:
      fn(std::integral_constant<int, 1>{});
      break;
    case 2:
      fn(std::integral_constant<int, 2>{});
      break;
    case 4:
      fn(std::integral_constant<int, 4>{});
      break;
    case 8:
      fn(std::integral_constant<int, 8>{});
      break;
    default:
      fn(std::integral_constant<int, 16>{});
      break;
  }
}

void check_common(int64_t batch, int64_t seq, int64_t heads, int64_t head_dim,
                  const QkNormRopeStrides* strides, int n_strides, const void* const* pointers,
                  int n_pointers, const char* who) {
  LPBENCH_CUDA_REQUIRE(batch > 0 && seq > 0 && heads > 0, std::string(who) + ": empty input");
  LPBENCH_CUDA_REQUIRE(qk_norm_rope_applies(head_dim),
                       std::string(who) + ": head_dim must be a power of two from 16 to 256, got " +
                           std::to_string(head_dim));
  for (int i = 0; i < n_strides; ++i) {
    const QkNormRopeStrides& s = strides[i];
    LPBENCH_CUDA_REQUIRE(s.batch % kBf16PerVector == 0 && s.token % kBf16PerVector == 0 &&
                             s.head % kBf16PerVector == 0,
                         std::string(who) + ": strides must be multiples of 8");
  }
  for (int i = 0; i < n_pointers; ++i) {
    LPBENCH_CUDA_REQUIRE(
        pointers[i] != nullptr && reinterpret_cast<uintptr_t>(pointers[i]) % 16 == 0,
        std::string(who) + ": operands must be given and 16-byte aligned");
  }
}

}  // namespace

bool qk_norm_rope_applies(int64_t head_dim) {
  return head_dim >= 16 && head_dim <= 256 && (head_dim & (head_dim - 1)) == 0;
}

namespace {

// `blocks` resident blocks shared between two head sets of rows0 and rows1 rows (rows1 0: one
// set, every block on it), in proportion to their rows and no more than each has work for.
// {0, 0} where two sets get fewer than a block each: the caller runs them one after the other.
std::pair<int64_t, int64_t> split_blocks(int64_t blocks, int64_t rows0, int64_t rows1,
                                         int rows_per_block) {
  if (rows1 == 0) return {blocks, 0};
  if (blocks < 2) return {0, 0};
  const auto most = [&](int64_t rows) { return (rows + rows_per_block - 1) / rows_per_block; };
  const int64_t blocks0 =
      std::clamp<int64_t>((blocks * rows0 + (rows0 + rows1) / 2) / (rows0 + rows1), 1,
                          std::min(blocks - 1, most(rows0)));
  return {blocks0, std::min(blocks - blocks0, most(rows1))};
}

// The checks and row index of one head set's forward.
RowIndex forward_rows_of(const QkNormRopeArgs& a) {
  const QkNormRopeStrides strides[] = {a.x_strides, a.y_strides};
  const void* pointers[] = {a.x, a.y, a.weight, a.cos, a.sin};
  check_common(a.batch, a.seq, a.heads, a.head_dim, strides, 2, pointers, 5,
               "qk_norm_rope_forward");
  LPBENCH_CUDA_REQUIRE(a.rstd != nullptr, "qk_norm_rope_forward: rstd is needed");
  return row_index(a.batch, a.seq, a.heads, "qk_norm_rope_forward");
}

// One launch for a0's rows and, when given, a1's: as many blocks as the GPU holds at once, shared
// between the two sets in proportion to their rows (split_blocks).
void forward_launch(const QkNormRopeArgs& a0, const QkNormRopeArgs* a1, cudaStream_t stream) {
  const RowIndex ix0 = forward_rows_of(a0);
  const RowIndex ix1 = a1 != nullptr ? forward_rows_of(*a1) : ix0;
  LPBENCH_CUDA_REQUIRE(a1 == nullptr || a1->head_dim == a0.head_dim,
                       "qk_norm_rope_forward: the two head sets must have one head_dim");
  const NvtxRange range("lpbench qk_norm_rope_forward");
  const int tpr = lanes_per_row(a0.head_dim);
  const int rows_per_block = kThreads / tpr;
  const int64_t rows0 = ix0.rows, rows1 = a1 != nullptr ? int64_t{ix1.rows} : 0;
  bool one_launch = true;
  with_lanes(tpr, [&](auto n) {
    const auto kernel = forward_kernel<decltype(n)::value>;
    allow_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), kForwardRingBytes);
    const int64_t blocks =
        resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, kForwardRingBytes,
                        one_wave_blocks(rows0 + rows1, rows_per_block, kThreads));
    const auto [blocks0, blocks1] = split_blocks(blocks, rows0, rows1, rows_per_block);
    one_launch = blocks0 > 0;
    if (one_launch) {
      kernel<<<static_cast<unsigned>(blocks0 + blocks1), kThreads, kForwardRingBytes, stream>>>(
          a0, ix0, a1 != nullptr ? *a1 : a0, ix1, static_cast<uint32_t>(blocks0));
    }
  });
  if (!one_launch) {  // one block's worth of rows in all: one set after the other
    forward_launch(a0, nullptr, stream);
    forward_launch(*a1, nullptr, stream);
    return;
  }
  LPBENCH_CUDA_CHECK_LAUNCH();
}

// The checks and row index of one head set's backward.
RowIndex backward_rows_of(const QkNormRopeBackwardArgs& a) {
  const QkNormRopeStrides strides[] = {a.dy_strides, a.x_strides, a.dx_strides};
  const void* pointers[] = {a.dy, a.x, a.dx, a.weight, a.cos, a.sin, a.workspace};
  check_common(a.batch, a.seq, a.heads, a.head_dim, strides, 3, pointers, 7,
               "qk_norm_rope_backward");
  LPBENCH_CUDA_REQUIRE(a.rstd != nullptr && a.dweight != nullptr,
                       "qk_norm_rope_backward: rstd and dweight are needed");
  return row_index(a.batch, a.seq, a.heads, "qk_norm_rope_backward");
}

// The rows a block of the backward takes a step.
int backward_rows_per_block(int64_t head_dim) {
  return kThreads / lanes_per_row(head_dim);
}

// The copy's checks and walk.
CopyWork copy_work(const QkNormRopeCopyArgs& v) {
  const QkNormRopeStrides strides[] = {v.src_strides, v.dst_strides};
  const void* pointers[] = {v.src, v.dst};
  check_common(v.batch, v.seq, v.heads, v.head_dim, strides, 2, pointers, 2,
               "qk_norm_rope_backward's copy");
  CopyWork w;
  w.a = v;
  w.ix = row_index(v.batch, v.seq, v.heads, "qk_norm_rope_backward's copy");
  const int64_t per_row = v.head_dim / kBf16PerVector;
  LPBENCH_CUDA_REQUIRE(int64_t{w.ix.rows} * per_row < kFastDivmodLimit,
                       "qk_norm_rope_backward's copy: at most 2^31 vectors (split the batch)");
  w.vectors = static_cast<uint32_t>(w.ix.rows * per_row);
  while ((int64_t{1} << w.shift) < per_row)
    ++w.shift;
  return w;
}

// The weight gradients' sums of `count` sets, and with `v` the copy in the same launch.
void finish(const PartialSets& sets, int count, int64_t cols, const QkNormRopeCopyArgs* v,
            cudaStream_t stream) {
  if (v == nullptr) {
    sum_partial_rows(sets, count, cols, stream);
    return;
  }
  const CopyWork w = copy_work(*v);
  // Four vectors a thread; with an amax, a few thousand atomics at most.
  const int64_t per_block = int64_t{kSumThreads} * 4;
  const auto copy_blocks = static_cast<uint32_t>(
      std::min<int64_t>((w.vectors + per_block - 1) / per_block, kAmaxGridCap));
  const auto chunks = static_cast<uint32_t>((cols + kSumColumns - 1) / kSumColumns);
  launch_after_producer(finish_kernel, dim3(copy_blocks + chunks * count), dim3(kSumThreads), 0,
                        stream, sets, cols, chunks, w, copy_blocks);
}

// One launch for a0's rows and, when given, a1's (the resident blocks shared between the two in
// proportion to their rows), then each set's partial rows added up. a0's workspace holds the
// partial rows of both.
void backward_launch(const QkNormRopeBackwardArgs& a0, const QkNormRopeBackwardArgs* a1,
                     const QkNormRopeCopyArgs* v, cudaStream_t stream) {
  const RowIndex ix0 = backward_rows_of(a0);
  const RowIndex ix1 = a1 != nullptr ? backward_rows_of(*a1) : ix0;
  LPBENCH_CUDA_REQUIRE(a1 == nullptr || a1->head_dim == a0.head_dim,
                       "qk_norm_rope_backward: the two head sets must have one head_dim");
  const NvtxRange range("lpbench qk_norm_rope_backward");
  const int tpr = lanes_per_row(a0.head_dim);
  const int rows_per_block = backward_rows_per_block(a0.head_dim);
  const int64_t rows0 = ix0.rows, rows1 = a1 != nullptr ? int64_t{ix1.rows} : 0;
  auto* partial = static_cast<float*>(a0.workspace);
  int64_t blocks0 = 0, blocks1 = 0;
  bool one_launch = true;
  with_lanes(tpr, [&](auto n) {
    const auto kernel = backward_kernel<decltype(n)::value>;
    allow_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), kRingBytes);
    const int64_t blocks =
        resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, kRingBytes,
                        one_wave_blocks(rows0 + rows1, rows_per_block, kThreads));
    std::tie(blocks0, blocks1) = split_blocks(blocks, rows0, rows1, rows_per_block);
    one_launch = blocks0 > 0;
    if (one_launch) {
      kernel<<<static_cast<unsigned>(blocks0 + blocks1), kThreads, kRingBytes, stream>>>(
          a0, ix0, a1 != nullptr ? *a1 : a0, ix1, static_cast<uint32_t>(blocks0), partial);
    }
  });
  if (!one_launch) {  // one block's worth of rows in all: one set after the other
    backward_launch(a0, nullptr, nullptr, stream);
    QkNormRopeBackwardArgs second = *a1;
    second.workspace = a0.workspace;  // free again once the first set's sums have run
    backward_launch(second, nullptr, v, stream);
    return;
  }
  LPBENCH_CUDA_CHECK_LAUNCH();
  // One launch for both sets' sums: the call 1.6 µs shorter than with a launch each (§44).
  const PartialSets sets{{partial, partial + blocks0 * a0.head_dim},
                         {blocks0, a1 != nullptr ? blocks1 : blocks0},
                         {a0.dweight, a1 != nullptr ? a1->dweight : a0.dweight}};
  finish(sets, a1 != nullptr ? 2 : 1, a0.head_dim, v, stream);
}

}  // namespace

void qk_norm_rope_forward(const QkNormRopeArgs& a, cudaStream_t stream) {
  forward_launch(a, nullptr, stream);
}

void qk_norm_rope_forward(const QkNormRopeArgs& q, const QkNormRopeArgs& k, cudaStream_t stream) {
  forward_launch(q, &k, stream);
}

size_t qk_norm_rope_backward_workspace_bytes(int64_t rows, int64_t head_dim) {
  const int rows_per_block = backward_rows_per_block(head_dim);
  return static_cast<size_t>(one_wave_blocks(rows, rows_per_block, kThreads) * head_dim) *
         sizeof(float);
}

void qk_norm_rope_backward(const QkNormRopeBackwardArgs& a, cudaStream_t stream) {
  backward_launch(a, nullptr, nullptr, stream);
}

void qk_norm_rope_backward(const QkNormRopeBackwardArgs& q, const QkNormRopeBackwardArgs& k,
                           cudaStream_t stream) {
  backward_launch(q, &k, nullptr, stream);
}

void qk_norm_rope_backward(const QkNormRopeBackwardArgs& q, const QkNormRopeBackwardArgs& k,
                           const QkNormRopeCopyArgs& v, cudaStream_t stream) {
  backward_launch(q, &k, &v, stream);
}

}  // namespace lpbench::cuda
