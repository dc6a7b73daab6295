// SwiGLU forward and backward, each one pass: 8 elements of the gate and of the up half at a time
// (16-byte accesses), a resident wave of threads walking the vectors; a vector's row and column
// come from a multiply-high division (fast_divmod.cuh), not a 64-bit one.
//
// Under saved=int8 the forward writes gate_up's INT8 blocks from the registers it already holds
// and the backward reads them instead of gate_up (saved_int8_blocks.cuh): 16 threads a block of
// 128, which the layout gives when inner is a multiple of 128.
//
// Asked for every row's and column's amax of what it writes (int8-row's X, dY under dy=row), a
// second kernel walks the rows with the columns fixed per thread (swiglu_lines_kernel below).
//
// Both round as kernels/reference/swiglu.h defines: silu(gate) to BF16 as torch's silu of a BF16
// tensor does, the rest in FP32 and rounded once.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fast_divmod.cuh"
#include "kernels/cuda/nvtx_range.cuh"
#include "kernels/cuda/resident_grid.cuh"
#include "kernels/cuda/saved_int8_blocks.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/cuda/swiglu_math.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;

// The arithmetic on one vector of 8 columns: the forward's values of out into `first` (d unused);
// the backward's d_gate into `first` and d_up into `second`.
template <bool kBackward>
__device__ __forceinline__ void swiglu_math(const Bf16x8& gate, const Bf16x8& up, const Bf16x8& d,
                                            Bf16x8& first, Bf16x8& second) {
  if constexpr (!kBackward) {
#pragma unroll
    for (int e = 0; e < kBf16PerVector; ++e)
      first.v[e] = swiglu_value(gate.v[e], up.v[e]);
  } else {
#pragma unroll
    for (int e = 0; e < kBf16PerVector; ++e) {
      second.v[e] = swiglu_d_up(gate.v[e], d.v[e]);
      first.v[e] = swiglu_d_gate(gate.v[e], up.v[e], d.v[e]);
    }
  }
}

// One vector of 8 columns at (row, col) of out, loaded (or restored from saved=int8's copy, or
// kept into it) and computed by swiglu_math.
template <bool kBackward>
__device__ __forceinline__ void swiglu_vector(const SwigluArgs& a, int64_t row, int64_t col,
                                              Bf16x8& first, Bf16x8& second) {
  const auto* gu = static_cast<const __nv_bfloat16*>(a.gate_up);
  const int64_t gate_at = row * 2 * a.inner + col;
  Bf16x8 gate;
  Bf16x8 up;
  if (kBackward && a.kept.values != nullptr) {
    gate = restore_int8x8(a.kept, row, col, 2 * a.inner);
    up = restore_int8x8(a.kept, row, col + a.inner, 2 * a.inner);
  } else {
    gate = load_bf16x8(gu + gate_at);
    up = load_bf16x8(gu + gate_at + a.inner);
  }
  Bf16x8 d{};
  if constexpr (!kBackward) {
    if (a.keep.values != nullptr) {
      keep_int8x8(gate, row, col, 2 * a.inner, a.keep);
      keep_int8x8(up, row, col + a.inner, 2 * a.inner, a.keep);
    }
  } else {
    d = load_bf16x8(static_cast<const __nv_bfloat16*>(a.d_out) + row * a.inner + col);
  }
  swiglu_math<kBackward>(gate, up, d, first, second);
}

// The 16-byte words one vector of out reads (the lines kernel's, which takes no INT8 copies):
// gate's and up's, and the backward's d_out (zero forward).
struct SwigluWords {
  uint4 gate, up, d;
};

template <bool kBackward>
__device__ __forceinline__ SwigluWords load_swiglu_words(const SwigluArgs& a, int64_t row,
                                                         int64_t col) {
  const auto* gu = static_cast<const __nv_bfloat16*>(a.gate_up) + row * 2 * a.inner + col;
  SwigluWords w;
  w.gate = load_global_16(gu);
  w.up = load_global_16(gu + a.inner);
  if constexpr (kBackward) {
    w.d = load_global_16(static_cast<const __nv_bfloat16*>(a.d_out) + row * a.inner + col);
  } else {
    w.d = make_uint4(0, 0, 0, 0);
  }
  return w;
}

// swiglu_math on words already loaded.
template <bool kBackward>
__device__ __forceinline__ void swiglu_words(const SwigluWords& w, Bf16x8& first, Bf16x8& second) {
  const Bf16x8 d = kBackward ? unpack_bf16x8(w.d) : Bf16x8{};
  swiglu_math<kBackward>(unpack_bf16x8(w.gate), unpack_bf16x8(w.up), d, first, second);
}

// Stores one vector's results at (row, col) of out, folding their magnitudes into `amax`.
template <bool kBackward>
__device__ __forceinline__ void store_swiglu(const SwigluArgs& a, int64_t row, int64_t col,
                                             const Bf16x8& first, const Bf16x8& second,
                                             uint32_t& amax) {
  if constexpr (!kBackward) {
    store_bf16x8(static_cast<__nv_bfloat16*>(a.out) + row * a.inner + col, first, amax);
  } else {
    auto* dgu = static_cast<__nv_bfloat16*>(a.d_gate_up) + row * 2 * a.inner + col;
    store_bf16x8(dgu, first, amax);
    store_bf16x8(dgu + a.inner, second, amax);
  }
}

// `per_row`: the vectors of a row of out (inner / 8); `total` < 2^31, the launcher checks.
//
// kAhead (no INT8 copies: every step's launch but saved=int8's): the grid is one resident wave
// (at most kAmaxGridCap blocks where the tensor's amax is asked for), so each thread walks many
// vectors, and it asks for the next vector's words before it computes and stores the current
// one. The accesses are volatile and keep their order: walked in turn, each vector's loads
// waited for the stores of the one before (the lines kernel below had the same wait,
// docs/perf-log.md §51). On the H200 at llama2-7b's shapes the forward reporting the amax ran
// 0.0686 ms so against 0.0770 walked in turn, and 0.0743 with a thread a vector (§52).
// The forward ahead is held to the 5 blocks an SM it fits at 48 registers (51 unbounded: 4).
template <bool kBackward, bool kAhead>
__global__ void __launch_bounds__(kThreads, kAhead && !kBackward ? 5 : 0)
    swiglu_kernel(const SwigluArgs a, const FastDivmod per_row, const uint32_t total) {
  uint32_t amax = 0;
  if constexpr (kAhead) {
    const uint32_t stride = gridDim.x * blockDim.x;
    uint32_t item = blockIdx.x * blockDim.x + threadIdx.x;
    // The words of `item` and their place, loaded in the step before (or before the loop).
    SwigluWords next{};
    int64_t row = 0;
    int64_t col = 0;
    auto locate = [&](uint32_t i) {
      uint32_t r = 0;
      col = int64_t{per_row.divmod(i, r)} * kBf16PerVector;
      row = r;
    };
    if (item < total) {
      locate(item);
      next = load_swiglu_words<kBackward>(a, row, col);
    }
    // total < 2^31 and stride < 2^31 (the launcher checks): item + stride stays below 2^32.
    for (; item < total; item += stride) {
      const SwigluWords now = next;
      const int64_t now_row = row;
      const int64_t now_col = col;
      if (item + stride < total) {
        locate(item + stride);
        next = load_swiglu_words<kBackward>(a, row, col);
      }
      Bf16x8 first;
      Bf16x8 second;
      swiglu_words<kBackward>(now, first, second);
      store_swiglu<kBackward>(a, now_row, now_col, first, second, amax);
    }
  } else {
    for (uint32_t item = blockIdx.x * blockDim.x + threadIdx.x; item < total;
         item += gridDim.x * blockDim.x) {
      uint32_t row_of_item = 0;
      const int64_t col = int64_t{per_row.divmod(item, row_of_item)} * kBf16PerVector;
      const int64_t row = row_of_item;
      Bf16x8 first;
      Bf16x8 second;
      swiglu_vector<kBackward>(a, row, col, first, second);
      store_swiglu<kBackward>(a, row, col, first, second, amax);
    }
  }
  report_amax(a.amax, amax_of_pairs(amax));
}

// With every row's and column's amax asked for (SwigluArgs::line_amax), the columns stay put: a
// warp holds 32 vectors of one row side by side, a block 8 rows at a time, and each thread walks
// `rows_per_thread` rows down the same columns, keeping their maxima in registers. A row's
// amax is then a warp's reduction and one atomic; a column's, the block's warps' maxima through
// shared memory and one atomic a column a block. (The flat kernel's grid-stride walk moves a
// thread across columns, which would leave a column's maximum spread over all its threads.)
// The launcher sizes the grid to one wave of resident blocks (line_grid, resident_grid.cuh).
// Blocks of 8 warps: 16, which halve the columns' atomics at the wave's end and made RoPE's lines
// kernel 2–6 % faster (rope.cu), made these 5–12 % slower forward (docs/perf-log.md §50).
constexpr int kLineLanes = 32;
constexpr int kLineWarps = 8;

// Each row's words are asked for before the row before it is computed and stored, so that a
// thread has two rows' loads in flight: the accesses are volatile and keep their order, and
// loaded in turn a row's loads waited for the stores of the row before (the kernels ran 4 %
// forward and 11 % backward slower so, docs/perf-log.md §51). The forward is held to the 5
// blocks an SM it fitted before (one register more a thread would cost a block); the backward,
// held to its 4, spilled 16 bytes, and fits 3.
template <bool kBackward>
__global__ void __launch_bounds__(kLineLanes* kLineWarps, kBackward ? 1 : 5)
    swiglu_lines_kernel(const SwigluArgs a, const int rows_per_thread) {
  // The thread's columns two a word: out's 8, or d_gate's 8 then d_up's 8.
  constexpr int kWords = kBackward ? 8 : 4;
  __shared__ uint32_t warp_cols[kLineWarps][kWords][kLineLanes];
  const int lane = static_cast<int>(threadIdx.x);
  const int warp = static_cast<int>(threadIdx.y);
  const int64_t per_row = a.inner / kBf16PerVector;
  const int64_t vector = int64_t{blockIdx.x} * kLineLanes + lane;
  const bool live = vector < per_row;
  const int64_t col = vector * kBf16PerVector;
  uint32_t* row_amax = a.line_amax;
  uint32_t first_cols[4] = {0, 0, 0, 0};
  uint32_t second_cols[4] = {0, 0, 0, 0};
  const int64_t first_row = int64_t{blockIdx.y} * kLineWarps * rows_per_thread + warp;
  // The words of row j, loaded in step j - 1 (or before the loop).
  SwigluWords next{};
  if (live && first_row < a.rows) next = load_swiglu_words<kBackward>(a, first_row, col);
  for (int j = 0; j < rows_per_thread; ++j) {
    const int64_t row = first_row + int64_t{j} * kLineWarps;
    if (row >= a.rows) break;  // the same row for the whole warp
    uint32_t row2 = 0;
    if (live) {
      Bf16x8 first;
      Bf16x8 second;
      const SwigluWords now = next;
      const int64_t after = row + kLineWarps;
      if (j + 1 < rows_per_thread && after < a.rows) {
        next = load_swiglu_words<kBackward>(a, after, col);
      }
      swiglu_words<kBackward>(now, first, second);
      if constexpr (!kBackward) {
        store_bf16x8(static_cast<__nv_bfloat16*>(a.out) + row * a.inner + col, first, row2,
                     first_cols);
      } else {
        auto* dgu = static_cast<__nv_bfloat16*>(a.d_gate_up) + row * 2 * a.inner + col;
        store_bf16x8(dgu, first, row2, first_cols);
        store_bf16x8(dgu + a.inner, second, row2, second_cols);
      }
    }
    const uint32_t m = __reduce_max_sync(0xffffffffu, amax_of_pairs(row2));
    if (lane == 0 && m != 0) atomicMax(row_amax + row, m);
  }
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    warp_cols[warp][w][lane] = first_cols[w];
    if constexpr (kBackward) warp_cols[warp][4 + w][lane] = second_cols[w];
  }
  __syncthreads();
  // One thread a (word, vector) of the block: the max over the warps, then a column's atomic.
  const int t = warp * kLineLanes + lane;
  if (t >= kWords * kLineLanes) return;
  const int w = t / kLineLanes;
  const int l = t % kLineLanes;
  const int64_t v = int64_t{blockIdx.x} * kLineLanes + l;
  if (v >= per_row) return;
  uint32_t m2 = 0;
#pragma unroll
  for (int y = 0; y < kLineWarps; ++y)
    m2 = __vmaxu2(m2, warp_cols[y][w][l]);
  uint32_t* col_amax =
      a.line_amax + a.rows + (w >= 4 ? a.inner : 0) + v * kBf16PerVector + 2 * (w % 4);
  const uint32_t lo = (m2 & 0xffffu) << 16;  // the pair's first column
  const uint32_t hi = m2 & 0xffff0000u;
  if (lo != 0) atomicMax(col_amax, lo);
  if (hi != 0) atomicMax(col_amax + 1, hi);
}

template <bool kBackward>
void launch(const SwigluArgs& a, cudaStream_t stream) {
  const bool int8_in = kBackward && a.kept.values != nullptr;
  LPBENCH_CUDA_REQUIRE((a.gate_up != nullptr || int8_in) && a.rows > 0 && a.inner > 0,
                       "an empty gate_up");
  LPBENCH_CUDA_REQUIRE(a.inner % kBf16PerVector == 0,
                       "the inner width must be a multiple of 8, got " + std::to_string(a.inner));
  const void* pointers[] = {a.gate_up, a.out, a.d_out, a.d_gate_up};
  for (const void* p : pointers)
    LPBENCH_CUDA_REQUIRE(reinterpret_cast<uintptr_t>(p) % 16 == 0, "pointers 16-byte aligned");
  // Rows of gate_up are 2·inner wide, but a block must not straddle the gate and up halves.
  if (kBackward) {
    check_int8_blocks(a.kept.values, a.kept.scales, a.inner, "swiglu_backward's gate_up halves");
  } else {
    check_int8_blocks(a.keep.values, a.keep.scales, a.inner, "swiglu_forward's gate_up halves");
  }
  const int64_t per_row = a.inner / kBf16PerVector;
  const int64_t items = a.rows * per_row;
  LPBENCH_CUDA_REQUIRE(items < kFastDivmodLimit, "swiglu: at most 2^31 vectors of 8 a call, got " +
                                                     std::to_string(items) + " (split the rows)");
  if (a.line_amax != nullptr) {
    LPBENCH_CUDA_REQUIRE(a.amax == nullptr && a.keep.values == nullptr && !int8_in,
                         "swiglu: line_amax excludes the tensor's amax and saved=int8's blocks");
    const auto kernel = swiglu_lines_kernel<kBackward>;
    const LineGrid g = line_grid(reinterpret_cast<const void*>(kernel), kLineLanes * kLineWarps,
                                 (per_row + kLineLanes - 1) / kLineLanes, a.rows, kLineWarps);
    LPBENCH_CUDA_REQUIRE(
        g.col_blocks < (1LL << 31) && g.row_blocks <= 65535 && g.rows_per_thread < (1LL << 31),
        "swiglu: too many rows or columns for line_amax (split the rows)");
    const dim3 grid(static_cast<unsigned>(g.col_blocks), static_cast<unsigned>(g.row_blocks));
    kernel<<<grid, dim3(kLineLanes, kLineWarps), 0, stream>>>(a,
                                                              static_cast<int>(g.rows_per_thread));
    LPBENCH_CUDA_CHECK_LAUNCH();
    return;
  }
  const FastDivmod divmod(static_cast<uint32_t>(per_row));
  const int64_t needed = (items + kThreads - 1) / kThreads;
  if (a.keep.values == nullptr && !int8_in) {
    const auto kernel = swiglu_kernel<kBackward, true>;
    const int64_t blocks =
        resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, 0,
                        a.amax != nullptr ? std::min<int64_t>(needed, kAmaxGridCap) : needed);
    kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a, divmod,
                                                                   static_cast<uint32_t>(items));
  } else {
    const int64_t blocks =
        std::min<int64_t>(needed, a.amax != nullptr ? kAmaxGridCap : 65535LL * 16);
    swiglu_kernel<kBackward, false><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        a, divmod, static_cast<uint32_t>(items));
  }
  LPBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace

void swiglu_forward(const SwigluArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(a.out != nullptr, "swiglu_forward writes out");
  const NvtxRange range("lpbench swiglu_forward");
  launch<false>(a, stream);
}

void swiglu_backward(const SwigluArgs& a, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(a.d_out != nullptr && a.d_gate_up != nullptr,
                       "swiglu_backward reads d_out and writes d_gate_up");
  const NvtxRange range("lpbench swiglu_backward");
  launch<true>(a, stream);
}

}  // namespace lpbench::cuda
