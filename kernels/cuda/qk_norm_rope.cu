// Qwen3's per-head norm of q and k and RoPE in one pass each way (qk_norm_rope.cuh). A head
// vector of head_dim elements is held by head_dim / 8 consecutive lanes (one 8-element vector
// each, as rmsnorm.cu lays out rows that short, so the sums go in its order); RoPE's pairs are
// lanes half a row apart, and exchange their values by one shuffle of four packed words. A row's
// (batch, token, head) come from multiply-high divisions (fast_divmod.cuh): three 64-bit ones a
// lane held the kernels to a third of the HBM rate (docs/perf-log.md §36).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/cuda/amax.cuh"
#include "kernels/cuda/bf16_vector.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/cp_async.cuh"
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

// The partner lane's eight values (values already BF16, so packing them loses nothing).
__device__ __forceinline__ Bf16x8 partner_of(const Bf16x8& mine, int tpr) {
  Bf16x8 theirs;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t word =
        (__float_as_uint(mine.v[2 * i]) >> 16) | (__float_as_uint(mine.v[2 * i + 1]) & 0xffff0000u);
    const uint32_t got = __shfl_xor_sync(0xffffffffu, word, tpr / 2, tpr);
    theirs.v[2 * i] = __uint_as_float(got << 16);
    theirs.v[2 * i + 1] = __uint_as_float(got & 0xffff0000u);
  }
  return theirs;
}

// RoPE of this lane's eight values (rope.cu's arithmetic: products and sums rounded one by one),
// given its partner's and its columns' cos and sin: the lane is in the head's first half (x1) or
// its second (x2).
__device__ __forceinline__ Bf16x8 rotate(const Bf16x8& mine, const Bf16x8& theirs, bool first,
                                         const float (&c)[kBf16PerVector],
                                         const float (&s)[kBf16PerVector], bool inverse) {
  Bf16x8 out;
#pragma unroll
  for (int e = 0; e < kBf16PerVector; ++e) {
    const float x1 = first ? mine.v[e] : theirs.v[e];
    const float x2 = first ? theirs.v[e] : mine.v[e];
    const float a1c = __fmul_rn(x1, c[e]);
    const float a2s = __fmul_rn(x2, s[e]);
    const float a2c = __fmul_rn(x2, c[e]);
    const float a1s = __fmul_rn(x1, s[e]);
    if (first) {
      out.v[e] = inverse ? __fadd_rn(a1c, a2s) : __fsub_rn(a1c, a2s);
    } else {
      out.v[e] = inverse ? __fsub_rn(a2c, a1s) : __fadd_rn(a2c, a1s);
    }
  }
  return out;
}

// kTpr, the lanes of a head (head_dim / 8), is a template argument: as a run-time value, the
// divisions by it that place a thread, its shuffle loops and the head's constants took 8 % of
// both kernels' time (docs/perf-log.md §41).
//
// Each lane group takes kForwardRows consecutive rows (heads of one token where the head count
// allows) and issues their loads together: with one row a lane group, a thread had 16 bytes in
// flight and the kernel moved 42 % of the HBM rate. The weight is read once for the rows, the
// cos and sin tables once a token (docs/perf-log.md §42).
constexpr int kForwardRows = 4;

template <int kTpr>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const QkNormRopeArgs a, const RowIndex ix) {
  constexpr int tpr = kTpr;
  constexpr int groups = kThreads / tpr;  // lane groups a block
  const int sub = static_cast<int>(threadIdx.x) / tpr;
  const int lane = static_cast<int>(threadIdx.x) % tpr;
  const uint32_t first_row = (blockIdx.x * groups + sub) * kForwardRows;
  const int col = lane * kBf16PerVector;
  const auto* x = static_cast<const __nv_bfloat16*>(a.x);
  // No early return for rows past the end: their lanes still take part in the shuffles.
  uint4 raw[kForwardRows];
#pragma unroll
  for (int k = 0; k < kForwardRows; ++k) {
    const uint32_t row = first_row + k;
    raw[k] = make_uint4(0, 0, 0, 0);
    if (row < ix.rows) raw[k] = load_global_16(x + at(coords_of(row, ix), a.x_strides) + col);
  }
  float w[kBf16PerVector];
  load_float8(a.weight + col, w);
  constexpr int half = tpr * kBf16PerVector / 2;
  const bool first = col < half;
  const int table_col = first ? col : col - half;
  constexpr float head_dim = tpr * kBf16PerVector;
  float c[kBf16PerVector], sn[kBf16PerVector];
  int64_t cached_t = -1;
#pragma unroll
  for (int k = 0; k < kForwardRows; ++k) {
    const uint32_t row = first_row + k;
    const RowCoords rc = coords_of(row < ix.rows ? row : 0, ix);  // again: fewer registers
    const Bf16x8 v = unpack_bf16x8(raw[k]);
    float squares = 0.0F;
#pragma unroll
    for (int e = 0; e < kBf16PerVector; ++e)
      squares += v.v[e] * v.v[e];
    squares = lanes_sum(squares, tpr);
    const float rstd = 1.0F / sqrtf(squares / head_dim + a.eps);
    Bf16x8 n;
#pragma unroll
    for (int e = 0; e < kBf16PerVector; ++e)
      n.v[e] = round_bf16(v.v[e] * rstd * w[e]);  // the norm's output, as its kernel stores it
    const Bf16x8 other = partner_of(n, tpr);
    if (rc.t != cached_t) {
      cached_t = rc.t;
      const int64_t table = rc.t * half + table_col;
      load_float8(a.cos + table, c);
      load_float8(a.sin + table, sn);
    }
    const Bf16x8 y = rotate(n, other, first, c, sn, /*inverse=*/false);
    if (row >= ix.rows) continue;
    if (lane == 0) a.rstd[row] = rstd;
    store_bf16x8(static_cast<__nv_bfloat16*>(a.y) + at(rc, a.y_strides) + col, y);
  }
}

// The backward walks the rows grid-strided and fetches the rows ahead into a shared-memory ring
// (cp.async) while it reduces the current ones: each thread copies its own 16-byte words of dy
// and x and the rows' rstd, and reads back only those, so the ring needs no barrier. Without the
// ring it moved 35 % of the HBM rate, with it 42 % (docs/perf-log.md §36). A lane group takes
// kBackwardRows consecutive rows a step, as the forward does, so that the cos and sin tables
// are read once a token and the loop's work is shared (§42).
constexpr int kStages = 3;
constexpr int kBackwardRows = 2;

// dy and x, then rstd: [stage][row][operand][thread], then [stage][row][thread].
constexpr size_t kRingBytes =
    size_t{kStages} * kBackwardRows * kThreads * (2 * sizeof(uint4) + sizeof(float));

template <int kTpr>
__global__ void __launch_bounds__(kThreads)
    backward_kernel(const QkNormRopeBackwardArgs a, const RowIndex ix, float* partial) {
  constexpr int tpr = kTpr;
  extern __shared__ uint4 ring[];
  float* ring_rstd = reinterpret_cast<float*>(ring + kStages * kBackwardRows * 2 * kThreads);
  constexpr int groups = kThreads / tpr;  // lane groups a block
  constexpr int head_dim = tpr * kBf16PerVector;
  const int sub = static_cast<int>(threadIdx.x) / tpr;
  const int lane = static_cast<int>(threadIdx.x) % tpr;
  const int col = lane * kBf16PerVector;
  constexpr int half = head_dim / 2;
  const bool first = col < half;
  const int table_col = first ? col : col - half;
  const auto* dy = static_cast<const __nv_bfloat16*>(a.dy);
  const auto* x = static_cast<const __nv_bfloat16*>(a.x);
  auto* dx = static_cast<__nv_bfloat16*>(a.dx);
  float w[kBf16PerVector];
  load_float8(a.weight + col, w);
  float dw[kBf16PerVector] = {};
  uint32_t amax = 0;
  auto dy_slot = [&](int stage, int k) -> uint4& {
    return ring[((stage * kBackwardRows + k) * 2) * kThreads + threadIdx.x];
  };
  auto x_slot = [&](int stage, int k) -> uint4& {
    return ring[((stage * kBackwardRows + k) * 2 + 1) * kThreads + threadIdx.x];
  };
  auto rstd_slot = [&](int stage, int k) -> float& {
    return ring_rstd[(stage * kBackwardRows + k) * kThreads + threadIdx.x];
  };
  // A step's rows: kBackwardRows a lane group, the block's lane groups side by side.
  const uint32_t steps = (ix.rows + groups * kBackwardRows - 1) / (groups * kBackwardRows);
  auto row_of = [&](uint32_t step, int k) { return (step * groups + sub) * kBackwardRows + k; };
  auto fetch = [&](uint32_t step, int stage) {
#pragma unroll
    for (int k = 0; k < kBackwardRows; ++k) {
      const uint32_t row = row_of(step, k);
      if (step < steps && row < ix.rows) {
        const RowCoords rc = coords_of(row, ix);
        cp_async16(smem_addr(&dy_slot(stage, k)), dy + at(rc, a.dy_strides) + col);
        cp_async16(smem_addr(&x_slot(stage, k)), x + at(rc, a.x_strides) + col);
        cp_async4(smem_addr(&rstd_slot(stage, k)), a.rstd + row);
      }
    }
    cp_async_commit();
  };
#pragma unroll
  for (int stage = 0; stage < kStages - 1; ++stage)
    fetch(blockIdx.x + stage * gridDim.x, stage);
  float c[kBf16PerVector] = {}, sn[kBf16PerVector] = {};
  int64_t cached_t = -1;
  int stage = 0;
  for (uint32_t step = blockIdx.x; step < steps; step += gridDim.x) {
    fetch(step + (kStages - 1) * gridDim.x, (stage + kStages - 1) % kStages);
    cp_async_wait<kStages - 1>();
#pragma unroll
    for (int k = 0; k < kBackwardRows; ++k) {
      const uint32_t row = row_of(step, k);
      const bool live = row < ix.rows;
      const RowCoords rc = coords_of(live ? row : 0, ix);
      Bf16x8 d = {};
      Bf16x8 xhat = {};
      float rstd = 0.0F;
      if (live) {
        d = unpack_bf16x8(dy_slot(stage, k));
        xhat = unpack_bf16x8(x_slot(stage, k));
        rstd = rstd_slot(stage, k);
      }
      if (rc.t != cached_t) {
        cached_t = rc.t;
        const int64_t table = rc.t * half + table_col;
        load_float8(a.cos + table, c);
        load_float8(a.sin + table, sn);
      }
      Bf16x8 g = rotate(d, partner_of(d, tpr), first, c, sn, /*inverse=*/true);
      float dot = 0.0F;
#pragma unroll
      for (int e = 0; e < kBf16PerVector; ++e) {
        g.v[e] = round_bf16(g.v[e]);  // RoPE's backward output, as its kernel stores it
        // rmsnorm.cu's backward, step for step.
        xhat.v[e] *= rstd;
        dw[e] += g.v[e] * xhat.v[e];
        g.v[e] *= w[e];
        dot += g.v[e] * xhat.v[e];
      }
      dot = lanes_sum(dot, tpr);
      const float mean = dot / static_cast<float>(head_dim);
      if (live) {
        Bf16x8 out;
#pragma unroll
        for (int e = 0; e < kBf16PerVector; ++e)
          out.v[e] = rstd * (g.v[e] - xhat.v[e] * mean);
        store_bf16x8(dx + at(rc, a.dx_strides) + col, out, amax);
      }
    }
    stage = (stage + 1) % kStages;
  }
  cp_async_wait<0>();
  report_amax(a.dx_amax, amax_of_pairs(amax));
  // The block's lane groups' sums added in shared memory, in lane-group order, into one partial
  // row a block: one a lane group gave sum_partial_rows 16 times the rows to add (the qwen3-8b
  // layer's four calls took 0.18 ms of its step; docs/perf-log.md §35).
  __shared__ float sums[kThreads * kBf16PerVector];  // [groups][head_dim]
#pragma unroll
  for (int e = 0; e < kBf16PerVector; ++e)
    sums[sub * head_dim + col + e] = dw[e];
  __syncthreads();
  for (int c = static_cast<int>(threadIdx.x); c < head_dim; c += kThreads) {
    float total = 0.0F;
    for (int r = 0; r < groups; ++r)
      total += sums[r * head_dim + c];
    partial[static_cast<int64_t>(blockIdx.x) * head_dim + c] = total;
  }
}

int lanes_per_row(int64_t head_dim) {
  return static_cast<int>(head_dim / kBf16PerVector);
}

// Calls fn with the lanes of a head as a compile-time constant (head_dim 16 to 256: 2 to 32).
template <typename Fn>
void with_lanes(int tpr, Fn&& fn) {
  switch (tpr) {
    case 2:
      fn(std::integral_constant<int, 2>{});
      break;
    case 4:
      fn(std::integral_constant<int, 4>{});
      break;
    case 8:
      fn(std::integral_constant<int, 8>{});
      break;
    case 16:
      fn(std::integral_constant<int, 16>{});
      break;
    default:
      fn(std::integral_constant<int, 32>{});
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

void qk_norm_rope_forward(const QkNormRopeArgs& a, cudaStream_t stream) {
  const QkNormRopeStrides strides[] = {a.x_strides, a.y_strides};
  const void* pointers[] = {a.x, a.y, a.weight, a.cos, a.sin};
  check_common(a.batch, a.seq, a.heads, a.head_dim, strides, 2, pointers, 5,
               "qk_norm_rope_forward");
  LPBENCH_CUDA_REQUIRE(a.rstd != nullptr, "qk_norm_rope_forward: rstd is needed");
  const NvtxRange range("lpbench qk_norm_rope_forward");
  const RowIndex ix = row_index(a.batch, a.seq, a.heads, "qk_norm_rope_forward");
  const int tpr = lanes_per_row(a.head_dim);
  const int64_t rows_per_block = int64_t{kThreads} / tpr * kForwardRows;
  with_lanes(tpr, [&](auto n) {
    forward_kernel<decltype(n)::value>
        <<<static_cast<unsigned>((ix.rows + rows_per_block - 1) / rows_per_block), kThreads, 0,
           stream>>>(a, ix);
  });
  LPBENCH_CUDA_CHECK_LAUNCH();
}

// The rows a block of the backward takes a step.
int backward_rows_per_block(int64_t head_dim) {
  return kThreads / lanes_per_row(head_dim) * kBackwardRows;
}

size_t qk_norm_rope_backward_workspace_bytes(int64_t rows, int64_t head_dim) {
  const int rows_per_block = backward_rows_per_block(head_dim);
  return static_cast<size_t>(one_wave_blocks(rows, rows_per_block, kThreads) * head_dim) *
         sizeof(float);
}

void qk_norm_rope_backward(const QkNormRopeBackwardArgs& a, cudaStream_t stream) {
  const QkNormRopeStrides strides[] = {a.dy_strides, a.x_strides, a.dx_strides};
  const void* pointers[] = {a.dy, a.x, a.dx, a.weight, a.cos, a.sin, a.workspace};
  check_common(a.batch, a.seq, a.heads, a.head_dim, strides, 3, pointers, 7,
               "qk_norm_rope_backward");
  LPBENCH_CUDA_REQUIRE(a.rstd != nullptr && a.dweight != nullptr,
                       "qk_norm_rope_backward: rstd and dweight are needed");
  const NvtxRange range("lpbench qk_norm_rope_backward");
  const RowIndex ix = row_index(a.batch, a.seq, a.heads, "qk_norm_rope_backward");
  const int tpr = lanes_per_row(a.head_dim);
  const int rows_per_block = backward_rows_per_block(a.head_dim);
  auto* partial = static_cast<float*>(a.workspace);
  int64_t blocks = 0;
  with_lanes(tpr, [&](auto n) {
    const auto kernel = backward_kernel<decltype(n)::value>;
    allow_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), kRingBytes);
    blocks = resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, kRingBytes,
                             one_wave_blocks(ix.rows, rows_per_block, kThreads));
    kernel<<<static_cast<unsigned>(blocks), kThreads, kRingBytes, stream>>>(a, ix, partial);
  });
  LPBENCH_CUDA_CHECK_LAUNCH();
  sum_partial_rows(partial, blocks, a.head_dim, a.dweight, stream);
}

}  // namespace lpbench::cuda
