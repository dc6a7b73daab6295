// Rotary position embedding, in place or from one strided layout into another (the backward
// reads attention's dQ/dK and writes them rotated into the gradient of the fused QKV output).
// A thread rotates 8 pairs at a time (16 bytes of each half, 32 bytes of cos and sin), walking
// the groups a resident wave apart. The flat index of a group of 8 pairs is split into (batch,
// token, head, group) by multiply-high divisions (fast_divmod.cuh): 64-bit ones cost more than
// the group's bytes (docs/perf-log.md §36).
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
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/rope_math.cuh"

namespace lpbench::cuda {

namespace {

constexpr int kThreads = 256;

// The index space of one call: groups of 8 pairs a head, heads a token, tokens a sequence.
struct RopeIndex {
  FastDivmod groups, heads, seq;
};

// The 8 pairs at (token t, offset i within the half-head) of x1 and x2, rotated.
__device__ __forceinline__ void rotate_pairs(const RopeArgs& a, int64_t t, int64_t i,
                                             const Bf16x8& x1, const Bf16x8& x2, Bf16x8& y1,
                                             Bf16x8& y2) {
  const int64_t half = a.head_dim / 2;
  const float4* cp = reinterpret_cast<const float4*>(a.cos + t * half + i);
  const float4* sp = reinterpret_cast<const float4*>(a.sin + t * half + i);
  const float4 c0 = cp[0], c1 = cp[1], s0 = sp[0], s1 = sp[1];
  const float c[kBf16PerVector] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
  const float s[kBf16PerVector] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
#pragma unroll
  for (int e = 0; e < kBf16PerVector; ++e) {
    y1.v[e] = rope_first(x1.v[e], x2.v[e], c[e], s[e], a.inverse);
    y2.v[e] = rope_second(x1.v[e], x2.v[e], c[e], s[e], a.inverse);
  }
}

// The 16-byte words of part a's group of 8 pairs at (head h, offset i) of token (b, t): x1's
// and x2's. Both kernels load through it.
__device__ __forceinline__ void load_pair_words(const RopeArgs& a, int64_t b, int64_t t, int64_t h,
                                                int64_t i, uint4& w1, uint4& w2) {
  const auto* in = static_cast<const __nv_bfloat16*>(a.in) + b * a.in_batch_stride +
                   t * a.in_token_stride + h * a.in_head_stride + i;
  w1 = load_global_16(in);
  w2 = load_global_16(in + a.head_dim / 2);
}

// Those words rotated, or copied where the part does not rotate (the backward's dV), handed to
// `store(y1, y2)`. Both kernels store through it, each folding into its own maxima. (Returning the
// values instead, with a copy for dV, held both in registers: 64 → 74 a thread in the lines
// kernel, one block an SM where there were two.)
template <typename Store>
__device__ __forceinline__ void rotate_or_copy(const RopeArgs& a, int64_t t, int64_t i,
                                               const uint4& w1, const uint4& w2, Store&& store) {
  const Bf16x8 x1 = unpack_bf16x8(w1);
  const Bf16x8 x2 = unpack_bf16x8(w2);
  if (!a.rotate) {
    store(x1, x2);
    return;
  }
  Bf16x8 y1;
  Bf16x8 y2;
  rotate_pairs(a, t, i, x1, x2, y1, y2);
  store(y1, y2);
}

// The parts of one launch, one after another in the flat index space: part p's items end at
// end[p] (end[p] = end[count - 1] past the last part, so its branches are never taken).
struct RopeLaunch {
  RopeArgs part[kRopeMaxParts];
  RopeIndex ix[kRopeMaxParts];
  uint32_t end[kRopeMaxParts] = {0, 0, 0};
};

// The grid is one resident wave (at most kAmaxGridCap blocks where the amax is asked for), so each
// thread walks several items, and it asks for the next item's words before it rotates and stores
// the current one: the volatile accesses keep their order, and walked in turn each item's loads
// waited for the stores of the one before. On the H200 at 4096 tokens the backward reporting the
// amax ran 0.0300 ms at Llama3.1-8B's shapes against 0.0311 walked in turn, 0.0313 an item a thread
// (docs/perf-log.md §52). In place (the forward), the next item's load reads only its own pairs.
struct RopeItemAt {
  int part = 0;
  int64_t t = 0, i = 0, dst = 0;
  uint4 w1{}, w2{};
};

// Item `item` of part `a`: where it goes, and its words of x1 and x2, loaded.
__device__ __forceinline__ RopeItemAt rope_item_load(const RopeArgs& a, const RopeIndex& ix,
                                                     int part, uint32_t item) {
  uint32_t head_item = 0, token_item = 0, b = 0;
  const uint32_t g = ix.groups.divmod(item, head_item);
  const uint32_t h = ix.heads.divmod(head_item, token_item);
  const uint32_t t = ix.seq.divmod(token_item, b);
  RopeItemAt at;
  at.part = part;
  at.t = t;
  at.i = int64_t{g} * kBf16PerVector;
  at.dst = b * a.out_batch_stride + t * a.out_token_stride + h * a.out_head_stride + at.i;
  load_pair_words(a, b, t, h, at.i, at.w1, at.w2);
  return at;
}

// That item rotated (or copied) and stored, folded into `amax`.
__device__ __forceinline__ void rope_item_store(const RopeArgs& a, const RopeItemAt& at,
                                                uint32_t& amax) {
  auto* out = static_cast<__nv_bfloat16*>(a.out) + at.dst;
  rotate_or_copy(a, at.t, at.i, at.w1, at.w2, [&](const Bf16x8& y1, const Bf16x8& y2) {
    store_bf16x8(out, y1, amax);
    store_bf16x8(out + a.head_dim / 2, y2, amax);
  });
}

// kParts: 1 (a call alone, the forward: no branches) or kRopeMaxParts (fewer parts end where
// the last one does). A branch names its part by a constant index, so that the arguments stay in
// the parameter bank (an index computed at run time would copy them into local memory). Through
// the parts' branches the forward of one item a thread ran 8 % slower (docs/perf-log.md §37).
template <int kParts>
__global__ void __launch_bounds__(kThreads) rope_kernel(const __grid_constant__ RopeLaunch l) {
  auto load = [&](uint32_t item) {
    if (kParts == 1 || item < l.end[0]) return rope_item_load(l.part[0], l.ix[0], 0, item);
    if (item < l.end[1]) return rope_item_load(l.part[1], l.ix[1], 1, item - l.end[0]);
    return rope_item_load(l.part[2], l.ix[2], 2, item - l.end[1]);
  };
  uint32_t amax = 0;
  const uint32_t total = l.end[kRopeMaxParts - 1];
  const uint32_t stride = gridDim.x * blockDim.x;
  uint32_t item = blockIdx.x * blockDim.x + threadIdx.x;
  RopeItemAt next;
  if (item < total) next = load(item);
  // Fewer than 2^31 items and threads (the launcher checks): item + stride stays below 2^32.
  for (; item < total; item += stride) {
    const RopeItemAt now = next;
    if (item + stride < total) next = load(item + stride);
    if (kParts == 1 || now.part == 0) {
      rope_item_store(l.part[0], now, amax);
    } else if (now.part == 1) {
      rope_item_store(l.part[1], now, amax);
    } else {
      rope_item_store(l.part[2], now, amax);
    }
  }
  report_amax(l.part[0].amax, amax_of_pairs(amax));
}

// With every row's and column's amax asked for (RopeArgs::line_amax), each thread stays on one
// group of 8 pairs of one head, 16 columns of the matrix, and walks `rows_per_thread` tokens
// down them, kLineWarps (16) apart, keeping their maxima in registers; a warp holds 32 groups of
// one token side by side, a block 16 tokens at a time (swiglu_lines_kernel's plan, swiglu.cu). A
// row's amax is a warp's reduction and one atomic; a column's, the block's warps' maxima through
// shared memory and one atomic a column a block. The grid is one wave of resident blocks
// (line_grid). Blocks of 16 warps, not 8: half the blocks in the wave, so half the columns'
// atomics, which all come at the wave's end (docs/perf-log.md §50).
constexpr int kLineLanes = 32;
constexpr int kLineWarps = 16;
constexpr int kLineWords = 8;  // a thread's 16 columns two a word: x1's 8, then x2's 8
static_assert(kLineWarps >= kLineWords, "warp w reduces word w");

struct RopeLinesLaunch {
  RopeArgs part[kRopeMaxParts];
  FastDivmod groups[kRopeMaxParts];         // groups of 8 pairs a head
  uint32_t end[kRopeMaxParts] = {0, 0, 0};  // a row's groups, part by part, cumulative
  FastDivmod seq;
  uint32_t rows = 0;
};

// A group, from its words, rotated (or copied), stored and folded into the lines.
__device__ __forceinline__ void rope_line_words(const RopeArgs& a, int64_t b, int64_t t, int64_t h,
                                                int64_t i, const uint4& w1, const uint4& w2,
                                                uint32_t& row2, uint32_t (&first)[4],
                                                uint32_t (&second)[4]) {
  auto* out = static_cast<__nv_bfloat16*>(a.out) + b * a.out_batch_stride + t * a.out_token_stride +
              h * a.out_head_stride + i;
  rotate_or_copy(a, t, i, w1, w2, [&](const Bf16x8& y1, const Bf16x8& y2) {
    store_bf16x8(out, y1, row2, first);
    store_bf16x8(out + a.head_dim / 2, y2, row2, second);
  });
}

// Where a thread's group lies: its part, head and offset, and its first column in the matrix.
struct LineGroup {
  int part = 0;
  int64_t head = 0, offset = 0, col = 0;
};

__device__ __forceinline__ LineGroup line_group(const RopeArgs& a, const FastDivmod& groups,
                                                int part, uint32_t c) {
  uint32_t h = 0;
  const uint32_t g = groups.divmod(c, h);
  LineGroup lg;
  lg.part = part;
  lg.head = h;
  lg.offset = int64_t{g} * kBf16PerVector;
  lg.col = a.line_col + lg.head * a.out_head_stride + lg.offset;
  return lg;
}

// Each branch names its part by a constant index, as in rope_kernel. Each row's words are
// asked for before the row before it is rotated and stored, so that a thread has two rows'
// loads in flight (swiglu_lines_kernel's plan, swiglu.cu): loaded in turn, a row's loads waited
// for the stores of the row before, and the kernel ran 3 % slower at Llama3.1-8B's shapes
// (docs/perf-log.md §51).
__global__ void __launch_bounds__(kLineLanes* kLineWarps)
    rope_lines_kernel(const __grid_constant__ RopeLinesLaunch l, const int rows_per_thread) {
  __shared__ uint32_t warp_cols[kLineWarps][kLineWords][kLineLanes];
  __shared__ int64_t lane_col[kLineLanes];
  const int lane = static_cast<int>(threadIdx.x);
  const int warp = static_cast<int>(threadIdx.y);
  const uint32_t c = blockIdx.x * kLineLanes + lane;
  const uint32_t groups = l.end[kRopeMaxParts - 1];
  const bool live = c < groups;
  LineGroup lg;
  if (c < l.end[0]) {
    lg = line_group(l.part[0], l.groups[0], 0, c);
  } else if (c < l.end[1]) {
    lg = line_group(l.part[1], l.groups[1], 1, c - l.end[0]);
  } else if (live) {
    lg = line_group(l.part[2], l.groups[2], 2, c - l.end[1]);
  }
  // This thread's words of a row, its part named by a constant index.
  const auto load = [&](int64_t row, uint4& w1, uint4& w2) {
    uint32_t b = 0;
    const uint32_t t = l.seq.divmod(static_cast<uint32_t>(row), b);
    if (lg.part == 0 && live) {
      load_pair_words(l.part[0], b, t, lg.head, lg.offset, w1, w2);
    } else if (lg.part == 1) {
      load_pair_words(l.part[1], b, t, lg.head, lg.offset, w1, w2);
    } else if (lg.part == 2) {
      load_pair_words(l.part[2], b, t, lg.head, lg.offset, w1, w2);
    }
  };
  uint32_t first[4] = {0, 0, 0, 0};
  uint32_t second[4] = {0, 0, 0, 0};
  uint32_t* line_amax = l.part[0].line_amax;
  const int64_t first_row = int64_t{blockIdx.y} * kLineWarps * rows_per_thread + warp;
  uint4 next1{}, next2{};  // the words of row j, loaded in step j - 1 (or before the loop)
  if (first_row < l.rows) load(first_row, next1, next2);
  for (int j = 0; j < rows_per_thread; ++j) {
    const int64_t row = first_row + int64_t{j} * kLineWarps;
    if (row >= l.rows) break;  // the same row for the whole warp
    const uint4 w1 = next1, w2 = next2;
    const int64_t after = row + kLineWarps;
    if (j + 1 < rows_per_thread && after < l.rows) load(after, next1, next2);
    uint32_t b = 0;
    const uint32_t t = l.seq.divmod(static_cast<uint32_t>(row), b);
    uint32_t row2 = 0;
    if (lg.part == 0 && live) {
      rope_line_words(l.part[0], b, t, lg.head, lg.offset, w1, w2, row2, first, second);
    } else if (lg.part == 1) {
      rope_line_words(l.part[1], b, t, lg.head, lg.offset, w1, w2, row2, first, second);
    } else if (lg.part == 2) {
      rope_line_words(l.part[2], b, t, lg.head, lg.offset, w1, w2, row2, first, second);
    }
    const uint32_t m = __reduce_max_sync(0xffffffffu, amax_of_pairs(row2));
    if (lane == 0 && m != 0) atomicMax(line_amax + row, m);
  }
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    warp_cols[warp][w][lane] = first[w];
    warp_cols[warp][4 + w][lane] = second[w];
  }
  if (warp == 0) lane_col[lane] = lg.col;
  __syncthreads();
  // One thread a (word, group) of the block: the max over the warps, then a column's atomic.
  const int w = warp;  // warp w reduces word w
  if (w >= kLineWords || blockIdx.x * kLineLanes + lane >= groups) return;
  uint32_t m2 = 0;
#pragma unroll
  for (int y = 0; y < kLineWarps; ++y)
    m2 = __vmaxu2(m2, warp_cols[y][w][lane]);
  uint32_t* col_amax =
      line_amax + l.rows + lane_col[lane] + (w >= 4 ? l.part[0].head_dim / 2 : 0) + 2 * (w % 4);
  const uint32_t lo = (m2 & 0xffffu) << 16;  // the pair's first column
  const uint32_t hi = m2 & 0xffff0000u;
  if (lo != 0) atomicMax(col_amax, lo);
  if (hi != 0) atomicMax(col_amax + 1, hi);
}

void check(const RopeArgs& a) {
  LPBENCH_CUDA_REQUIRE(a.in && a.out && (!a.rotate || (a.cos && a.sin)),
                       "in, out, and to rotate cos and sin, are needed");
  LPBENCH_CUDA_REQUIRE(a.batch > 0 && a.seq > 0 && a.heads > 0, "empty input");
  LPBENCH_CUDA_REQUIRE(a.head_dim % (2 * kBf16PerVector) == 0,
                       "head_dim must be a multiple of 16, got " + std::to_string(a.head_dim));
  const int64_t strides[] = {a.in_batch_stride,  a.in_token_stride,  a.in_head_stride,
                             a.out_batch_stride, a.out_token_stride, a.out_head_stride};
  for (int64_t stride : strides)
    LPBENCH_CUDA_REQUIRE(stride % kBf16PerVector == 0, "strides must be multiples of 8");
  const void* pointers[] = {a.in, a.out, a.cos, a.sin};
  for (const void* p : pointers)
    LPBENCH_CUDA_REQUIRE(reinterpret_cast<uintptr_t>(p) % 16 == 0, "pointers 16-byte aligned");
}

// rope_parts with line_amax: the parts must tile rows of one matrix as RopeArgs says.
void launch_lines(const RopeArgs* parts, int count, cudaStream_t stream) {
  const RopeArgs& first = parts[0];
  const int64_t width = first.out_token_stride;
  const int64_t rows = first.batch * first.seq;
  LPBENCH_CUDA_REQUIRE(first.amax == nullptr, "rope: line_amax excludes the tensor's amax");
  LPBENCH_CUDA_REQUIRE(
      width > 0 && (first.batch == 1 || first.out_batch_stride == first.seq * width) &&
          rows < kFastDivmodLimit && width < kFastDivmodLimit,
      "rope: line_amax needs the outputs to be rows of one matrix (out_batch_stride "
      "= seq·out_token_stride, fewer than 2^31 rows and columns)");
  RopeLinesLaunch l;
  int64_t groups = 0;
  for (int p = 0; p < count; ++p) {
    const RopeArgs& a = parts[p];
    LPBENCH_CUDA_REQUIRE(a.line_amax == first.line_amax && a.batch == first.batch &&
                             a.seq == first.seq && a.head_dim == first.head_dim &&
                             a.out_token_stride == width &&
                             a.out_batch_stride == first.out_batch_stride,
                         "rope: the parts of a launch with line_amax share it, the batch, the "
                         "sequence, the head size and the output's rows");
    LPBENCH_CUDA_REQUIRE(a.line_col >= 0 && a.out_head_stride >= 0 &&
                             a.line_col + (a.heads - 1) * a.out_head_stride + a.head_dim <= width,
                         "rope: part " + std::to_string(p) + "'s heads leave the matrix's " +
                             std::to_string(width) + " columns");
    const int64_t per_head = a.head_dim / 2 / kBf16PerVector;
    groups += a.heads * per_head;
    l.part[p] = a;
    l.groups[p] = FastDivmod(static_cast<uint32_t>(per_head));
    l.end[p] = static_cast<uint32_t>(std::min<int64_t>(groups, kFastDivmodLimit));
  }
  for (int p = count; p < kRopeMaxParts; ++p)
    l.end[p] = l.end[count - 1];
  l.seq = FastDivmod(static_cast<uint32_t>(first.seq));
  l.rows = static_cast<uint32_t>(rows);
  const LineGrid g =
      line_grid(reinterpret_cast<const void*>(rope_lines_kernel), kLineLanes * kLineWarps,
                (groups + kLineLanes - 1) / kLineLanes, rows, kLineWarps);
  LPBENCH_CUDA_REQUIRE(
      groups < kFastDivmodLimit && g.row_blocks <= 65535 && g.rows_per_thread < (1LL << 31),
      "rope: too many rows or columns for line_amax (split the batch)");
  const dim3 grid(static_cast<unsigned>(g.col_blocks), static_cast<unsigned>(g.row_blocks));
  rope_lines_kernel<<<grid, dim3(kLineLanes, kLineWarps), 0, stream>>>(
      l, static_cast<int>(g.rows_per_thread));
  LPBENCH_CUDA_CHECK_LAUNCH();
}

}  // namespace

void rope_parts(const RopeArgs* parts, int count, cudaStream_t stream) {
  LPBENCH_CUDA_REQUIRE(count >= 1 && count <= kRopeMaxParts,
                       "rope: 1 to 3 parts a launch, got " + std::to_string(count));
  for (int p = 0; p < count; ++p)
    check(parts[p]);
  if (parts[0].line_amax != nullptr) {
    const NvtxRange range(parts[0].rotate && parts[0].inverse ? "lpbench rope_backward_lines"
                                                              : "lpbench rope_lines");
    launch_lines(parts, count, stream);
    return;
  }
  RopeLaunch l;
  int64_t items = 0;
  bool inverse = false, copy_only = true;
  for (int p = 0; p < count; ++p) {
    const RopeArgs& a = parts[p];
    LPBENCH_CUDA_REQUIRE(a.line_amax == nullptr, "rope: line_amax for every part or none");
    LPBENCH_CUDA_REQUIRE(a.amax == parts[0].amax, "rope: the parts of a launch share one amax");
    const int64_t groups = a.head_dim / 2 / kBf16PerVector;
    const int64_t part_items = a.batch * a.seq * a.heads * groups;
    items += part_items;
    LPBENCH_CUDA_REQUIRE(items < kFastDivmodLimit,
                         "rope: at most 2^31 groups of 8 pairs a launch, got " +
                             std::to_string(items) + " (split the batch)");
    l.part[p] = a;
    l.ix[p].groups = FastDivmod(static_cast<uint32_t>(groups));
    l.ix[p].heads = FastDivmod(static_cast<uint32_t>(a.heads));
    l.ix[p].seq = FastDivmod(static_cast<uint32_t>(a.seq));
    l.end[p] = static_cast<uint32_t>(items);
    inverse = inverse || (a.rotate && a.inverse);
    copy_only = copy_only && !a.rotate;
  }
  for (int p = count; p < kRopeMaxParts; ++p)
    l.end[p] = static_cast<uint32_t>(items);
  const NvtxRange range(copy_only ? "lpbench rope_copy"
                        : inverse ? "lpbench rope_backward"
                                  : "lpbench rope_forward");
  const auto kernel = count == 1 ? rope_kernel<1> : rope_kernel<kRopeMaxParts>;
  const int64_t needed = (items + kThreads - 1) / kThreads;
  const int64_t blocks =
      resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, 0,
                      parts[0].amax != nullptr ? std::min<int64_t>(needed, kAmaxGridCap) : needed);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(l);
  LPBENCH_CUDA_CHECK_LAUNCH();
}

void rope(const RopeArgs& a, cudaStream_t stream) {
  rope_parts(&a, 1, stream);
}

}  // namespace lpbench::cuda
